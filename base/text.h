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
#include <stdint.h>

/* Byte tests on eight bytes at once (SWAR), for the scans of long text:
 * nonzero when some byte of w is below n (n <= 128; a byte of 0x80 or more
 * never counts), or equal to c. No false negatives: a word they pass has no
 * such byte; one they flag may be checked bytewise. */
#define TEXT_WORD_ONES 0x0101010101010101ull
#define TEXT_WORD_HIGHS 0x8080808080808080ull

static inline uint64_t text_word_has_below(uint64_t w, unsigned n)
{
	return (w - TEXT_WORD_ONES * n) & ~w & TEXT_WORD_HIGHS;
}

static inline uint64_t text_word_has(uint64_t w, unsigned char c)
{
	return text_word_has_below(w ^ (TEXT_WORD_ONES * c), 1);
}

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

/* File names shown to people (listings, the dashboard, terminals) must look
 * like what they are: no character that moves or hides the rest of the line
 * ("a\nb", "invoice\u202Efdp.exe" showing as "invoiceexe.pdf"). */
enum text_name_problem {
	TEXT_NAME_OK = 0,
	TEXT_NAME_INVALID_UTF8,	/* *cp is the offending byte */
	TEXT_NAME_CONTROL,	/* C0/C1 controls U+0000-U+001F, U+007F-U+009F; the
				 * line and paragraph separators U+2028, U+2029 */
	TEXT_NAME_BIDI,		/* bidirectional formatting: U+061C, U+200E, U+200F,
				 * U+202A-U+202E, U+2066-U+2069 */
};

/** The first problem in s[0..len) as a file name (or a path of them): its
 *  byte offset in *at and the code point in *cp. Pure. */
enum text_name_problem text_name_check(const char* s, size_t len, size_t* at, uint32_t* cp);

/** "U+202E (a bidirectional control character)" or "byte 0xFF (not UTF-8)"
 *  for a problem text_name_check found, into buf (size >= 64). */
const char* text_name_problem_describe(enum text_name_problem problem, uint32_t cp,
		char* buf, size_t size);
