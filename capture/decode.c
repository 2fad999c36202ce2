/* Decoding the images deskd itself encoded (PNG: deskd's own by hand,
 * others through libpng's simplified API; JPEG through libturbojpeg) back
 * into frames, for the timeline's
 * thumbnails: they are made from the very image an agent got, off the
 * answer's path. Bounded: nothing over CAPTURE_DECODE_MAX_PIXELS. And a
 * PNG's header read by hand without decoding (the clipboard's check of
 * images it passes on). */
#include "capture/capture.h"
#include "capture/bufpool.h"

#include <errno.h>
#include <libdeflate.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

static uint32_t be32(const uint8_t* p);

/* Rows filtered None or Up (what capture/encode.c writes) into BGRX in one
 * pass: Up adds the row above, already in the frame. False on any other
 * filter type. */
static bool unfilter_rows(const uint8_t* raw, struct frame* f)
{
	size_t n = 3 * (size_t)f->width;
	for (int y = 0; y < f->height; y++) {
		const uint8_t* row = raw + (size_t)y * (n + 1);
		const uint8_t* s = row + 1;
		uint8_t* d = f->data + (size_t)y * (size_t)f->stride;
		if (row[0] != 0 && row[0] != 2)
			return false;
		if (row[0] == 2 && y > 0) {
			const uint8_t* u = d - f->stride;
			for (int x = 0; x < f->width; x++) {
				d[4 * x + 0] = (uint8_t)(s[3 * x + 2] + u[4 * x + 0]);
				d[4 * x + 1] = (uint8_t)(s[3 * x + 1] + u[4 * x + 1]);
				d[4 * x + 2] = (uint8_t)(s[3 * x + 0] + u[4 * x + 2]);
				d[4 * x + 3] = 0xff;
			}
			continue;
		}
		for (int x = 0; x < f->width; x++) {
			d[4 * x + 0] = s[3 * x + 2];
			d[4 * x + 1] = s[3 * x + 1];
			d[4 * x + 2] = s[3 * x + 0];
			d[4 * x + 3] = 0xff;
		}
	}
	return true;
}

/* One row of a block: unfiltered in place (Up adds the row above, already
 * unfiltered; None leaves it), its bytes added to the block's column sums.
 * Separate pointers to separate rows, so the loops vectorise (-O3). */
static void row_up_add(uint8_t* restrict cur, const uint8_t* restrict up,
		uint16_t* restrict sums, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t v = (uint8_t)(cur[i] + up[i]);
		cur[i] = v;
		sums[i] = (uint16_t)(sums[i] + v);
	}
}

static void row_add(const uint8_t* restrict cur, uint16_t* restrict sums, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sums[i] = (uint16_t)(sums[i] + cur[i]);
}

/* The rows unfiltered in place (RGB), and each k x k block (fewer at the
 * right and bottom edges) averaged into one BGRX pixel of f: a block row's
 * column sums first (k <= 8: at most 8 x 8 x 255 in 16 bits), then k
 * columns of them; the full size frame is never made. */
static bool unfilter_reduce(uint8_t* raw, int width, int height, int k, struct frame* f)
{
	size_t n = 3 * (size_t)width;
	uint16_t* sums = k <= 8 ? malloc(n * sizeof(uint16_t)) : NULL;
	if (!sums)
		goto fail;
	for (int oy = 0; oy < f->height; oy++) {
		int y0 = oy * k, y1 = y0 + k < height ? y0 + k : height;
		memset(sums, 0, n * sizeof(uint16_t));
		for (int y = y0; y < y1; y++) {
			uint8_t* row = raw + (size_t)y * (n + 1);
			if (row[0] != 0 && row[0] != 2)
				goto fail;
			if (row[0] == 2 && y > 0)
				row_up_add(row + 1, row - n, sums, n);
			else
				row_add(row + 1, sums, n);
		}
		uint8_t* d = f->data + (size_t)oy * (size_t)f->stride;
		for (int ox = 0; ox < f->width; ox++) {
			int x0 = ox * k, x1 = x0 + k < width ? x0 + k : width;
			uint32_t r = 0, g = 0, b = 0;
			for (const uint16_t* s = sums + 3 * (size_t)x0; s < sums + 3 * (size_t)x1; s += 3) {
				r += s[0];
				g += s[1];
				b += s[2];
			}
			uint32_t c = (uint32_t)((y1 - y0) * (x1 - x0));
			d[4 * ox + 0] = (uint8_t)((b + c / 2) / c);
			d[4 * ox + 1] = (uint8_t)((g + c / 2) / c);
			d[4 * ox + 2] = (uint8_t)((r + c / 2) / c);
			d[4 * ox + 3] = 0xff;
		}
	}
	free(sums);
	return true;
fail:
	free(sums);
	return false;
}

