/* libFuzzer harness over the PNG header check (capture_png_header in
 * capture/decode.c) that the clipboard tools run on every image they pass
 * on (TRUST R14). Whatever the bytes: no crash or read past the input; an
 * accepted header is exactly the one its fields re-encode to (signature,
 * IHDR length and type, the fields, the CRC), with values the PNG
 * specification allows; and every image libpng accepts is accepted, with
 * the same size (the check never refuses a PNG a decoder would read). */

#include "capture/capture.h"

#include <errno.h>
#include <png.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static uint32_t crc(const uint8_t* p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
	}
	return ~c;
}

static void put32(uint8_t* p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	/* An exact-size copy, so ASan sees any read past the end. */
	uint8_t* copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	struct capture_png_header h;
	const char* why = NULL;
	int rc = capture_png_header(copy, size, &h, &why);
	if (rc == 0) {
		if (size < CAPTURE_PNG_HEADER_BYTES || why)
			abort();
		if (!h.width || !h.height || h.width > 0x7fffffffu || h.height > 0x7fffffffu
				|| h.interlace > 1)
			abort();
		/* Bit depths (as bits: 1, 2, 4, 8, 16) per colour type. */
		static const uint8_t allowed[7] = { 0x1f, 0, 0x18, 0x0f, 0x18, 0, 0x18 };
		if (h.color_type > 6 || h.bit_depth > 16 || (h.bit_depth & (h.bit_depth - 1)) != 0
				|| !(allowed[h.color_type] & h.bit_depth))
			abort();
		uint8_t want[CAPTURE_PNG_HEADER_BYTES] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a,
			'\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R' };
		put32(want + 16, h.width);
		put32(want + 20, h.height);
		want[24] = h.bit_depth;
		want[25] = h.color_type;
		want[28] = h.interlace;
		put32(want + 29, crc(want + 12, 17));
		if (memcmp(want, copy, sizeof(want)) != 0)
			abort();
	} else if (rc != -EINVAL || !why || !*why) {
		abort();
	}

	png_image img;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (png_image_begin_read_from_memory(&img, copy, size)) {
		if (rc != 0 || img.width != h.width || img.height != h.height)
			abort();
		png_image_free(&img);
	}
	free(copy);
	return 0;
}
