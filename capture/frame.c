/* Frames (reference-counted BGRX buffers), cropping and the area-average
 * downscaler. Pure code: no X. */
#include "capture/capture.h"
#include "capture/bufpool.h"
#include "capture/capture_private.h"
#include "base/parallel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct frame* frame_new(int width, int height)
{
	if (width <= 0 || height <= 0 || width > 32768 || height > 32768)
		return NULL;
	struct frame* self = malloc(sizeof(*self));
	if (!self)
		return NULL;
	self->width = width;
	self->height = height;
	self->stride = width * 4;
	self->lent = false;
	size_t size = (size_t)self->stride * (size_t)height;
	self->data = capture__buf_get(size, &self->capacity);
	if (!self->data) {
		free(self);
		return NULL;
	}
	atomic_init(&self->refs, 1);
	return self;
}

struct frame* capture__frame_lent(uint8_t* data, int width, int height, int stride)
{
	struct frame* self = malloc(sizeof(*self));
	if (!self)
		return NULL;
	*self = (struct frame){ .width = width, .height = height, .stride = stride,
		.data = data, .lent = true };
	atomic_init(&self->refs, 1);
	return self;
}

/* An owned frame of a lent one's pixels, row by row as they are. */
static struct frame* frame_copy(const struct frame* src)
{
	struct frame* f = frame_new(src->width, src->height);
	if (!f)
		return NULL;
	for (int y = 0; y < src->height; y++)
		memcpy(f->data + (size_t)y * (size_t)f->stride,
				src->data + (size_t)y * (size_t)src->stride, (size_t)src->width * 4);
	return f;
}

struct frame* frame_ref(struct frame* self)
{
	if (self && self->lent)
		return frame_copy(self);
	if (self)
		atomic_fetch_add_explicit(&self->refs, 1, memory_order_relaxed);
	return self;
}

