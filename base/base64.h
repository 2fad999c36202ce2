#pragma once

#include <stddef.h>

/** Base64 (RFC 4648, padded) of len bytes: malloc'd and NUL-terminated, its
 *  length in *out_len (may be NULL); NULL when out of memory. */
char* base64_encode(const void* data, size_t len, size_t* out_len);
