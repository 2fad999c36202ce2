/* PNG and JPEG encoders.
 *
 * PNG is written by hand (PITFALLS 28a): signature, IHDR, one IDAT, IEND.
 * The rows are split into bands; on its own thread each band is converted
 * from BGRX and filtered (Up) in one pass, then deflated by
 * capture/deflate.c (runs only: several times faster than zlib level 1 on
 * screens), ending byte aligned and open except the last; the bands are
 * then concatenated behind one zlib header (RFC 1950), and their Adler-32s
 * combined. A band depends only on its rows and the row above it, so a
 * state can keep the bands an unchanged part of the screen gave.
 *
 * JPEG is libturbojpeg's, in parts: a whole image in strips of MCU rows,
 * one per core, and a live feed's image in rows kept between frames; the
 * parts' scans are joined with restart markers (PITFALLS 29). */
#include "capture/capture.h"
#include "capture/bufpool.h"
#include "capture/deflate.h"
#include "base/parallel.h"

#include <errno.h>
#include <libdeflate.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <unistd.h>
#include <zlib.h>

/* A whole JPEG is encoded in strips of rows, one per core, from this many
 * rows each (below it, one thread is as fast). */
#define JPEG_STRIP_MIN_ROWS 256
#define PNG_STATE_BANDS 16
#define PNG_MIN_BAND_ROWS 32
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
	bool reused;		/* taken from a state: out is borrowed */
	struct frame* keep;	/* its rows copied here as they are read, or NULL */
	int rc;
};

/* BGRX -> RGB and filter Up in one pass: each byte minus the one above (the
 * row above y0 is read again, so bands are independent). The first row of
 * the image has zeros above it. */
static void filter_up_row(uint8_t* dst, const uint8_t* s, const uint8_t* up, int w)
{
	dst[0] = PNG_FILTER_UP;
	dst++;
	if (!up) {
		for (int x = 0; x < w; x++) {
			dst[3 * x + 0] = s[4 * x + 2];
			dst[3 * x + 1] = s[4 * x + 1];
			dst[3 * x + 2] = s[4 * x + 0];
		}
		return;
	}
	int x = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* Two pixels per 64-bit word (gcc leaves the byte loop scalar, and it
	 * was half the encode): subtract bytewise without carries between
	 * them, then each BGRX word reversed is XRGB, RGB once shifted; the
	 * 8-byte store spills 2 bytes the next one overwrites. */
	const uint64_t H = 0x8080808080808080ull;
	for (; x + 3 <= w; x += 2) {
		uint64_t a, b;
		memcpy(&a, s + 4 * x, 8);
		memcpy(&b, up + 4 * x, 8);
		uint64_t d = ((a | H) - (b & ~H)) ^ ((a ^ ~b) & H);
		uint64_t o = __builtin_bswap32((uint32_t)d) >> 8
				| (uint64_t)(__builtin_bswap32((uint32_t)(d >> 32)) >> 8) << 24;
		memcpy(dst + 3 * x, &o, 8);
	}
#endif
	for (; x < w; x++) {
		dst[3 * x + 0] = (uint8_t)(s[4 * x + 2] - up[4 * x + 2]);
		dst[3 * x + 1] = (uint8_t)(s[4 * x + 1] - up[4 * x + 1]);
		dst[3 * x + 2] = (uint8_t)(s[4 * x + 0] - up[4 * x + 0]);
	}
}

static int band_filter(struct band* b)
{
	const struct frame* f = b->src;
	size_t rowlen = 1 + 3 * (size_t)f->width;
	b->raw_len = rowlen * (size_t)(b->y1 - b->y0);
	b->raw = capture__buf_get(b->raw_len, &b->raw_cap);
	if (!b->raw)
		return -ENOMEM;
	for (int y = b->y0; y < b->y1; y++) {
		const uint8_t* s = f->data + (size_t)y * (size_t)f->stride;
		if (b->keep)
			memcpy(b->keep->data + (size_t)y * (size_t)b->keep->stride, s,
					4 * (size_t)f->width);
		filter_up_row(b->raw + rowlen * (size_t)(y - b->y0), s,
				y > 0 ? s - f->stride : NULL, f->width);
	}
	return 0;
}