/* deskd's own PNGs (8-bit RGB, not interlaced, one IDAT, filters None or
 * Up) without libpng: libdeflate inflates several times faster than zlib,
 * and the thumbnail of a 1080p screenshot cost more than its encode. NULL
 * for anything else, which goes to libpng. */
static struct frame* decode_own_png(const uint8_t* p, size_t len, int k)
{
	struct capture_png_header h;
	const char* why;
	if (capture_png_header(p, len, &h, &why) != 0 || h.bit_depth != 8 || h.color_type != 2
			|| h.interlace || (uint64_t)h.width * h.height > CAPTURE_DECODE_MAX_PIXELS)
		return NULL;
	/* The IDAT: the chunk after the IHDR (CRC checked), and an IEND after it. */
	size_t at = CAPTURE_PNG_HEADER_BYTES;
	if (len - at < 12 || memcmp(p + at + 4, "IDAT", 4) != 0)
		return NULL;
	size_t n = be32(p + at);
	if (n > len - at - 12 || len - at - 12 - n < 12
			|| memcmp(p + at + 12 + n + 4, "IEND", 4) != 0
			|| libdeflate_crc32(0, p + at + 4, n + 4) != be32(p + at + 8 + n))
		return NULL;
	struct frame* f = frame_new(((int)h.width + k - 1) / k, ((int)h.height + k - 1) / k);
	if (!f)
		return NULL;
	size_t raw_len = (size_t)h.height * (1 + 3 * (size_t)h.width);
	size_t raw_cap;
	uint8_t* raw = capture__buf_get(raw_len, &raw_cap);
	struct libdeflate_decompressor* d = libdeflate_alloc_decompressor();
	size_t got = 0;
	if (!raw || !d || libdeflate_zlib_decompress(d, p + at + 8, n, raw, raw_len, &got)
				!= LIBDEFLATE_SUCCESS || got != raw_len
			|| !(k > 1 ? unfilter_reduce(raw, (int)h.width, (int)h.height, k, f)
				: unfilter_rows(raw, f))) {
		frame_unref(f);
		f = NULL;
	}
	if (d)
		libdeflate_free_decompressor(d);
	capture__buf_put(raw, raw_cap);
	return f;
}

static struct frame* decode_png(const uint8_t* data, size_t len)
{
	struct frame* own = decode_own_png(data, len, 1);
	if (own)
		return own;
	png_image img;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&img, data, len))
		return NULL;
	if (!img.width || !img.height
			|| (uint64_t)img.width * img.height > CAPTURE_DECODE_MAX_PIXELS) {
		png_image_free(&img);
		return NULL;
	}
	img.format = PNG_FORMAT_BGRA;	/* the frame's BGRX, alpha in X */
	struct frame* f = frame_new((int)img.width, (int)img.height);
	if (!f) {
		png_image_free(&img);
		return NULL;
	}
	if (!png_image_finish_read(&img, NULL, f->data, f->stride, NULL)) {
		png_image_free(&img);
		frame_unref(f);
		return NULL;
	}
	return f;
}

/* side 0: full size; else the smallest of the decoder's scaling factors
 * (m/8) that keeps the longer side at least side pixels. */
