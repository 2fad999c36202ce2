/* Frames (reference-counted BGRX buffers), cropping and the area-average
 * downscaler. Pure code: no X. */
#include "capture/capture.h"
#include "capture/bufpool.h"

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
	size_t size = (size_t)self->stride * (size_t)height;
	self->data = capture__buf_get(size, &self->capacity);
	if (!self->data) {
		free(self);
		return NULL;
	}
	atomic_init(&self->refs, 1);
	return self;
}

struct frame* frame_ref(struct frame* self)
{
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

/* Area averaging: output pixel i covers source interval [i*s/d, (i+1)*s/d).
 * For each output index, the first source index, the number of taps and
 * their weights (fixed point, summing to 1 << WBITS). */
#define WBITS 11

struct taps {
	int* first;
	int* count;
	uint16_t* weight;	/* count[i] weights for each i, packed */
	int* offset;		/* index of output i's first weight */
};

static void taps_free(struct taps* t)
{
	free(t->first);
	free(t->count);
	free(t->weight);
	free(t->offset);
}

static int taps_init(struct taps* t, int s, int d)
{
	memset(t, 0, sizeof(*t));
	/* Each output spans at most ceil(s/d) + 1 source pixels. */
	size_t per = (size_t)(s / d + 2);
	t->first = malloc(sizeof(int) * (size_t)d);
	t->count = malloc(sizeof(int) * (size_t)d);
	t->offset = malloc(sizeof(int) * (size_t)d);
	t->weight = malloc(sizeof(uint16_t) * per * (size_t)d);
	if (!t->first || !t->count || !t->offset || !t->weight) {
		taps_free(t);
		return -ENOMEM;
	}
	int off = 0;
	for (int i = 0; i < d; i++) {
		/* In units of 1/d source pixels: [i*s, (i+1)*s). */
		int64_t a = (int64_t)i * s, b = (int64_t)(i + 1) * s;
		int first = (int)(a / d), last = (int)((b - 1) / d);
		t->first[i] = first;
		t->count[i] = last - first + 1;
		t->offset[i] = off;
		int total = 0;
		for (int k = first; k <= last; k++) {
			int64_t lo = (int64_t)k * d > a ? (int64_t)k * d : a;
			int64_t hi = (int64_t)(k + 1) * d < b ? (int64_t)(k + 1) * d : b;
			int w = (int)(((hi - lo) << WBITS) / s);
			t->weight[off + (k - first)] = (uint16_t)w;
			total += w;
		}
		/* Give the rounding remainder to the largest tap so weights sum exactly. */
		int best = 0;
		for (int k = 1; k < t->count[i]; k++)
			if (t->weight[off + k] > t->weight[off + best])
				best = k;
		t->weight[off + best] = (uint16_t)(t->weight[off + best] + ((1 << WBITS) - total));
		off += t->count[i];
	}
	return 0;
}

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
	struct taps tx, ty;
	if (taps_init(&tx, src->width, width) < 0)
		goto taps_x_failure;
	if (taps_init(&ty, src->height, height) < 0)
		goto taps_y_failure;
	/* One accumulator row: vertical pass sums weighted source rows, then
	 * the horizontal pass reduces it into the output row. */
	size_t acc_cap;
	uint32_t* acc = capture__buf_get(sizeof(uint32_t) * 3 * (size_t)src->width, &acc_cap);
	if (!acc)
		goto acc_failure;

	const int sw = src->width;
	for (int oy = 0; oy < height; oy++) {
		memset(acc, 0, sizeof(uint32_t) * 3 * (size_t)sw);
		const uint16_t* wy = ty.weight + ty.offset[oy];
		for (int k = 0; k < ty.count[oy]; k++) {
			const uint8_t* row = src->data + (size_t)(ty.first[oy] + k) * (size_t)src->stride;
			uint32_t w = wy[k];
			if (!w)
				continue;
			for (int x = 0; x < sw; x++) {
				acc[3 * x + 0] += w * row[4 * x + 0];
				acc[3 * x + 1] += w * row[4 * x + 1];
				acc[3 * x + 2] += w * row[4 * x + 2];
			}
		}
		uint8_t* dst = out->data + (size_t)oy * (size_t)out->stride;
		for (int ox = 0; ox < width; ox++) {
			const uint16_t* wx = tx.weight + tx.offset[ox];
			const uint32_t* a = acc + 3 * tx.first[ox];
			uint32_t b = 0, g = 0, r = 0;
			for (int k = 0; k < tx.count[ox]; k++) {
				b += wx[k] * a[3 * k + 0];
				g += wx[k] * a[3 * k + 1];
				r += wx[k] * a[3 * k + 2];
			}
			const uint32_t half = 1u << (2 * WBITS - 1);
			dst[4 * ox + 0] = (uint8_t)((b + half) >> (2 * WBITS));
			dst[4 * ox + 1] = (uint8_t)((g + half) >> (2 * WBITS));
			dst[4 * ox + 2] = (uint8_t)((r + half) >> (2 * WBITS));
			dst[4 * ox + 3] = 0xff;
		}
	}
	capture__buf_put(acc, acc_cap);
	taps_free(&ty);
	taps_free(&tx);
	return out;

acc_failure:
	taps_free(&ty);
taps_y_failure:
	taps_free(&tx);
taps_x_failure:
	frame_unref(out);
	return NULL;
}
