#include "base/base64.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char* base64_encode(const void* data, size_t len, size_t* out_len)
{
	const unsigned char* in = data;
	char* out = malloc(4 * ((len + 2) / 3) + 1);
	if (!out)
		return NULL;
	size_t o = 0, i = 0;
	for (; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = b64chars[(v >> 6) & 63];
		out[o++] = b64chars[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64chars[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}

static int b64value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

void* base64_decode(const char* text, size_t len, size_t* out_len)
{
	if (len % 4)
		return NULL;
	size_t pad = 0;
	if (len && text[len - 1] == '=')
		pad = len >= 2 && text[len - 2] == '=' ? 2 : 1;
	unsigned char* out = malloc(len / 4 * 3 + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int v[4];
		for (int j = 0; j < 4; j++) {
			bool padded = last && j >= 4 - (int)pad;
			v[j] = padded ? 0 : b64value((unsigned char)text[i + j]);
			if (v[j] < 0 || (padded && text[i + j] != '=')) {
				free(out);
				return NULL;
			}
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		/* Canonical: the bits the padding drops must be zero. */
		if ((last && pad == 2 && (w & 0xffff)) || (last && pad == 1 && (w & 0xff))) {
			free(out);
			return NULL;
		}
		out[o++] = (unsigned char)(w >> 16);
		if (!(last && pad == 2))
			out[o++] = (unsigned char)(w >> 8);
		if (!(last && pad))
			out[o++] = (unsigned char)w;
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}
