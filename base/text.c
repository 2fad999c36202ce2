#include "base/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the character a lead byte announces; 0 if it cannot lead. */
static size_t lead_length(unsigned char c)
{
	if (c >= 0x01 && c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

/* Length of the valid character at s[0..n), or 0 if there is none (invalid,
 * or cut short). The same rules as jansson's utf8_check_full. */
static size_t char_length(const unsigned char* s, size_t n)
{
	size_t len = n ? lead_length(s[0]) : 0;
	if (len == 0 || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0)		/* overlong */
			|| (s[0] == 0xed && s[1] > 0x9f)))	/* surrogate */
		return 0;
	if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90)		/* overlong */
			|| (s[0] == 0xf4 && s[1] > 0x8f)))	/* past U+10FFFF */
		return 0;
	return len;
}

int text_cut(const char* s, size_t max)
{
	const unsigned char* u = (const unsigned char*)s;
	size_t n = strnlen(s, max);
	if (s[n] == '\0' || n == 0)
		return (int)n;		/* nothing cut */
	/* Walk to the last character that ends within max. Invalid bytes
	 * count as one byte each: text_sanitize deals with them. */
	size_t i = 0;
	while (i < n) {
		size_t len = char_length(u + i, strnlen(s + i, 4));
		if (len == 0)
			len = 1;
		if (i + len > n)
			break;
		i += len;
	}
	return (int)i;
}

bool text_utf8_valid(const char* s, size_t len)
{
	const unsigned char* u = (const unsigned char*)s;
	for (size_t i = 0; i < len; ) {
		/* ASCII runs (no NUL) first: most text is mostly them, eight
		 * bytes at a time while a word has no NUL and no high bit. */
		for (uint64_t w; i + 8 <= len; i += 8) {
			memcpy(&w, u + i, 8);
			if (text_word_has_below(w, 1) | (w & TEXT_WORD_HIGHS))
				break;
		}
		while (i < len && (unsigned)u[i] - 1u < 0x7fu)
			i++;
		if (i == len)
			break;
		size_t n = char_length(u + i, len - i);
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

static const char replacement[] = "\xef\xbf\xbd";	/* U+FFFD */

size_t text_sanitize(char* dst, size_t size, const char* src)
{
	const unsigned char* u = (const unsigned char*)src;
	size_t len = strlen(src), o = 0;
	for (size_t i = 0; i < len; ) {
		size_t n = char_length(u + i, len - i);
		const char* from = n ? src + i : replacement;
		size_t w = n ? n : sizeof(replacement) - 1;
		if (o + w >= size)
			break;
		memcpy(dst + o, from, w);
		o += w;
		i += n ? n : 1;
	}
	dst[o] = '\0';
	return o;
}

/* In place, for when there is no memory for a copy: invalid bytes become
 * '?' (same length), and a character cut off at the end is dropped. */
static size_t repair_in_place(char* s, bool cut)
{
	unsigned char* u = (unsigned char*)s;
	size_t len = strlen(s);
	for (size_t i = 0; i < len; ) {
		size_t n = char_length(u + i, len - i);
		if (n) {
			i += n;
		} else if (cut && lead_length(u[i]) > len - i) {
			s[i] = '\0';
			return i;
		} else {
			s[i++] = '?';
		}
	}
	return len;
}

size_t text_vformat(char* dst, size_t size, const char* fmt, va_list ap)
{
	va_list copy;
	va_copy(copy, ap);
	int n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	char* full = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!full) {
		n = vsnprintf(dst, size, fmt, ap);
		if (n < 0) {
			dst[0] = '\0';
			return 0;
		}
		return repair_in_place(dst, (size_t)n >= size);
	}
	vsnprintf(full, (size_t)n + 1, fmt, ap);
	size_t len = text_sanitize(dst, size, full);
	free(full);
	return len;
}

size_t text_format(char* dst, size_t size, const char* fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t n = text_vformat(dst, size, fmt, ap);
	va_end(ap);
	return n;
}

json_t* text_json_string(const char* s)
{
	if (!s)
		s = "";
	size_t len = strlen(s);
	if (text_utf8_valid(s, len))
		return json_stringn(s, len);
	size_t size = 3 * len + 1;	/* every byte may become U+FFFD */
	char* fixed = malloc(size);
	if (!fixed)
		return NULL;
	text_sanitize(fixed, size, s);
	json_t* out = json_string(fixed);
	free(fixed);
	return out;
}

enum text_name_problem text_name_check(const char* s, size_t len, size_t* at, uint32_t* cp)
{
	const unsigned char* u = (const unsigned char*)s;
	for (size_t i = 0; i < len; ) {
		uint32_t c;
		size_t n;
		if (u[i] < 0x80) {
			c = u[i];
			n = 1;
		} else {
			n = char_length(u + i, len - i);
			if (n == 0) {
				*at = i;
				*cp = u[i];
				return TEXT_NAME_INVALID_UTF8;
			}
			c = u[i] & (0x7f >> n);
			for (size_t k = 1; k < n; k++)
				c = (c << 6) | (u[i + k] & 0x3f);
		}
		enum text_name_problem p = TEXT_NAME_OK;
		if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029)
			p = TEXT_NAME_CONTROL;
		else if (c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e)
				|| (c >= 0x2066 && c <= 0x2069))
			p = TEXT_NAME_BIDI;
		if (p != TEXT_NAME_OK) {
			*at = i;
			*cp = c;
			return p;
		}
		i += n;
	}
	return TEXT_NAME_OK;
}

const char* text_name_problem_describe(enum text_name_problem problem, uint32_t cp,
		char* buf, size_t size)
{
	switch (problem) {
	case TEXT_NAME_INVALID_UTF8:
		snprintf(buf, size, "byte 0x%02X (not UTF-8)", (unsigned)cp);
		break;
	case TEXT_NAME_CONTROL:
		snprintf(buf, size, "U+%04X (a control character)", (unsigned)cp);
		break;
	case TEXT_NAME_BIDI:
		snprintf(buf, size, "U+%04X (a bidirectional control character)", (unsigned)cp);
		break;
	default:
		snprintf(buf, size, "nothing");
		break;
	}
	return buf;
}
