/* Capture: zwlr_screencopy_manager_v1 into one wl_shm buffer kept between
 * grabs (made again when the size or format changes), copied out into a
 * plain frame, rows top to bottom. */
#define _GNU_SOURCE
#include "wayland/wl_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What the frame said before and after the copy. */
struct grab {
	uint32_t format, width, height, stride;
	bool have_buffer;	/* a wl_shm layout we can take was offered */
	bool buffer_done;	/* v3: every layout was announced */
	uint32_t flags;
	bool ready, failed;
	bool announced;		/* buffer_done or failed */
	bool finished;		/* ready or failed */
	bool damaged;		/* damage events came: their bounding box, buffer pixels */
	uint32_t dx0, dy0, dx1, dy1;
};

static bool format_ok(uint32_t f)
{
	return f == WL_SHM_FORMAT_XRGB8888 || f == WL_SHM_FORMAT_ARGB8888 ||
		f == WL_SHM_FORMAT_XBGR8888 || f == WL_SHM_FORMAT_ABGR8888;
}

static int format_rank(uint32_t f)
{
	/* the one deskd uses as is first */
	return f == WL_SHM_FORMAT_XRGB8888 ? 3 : f == WL_SHM_FORMAT_ARGB8888 ? 2 : 1;
}

static void frame_buffer(void* data, struct zwlr_screencopy_frame_v1* f,
		uint32_t format, uint32_t width, uint32_t height, uint32_t stride)
{
	struct grab* g = data;
	if (!format_ok(format))
		return;
	if (g->have_buffer && format_rank(format) <= format_rank(g->format))
		return;
	g->format = format;
	g->width = width;
	g->height = height;
	g->stride = stride;
	g->have_buffer = true;
}

static void frame_flags(void* data, struct zwlr_screencopy_frame_v1* f, uint32_t flags)
{
	struct grab* g = data;
	g->flags = flags;
}

static void frame_ready(void* data, struct zwlr_screencopy_frame_v1* f,
		uint32_t sec_hi, uint32_t sec_lo, uint32_t nsec)
{
	struct grab* g = data;
	g->ready = true;
	g->finished = true;
}

static void frame_failed(void* data, struct zwlr_screencopy_frame_v1* f)
{
	struct grab* g = data;
	g->failed = true;
	g->announced = true;
	g->finished = true;
}

static void frame_damage(void* data, struct zwlr_screencopy_frame_v1* f,
		uint32_t x, uint32_t y, uint32_t w, uint32_t h)
{
	struct grab* g = data;
	if (!g->damaged || x < g->dx0)
		g->dx0 = x;
	if (!g->damaged || y < g->dy0)
		g->dy0 = y;
	if (!g->damaged || x + w > g->dx1)
		g->dx1 = x + w;
	if (!g->damaged || y + h > g->dy1)
		g->dy1 = y + h;
	g->damaged = true;
}

static void frame_dmabuf(void* data, struct zwlr_screencopy_frame_v1* f,
		uint32_t format, uint32_t w, uint32_t h)
{
}

static void frame_buffer_done(void* data, struct zwlr_screencopy_frame_v1* f)
{
	struct grab* g = data;
	g->buffer_done = true;
	g->announced = true;
}

static const struct zwlr_screencopy_frame_v1_listener frame_listener = {
	.buffer = frame_buffer,
	.flags = frame_flags,
	.ready = frame_ready,
	.failed = frame_failed,
	.damage = frame_damage,
	.linux_dmabuf = frame_dmabuf,
	.buffer_done = frame_buffer_done,
};

static void buffer_drop(struct wl__shm_buffer* b)
{
	if (b->wl) {
		wl_buffer_destroy(b->wl);
		munmap(b->data, b->size);
	}
	memset(b, 0, sizeof(*b));
}

/* A kept buffer, made again for another layout. */
static int buffer_get(struct wayland* self, struct wl__shm_buffer* b, const struct grab* g)
{
	if (b->wl && b->width == (int)g->width && b->height == (int)g->height &&
			b->stride == (int)g->stride && b->format == g->format)
		return 0;
	buffer_drop(b);
	size_t size = (size_t)g->stride * g->height;
	if (!size || g->stride < 4 * g->width)
		return -EINVAL;
	void* data;
	int fd = wl__memfd("deskd-screencopy", size, &data);
	if (fd < 0)
		return fd;
	struct wl_shm_pool* pool = wl_shm_create_pool(self->shm, fd, (int32_t)size);
	close(fd);
	if (!pool) {
		munmap(data, size);
		return -ENOMEM;
	}
	b->wl = wl_shm_pool_create_buffer(pool, 0, (int32_t)g->width, (int32_t)g->height,
			(int32_t)g->stride, g->format);
	wl_shm_pool_destroy(pool);
	if (!b->wl) {
		munmap(data, size);
		return -ENOMEM;
	}
	b->data = data;
	b->size = size;
	b->width = (int)g->width;
	b->height = (int)g->height;
	b->stride = (int)g->stride;
	b->format = g->format;
	return 0;
}

