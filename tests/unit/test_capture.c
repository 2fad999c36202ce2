/* Unit tests for capture/'s pure parts: frames, crop, the area-average
 * scaler, and the PNG/JPEG encoders (decoded back with libpng and
 * libturbojpeg and compared pixel by pixel). */
#include "capture/capture.h"
#include "capture/deflate.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <zlib.h>

static void put(struct frame* f, int x, int y, uint8_t r, uint8_t g, uint8_t b)
{
	uint8_t* p = f->data + (size_t)y * (size_t)f->stride + (size_t)x * 4;
	p[0] = b;
	p[1] = g;
	p[2] = r;
	p[3] = 0xff;
}

static const uint8_t* at(const struct frame* f, int x, int y)
{
	return f->data + (size_t)y * (size_t)f->stride + (size_t)x * 4;
}

/* The fixture's gradient, so tests speak the same language as integration. */
static struct frame* gradient(int w, int h)
{
	struct frame* f = frame_new(w, h);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			put(f, x, y, (uint8_t)(x & 255), (uint8_t)(y & 255),
					(uint8_t)(((x >> 8) & 3) * 64 + ((y >> 8) & 3) * 16 + 8));
	return f;
}

static struct frame* noise(int w, int h, unsigned seed)
{
	struct frame* f = frame_new(w, h);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			seed = seed * 1103515245u + 12345u;
			put(f, x, y, (uint8_t)(seed >> 8), (uint8_t)(seed >> 16), (uint8_t)(seed >> 24));
		}
	return f;
}

static void test_frames(void)
{
	struct frame* f = frame_new(10, 5);
	TST_CHECK(f != NULL);
	TST_EQ_INT(f->width, 10);
	TST_EQ_INT(f->height, 5);
	TST_CHECK(f->stride >= 40);
	TST_CHECK(frame_ref(f) == f);
	frame_unref(f);
	frame_unref(f);
	frame_unref(NULL);
	TST_CHECK(frame_ref(NULL) == NULL);
	TST_CHECK(frame_new(0, 5) == NULL);
	TST_CHECK(frame_new(5, -1) == NULL);
	TST_CHECK(frame_new(100000, 5) == NULL);
}

static void test_crop(void)
{
	struct frame* g = gradient(300, 200);
	struct capture_rect r = { 250, 150, 100, 100 };	/* clipped to 50x50 */
	struct frame* c = capture_crop(g, &r);
	TST_CHECK(c != NULL);
	TST_EQ_INT(c->width, 50);
	TST_EQ_INT(c->height, 50);
	TST_EQ_INT(at(c, 0, 0)[2], 250);
	TST_EQ_INT(at(c, 0, 0)[1], 150);
	TST_EQ_INT(at(c, 49, 49)[2], 299 & 255);
	TST_EQ_INT(at(c, 49, 49)[0], 1 * 64 + 0 * 16 + 8);
	frame_unref(c);
	struct capture_rect outside = { 400, 0, 10, 10 };
	TST_CHECK(capture_crop(g, &outside) == NULL);
	frame_unref(g);
}

/* The largest difference, over every output pixel and channel, between a
 * scaled frame and the exact area average of src (integer arithmetic in
 * units of 1/(dw*dh) of a source pixel, rounded half up); 256 if the sizes
 * are not what was asked for. */
static int scale_error(const struct frame* src, const struct frame* dst)
{
	if (!dst)
		return 256;
	const int64_t sw = src->width, sh = src->height, dw = dst->width, dh = dst->height;
	int worst = 0;
	for (int64_t oy = 0; oy < dh; oy++) {
		int64_t ya = oy * sh, yb = (oy + 1) * sh;
		for (int64_t ox = 0; ox < dw; ox++) {
			int64_t xa = ox * sw, xb = (ox + 1) * sw;
			int64_t sum[3] = { 0, 0, 0 };
			for (int64_t y = ya / dh; y * dh < yb; y++) {
				int64_t wy = (y + 1) * dh < yb ? (y + 1) * dh : yb;
				wy -= y * dh > ya ? y * dh : ya;
				for (int64_t x = xa / dw; x * dw < xb; x++) {
					int64_t wx = (x + 1) * dw < xb ? (x + 1) * dw : xb;
					wx -= x * dw > xa ? x * dw : xa;
					for (int c = 0; c < 3; c++)
						sum[c] += wx * wy * at(src, (int)x, (int)y)[c];
				}
			}
			const int64_t area = sw * sh;
			for (int c = 0; c < 3; c++) {
				int want = (int)((2 * sum[c] + area) / (2 * area));
				int d = abs(want - at(dst, (int)ox, (int)oy)[c]);
				if (d > worst)
					worst = d;
			}
			if (at(dst, (int)ox, (int)oy)[3] != 0xff)
				return 256;
		}
	}
	return worst;
}