static int band_deflate(struct band* b)
{
	b->out = capture__buf_get(capture__deflate_bound(b->raw_len), &b->out_cap);
	size_t tok_cap;
	uint16_t* tok = capture__buf_get(b->raw_len * sizeof(uint16_t), &tok_cap);
	if (!b->out || !tok) {
		capture__buf_put(tok, tok_cap);
		return -ENOMEM;
	}
	b->out_len = capture__deflate_band(b->raw, b->raw_len, b->last, tok, b->out);
	capture__buf_put(tok, tok_cap);
	b->adler = libdeflate_adler32(1, b->raw, b->raw_len);
	return 0;
}

/* keep: the band's output moved into a buffer of its size (for a state to
 * keep), and the worst-case one given back at once. The filtered rows go
 * back as soon as they are deflated: a band's buffers then live only while
 * its thread works on it, not until the image is joined. */
static void band_run(struct band* b, bool keep)
{
	b->rc = band_filter(b);
	if (b->rc == 0)
		b->rc = band_deflate(b);
	capture__buf_put(b->raw, b->raw_cap);
	b->raw = NULL;
	if (b->rc == 0 && keep) {
		uint8_t* exact = malloc(b->out_len ? b->out_len : 1);
		if (exact)
			memcpy(exact, b->out, b->out_len);
		else
			b->rc = -ENOMEM;
		capture__buf_put(b->out, b->out_cap);
		b->out = exact;
		b->out_cap = 0;
	}
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
	uint32_t crc = libdeflate_crc32(0, type, 4);
	p += 8;
	if (!bands) {
		if (len) {
			memcpy(p, data, len);
			crc = libdeflate_crc32(crc, data, len);
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
		crc = libdeflate_crc32(crc, start, (size_t)(p - start));
	}
	put32(p, (uint32_t)crc);
	return p + 4;
}

/* Bands to deflate, shared by the threads: each takes the next one. */
struct png_job {
	struct band* bands;
	int n;
	bool keep;	/* for a state: see band_run */
	atomic_int next;
};

static void png_job_run(void* ud)
{
	struct png_job* job = ud;
	for (;;) {
		int i = atomic_fetch_add(&job->next, 1);
		if (i >= job->n)
			return;
		if (!job->bands[i].reused)
			band_run(&job->bands[i], job->keep);
	}
}

/* What a state keeps of each band of the previous image. */
struct png_saved {
	uint8_t* out;
	size_t out_len, raw_len;
	uLong adler;
};

struct capture_png_state {
	struct frame* prev;
	int width, height, n;
	struct png_saved saved[PNG_STATE_BANDS];
	int reused;
};

static void saved_release(struct png_saved* s)
{
	free(s->out);
	memset(s, 0, sizeof(*s));
}

void capture_png_state_free(struct capture_png_state* self)
{
	if (!self)
		return;
	for (int i = 0; i < PNG_STATE_BANDS; i++)
		saved_release(&self->saved[i]);
	frame_unref(self->prev);
	free(self);
}

int capture_png_state_reused(const struct capture_png_state* self)
{
	return self ? self->reused : 0;
}

static bool rows_equal(const struct frame* a, const struct frame* b, int y0, int y1)
{
	size_t n = (size_t)a->width * 4;
	for (int y = y0; y < y1; y++)
		if (memcmp(a->data + (size_t)y * (size_t)a->stride,
				b->data + (size_t)y * (size_t)b->stride, n) != 0)
			return false;
	return true;
}

static int png_encode(const struct frame* src, struct capture_png_state** statep,
		uint8_t** out, size_t* len)
{
	*out = NULL;
	*len = 0;
	if (!src || src->width <= 0 || src->height <= 0)
		return -EINVAL;
	struct capture_png_state* state = NULL;
	if (statep) {
		if (!*statep)
			*statep = calloc(1, sizeof(**statep));
		state = *statep;
	}
	/* Without a state: one band per core. With one: more, smaller bands,
	 * so a small change re-deflates little. */
	int n = src->height / PNG_MIN_BAND_ROWS;
	int cap = state ? PNG_STATE_BANDS : parallel_threads();
	n = n < 1 ? 1 : n > cap ? cap : n;
	struct band bands[PNG_STATE_BANDS];
	memset(bands, 0, sizeof(bands));
	bool comparable = state && state->prev && state->width == src->width
			&& state->height == src->height && state->n == n;
	/* A lent frame cannot be kept: the state keeps a copy, which each
	 * band's thread updates with the rows it reads (unchanged bands' rows
	 * are there already), instead of a whole copy up front. */
	struct frame* keep = NULL;
	if (state && src->lent) {
		comparable = comparable && !state->prev->lent
				&& atomic_load_explicit(&state->prev->refs, memory_order_acquire) == 1;
		keep = comparable ? state->prev : frame_new(src->width, src->height);
	}
	int dirty = 0;
	for (int i = 0; i < n; i++) {
		struct band* b = &bands[i];
		b->src = src;
		b->keep = keep;
		b->y0 = (int)((int64_t)src->height * i / n);
		b->y1 = (int)((int64_t)src->height * (i + 1) / n);
		b->last = i == n - 1;
		/* A band's bytes depend on its rows and the row above (Up). */
		int from = b->y0 > 0 ? b->y0 - 1 : 0;
		if (comparable && state->saved[i].out && rows_equal(src, state->prev, from, b->y1)) {
			b->reused = true;
			b->out = state->saved[i].out;
			b->out_len = state->saved[i].out_len;
			b->adler = state->saved[i].adler;
			b->raw_len = state->saved[i].raw_len;
		} else {
			dirty++;
		}
	}
	struct png_job job = { .bands = bands, .n = n, .keep = state != NULL };
	atomic_init(&job.next, 0);
	parallel_run(png_job_run, &job, 0, parallel_threads() < dirty ? parallel_threads() : dirty);

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

	if (state) {
		/* Keep the new bands (band_run moved each into a buffer of its
		 * size: the worst-case ones are the rows' size, what they hold
		 * is mostly far less). */
		if (!comparable)
			for (int i = 0; i < PNG_STATE_BANDS; i++)
				saved_release(&state->saved[i]);
		state->reused = n - dirty;
		for (int i = 0; i < n; i++) {
			if (bands[i].reused)
				continue;
			saved_release(&state->saved[i]);
			state->saved[i] = (struct png_saved){ bands[i].out, bands[i].out_len,
				bands[i].raw_len, bands[i].adler };
			bands[i].out = NULL;
		}
		if (!keep || keep != state->prev) {
			frame_unref(state->prev);
			state->prev = keep ? keep : frame_ref((struct frame*)src);
		}
		state->width = src->width;
		state->height = src->height;
		state->n = n;
	}
done:
	for (int i = 0; i < n; i++) {
		capture__buf_put(bands[i].raw, bands[i].raw_cap);
		if (bands[i].reused)
			continue;
		if (bands[i].out_cap)
			capture__buf_put(bands[i].out, bands[i].out_cap);
		else
			free(bands[i].out);
	}
	if (rc < 0 && state) {
		/* Start over next time rather than trust a half-updated state. */
		if (keep && keep != state->prev)
			frame_unref(keep);
		frame_unref(state->prev);
		state->prev = NULL;
	}
	return rc;
}

int capture_encode_png(const struct frame* src, uint8_t** out, size_t* len)
{
	return png_encode(src, NULL, out, len);
}

int capture_encode_png_cached(struct capture_png_state** state,
		const struct frame* src, uint8_t** out, size_t* len)
{
	return png_encode(src, state, out, len);
}

/* ---- JPEG in parts: whole images in strips, feeds in rows ---------------- */

/* Where the scan's data starts in a JPEG (after the SOS segment), the SOS
 * marker's offset in *sos and the SOF0's in *sof; 0 if malformed. */
static size_t jpeg_scan_start(const uint8_t* p, size_t len, size_t* sos, size_t* sof)
{
	size_t i = 2;
	*sof = 0;
	while (i + 4 <= len && p[i] == 0xff) {
		uint8_t m = p[i + 1];
		size_t seg = (size_t)p[i + 2] << 8 | p[i + 3];
		if (m == 0xc0)
			*sof = i;
		if (m == 0xda) {
			*sos = i;
			return i + 2 + seg <= len && *sof ? i + 2 + seg : 0;
		}
		i += 2 + seg;
	}
	return 0;
}

#define JPEG_DRI_LEN 6
/* The headers of a JPEG of the first rows (buf, its SOS and SOF0 at sos and
 * sof, its scan from start) made the joined image's, into dst (start +
 * JPEG_DRI_LEN bytes): the whole height in SOF0, then a DRI of interval
 * MCUs (where the parts' scans meet), then the SOS segment. */
static void jpeg_put_header(uint8_t* dst, const uint8_t* buf, size_t sos, size_t sof,
		size_t start, int height, unsigned interval)
{
	memcpy(dst, buf, sos);
	dst[sof + 5] = (uint8_t)(height >> 8);
	dst[sof + 6] = (uint8_t)height;
	uint8_t dri[JPEG_DRI_LEN] = { 0xff, 0xdd, 0, 4, (uint8_t)(interval >> 8), (uint8_t)interval };
	memcpy(dst + sos, dri, JPEG_DRI_LEN);
	memcpy(dst + sos + JPEG_DRI_LEN, buf + sos, start - sos);
}

/* A JPEG of some rows in a pooled buffer, and where its scan is. */
struct jpeg_part {
	unsigned char* buf;
	size_t buf_cap, sos, sof, start;
	unsigned long size;
};

/* One thread's part of a whole JPEG: rows [y0, y0 + h) encoded as a JPEG
 * of their own, whose scan is the part's data (see "JPEG kept in rows"). */
struct jpeg_strip {
	const struct frame* src;
	int y0, h, quality;
	struct jpeg_part part;
	int rc;
};

/* One part: h rows of width pixels as a JPEG of their own in a pooled
 * buffer (part->buf; put it back), its scan found and ending in EOI. 0,
 * -ENOMEM or -EIO. */
static int jpeg_part_encode(tjhandle tj, const uint8_t* pixels, int width, int stride, int h,
		int quality, struct jpeg_part* part)
{
	unsigned long cap = tjBufSize(width, h, TJSAMP_420);
	part->buf = capture__buf_get(cap, &part->buf_cap);
	if (!part->buf)
		return -ENOMEM;
	part->size = cap;
	if (tjCompress2(tj, pixels, width, stride, h, TJPF_BGRX, &part->buf, &part->size,
			TJSAMP_420, quality, TJFLAG_NOREALLOC | TJFLAG_FASTDCT) != 0
			|| (part->start = jpeg_scan_start(part->buf, part->size, &part->sos, &part->sof)) == 0
			|| part->size < part->start + 2 || part->buf[part->size - 2] != 0xff
			|| part->buf[part->size - 1] != 0xd9)
		return -EIO;
	return 0;
}

static void jpeg_strip_run(void* ud)
{
	struct jpeg_strip* s = ud;
	const struct frame* f = s->src;
	tjhandle tj = tjInitCompress();
	s->rc = tj ? jpeg_part_encode(tj, f->data + (size_t)s->y0 * f->stride, f->width, f->stride,
			s->h, s->quality, &s->part) : -ENOMEM;
	if (tj)
		tjDestroy(tj);
}

#define JPEG_MAX_STRIPS PARALLEL_MAX_THREADS

int capture_encode_jpeg(const struct frame* src, int quality, uint8_t** out,
		size_t* len)
{
	*out = NULL;
	*len = 0;
	if (!src || src->width <= 0 || src->height <= 0 || quality < 1 || quality > 100)
		return -EINVAL;
	/* Strips of whole MCU rows (16 pixels at 4:2:0), one per core; their
	 * scans joined with restart markers between them decode to the very
	 * pixels of one encode, since a restart resets the DC predictors as a
	 * new image does and nothing else crosses an MCU row. The interval is
	 * a strip's MCUs, at most 65535. */
	unsigned mcu_cols = ((unsigned)src->width + 15) / 16;
	int mcu_rows = (src->height + 15) / 16;
	int n = src->height / JPEG_STRIP_MIN_ROWS;
	n = n < 1 ? 1 : n > parallel_threads() ? parallel_threads() : n;
	int strip_rows = (mcu_rows + n - 1) / n;
	if (n > 1 && (unsigned)strip_rows * mcu_cols > 65535)
		n = 1;
	if (n > 1)
		n = (mcu_rows + strip_rows - 1) / strip_rows;
	struct jpeg_strip strips[JPEG_MAX_STRIPS];
	memset(strips, 0, sizeof(strips));
	for (int i = 0; i < n; i++) {
		struct jpeg_strip* s = &strips[i];
		s->src = src;
		s->quality = quality;
		s->y0 = n > 1 ? i * strip_rows * 16 : 0;
		s->h = n > 1 && i < n - 1 ? strip_rows * 16 : src->height - s->y0;
	}
	parallel_run(jpeg_strip_run, strips, sizeof(strips[0]), n);
	int rc = 0;
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		if (strips[i].rc < 0 && rc == 0)
			rc = strips[i].rc;
		total += strips[i].part.size;
	}
	uint8_t* p = rc == 0 ? malloc(total + JPEG_DRI_LEN) : NULL;
	if (rc == 0 && !p)
		rc = -ENOMEM;
	if (rc == 0 && n == 1) {
		memcpy(p, strips[0].part.buf, strips[0].part.size);
		*len = strips[0].part.size;
	} else if (rc == 0) {
		const struct jpeg_part* s0 = &strips[0].part;
		jpeg_put_header(p, s0->buf, s0->sos, s0->sof, s0->start, src->height,
				(unsigned)strip_rows * mcu_cols);
		size_t at = s0->start + JPEG_DRI_LEN;
		for (int i = 0; i < n; i++) {
			const struct jpeg_part* s = &strips[i].part;
			size_t scan = s->size - 2 - s->start;	/* up to EOI */
			memcpy(p + at, s->buf + s->start, scan);
			at += scan;
			p[at++] = 0xff;
			p[at++] = (uint8_t)(i + 1 < n ? 0xd0 + i % 8 : 0xd9);
		}
		*len = at;
	}
	for (int i = 0; i < n; i++)
		if (strips[i].part.buf)
			capture__buf_put(strips[i].part.buf, strips[i].part.buf_cap);
	if (rc == 0)
		*out = p;
	return rc;
}

