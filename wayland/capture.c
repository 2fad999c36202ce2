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

/* The kept buffer, made again for another layout. */
static int buffer_get(struct wayland* self, const struct grab* g)
{
	struct wl__shm_buffer* b = &self->buffer;
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
		? zwlr_screencopy_manager_v1_capture_output_region(self->screencopy, 0, wo,
				region[0], region[1], region[2], region[3])
		: zwlr_screencopy_manager_v1_capture_output(self->screencopy, 0, wo);
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
	r = buffer_get(self, &g);
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
