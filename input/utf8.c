/* UTF-8 decoding, done here rather than with mbsrtowcs: the C locale of a
 * container would reject everything outside ASCII (PITFALLS 27). */
#include "input/input.h"

#include <errno.h>

int input_utf8_next(const char* s, size_t len, size_t* pos, uint32_t* cp)
{
	const unsigned char* p = (const unsigned char*)s + *pos;
	size_t left = len - *pos;
	if (left == 0)
		return -EILSEQ;
	unsigned char c = p[0];
	uint32_t v, min;
	size_t n;
	if (c < 0x80) {
		*cp = c;
		*pos += 1;
		return 0;
	} else if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		v = c & 0x1F;
		min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		v = c & 0x0F;
		min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		v = c & 0x07;
		min = 0x10000;
	} else {
		/* 0x80..0xC1 (stray continuation, overlong 2-byte), 0xF5.. */
		return -EILSEQ;
	}
	if (left < n)
		return -EILSEQ;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return -EILSEQ;
		v = v << 6 | (p[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return -EILSEQ;
	*cp = v;
	*pos += n;
	return 0;
}

int input_utf8_validate(const char* s, size_t len, size_t* bad_offset)
{
	size_t pos = 0;
	uint32_t cp;
	while (pos < len) {
		if (input_utf8_next(s, len, &pos, &cp) < 0) {
			if (bad_offset)
				*bad_offset = pos;
			return -EILSEQ;
		}
	}
	return 0;
}

int input_text_check(const char* s, size_t len, size_t* bad_offset)
{
	size_t pos = 0;
	while (pos < len) {
		size_t at = pos;
		uint32_t cp;
		if (input_utf8_next(s, len, &pos, &cp) < 0) {
			if (bad_offset)
				*bad_offset = at;
			return -EILSEQ;
		}
		bool typable = cp == '\n' || cp == '\r' || cp == '\t' || cp == '\b'
				|| cp == 0x1B || (cp >= 0x20 && cp != 0x7F
				&& !(cp >= 0x80 && cp < 0xA0));
		if (!typable) {
			if (bad_offset)
				*bad_offset = at;
			return -EINVAL;
		}
	}
	return 0;
}