/* Copy the shm buffer out: top to bottom, B G R X|A. */
static struct wayland_frame* frame_from(const struct wl__shm_buffer* b, bool invert)
{
	struct wayland_frame* f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->width = b->width;
	f->height = b->height;
	f->stride = 4 * b->width;
	f->y_inverted = invert;
	f->pixel = (b->format == WL_SHM_FORMAT_ARGB8888 || b->format == WL_SHM_FORMAT_ABGR8888)
		? WAYLAND_PIXEL_ARGB8888 : WAYLAND_PIXEL_XRGB8888;
	f->data = malloc((size_t)f->stride * (size_t)f->height);
	if (!f->data) {
		free(f);
		return NULL;
	}
	bool swap = b->format == WL_SHM_FORMAT_XBGR8888 || b->format == WL_SHM_FORMAT_ABGR8888;
	for (int y = 0; y < f->height; y++) {
		const uint8_t* src = (const uint8_t*)b->data +
			(size_t)b->stride * (size_t)(invert ? f->height - 1 - y : y);
		uint8_t* dst = f->data + (size_t)f->stride * (size_t)y;
		if (!swap) {
			memcpy(dst, src, (size_t)f->stride);
			continue;
		}
		for (int x = 0; x < f->width; x++) {
			dst[4 * x + 0] = src[4 * x + 2];
			dst[4 * x + 1] = src[4 * x + 1];
			dst[4 * x + 2] = src[4 * x + 0];
			dst[4 * x + 3] = src[4 * x + 3];
		}
	}
	return f;
}

int wayland_capture(struct wayland* self, int output, const int32_t* region,
		int timeout_ms, struct wayland_frame** out)
{
	return wayland_capture_cursor(self, output, region, false, timeout_ms, out);
}

int wayland_capture_cursor(struct wayland* self, int output, const int32_t* region,
		bool cursor, int timeout_ms, struct wayland_frame** out)
{
	int64_t start = clock_ns();
	int64_t deadline = clock_ms() + timeout_ms;
	*out = NULL;
	if (!self->screencopy)
		return -ENOTSUP;
	if (output < 0 || output >= self->n_outputs)
		return -ENOENT;
	if (region && (region[2] <= 0 || region[3] <= 0))
		return -EINVAL;
	struct wl_output* wo = self->outputs[output].wl;
	struct grab g = { 0 };
	struct zwlr_screencopy_frame_v1* frame = region
		? zwlr_screencopy_manager_v1_capture_output_region(self->screencopy, cursor, wo,
				region[0], region[1], region[2], region[3])
		: zwlr_screencopy_manager_v1_capture_output(self->screencopy, cursor, wo);
	if (!frame)
		return -ENOMEM;
	zwlr_screencopy_frame_v1_add_listener(frame, &frame_listener, &g);

	/* v3 announces every layout, then buffer_done; before v3 the one
	 * buffer event is all there is, and a round trip shows it came */
	int r;
	if (zwlr_screencopy_frame_v1_get_version(frame) >= 3)
		r = wl__wait(self, &g.announced, deadline);
	else
		r = wayland_sync(self, (int)(deadline - clock_ms()));
	if (r < 0)
		goto out;
	if (g.failed) {
		r = -EIO;
		goto out;
	}
	if (!g.have_buffer) {
		log_warn("wayland: screencopy offered no 32-bit shm format deskd reads");
		r = -ENOTSUP;
		goto out;
	}
	r = buffer_get(self, &self->buffer, &g);
	if (r < 0)
		goto out;
	zwlr_screencopy_frame_v1_copy(frame, self->buffer.wl);
	r = wl__wait(self, &g.finished, deadline);
	if (r < 0)
		goto out;
	if (g.failed) {
		r = -EIO;
		goto out;
	}
	struct wayland_frame* f = frame_from(&self->buffer,
			g.flags & ZWLR_SCREENCOPY_FRAME_V1_FLAGS_Y_INVERT);
	if (!f) {
		r = -ENOMEM;
		goto out;
	}
	f->capture_ns = clock_ns() - start;
	*out = f;
	r = 0;
out:
	zwlr_screencopy_frame_v1_destroy(frame);
	return r;
}

/* ---- change watching: copy_with_damage ---- */

/* One output's pending frame. Its buffer is its own: the compositor writes
 * it whenever it repaints, while wayland_capture's may be being read. */
struct wl__watch {
	struct zwlr_screencopy_frame_v1* frame;	/* NULL: none asked for */
	struct grab g;
	bool copying;		/* copy_with_damage sent: waiting for a repaint */
	struct wl__shm_buffer buffer;
	bool changed;		/* a repaint since the last report: box */
	int32_t x0, y0, x1, y1;	/* layout logical coordinates */
};

void wl__watch_destroy(struct wl__output* out)
{
	struct wl__watch* w = out->watch;
	if (!w)
		return;
	if (w->frame)
		zwlr_screencopy_frame_v1_destroy(w->frame);
	buffer_drop(&w->buffer);
	free(w);
	out->watch = NULL;
}

