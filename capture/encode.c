/* PNG and JPEG encoders.
 *
 * PNG is written by hand (PITFALLS 28a): signature, IHDR, one IDAT, IEND.
 * The filtered RGB rows are split into bands; each band is converted from
 * BGRX and deflated (zlib level 1, raw deflate) on its own thread, ended with
 * a sync flush (byte aligned, not final) except the last; the bands are then
 * concatenated behind one zlib header, and the Adler-32 is combined with
 * adler32_combine. Band k > 0 is primed with the last 32 KiB of band k-1's
 * input as a dictionary, so the split costs almost no compression. */
#include "capture/capture.h"
#include "capture/bufpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <unistd.h>
#include <zlib.h>

#define PNG_MAX_BANDS 4
#define PNG_MIN_BAND_ROWS 64
/* PNG filter type used for every row: 2 (Up) compresses UI well and costs
 * one subtraction per byte (PITFALLS 28). */
#define PNG_FILTER_UP 2

struct band {
	const struct frame* src;
	int y0, y1;		/* source rows [y0, y1) */
	uint8_t* raw;		/* filtered rows: 1 + 3*w bytes each */
	size_t raw_len, raw_cap;
	uint8_t* out;		/* raw deflate stream */
	size_t out_len, out_cap;
	uLong adler;
	bool last;
	int rc;
};

/* BGRX row -> RGB row. */
static void bgrx_to_rgb(uint8_t* dst, const uint8_t* src, int w)
{
	for (int x = 0; x < w; x++) {
		dst[3 * x + 0] = src[4 * x + 2];
		dst[3 * x + 1] = src[4 * x + 1];
		dst[3 * x + 2] = src[4 * x + 0];
	}
}

/* Filter Up: each byte minus the byte above (the row before y0 of this band
 * is converted again, so bands are independent). */
static int band_filter(struct band* b)
{
	const struct frame* f = b->src;
	size_t rowlen = 1 + 3 * (size_t)f->width;
	b->raw_len = rowlen * (size_t)(b->y1 - b->y0);
	b->raw = capture__buf_get(b->raw_len, &b->raw_cap);
	uint8_t* prev = calloc(1, 3 * (size_t)f->width);
	uint8_t* cur = malloc(3 * (size_t)f->width);
	if (!b->raw || !prev || !cur) {
		free(prev);
		free(cur);
		return -ENOMEM;
	}
	if (b->y0 > 0)
		bgrx_to_rgb(prev, f->data + (size_t)(b->y0 - 1) * (size_t)f->stride, f->width);
	for (int y = b->y0; y < b->y1; y++) {
		uint8_t* dst = b->raw + rowlen * (size_t)(y - b->y0);
		bgrx_to_rgb(cur, f->data + (size_t)y * (size_t)f->stride, f->width);
		dst[0] = PNG_FILTER_UP;
		for (size_t i = 0; i < 3 * (size_t)f->width; i++)
			dst[1 + i] = (uint8_t)(cur[i] - prev[i]);
		uint8_t* t = prev;
		prev = cur;
		cur = t;
	}
	free(prev);
	free(cur);
	return 0;
}

static int band_deflate(struct band* b, const uint8_t* dict, size_t dict_len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	int rc = 0;
	if (dict_len && deflateSetDictionary(&z, dict, (uInt)dict_len) != Z_OK) {
		rc = -EIO;
		goto done;
	}
	size_t cap = deflateBound(&z, b->raw_len) + 64;
	b->out = capture__buf_get(cap, &b->out_cap);
	if (!b->out) {
		rc = -ENOMEM;
		goto done;
	}
	z.next_in = b->raw;
	z.avail_in = (uInt)b->raw_len;
	z.next_out = b->out;
	z.avail_out = (uInt)cap;
	int zr = deflate(&z, b->last ? Z_FINISH : Z_SYNC_FLUSH);
	if ((b->last && zr != Z_STREAM_END) || (!b->last && (zr != Z_OK || z.avail_in))) {
		rc = -EIO;
		goto done;
	}
	b->out_len = cap - z.avail_out;
	b->adler = adler32(adler32(0L, Z_NULL, 0), b->raw, (uInt)b->raw_len);
done:
	deflateEnd(&z);
	return rc;
}

static void* band_run(void* ud)
{
	struct band* b = ud;
	b->rc = band_filter(b);
	if (b->rc == 0) {
		/* The dictionary: the filtered rows just before this band. Cheap
		 * to recompute locally: filter up to 32 KiB worth of rows. */
		const uint8_t* dict = NULL;
		size_t dict_len = 0;
		struct band pre = { .src = b->src };
		if (b->y0 > 0) {
			size_t rowlen = 1 + 3 * (size_t)b->src->width;
			int rows = (int)((32768 + rowlen - 1) / rowlen);
			pre.y0 = b->y0 - rows < 0 ? 0 : b->y0 - rows;
			pre.y1 = b->y0;
			if (band_filter(&pre) == 0) {
				dict_len = pre.raw_len > 32768 ? 32768 : pre.raw_len;
				dict = pre.raw + pre.raw_len - dict_len;
			}
		}
		b->rc = band_deflate(b, dict, dict_len);
		capture__buf_put(pre.raw, pre.raw_cap);
	}
	return NULL;
}