/* Alternating black and white columns and rows: the pattern where rounded
 * weights show most. */
static struct frame* stripes(int w, int h)
{
	struct frame* f = frame_new(w, h);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			uint8_t v = (x ^ y) & 1 ? 255 : 0;
			put(f, x, y, v, (uint8_t)(x & 1 ? 255 : 0), (uint8_t)(y & 1 ? 255 : 0));
		}
	return f;
}

static void test_scale_reference(void)
{
	/* Source and target sizes: the default cap's ratios (3:2, 5:4, 1366
	 * wide), odd sizes, one pixel wide or high, one axis unscaled, tiny
	 * targets, a ratio just over 1 and a large one. */
	static const int sizes[][4] = {
		{ 1920, 1080, 1280, 720 }, { 1920, 1080, 1366, 768 }, { 1280, 800, 1024, 640 },
		{ 301, 199, 200, 133 }, { 255, 255, 254, 127 }, { 97, 61, 13, 7 },
		{ 1, 50, 1, 7 }, { 50, 1, 7, 1 }, { 1, 1, 1, 1 }, { 33, 17, 1, 1 }, { 2, 2, 1, 1 },
		{ 7, 5, 7, 2 }, { 7, 5, 3, 5 }, { 1001, 999, 1000, 998 }, { 1000, 10, 3, 10 },
		{ 640, 480, 2, 3 },
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const int* z = sizes[i];
		for (int kind = 0; kind < 2; kind++) {
			struct frame* src = kind ? stripes(z[0], z[1]) : noise(z[0], z[1], (unsigned)(i + 1));
			struct frame* dst = capture_scale(src, z[2], z[3]);
			int err = dst && dst->width == z[2] && dst->height == z[3] ? scale_error(src, dst) : 256;
			if (err > 1)
				fprintf(stderr, "scale %dx%d -> %dx%d (%s): off by %d\n",
						z[0], z[1], z[2], z[3], kind ? "stripes" : "noise", err);
			TST_CHECK(err <= 1);
			frame_unref(dst);
			frame_unref(src);
		}
	}
}

static void test_scale(void)
{
	/* Exact 2:1 box average. */
	struct frame* f = frame_new(4, 2);
	uint8_t v[8] = { 0, 10, 20, 30, 40, 50, 60, 70 };
	for (int i = 0; i < 8; i++)
		put(f, i % 4, i / 4, v[i], 255, 0);
	struct frame* s = capture_scale(f, 2, 1);
	TST_CHECK(s != NULL);
	TST_EQ_INT(s->width, 2);
	TST_EQ_INT(s->height, 1);
	TST_EQ_INT(at(s, 0, 0)[2], (0 + 10 + 40 + 50 + 2) / 4);
	TST_EQ_INT(at(s, 1, 0)[2], (20 + 30 + 60 + 70 + 2) / 4);
	TST_EQ_INT(at(s, 0, 0)[1], 255);
	TST_EQ_INT(at(s, 1, 0)[0], 0);
	TST_EQ_INT(at(s, 1, 0)[3], 255);
	frame_unref(s);
	frame_unref(f);

	/* Fractional 3:2 against the exact area average, within 1. */
	struct frame* n = noise(301, 199, 7);
	s = capture_scale(n, 200, 133);
	TST_CHECK(s != NULL);
	TST_CHECK(scale_error(n, s) <= 1);
	frame_unref(s);

	/* A flat colour stays exactly that colour at any ratio. */
	struct frame* flat = frame_new(1920, 1080);
	for (int y = 0; y < 1080; y++)
		for (int x = 0; x < 1920; x++)
			put(flat, x, y, 12, 200, 99);
	s = capture_scale(flat, 1366, 768);
	bool same = s != NULL;
	for (int y = 0; s && y < s->height; y++)
		for (int x = 0; x < s->width; x++)
			if (at(s, x, y)[2] != 12 || at(s, x, y)[1] != 200 || at(s, x, y)[0] != 99)
				same = false;
	TST_CHECK(same);
	frame_unref(s);
	frame_unref(flat);

	/* Same size copies; upscaling and empty sizes are refused. */
	s = capture_scale(n, 301, 199);
	TST_CHECK(s && memcmp(at(s, 5, 5), at(n, 5, 5), 3) == 0);
	frame_unref(s);
	TST_CHECK(capture_scale(n, 302, 10) == NULL);
	TST_CHECK(capture_scale(n, 0, 10) == NULL);
	frame_unref(n);
}