/* ---- JPEG kept in rows ----------------------------------------------------
 *
 * Each row of 16 pixels (one row of 4:2:0 MCUs) is encoded as a JPEG of its
 * own; its entropy-coded data is what the same row would be in a whole-image
 * JPEG with a restart interval of one MCU row, since a restart resets the DC
 * predictors as a new image does. The image is the first row's headers (the
 * height made whole, a DRI added), the rows' data with RST0..7 between them,
 * and EOI: a change re-encodes only the rows it touched. */

struct capture_jpeg_rows {
	int width, height, quality;
	int n_rows;
	uint8_t* header;	/* SOI up to and including SOS */
	size_t header_len;
	struct { uint8_t* data; size_t len; }* rows;
	bool* have;		/* row i encoded */
	tjhandle tj[JPEG_MAX_STRIPS];	/* one per thread that encodes rows */
};

struct capture_jpeg_rows* capture_jpeg_rows_new(void)
{
	return calloc(1, sizeof(struct capture_jpeg_rows));
}

static void jpeg_rows_clear(struct capture_jpeg_rows* self)
{
	for (int i = 0; i < self->n_rows; i++)
		free(self->rows[i].data);
	free(self->rows);
	free(self->have);
	free(self->header);
	self->rows = NULL;
	self->have = NULL;
	self->header = NULL;
	self->header_len = 0;
	self->n_rows = self->width = self->height = self->quality = 0;
}

