#pragma once

/* User text inside messages. jansson refuses a string that is not valid
 * UTF-8 (json_pack fails, json_string returns NULL), so a message that quotes
 * a client's text must neither cut it inside a character nor pass on invalid
 * bytes the client sent (a %ff in a path, a raw header byte). Pure functions:
 * any thread. */

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/** How many bytes of s to print with "%.*s" to show at most max bytes of it
 *  without splitting a UTF-8 character. */
int text_cut(const char* s, size_t max);

/** Is s[0..len) UTF-8 as JSON strings take it: no overlong forms, no
 *  surrogates, nothing past U+10FFFF, no NUL? */
bool text_utf8_valid(const char* s, size_t len);

/** Copy src into dst (size > 0, always NUL-terminated) as valid UTF-8: each
 *  byte that does not begin a valid character becomes U+FFFD, and a copy that
 *  does not fit ends on a character boundary. Returns the length written. */
size_t text_sanitize(char* dst, size_t size, const char* src);

/** vsnprintf into dst (size > 0) whose result is always valid UTF-8, even
 *  when it is cut to fit or an argument is not valid UTF-8. Returns the
 *  length written. */
size_t text_vformat(char* dst, size_t size, const char* fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
size_t text_format(char* dst, size_t size, const char* fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** A JSON string of s with invalid UTF-8 replaced (U+FFFD); s NULL is "".
 *  New reference; NULL only when out of memory. */
json_t* text_json_string(const char* s);