static void put32(uint8_t* p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Append a chunk: length, type, data, CRC over type + data. */
static uint8_t* put_chunk(uint8_t* p, const char* type, const uint8_t* data,
		size_t len, const struct band* bands, int n_bands)
{
	put32(p, (uint32_t)len);
	memcpy(p + 4, type, 4);
	uLong crc = crc32(0L, (const Bytef*)type, 4);
	p += 8;
	if (!bands) {
		if (len) {
			memcpy(p, data, len);
			crc = crc32(crc, data, (uInt)len);
			p += len;
		}
	} else {
		/* IDAT from bands: zlib header, bands, adler. */
		const uint8_t* start = p;
		*p++ = 0x78;
		*p++ = 0x01;
		uLong adler = 1;
		for (int i = 0; i < n_bands; i++) {
			memcpy(p, bands[i].out, bands[i].out_len);
			p += bands[i].out_len;
			adler = i == 0 ? bands[i].adler
					: adler32_combine(adler, bands[i].adler, (z_off_t)bands[i].raw_len);
		}
		put32(p, (uint32_t)adler);
		p += 4;
		crc = crc32(crc, start, (uInt)(p - start));
	}
	put32(p, (uint32_t)crc);
	return p + 4;
}

static int png_bands(int height)
{
	static int cpus;
	if (!cpus) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		cpus = n < 1 ? 1 : n > PNG_MAX_BANDS ? PNG_MAX_BANDS : (int)n;
	}
	int n = height / PNG_MIN_BAND_ROWS;
	if (n < 1)
		n = 1;
	return n < cpus ? n : cpus;
}

int capture_encode_png(const struct frame* src, uint8_t** out, size_t* len)
{
	*out = NULL;
	*len = 0;
	if (!src || src->width <= 0 || src->height <= 0)
		return -EINVAL;
	struct band bands[PNG_MAX_BANDS];
	pthread_t threads[PNG_MAX_BANDS];
	bool started[PNG_MAX_BANDS] = { false };
	int n = png_bands(src->height);
	memset(bands, 0, sizeof(bands));
	for (int i = 0; i < n; i++) {
		bands[i].src = src;
		bands[i].y0 = (int)((int64_t)src->height * i / n);
		bands[i].y1 = (int)((int64_t)src->height * (i + 1) / n);
		bands[i].last = i == n - 1;
	}
	/* Band 0 runs here; the others on their own threads (or here too if a
	 * thread cannot be started). */
	for (int i = 1; i < n; i++)
		started[i] = pthread_create(&threads[i], NULL, band_run, &bands[i]) == 0;
	band_run(&bands[0]);
	for (int i = 1; i < n; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			band_run(&bands[i]);
	}
	int rc = 0;
	size_t idat = 2 + 4;
	for (int i = 0; i < n; i++) {
		if (bands[i].rc < 0 && rc == 0)
			rc = bands[i].rc;
		idat += bands[i].out_len;
	}
	if (rc < 0)
		goto done;

	uint8_t ihdr[13];
	put32(ihdr, (uint32_t)src->width);
	put32(ihdr + 4, (uint32_t)src->height);
	ihdr[8] = 8;	/* bit depth */
	ihdr[9] = 2;	/* colour type RGB */
	ihdr[10] = 0;	/* deflate */
	ihdr[11] = 0;	/* adaptive filtering (per-row filter bytes) */
	ihdr[12] = 0;	/* no interlace */
	size_t total = 8 + (12 + 13) + (12 + idat) + 12;
	uint8_t* buf = malloc(total);
	if (!buf) {
		rc = -ENOMEM;
		goto done;
	}
	static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	memcpy(buf, sig, 8);
	uint8_t* p = buf + 8;
	p = put_chunk(p, "IHDR", ihdr, 13, NULL, 0);
	p = put_chunk(p, "IDAT", NULL, idat, bands, n);
	p = put_chunk(p, "IEND", NULL, 0, NULL, 0);
	*out = buf;
	*len = (size_t)(p - buf);
done:
	for (int i = 0; i < n; i++) {
		capture__buf_put(bands[i].raw, bands[i].raw_cap);
		capture__buf_put(bands[i].out, bands[i].out_cap);
	}
	return rc;
}

int capture_encode_jpeg(const struct frame* src, int quality, uint8_t** out,
		size_t* len)
{
	*out = NULL;
	*len = 0;
	if (!src || src->width <= 0 || src->height <= 0 || quality < 1 || quality > 100)
		return -EINVAL;
	/* One compressor per thread, kept for the thread's lifetime would need
	 * a destructor; tjInitCompress is cheap next to the encode. */
	tjhandle tj = tjInitCompress();
	if (!tj)
		return -ENOMEM;
	unsigned long cap = tjBufSize(src->width, src->height, TJSAMP_420);
	size_t buf_cap;
	unsigned char* buf = capture__buf_get(cap, &buf_cap);
	int rc = 0;
	if (!buf) {
		rc = -ENOMEM;
		goto done;
	}
	unsigned long size = cap;
	if (tjCompress2(tj, src->data, src->width, src->stride, src->height,
			TJPF_BGRX, &buf, &size, TJSAMP_420, quality,
			TJFLAG_NOREALLOC | TJFLAG_FASTDCT) != 0) {
		rc = -EIO;
		goto copy_done;
	}
	*out = malloc(size ? size : 1);
	if (!*out) {
		rc = -ENOMEM;
		goto copy_done;
	}
	memcpy(*out, buf, size);
	*len = size;
copy_done:
	capture__buf_put(buf, buf_cap);
done:
	tjDestroy(tj);
	return rc;
}