void capture_jpeg_rows_free(struct capture_jpeg_rows* self)
{
	if (!self)
		return;
	jpeg_rows_clear(self);
	for (int i = 0; i < JPEG_MAX_STRIPS; i++)
		if (self->tj[i])
			tjDestroy(self->tj[i]);
	free(self);
}

bool capture_jpeg_rows_ready(const struct capture_jpeg_rows* self, int width, int height,
		int quality)
{
	if (!self || !self->header || self->width != width || self->height != height
			|| self->quality != quality)
		return false;
	for (int i = 0; i < self->n_rows; i++)
		if (!self->have[i])
			return false;
	return true;
}

/* Encode one row (rows [16 r, 16 r + h) of the image, h <= 16) into slot r
 * with tj; row 0 makes the header, so only its thread writes it. */
static int jpeg_rows_put(struct capture_jpeg_rows* self, tjhandle tj, int r,
		const uint8_t* pixels, int stride, int h)
{
	struct jpeg_part part = { 0 };
	int rc = jpeg_part_encode(tj, pixels, self->width, stride, h, self->quality, &part);
	size_t n = rc == 0 ? part.size - 2 - part.start : 0;	/* up to EOI */
	uint8_t* data = rc == 0 ? malloc(n ? n : 1) : NULL;
	if (rc == 0 && !data)
		rc = -ENOMEM;
	if (rc == 0) {
		memcpy(data, part.buf + part.start, n);
		free(self->rows[r].data);
		self->rows[r].data = data;
		self->rows[r].len = n;
		self->have[r] = true;
	}
	if (rc == 0 && r == 0 && !self->header) {
		size_t len = part.start + JPEG_DRI_LEN;
		uint8_t* hdr = malloc(len);
		if (hdr)
			jpeg_put_header(hdr, part.buf, part.sos, part.sof, part.start, self->height,
					((unsigned)self->width + 15) / 16);
		self->header = hdr;
		self->header_len = hdr ? len : 0;
		rc = hdr ? 0 : -ENOMEM;
	}
	if (part.buf)
		capture__buf_put(part.buf, part.buf_cap);
	return rc;
}