void frame_unref(struct frame* self)
{
	if (!self)
		return;
	if (atomic_fetch_sub_explicit(&self->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (!self->lent)
		capture__buf_put(self->data, self->capacity);
	free(self);
}

struct frame* capture_crop(const struct frame* src, const struct capture_rect* rect)
{
	int x0 = rect->x < 0 ? 0 : rect->x;
	int y0 = rect->y < 0 ? 0 : rect->y;
	long x1 = (long)rect->x + rect->width, y1 = (long)rect->y + rect->height;
	if (x1 > src->width)
		x1 = src->width;
	if (y1 > src->height)
		y1 = src->height;
	if (x1 <= x0 || y1 <= y0)
		return NULL;
	struct frame* out = frame_new((int)x1 - x0, (int)y1 - y0);
	if (!out)
		return NULL;
	for (int y = 0; y < out->height; y++)
		memcpy(out->data + (size_t)y * (size_t)out->stride,
				src->data + (size_t)(y0 + y) * (size_t)src->stride + (size_t)x0 * 4,
				(size_t)out->width * 4);
	return out;
}

/* Area averaging, separable: output pixel i covers the source interval
 * [i*s/d, (i+1)*s/d). Each axis gets the same number of taps for every
 * output (padded with zero weights, the window moved left at the far edge)
 * so the inner loops have a fixed trip count the compiler can unroll and
 * vectorise. Weights are fixed point from rounded cumulative coverage, so
 * they sum exactly to 1 << bits and each partial sum is within half a unit:
 * vertical 14 bits into 32-bit sums of whole rows (contiguous, vectorised),
 * kept as 8.8 fixed point; horizontal 15 bits. The error over a true area
 * average stays under 0.55 of a level (tests/unit/test_capture.c). */
#define VBITS 14
#define HBITS 15

struct axis {
	int taps;
	int* first;		/* first source index of output i's window */
	uint16_t* weight;	/* taps weights per output */
};

static void axis_free(struct axis* a)
{
	free(a->first);
	free(a->weight);
}

static int axis_init(struct axis* t, int s, int d, int bits)
{
	t->taps = 0;
	for (int i = 0; i < d; i++) {
		int first = (int)((int64_t)i * s / d), last = (int)(((int64_t)(i + 1) * s - 1) / d);
		if (last - first + 1 > t->taps)
			t->taps = last - first + 1;
	}
	t->first = malloc(sizeof(int) * (size_t)d);
	t->weight = calloc((size_t)d * (size_t)t->taps, sizeof(uint16_t));
	if (!t->first || !t->weight) {
		axis_free(t);
		return -ENOMEM;
	}
	for (int i = 0; i < d; i++) {
		/* In units of 1/d source pixels: [a, b) with b - a = s. */
		int64_t a = (int64_t)i * s, b = (int64_t)(i + 1) * s;
		int first = (int)(a / d), last = (int)((b - 1) / d);
		int start = first + t->taps > s ? s - t->taps : first;
		uint16_t* w = t->weight + (size_t)i * (size_t)t->taps;
		int64_t prev = 0;
		for (int k = first; k <= last; k++) {
			int64_t end = (int64_t)(k + 1) * d < b ? (int64_t)(k + 1) * d : b;
			int64_t cum = (((end - a) << bits) + s / 2) / s;
			w[k - start] = (uint16_t)(cum - prev);
			prev = cum;
		}
		t->first[i] = start;
	}
	return 0;
}

/* acc[x] (+)= w * row[x] over a whole source row, X byte included: one
 * contiguous loop the vectoriser turns into widening multiplies. */
static void vrow_set(uint32_t* restrict acc, const uint8_t* restrict row, uint32_t w, size_t n)
{
	for (size_t x = 0; x < n; x++)
		acc[x] = w * row[x];
}

static void vrow_add(uint32_t* restrict acc, const uint8_t* restrict row, uint32_t w, size_t n)
{
	for (size_t x = 0; x < n; x++)
		acc[x] += w * row[x];
}

/* In place, to 8.8 fixed point (at most 255 << 8 in each 32-bit lane). */
static void vrow_narrow(uint32_t* restrict acc, size_t n)
{
	for (size_t x = 0; x < n; x++)
		acc[x] = (acc[x] + (1u << (VBITS - 8 - 1))) >> (VBITS - 8);
}

/* One output row from the 8.8 row; taps is a constant where inlined. Two
 * channels per 64-bit multiply (B|G and R|X of a pixel as two 32-bit
 * lanes): a lane's sum stays under 255 << (8 + HBITS) = 2^31, so lanes
 * never carry into each other. */
static inline void hrow(uint8_t* restrict dst, const uint32_t* restrict mid,
		const struct axis* tx, int width, int taps)
{
	const uint64_t half = (uint64_t)(1u << (HBITS + 8 - 1)) * 0x100000001u;
	for (int ox = 0; ox < width; ox++) {
		const uint16_t* w = tx->weight + (size_t)ox * (size_t)taps;
		const uint32_t* m = mid + (size_t)tx->first[ox] * 4;
		uint64_t bg = half, rx = half;
		for (int k = 0; k < taps; k++) {
			uint64_t p0, p1;
			memcpy(&p0, m + 4 * k, 8);
			memcpy(&p1, m + 4 * k + 2, 8);
			bg += p0 * w[k];
			rx += p1 * w[k];
		}
		/* Little-endian lanes: the low one is B (R), the high one G (X). */
		dst[4 * ox + 0] = (uint8_t)((uint32_t)bg >> (HBITS + 8));
		dst[4 * ox + 1] = (uint8_t)((bg >> 32) >> (HBITS + 8));
		dst[4 * ox + 2] = (uint8_t)((uint32_t)rx >> (HBITS + 8));
		dst[4 * ox + 3] = 0xff;
	}
}

/* Output rows [y0, y1) of a scale, with an accumulator row of its own. */
struct scale_strip {
	const struct frame* src;
	struct frame* out;
	const struct axis *tx, *ty;
	int y0, y1;
	int rc;
};

static void scale_rows(void* ud)
{
	struct scale_strip* s = ud;
	const struct frame* src = s->src;
	const struct axis* tx = s->tx;
	const struct axis* ty = s->ty;
	const size_t n = (size_t)src->width * 4;
	size_t acc_cap;
	uint32_t* acc = capture__buf_get(sizeof(uint32_t) * n, &acc_cap);
	if (!acc) {
		s->rc = -ENOMEM;
		return;
	}
	int width = s->out->width;
	for (int oy = s->y0; oy < s->y1; oy++) {
		const uint16_t* wy = ty->weight + (size_t)oy * (size_t)ty->taps;
		const uint8_t* row = src->data + (size_t)ty->first[oy] * (size_t)src->stride;
		vrow_set(acc, row, wy[0], n);
		for (int k = 1; k < ty->taps; k++)
			if (wy[k])
				vrow_add(acc, row + (size_t)k * (size_t)src->stride, wy[k], n);
		vrow_narrow(acc, n);
		uint8_t* dst = s->out->data + (size_t)oy * (size_t)s->out->stride;
		switch (tx->taps) {
		case 1: hrow(dst, acc, tx, width, 1); break;
		case 2: hrow(dst, acc, tx, width, 2); break;
		case 3: hrow(dst, acc, tx, width, 3); break;
		case 4: hrow(dst, acc, tx, width, 4); break;
		default: hrow(dst, acc, tx, width, tx->taps); break;
		}
	}
	capture__buf_put(acc, acc_cap);
	s->rc = 0;
}

/* Source pixels per strip at least: below, a strip's share of the wake-up
 * costs more than it saves (a thumbnail's scale is one strip). */
#define SCALE_STRIP_MIN_PIXELS (256 * 1024)

struct frame* capture_scale(const struct frame* src, int width, int height)
{
	if (width <= 0 || height <= 0 || width > src->width || height > src->height)
		return NULL;
	if (width == src->width && height == src->height) {
		struct capture_rect all = { 0, 0, src->width, src->height };
		return capture_crop(src, &all);
	}
	struct frame* out = frame_new(width, height);
	if (!out)
		return NULL;
	struct axis tx, ty;
	if (axis_init(&tx, src->width, width, HBITS) < 0)
		goto taps_x_failure;
	if (axis_init(&ty, src->height, height, VBITS) < 0)
		goto taps_y_failure;
	/* Strips of output rows, one per core: each row is computed alone, so
	 * the image is the same however it is cut. */
	int64_t pixels = (int64_t)src->width * src->height;
	int n = (int)(pixels / SCALE_STRIP_MIN_PIXELS);
	n = n < 1 ? 1 : n > parallel_threads() ? parallel_threads() : n;
	n = n > height ? height : n;
	struct scale_strip strips[PARALLEL_MAX_THREADS];
	for (int i = 0; i < n; i++)
		strips[i] = (struct scale_strip){ .src = src, .out = out, .tx = &tx, .ty = &ty,
			.y0 = (int)((int64_t)height * i / n), .y1 = (int)((int64_t)height * (i + 1) / n) };
	parallel_run(scale_rows, strips, sizeof(strips[0]), n);
	int rc = 0;
	for (int i = 0; i < n; i++)
		if (strips[i].rc < 0)
			rc = strips[i].rc;
	axis_free(&ty);
	axis_free(&tx);
	if (rc < 0) {
		frame_unref(out);
		return NULL;
	}
	return out;

taps_y_failure:
	axis_free(&tx);
taps_x_failure:
	frame_unref(out);
	return NULL;
}