static struct frame* decode_jpeg(const uint8_t* data, size_t len, int side, int* width,
		int* height)
{
	tjhandle tj = tjInitDecompress();
	if (!tj)
		return NULL;
	int w, h, sub, space;
	struct frame* f = NULL;
	if (tjDecompressHeader3(tj, data, (unsigned long)len, &w, &h, &sub, &space) == 0
			&& w > 0 && h > 0 && (uint64_t)w * (uint64_t)h <= CAPTURE_DECODE_MAX_PIXELS) {
		int sw = w, sh = h, n = 0;
		tjscalingfactor* sf = side > 0 ? tjGetScalingFactors(&n) : NULL;
		for (int i = 0; sf && i < n; i++) {
			int tw = TJSCALED(w, sf[i]), th = TJSCALED(h, sf[i]);
			if (sf[i].num < sf[i].denom && (tw > th ? tw : th) >= side && tw * th < sw * sh) {
				sw = tw;
				sh = th;
			}
		}
		if ((f = frame_new(sw, sh)) && tjDecompress2(tj, data, (unsigned long)len, f->data,
				sw, f->stride, sh, TJPF_BGRX, TJFLAG_FASTDCT) != 0) {
			frame_unref(f);
			f = NULL;
		}
		*width = w;
		*height = h;
	}
	tjDestroy(tj);
	return f;
}

struct frame* capture_decode(const void* data, size_t len)
{
	const uint8_t* p = data;
	if (!p || len < 8)
		return NULL;
	if (memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0)
		return decode_png(p, len);
	int w, h;
	if (p[0] == 0xff && p[1] == 0xd8)
		return decode_jpeg(p, len, 0, &w, &h);
	return NULL;
}

struct frame* capture_decode_reduced(const void* data, size_t len, int side,
		int* width, int* height)
{
	const uint8_t* p = data;
	if (!p || len < 8 || side <= 0)
		return NULL;
	if (p[0] == 0xff && p[1] == 0xd8)
		return decode_jpeg(p, len, side, width, height);
	struct capture_png_header h;
	const char* why;
	if (capture_png_header(p, len, &h, &why) != 0)
		return NULL;
	uint32_t longer = h.width > h.height ? h.width : h.height;
	int k = longer / (uint32_t)side > 8 ? 8 : (int)(longer / (uint32_t)side);
	struct frame* f = k > 1 ? decode_own_png(p, len, k) : NULL;
	if (!f)
		f = decode_png(p, len);
	if (f) {
		*width = (int)h.width;
		*height = (int)h.height;
	}
	return f;
}

/* CRC-32 of PNG chunks (ISO 3309, reflected 0xEDB88320), bit by bit: it
 * only ever covers the 17 bytes of an IHDR here. */
static uint32_t png_crc(const uint8_t* p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return c ^ 0xffffffffu;
}

static uint32_t be32(const uint8_t* p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int capture_png_header(const void* data, size_t len, struct capture_png_header* out,
		const char** why)
{
	static const uint8_t signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	const uint8_t* p = data;
	const char* bad = NULL;
	if (!p || len < sizeof(signature) || memcmp(p, signature, sizeof(signature)) != 0)
		bad = "no PNG signature";
	else if (len < CAPTURE_PNG_HEADER_BYTES)
		bad = "cut short before the end of its IHDR chunk";
	else if (be32(p + 8) != 13 || memcmp(p + 12, "IHDR", 4) != 0)
		bad = "the first chunk is not an IHDR of 13 bytes";
	else if (png_crc(p + 12, 17) != be32(p + 29))
		bad = "the IHDR chunk's CRC is wrong";
	if (bad) {
		*why = bad;
		return -EINVAL;
	}
	uint32_t w = be32(p + 16), h = be32(p + 20);
	uint8_t depth = p[24], type = p[25];
	bool depth_ok;
	switch (type) {
	case 0: depth_ok = depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16; break;
	case 3: depth_ok = depth == 1 || depth == 2 || depth == 4 || depth == 8; break;
	case 2:
	case 4:
	case 6: depth_ok = depth == 8 || depth == 16; break;
	default: depth_ok = false; break;
	}
	if (w == 0 || h == 0 || w > 0x7fffffffu || h > 0x7fffffffu)
		bad = "a width or height of 0 or over 2^31-1";
	else if (!depth_ok)
		bad = "a bit depth its colour type does not allow (or no such colour type)";
	else if (p[26] != 0 || p[27] != 0)
		bad = "an unknown compression or filter method";
	else if (p[28] > 1)
		bad = "an unknown interlace method";
	if (bad) {
		*why = bad;
		return -EINVAL;
	}
	*out = (struct capture_png_header){ .width = w, .height = h, .bit_depth = depth,
		.color_type = type, .interlace = p[28] };
	*why = NULL;
	return 0;
}