/* One thread's rows of a band: band rows [16 first, 16 end). */
struct jpeg_rows_job {
	struct capture_jpeg_rows* self;
	const struct frame* band;
	int y, first, end;
	tjhandle tj;
	int rc;
};

static void jpeg_rows_run(void* ud)
{
	struct jpeg_rows_job* j = ud;
	const struct frame* band = j->band;
	j->rc = 0;
	for (int r = j->first; r < j->end && j->rc == 0; r++) {
		int by = r * 16, h = band->height - by < 16 ? band->height - by : 16;
		j->rc = jpeg_rows_put(j->self, j->tj, (j->y + by) / 16,
				band->data + (size_t)by * band->stride, band->stride, h);
	}
}

int capture_jpeg_rows_encode(struct capture_jpeg_rows* self, const struct frame* band,
		int y, int height, int quality, uint8_t** out, size_t* len)
{
	*out = NULL;
	*len = 0;
	if (!band || band->width <= 0 || band->height <= 0 || height <= 0 || height > 65535
			|| band->width > 65535 || quality < 1 || quality > 100 || y < 0 || y % 16
			|| y + band->height > height
			|| (y + band->height < height && band->height % 16))
		return -EINVAL;
	bool whole = y == 0 && band->height == height;
	if (!capture_jpeg_rows_ready(self, band->width, height, quality)) {
		if (!whole)
			return -ESTALE;	/* the caller encodes all of it first */
		jpeg_rows_clear(self);
		self->width = band->width;
		self->height = height;
		self->quality = quality;
		self->n_rows = (height + 15) / 16;
		self->rows = calloc((size_t)self->n_rows, sizeof(*self->rows));
		self->have = calloc((size_t)self->n_rows, sizeof(*self->have));
		if (!self->rows || !self->have) {
			jpeg_rows_clear(self);
			return -ENOMEM;
		}
	}
	/* The band's rows in contiguous runs, one per core, as whole images
	 * are (JPEG_STRIP_MIN_ROWS each at least). */
	int rows = (band->height + 15) / 16;
	int n = band->height / JPEG_STRIP_MIN_ROWS;
	n = n < 1 ? 1 : n > parallel_threads() ? parallel_threads() : n;
	struct jpeg_rows_job jobs[JPEG_MAX_STRIPS];
	for (int i = 0; i < n; i++) {
		if (!self->tj[i] && !(self->tj[i] = tjInitCompress()))
			return -ENOMEM;
		jobs[i] = (struct jpeg_rows_job){ .self = self, .band = band, .y = y,
			.first = rows * i / n, .end = rows * (i + 1) / n, .tj = self->tj[i] };
	}
	parallel_run(jpeg_rows_run, jobs, sizeof(jobs[0]), n);
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++)
		rc = jobs[i].rc;
	if (rc < 0) {
		jpeg_rows_clear(self);
		return rc;
	}
	size_t total = self->header_len + 2;
	for (int i = 0; i < self->n_rows; i++)
		total += self->rows[i].len + 2;
	uint8_t* p = malloc(total);
	if (!p)
		return -ENOMEM;
	size_t at = self->header_len;
	memcpy(p, self->header, at);
	for (int i = 0; i < self->n_rows; i++) {
		memcpy(p + at, self->rows[i].data, self->rows[i].len);
		at += self->rows[i].len;
		if (i + 1 < self->n_rows) {
			p[at++] = 0xff;
			p[at++] = (uint8_t)(0xd0 + i % 8);
		}
	}
	p[at++] = 0xff;
	p[at++] = 0xd9;
	*out = p;
	*len = at;
	return 0;
}
