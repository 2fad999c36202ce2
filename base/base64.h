#pragma once

#include <stddef.h>

/** Base64 (RFC 4648, padded) of len bytes: malloc'd and NUL-terminated, its
 *  length in *out_len (may be NULL); NULL when out of memory. */
char* base64_encode(const void* data, size_t len, size_t* out_len);
/** Strict Base64 (RFC 4648, padded, no whitespace): decodes len chars of text
 *  into a malloc'd buffer (NUL-terminated for convenience), its length in
 *  *out_len (may be NULL). NULL when the text is not canonical Base64: a
 *  character outside the alphabet, a length that is not a multiple of 4,
 *  misplaced or missing padding, or non-zero bits after the last byte. */
void* base64_decode(const char* text, size_t len, size_t* out_len);