static void watch_arm(struct wayland* self, struct wl__output* out)
{
	struct wl__watch* w = out->watch;
	memset(&w->g, 0, sizeof(w->g));
	w->copying = false;
	w->frame = zwlr_screencopy_manager_v1_capture_output(self->screencopy, 0, out->wl);
	if (w->frame)
		zwlr_screencopy_frame_v1_add_listener(w->frame, &frame_listener, &w->g);
}

/* Add a completed frame's damage (all of it when none was sent) to the box,
 * from buffer pixels to layout logical coordinates. */
static void watch_note(struct wl__output* out)
{
	struct wl__watch* w = out->watch;
	const struct grab* g = &w->g;
	const struct wayland_output* o = &out->info;
	int64_t bw = g->width ? g->width : 1, bh = g->height ? g->height : 1;
	int64_t x0 = 0, y0 = 0, x1 = bw, y1 = bh;
	if (g->damaged) {
		x0 = g->dx0, x1 = g->dx1;
		y0 = g->dy0, y1 = g->dy1;
		if (g->flags & ZWLR_SCREENCOPY_FRAME_V1_FLAGS_Y_INVERT) {
			y0 = bh - g->dy1;
			y1 = bh - g->dy0;
		}
	}
	/* round outwards, so a one-pixel damage at scale 2 still counts */
	int32_t lx0 = o->x + (int32_t)(x0 * o->width / bw);
	int32_t ly0 = o->y + (int32_t)(y0 * o->height / bh);
	int32_t lx1 = o->x + (int32_t)((x1 * o->width + bw - 1) / bw);
	int32_t ly1 = o->y + (int32_t)((y1 * o->height + bh - 1) / bh);
	if (!w->changed || lx0 < w->x0)
		w->x0 = lx0;
	if (!w->changed || ly0 < w->y0)
		w->y0 = ly0;
	if (!w->changed || lx1 > w->x1)
		w->x1 = lx1;
	if (!w->changed || ly1 > w->y1)
		w->y1 = ly1;
	w->changed = true;
}

/* Move the pending frame on by what arrived: copy once the layout is
 * known, note it once ready and ask for the next. */
static int watch_step(struct wayland* self, struct wl__output* out)
{
	struct wl__watch* w = out->watch;
	if (!w->frame)
		watch_arm(self, out);
	if (!w->frame)
		return -ENOMEM;
	if (w->g.failed) {
		zwlr_screencopy_frame_v1_destroy(w->frame);
		w->frame = NULL;
		return -EIO;
	}
	if (!w->copying && w->g.announced) {
		int r = w->g.have_buffer ? buffer_get(self, &w->buffer, &w->g) : -ENOTSUP;
		if (r < 0)
			return r;
		zwlr_screencopy_frame_v1_copy_with_damage(w->frame, w->buffer.wl);
		w->copying = true;
	}
	if (w->copying && w->g.ready) {
		watch_note(out);
		zwlr_screencopy_frame_v1_destroy(w->frame);
		w->frame = NULL;
		watch_arm(self, out);
	}
	return 0;
}

int wayland_damage(struct wayland* self, int output, int timeout_ms, int32_t* box)
{
	if (!self->screencopy || zwlr_screencopy_manager_v1_get_version(self->screencopy) < 3)
		return -ENOTSUP;	/* v3: buffer_done says when to copy */
	if (output < 0 || output >= self->n_outputs)
		return -ENOENT;
	struct wl__output* out = &self->outputs[output];
	if (!out->watch && !(out->watch = calloc(1, sizeof(*out->watch))))
		return -ENOMEM;
	struct wl__watch* w = out->watch;
	int64_t deadline = clock_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		int r = watch_step(self, out);
		if (r < 0)
			return r;
		if (w->changed)
			break;
		const bool* next = w->copying ? &w->g.finished : &w->g.announced;
		r = wl__wait(self, next, deadline);
		if (r == -ETIMEDOUT)
			return 0;
		if (r < 0)
			return r;
	}
	box[0] = w->x0;
	box[1] = w->y0;
	box[2] = w->x1 - w->x0;
	box[3] = w->y1 - w->y0;
	w->changed = false;
	return 1;
}

void wayland_release_buffers(struct wayland* self)
{
	if (!self)
		return;
	buffer_drop(&self->buffer);
	/* A watch's frame may be pending on its buffer: both go; the next
	 * wayland_damage starts again with the whole output as its change. */
	for (int i = 0; i < self->n_outputs; i++)
		wl__watch_destroy(&self->outputs[i]);
	wl_display_flush(self->display);
}

void wayland_frame_free(struct wayland_frame* frame)
{
	if (!frame)
		return;
	free(frame->data);
	free(frame);
}

uint32_t wayland_frame_rgb(const struct wayland_frame* f, int x, int y)
{
	if (x < 0 || y < 0 || x >= f->width || y >= f->height)
		return 0;
	const uint8_t* p = f->data + (size_t)f->stride * (size_t)y + 4 * (size_t)x;
	return (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