/* Decode PNG with libpng and compare every pixel. */
static bool png_matches(const struct frame* f, const uint8_t* png, size_t len)
{
	png_image img;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&img, png, len))
		return false;
	img.format = PNG_FORMAT_RGB;
	if ((int)img.width != f->width || (int)img.height != f->height) {
		png_image_free(&img);
		return false;
	}
	uint8_t* rgb = malloc(PNG_IMAGE_SIZE(img));
	bool ok = rgb && png_image_finish_read(&img, NULL, rgb, 0, NULL);
	for (int y = 0; ok && y < f->height; y++)
		for (int x = 0; ok && x < f->width; x++) {
			const uint8_t* p = at(f, x, y);
			const uint8_t* q = rgb + ((size_t)y * (size_t)f->width + (size_t)x) * 3;
			if (q[0] != p[2] || q[1] != p[1] || q[2] != p[0])
				ok = false;
		}
	free(rgb);
	png_image_free(&img);
	return ok;
}

static void test_png(void)
{
	int sizes[][2] = { { 1, 1 }, { 7, 3 }, { 3, 200 }, { 640, 480 }, { 1280, 800 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int kind = 0; kind < 2; kind++) {
			struct frame* f = kind ? noise(sizes[i][0], sizes[i][1], (unsigned)i)
					: gradient(sizes[i][0], sizes[i][1]);
			uint8_t* png = NULL;
			size_t len = 0;
			TST_EQ_INT(capture_encode_png(f, &png, &len), 0);
			TST_CHECK(len > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
			if (!png_matches(f, png, len)) {
				fprintf(stderr, "png mismatch at %dx%d kind %d\n", sizes[i][0],
						sizes[i][1], kind);
				TST_CHECK(false);
			} else {
				TST_CHECK(true);
			}
			free(png);
			frame_unref(f);
		}
	}
	/* The pad byte never matters: garbage X bytes give the same image. */
	struct frame* f = gradient(64, 64);
	uint8_t *a, *b;
	size_t la, lb;
	capture_encode_png(f, &a, &la);
	for (int y = 0; y < 64; y++)
		for (int x = 0; x < 64; x++)
			f->data[(size_t)y * (size_t)f->stride + (size_t)x * 4 + 3] = (uint8_t)(x * y);
	capture_encode_png(f, &b, &lb);
	TST_CHECK(la == lb && memcmp(a, b, la) == 0);
	free(a);
	free(b);
	frame_unref(f);
	uint8_t* none;
	size_t nl;
	TST_EQ_INT(capture_encode_png(NULL, &none, &nl), -22);
}

/* Inflate a zlib or raw deflate stream strictly: it must end (BFINAL) at
 * the last input byte, check its Adler-32 (zlib) and give exactly want
 * bytes equal to expect (when given). */
static bool inflates_to(const uint8_t* in, size_t n, bool raw, const uint8_t* expect,
		size_t want)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, raw ? -15 : 15) != Z_OK)
		return false;
	uint8_t* out = malloc(want + 16);
	z.next_in = (Bytef*)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)(want + 16);
	int zr = inflate(&z, Z_FINISH);
	bool ok = zr == Z_STREAM_END && z.avail_in == 0 && z.total_out == want
			&& (!expect || memcmp(out, expect, want) == 0);
	inflateEnd(&z);
	free(out);
	return ok;
}

/* The IDATs of a deskd PNG, joined, inflate to exactly h rows of 1 + 3w. */
static bool idat_inflates(const uint8_t* png, size_t len, int w, int h)
{
	uint8_t* z = malloc(len);
	size_t zn = 0;
	for (size_t i = 8; i + 12 <= len;) {
		size_t n = (size_t)png[i] << 24 | (size_t)png[i + 1] << 16
				| (size_t)png[i + 2] << 8 | png[i + 3];
		if (i + 12 + n > len)
			break;
		if (memcmp(png + i + 4, "IDAT", 4) == 0) {
			memcpy(z + zn, png + i + 8, n);
			zn += n;
		}
		i += 12 + n;
	}
	bool ok = inflates_to(z, zn, false, NULL, (size_t)h * (1 + 3 * (size_t)w));
	free(z);
	return ok;
}

/* Flat colour with a few sparse dots, like a UI background with text. */
static struct frame* sparse(int w, int h, unsigned seed)
{
	struct frame* f = frame_new(w, h);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			seed = seed * 1103515245u + 12345u;
			bool dot = (seed >> 16) % 29 == 0;
			put(f, x, y, dot ? 0 : 240, dot ? (uint8_t)(seed >> 24) : 240, 245);
		}
	return f;
}

static struct frame* flat(int w, int h)
{
	struct frame* f = frame_new(w, h);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			put(f, x, y, 30, 144, 255);
	return f;
}

/* Odd sizes (one pixel, one column of 1081 rows, widths that divide
 * nothing, fewer rows than bands) and every kind of content decode back
 * byte for byte, plain and through a state (16 bands). */
static void test_png_odd(void)
{
	int sizes[][2] = { { 1, 1 }, { 1, 1081 }, { 2, 1 }, { 1081, 1 }, { 13, 15 },
		{ 333, 17 }, { 1921, 7 }, { 97, 511 }, { 1920, 1080 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int w = sizes[i][0], h = sizes[i][1];
		for (int kind = 0; kind < 4; kind++) {
			struct frame* f = kind == 0 ? noise(w, h, (unsigned)i + 7)
					: kind == 1 ? flat(w, h) : kind == 2 ? gradient(w, h)
					: sparse(w, h, (unsigned)i);
			for (int cached = 0; cached < 2; cached++) {
				struct capture_png_state* st = NULL;
				uint8_t* png = NULL;
				size_t len = 0;
				int rc = cached ? capture_encode_png_cached(&st, f, &png, &len)
						: capture_encode_png(f, &png, &len);
				bool ok = rc == 0 && png_matches(f, png, len)
						&& idat_inflates(png, len, w, h);
				if (!ok)
					fprintf(stderr, "png %dx%d kind %d cached %d: rc %d, bad\n",
							w, h, kind, cached, rc);
				TST_CHECK(ok);
				free(png);
				capture_png_state_free(st);
			}
			frame_unref(f);
		}
	}
}

/* The encoder alone: streams of calls joined (as the bands are) inflate to
 * the input, stored (random) or Huffman (runs), at sizes around the stored
 * block limit and the longest match. */
static void test_deflate(void)
{
	size_t lens[] = { 0, 1, 2, 3, 4, 5, 258, 259, 262, 1000, 65535, 65536, 200000 };
	size_t nl = sizeof(lens) / sizeof(lens[0]);
	for (int kind = 0; kind < 4; kind++) {
		size_t total = 0;
		for (size_t i = 0; i < nl; i++)
			total += lens[i];
		uint8_t* in = malloc(total + 1);
		unsigned seed = 99;
		for (size_t j = 0; j < total; j++) {
			seed = seed * 1103515245u + 12345u;
			in[j] = kind == 0 ? (uint8_t)(seed >> 24)	/* noise */
					: kind == 1 ? 0			/* one run */
					: kind == 2 ? (uint8_t)(j % 3 * 50)	/* period 3 */
					: (uint8_t)((seed >> 20) % 7 == 0 ? seed >> 24 : 0);
		}
		uint8_t* out = malloc(capture__deflate_bound(total) + 16 * nl);
		uint16_t* tok = malloc(2 * total + 2);
		size_t at_in = 0, at_out = 0;
		bool ok = true;
		for (size_t i = 0; i < nl; i++) {
			size_t n = capture__deflate_band(in + at_in, lens[i], i == nl - 1, tok,
					out + at_out);
			ok = ok && n <= capture__deflate_bound(lens[i]);
			/* Each call alone, ended, inflates too. */
			uint8_t* one = malloc(capture__deflate_bound(lens[i]));
			size_t m = capture__deflate_band(in + at_in, lens[i], true, tok, one);
			ok = ok && inflates_to(one, m, true, in + at_in, lens[i]);
			free(one);
			at_in += lens[i];
			at_out += n;
		}
		ok = ok && inflates_to(out, at_out, true, in, total);
		if (kind == 1)
			ok = ok && at_out < total / 100;
		if (!ok)
			fprintf(stderr, "deflate kind %d: bad\n", kind);
		TST_CHECK(ok);
		free(in);
		free(out);
		free(tok);
	}
}

static bool frames_equal(const struct frame* a, const struct frame* b)
{
	if (!a || !b || a->width != b->width || a->height != b->height)
		return false;
	for (int y = 0; y < a->height; y++)
		for (int x = 0; x < a->width; x++)
			if (memcmp(at(a, x, y), at(b, x, y), 3) != 0 || at(b, x, y)[3] != 0xff)
				return false;
	return true;
}

/* capture_decode (the thumbnails' input): deskd's own PNGs decode by hand,
 * exactly; one libpng wrote (other filters) still decodes through libpng;
 * a damaged IDAT decodes to nothing. */
static void test_decode(void)
{
	int sizes[][2] = { { 1, 1 }, { 333, 17 }, { 1, 300 }, { 1920, 1080 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int kind = 0; kind < 3; kind++) {
			int w = sizes[i][0], h = sizes[i][1];
			struct frame* f = kind == 0 ? noise(w, h, 5) : kind == 1 ? gradient(w, h)
					: sparse(w, h, 9);
			uint8_t* png = NULL;
			size_t len = 0;
			TST_EQ_INT(capture_encode_png(f, &png, &len), 0);
			struct frame* d = capture_decode(png, len);
			TST_CHECK(frames_equal(f, d));
			frame_unref(d);
			if (len > 60) {
				png[50] ^= 0x40;	/* in the IDAT: its CRC fails */
				TST_CHECK(capture_decode(png, len) == NULL);
			}
			free(png);
			frame_unref(f);
		}
	struct frame* g = gradient(97, 41);
	png_image img;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	img.width = 97;
	img.height = 41;
	img.format = PNG_FORMAT_BGRA;
	png_alloc_size_t n = 0;
	TST_CHECK(png_image_write_to_memory(&img, NULL, &n, 0, g->data, g->stride, NULL));
	uint8_t* buf = malloc(n);
	TST_CHECK(png_image_write_to_memory(&img, buf, &n, 0, g->data, g->stride, NULL));
	for (int y = 0; y < 41; y++)
		for (int x = 0; x < 97; x++)
			g->data[(size_t)y * (size_t)g->stride + (size_t)x * 4 + 3] = 0xff;
	struct frame* d = capture_decode(buf, n);
	TST_CHECK(frames_equal(g, d));
	frame_unref(d);
	free(buf);
	frame_unref(g);
}

/* Every pixel of d is the rounded average of its k x k block of f (fewer
 * at the right and bottom edges). */
static bool reduced_of(const struct frame* f, const struct frame* d, int k)
{
	bool ok = d->width == (f->width + k - 1) / k && d->height == (f->height + k - 1) / k;
	for (int oy = 0; ok && oy < d->height; oy++)
		for (int ox = 0; ox < d->width; ox++)
			for (int c = 0; c < 3; c++) {
				unsigned sum = 0, n = 0;
				for (int y = oy * k; y < oy * k + k && y < f->height; y++)
					for (int x = ox * k; x < ox * k + k && x < f->width; x++, n++)
						sum += at(f, x, y)[c];
				ok = ok && at(d, ox, oy)[c] == (sum + n / 2) / n && at(d, ox, oy)[3] == 0xff;
			}
	return ok;
}

/* capture_decode_reduced (thumbnails): an own PNG comes back as k x k
 * averages (rounded; partial blocks at the edges), at least side pixels on
 * its longer side, with the image's own size; a JPEG through the decoder's
 * scaling; a side larger than the image: full size. */
static void test_decode_reduced(void)
{
	struct frame* f = noise(1283, 801, 3);
	uint8_t* png = NULL;
	size_t len = 0;
	TST_EQ_INT(capture_encode_png(f, &png, &len), 0);
	int w = 0, h = 0;
	struct frame* d = capture_decode_reduced(png, len, 240, &w, &h);
	TST_CHECK(d != NULL);
	TST_EQ_INT(w, 1283);
	TST_EQ_INT(h, 801);
	TST_EQ_INT(d->width, 257);	/* k = 5: ceil(1283 / 5) */
	TST_EQ_INT(d->height, 161);
	TST_CHECK(reduced_of(f, d, 5));
	frame_unref(d);
	/* The largest block (k = 8), white at its brightest: its sums fill
	 * the most bits. */
	{
		struct frame* big = noise(1930, 1085, 9);
		for (int y = 0; y < 16; y++)
			memset(big->data + (size_t)y * (size_t)big->stride, 0xff, 4 * (size_t)big->width);
		uint8_t* bp = NULL;
		size_t bl = 0;
		TST_EQ_INT(capture_encode_png(big, &bp, &bl), 0);
		struct frame* bd = capture_decode_reduced(bp, bl, 240, &w, &h);
		TST_CHECK(bd && reduced_of(big, bd, 8));
		frame_unref(bd);
		free(bp);
		frame_unref(big);
	}
	d = capture_decode_reduced(png, len, 2000, &w, &h);
	TST_CHECK(d && d->width == 1283 && d->height == 801 && frames_equal(f, d));
	frame_unref(d);
	free(png);
	uint8_t* jpg = NULL;
	TST_EQ_INT(capture_encode_jpeg(f, 80, &jpg, &len), 0);
	d = capture_decode_reduced(jpg, len, 240, &w, &h);
	TST_CHECK(d != NULL);
	TST_EQ_INT(w, 1283);
	TST_EQ_INT(d->width, 321);	/* 1/4: the smallest of m/8 at 240 or more */
	TST_EQ_INT(d->height, 201);
	frame_unref(d);
	free(jpg);
	frame_unref(f);
}

/* The PNG header read by hand: deskd's own PNGs parse to their size; each
 * broken field is refused with a reason; the CRC is checked. */
static void test_png_header(void)
{
	struct frame* f = gradient(7, 3);
	uint8_t* png = NULL;
	size_t len = 0;
	TST_EQ_INT(capture_encode_png(f, &png, &len), 0);
	frame_unref(f);
	struct capture_png_header h;
	const char* why = "x";
	TST_EQ_INT(capture_png_header(png, len, &h, &why), 0);
	TST_CHECK(why == NULL);
	TST_EQ_INT(h.width, 7);
	TST_EQ_INT(h.height, 3);
	TST_EQ_INT(h.bit_depth, 8);
	TST_EQ_INT(h.color_type, 2);
	TST_EQ_INT(capture_png_header(png, CAPTURE_PNG_HEADER_BYTES, &h, &why), 0);
	TST_EQ_INT(capture_png_header(png, CAPTURE_PNG_HEADER_BYTES - 1, &h, &why), -EINVAL);
	TST_CHECK(strstr(why, "cut short") != NULL);
	TST_EQ_INT(capture_png_header(NULL, 0, &h, &why), -EINVAL);
	TST_EQ_INT(capture_png_header("GIF89a", 6, &h, &why), -EINVAL);
	/* Each byte of the IHDR (type, fields, CRC) flipped: refused (the CRC
	 * covers the type and the fields). */
	for (size_t i = 12; i < CAPTURE_PNG_HEADER_BYTES; i++) {
		uint8_t b[CAPTURE_PNG_HEADER_BYTES];
		memcpy(b, png, sizeof(b));
		b[i] ^= 0x10;
		if (capture_png_header(b, sizeof(b), &h, &why) != -EINVAL) {
			fprintf(stderr, "png header: byte %zu flipped was accepted\n", i);
			TST_CHECK(false);
		}
	}
	free(png);
	/* Fields with a right CRC: 50000x50000 parses (the caller decides on
	 * size); a depth the colour type forbids does not. A CRC-32 of the
	 * IHDR is computed here the same way as the PNG spec's sample code. */
	static const uint8_t bomb[CAPTURE_PNG_HEADER_BYTES] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
		0x00, 0x00, 0xc3, 0x50, 0x00, 0x00, 0xc3, 0x50, 8, 6, 0, 0, 0,
	};
	uint8_t b[CAPTURE_PNG_HEADER_BYTES];
	memcpy(b, bomb, sizeof(b));
	uint32_t c = 0xffffffffu;
	for (int i = 12; i < 29; i++) {
		c ^= b[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	c ^= 0xffffffffu;
	b[29] = (uint8_t)(c >> 24);
	b[30] = (uint8_t)(c >> 16);
	b[31] = (uint8_t)(c >> 8);
	b[32] = (uint8_t)c;
	TST_EQ_INT(capture_png_header(b, sizeof(b), &h, &why), 0);
	TST_EQ_INT(h.width, 50000);
	TST_EQ_INT(h.height, 50000);
	TST_EQ_INT(h.color_type, 6);
}

static struct frame* copy(const struct frame* f)
{
	struct capture_rect all = { 0, 0, f->width, f->height };
	return capture_crop(f, &all);
}

static void test_png_cached(void)
{
	struct capture_png_state* st = NULL;
	struct frame* a = noise(640, 480, 3);
	uint8_t *p1, *p2, *p3;
	size_t l1, l2, l3;
	TST_EQ_INT(capture_encode_png_cached(&st, a, &p1, &l1), 0);
	TST_CHECK(st != NULL);
	TST_EQ_INT(capture_png_state_reused(st), 0);
	TST_CHECK(png_matches(a, p1, l1));

	/* Same pixels, new frame: every band reused, same bytes. */
	struct frame* b = copy(a);
	TST_EQ_INT(capture_encode_png_cached(&st, b, &p2, &l2), 0);
	TST_EQ_INT(capture_png_state_reused(st), 480 / 32);
	TST_CHECK(l1 == l2 && memcmp(p1, p2, l1) == 0);

	/* One pixel changes: one or two bands (the next one uses it as its
	 * dictionary) are deflated again, and the image is exact. */
	struct frame* c = copy(b);
	put(c, 300, 250, 1, 2, 3);
	TST_EQ_INT(capture_encode_png_cached(&st, c, &p3, &l3), 0);
	int reused = capture_png_state_reused(st);
	TST_CHECK(reused >= 480 / 32 - 2 && reused <= 480 / 32 - 1);
	TST_CHECK(png_matches(c, p3, l3));
	free(p1);
	free(p2);
	free(p3);

	/* Changes at the very top and bottom, then a new size: still exact. */
	struct frame* d = copy(c);
	put(d, 0, 0, 9, 9, 9);
	put(d, 639, 479, 7, 7, 7);
	TST_EQ_INT(capture_encode_png_cached(&st, d, &p1, &l1), 0);
	TST_CHECK(png_matches(d, p1, l1));
	free(p1);
	struct frame* e = gradient(333, 100);
	TST_EQ_INT(capture_encode_png_cached(&st, e, &p1, &l1), 0);
	TST_EQ_INT(capture_png_state_reused(st), 0);
	TST_CHECK(png_matches(e, p1, l1));
	free(p1);
	capture_png_state_free(st);
	capture_png_state_free(NULL);
	frame_unref(a);
	frame_unref(b);
	frame_unref(c);
	frame_unref(d);
	frame_unref(e);
}

static void test_jpeg(void)
{
	struct frame* f = gradient(320, 240);
	uint8_t* jpg = NULL;
	size_t len = 0;
	TST_EQ_INT(capture_encode_jpeg(f, 90, &jpg, &len), 0);
	TST_CHECK(len > 2 && jpg[0] == 0xff && jpg[1] == 0xd8);
	tjhandle tj = tjInitDecompress();
	int w = 0, h = 0, sub = 0, cs = 0;
	TST_EQ_INT(tjDecompressHeader3(tj, jpg, (unsigned long)len, &w, &h, &sub, &cs), 0);
	TST_EQ_INT(w, 320);
	TST_EQ_INT(h, 240);
	uint8_t* rgb = malloc((size_t)w * (size_t)h * 3);
	TST_EQ_INT(tjDecompress2(tj, jpg, (unsigned long)len, rgb, w, 0, h, TJPF_RGB, 0), 0);
	/* A smooth gradient survives q90 closely. */
	double err = 0;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			for (int c = 0; c < 3; c++)
				err += fabs((double)rgb[((size_t)y * (size_t)w + (size_t)x) * 3 + (size_t)c]
						- at(f, x, y)[2 - c]);
	err /= (double)w * h * 3;
	TST_CHECK(err < 3.0);
	free(rgb);
	tjDestroy(tj);
	free(jpg);
	uint8_t* none;
	size_t nl;
	TST_EQ_INT(capture_encode_jpeg(f, 0, &none, &nl), -22);
	TST_EQ_INT(capture_encode_jpeg(f, 101, &none, &nl), -22);
	frame_unref(f);
}

/* A JPEG decoded to RGB (malloc'd), or NULL. */
static uint8_t* jpeg_pixels(const uint8_t* jpg, size_t len, int w, int h)
{
	tjhandle tj = tjInitDecompress();
	int jw = 0, jh = 0, sub = 0, cs = 0;
	uint8_t* rgb = malloc((size_t)w * (size_t)h * 3);
	if (tjDecompressHeader3(tj, jpg, (unsigned long)len, &jw, &jh, &sub, &cs) != 0
			|| jw != w || jh != h
			|| tjDecompress2(tj, jpg, (unsigned long)len, rgb, w, 0, h, TJPF_RGB, 0) != 0) {
		free(rgb);
		rgb = NULL;
	}
	tjDestroy(tj);
	return rgb;
}

/* The JPEG kept in rows decodes to the very pixels of a whole-image
 * encode: at first, and after a band of rows changed and only it was
 * encoded again (odd sizes: a last row of MCUs cut short, both ways). */
static void test_jpeg_rows(void)
{
	int sizes[][2] = { { 320, 240 }, { 333, 203 } };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		int w = sizes[k][0], h = sizes[k][1];
		struct frame* f = noise(w, h, 7);
		struct capture_jpeg_rows* rows = capture_jpeg_rows_new();
		uint8_t* a = NULL, * b = NULL;
		size_t al = 0, bl = 0;
		TST_CHECK(!capture_jpeg_rows_ready(rows, w, h, 70));
		struct frame* row = frame_new(w, 16);
		TST_EQ_INT(capture_jpeg_rows_encode(rows, row, 16, h, 70, &a, &al), -ESTALE);
		TST_EQ_INT(capture_jpeg_rows_encode(rows, f, 16, h, 70, &a, &al), -EINVAL);
		frame_unref(row);
		TST_EQ_INT(capture_jpeg_rows_encode(rows, f, 0, h, 70, &a, &al), 0);
		TST_CHECK(capture_jpeg_rows_ready(rows, w, h, 70));
		TST_CHECK(!capture_jpeg_rows_ready(rows, w, h, 71));
		TST_EQ_INT(capture_encode_jpeg(f, 70, &b, &bl), 0);
		uint8_t* pa = jpeg_pixels(a, al, w, h), * pb = jpeg_pixels(b, bl, w, h);
		TST_CHECK(pa && pb && memcmp(pa, pb, (size_t)w * (size_t)h * 3) == 0);
		free(a);
		free(b);
		free(pa);
		free(pb);

		/* Rows 32..63 change, and then the last rows. */
		int bands[][2] = { { 32, 32 }, { (h - 1) / 16 * 16, h - (h - 1) / 16 * 16 } };
		for (size_t j = 0; j < 2; j++) {
			int y0 = bands[j][0], bh = bands[j][1];
			for (int y = y0; y < y0 + bh; y++)
				for (int x = 0; x < w; x++)
					put(f, x, y, (uint8_t)(x * 3), (uint8_t)(y * 5), (uint8_t)(j * 90));
			struct frame* band = frame_new(w, bh);
			for (int y = 0; y < bh; y++)
				memcpy(band->data + (size_t)y * band->stride,
						f->data + (size_t)(y0 + y) * f->stride, (size_t)w * 4);
			TST_EQ_INT(capture_jpeg_rows_encode(rows, band, y0, h, 70, &a, &al), 0);
			TST_EQ_INT(capture_encode_jpeg(f, 70, &b, &bl), 0);
			pa = jpeg_pixels(a, al, w, h);
			pb = jpeg_pixels(b, bl, w, h);
			TST_CHECK(pa && pb && memcmp(pa, pb, (size_t)w * (size_t)h * 3) == 0);
			free(a);
			free(b);
			free(pa);
			free(pb);
			frame_unref(band);
		}
		capture_jpeg_rows_free(rows);
		frame_unref(f);
	}
	capture_jpeg_rows_free(NULL);
}

/* A whole JPEG encoded in strips on several threads decodes to the very
 * pixels of one libturbojpeg encode of the image (odd sizes: strips and a
 * last MCU row cut short; tall, wide and narrow). */
static void test_jpeg_strips(void)
{
	int sizes[][2] = { { 1920, 1080 }, { 333, 1003 }, { 1280, 800 }, { 100, 600 }, { 2560, 1600 } };
	bool split = sysconf(_SC_NPROCESSORS_ONLN) > 1;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		int w = sizes[k][0], h = sizes[k][1];
		struct frame* f = noise(w, h, 11 + (int)k);
		for (int y = 0; y < h / 2; y++)	/* half noise, half smooth */
			for (int x = 0; x < w; x++)
				put(f, x, y, (uint8_t)x, (uint8_t)(y * 3), (uint8_t)(x + y));
		uint8_t* a = NULL;
		size_t al = 0;
		TST_EQ_INT(capture_encode_jpeg(f, 80, &a, &al), 0);
		tjhandle tj = tjInitCompress();
		unsigned char* b = NULL;
		unsigned long bl = 0;
		TST_EQ_INT(tjCompress2(tj, f->data, w, f->stride, h, TJPF_BGRX, &b, &bl, TJSAMP_420, 80,
				TJFLAG_FASTDCT), 0);
		tjDestroy(tj);
		uint8_t* pa = jpeg_pixels(a, al, w, h), * pb = jpeg_pixels(b, bl, w, h);
		TST_CHECK(pa && pb && memcmp(pa, pb, (size_t)w * (size_t)h * 3) == 0);
		/* It was split: a restart interval is defined (DRI). */
		bool dri = false;
		for (size_t i = 0; i + 1 < al && i < 1024; i++)
			dri = dri || (a[i] == 0xff && a[i + 1] == 0xdd);
		TST_CHECK(dri == (split && h >= 512));
		/* A feed's rows, encoded on several threads too: the whole image,
		 * then a tall band of it changed. */
		struct capture_jpeg_rows* rows = capture_jpeg_rows_new();
		uint8_t* r = NULL, * pr = NULL;
		size_t rl = 0;
		TST_EQ_INT(capture_jpeg_rows_encode(rows, f, 0, h, 80, &r, &rl), 0);
		TST_CHECK((pr = jpeg_pixels(r, rl, w, h)) && pb && memcmp(pr, pb, (size_t)w * (size_t)h * 3) == 0);
		free(r);
		free(pr);
		int y0 = 16, bh = (h - 16) / 16 * 16;
		for (int y = y0; y < y0 + bh; y++)
			for (int x = 0; x < w; x++)
				put(f, x, y, (uint8_t)(x ^ y), (uint8_t)(y * 7), (uint8_t)(x * 5));
		struct frame* band = frame_new(w, bh);
		for (int y = 0; y < bh; y++)
			memcpy(band->data + (size_t)y * band->stride, f->data + (size_t)(y0 + y) * f->stride,
					(size_t)w * 4);
		TST_EQ_INT(capture_jpeg_rows_encode(rows, band, y0, h, 80, &r, &rl), 0);
		free(a);
		TST_EQ_INT(capture_encode_jpeg(f, 80, &a, &al), 0);
		free(pa);
		pa = jpeg_pixels(a, al, w, h);
		TST_CHECK((pr = jpeg_pixels(r, rl, w, h)) && pa && memcmp(pr, pa, (size_t)w * (size_t)h * 3) == 0);
		free(r);
		free(pr);
		frame_unref(band);
		capture_jpeg_rows_free(rows);
		free(a);
		tjFree(b);
		free(pa);
		free(pb);
		frame_unref(f);
	}
}

static void test_no_display(void)
{
	char err[256] = "";
	/* A display that cannot exist: a clear error, no exit. */
	struct capture* c = capture_create(":65000", err, sizeof(err));
	TST_CHECK(c == NULL);
	TST_CHECK(strstr(err, ":65000") != NULL);
	capture_destroy(NULL);
}

int main(void)
{
	test_frames();
	test_crop();
	test_scale();
	test_scale_reference();
	test_png();
	test_png_odd();
	test_deflate();
	test_decode();
	test_decode_reduced();
	test_png_header();
	test_png_cached();
	test_jpeg();
	test_jpeg_rows();
	test_jpeg_strips();
	test_no_display();
	TST_END();
}
