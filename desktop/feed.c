/* Live feeds, on capture/capture.h: one capture context (its own X
 * connection) per feed, used by the feed's producer thread only. */
#include "desktop/desktop_private.h"
#include "base/clock.h"
#include "capture/capture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct desktop_feed {
	struct capture* cap;
	uint32_t window;
	int max_dimension;
	uint64_t seen;		/* change counter consumed by the last grab */
	uint8_t* jpeg;
	struct capture_jpeg_rows* rows;	/* the last native-size JPEG, by rows */
	/* The last grab's geometry, to map the pointer into JPEG pixels. */
	struct capture_rect rect;	/* the target in desktop pixels */
	int image_w, image_h;
};

struct desktop_feed* desktop_feed_open(uint32_t window, int max_dimension, int* rc,
		char* err, size_t err_size)
{
	struct desktop_feed* self = calloc(1, sizeof(*self));
	if (!self) {
		*rc = -ENOMEM;
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	self->window = window;
	self->max_dimension = max_dimension;
	char why[256] = "";
	self->cap = capture_create(desktop_display_name(), why, sizeof(why));
	if (!self->cap) {
		*rc = -ECONNRESET;
		snprintf(err, err_size, "%s", why[0] ? why : "cannot connect to the display");
		goto capture_failure;
	}
	if (window) {
		int grc = capture_window_geometry(self->cap, window, &self->rect);
		if (grc < 0) {
			*rc = grc == -ENOENT ? -ENOENT : -EIO;
			if (grc == -ENOENT)
				snprintf(err, err_size, "no window 0x%x; pick one from the window list",
						(unsigned)window);
			else
				snprintf(err, err_size, "%s", capture_error(self->cap));
			goto target_failure;
		}
	} else {
		capture_screen_size(self->cap, &self->rect.width, &self->rect.height);
	}
	/* Start tracking now so the first grab consumes the initial change. */
	uint64_t counter = 0;
	if (capture_changes(self->cap, window, &counter) == -ENOENT) {
		*rc = -ENOENT;
		snprintf(err, err_size, "the window is gone");
		goto target_failure;
	}
	return self;

target_failure:
	capture_destroy(self->cap);
capture_failure:
	free(self);
	return NULL;
}

int desktop_feed_wait(struct desktop_feed* self, int timeout_ms)
{
	uint64_t counter = 0;
	int rc = capture_wait_changes(self->cap, self->window, self->seen,
			timeout_ms, &counter);
	if (rc == 0)
		return counter > self->seen ? 1 : 0;
	if (rc == -ETIMEDOUT)
		return 0;
	return rc;
}

/* The rows of the target (w x h) that changed, widened to whole rows of
 * JPEG blocks; false when all of it has to be read. */
static bool feed_band(struct desktop_feed* self, int w, int h, int quality,
		struct capture_rect* band)
{
	struct capture_rect d;
	if (capture_dirty(self->cap, self->window, &d) != 1
			|| !capture_jpeg_rows_ready(self->rows, w, h, quality))
		return false;
	int y0 = d.width > 0 && d.y > 0 ? d.y : 0;
	int y1 = d.width > 0 && d.y + d.height < h ? d.y + d.height : h;
	if (d.width <= 0 || y1 <= y0)	/* nothing after all: one row */
		y0 = 0, y1 = 1;
	y0 = y0 / 16 * 16;
	y1 = (y1 + 15) / 16 * 16;
	if (y1 > h)
		y1 = h;
	*band = (struct capture_rect){ 0, y0, w, y1 - y0 };
	return band->height < h;
}

/* Read the target, or region of it: lent (encoded, or scaled, and gone
 * before the feed's context reads again). */
static int feed_read(struct desktop_feed* self, const struct capture_rect* region,
		struct frame** raw)
{
	if (self->window)
		return capture_window_lent(self->cap, self->window, region, false, raw);
	return capture_screen_lent(self->cap, region, false, raw);
}

int desktop_feed_grab(struct desktop_feed* self, int quality,
		struct desktop_feed_frame* out)
{
	desktop__capture_used();
	/* Consume the changes first: a change during the capture shows up as
	 * a new change (at worst one extra frame, never a missed one). */
	uint64_t counter = 0;
	int rc = capture_changes(self->cap, self->window, &counter);
	if (rc < 0)
		return rc;
	self->seen = counter;

	/* The target's size: a native-size feed reads and encodes only the
	 * rows that changed, the others' JPEG data is kept from before. */
	struct capture_rect target = { 0 };
	if (self->window) {
		rc = capture_window_geometry(self->cap, self->window, &target);
		if (rc < 0)
			return rc;
		self->rect = target;
	} else {
		capture_screen_size(self->cap, &target.width, &target.height);
	}
	int w, h;
	desktop_scaled_size(target.width, target.height, self->max_dimension, &w, &h);
	bool native = w == target.width && h == target.height;
	if (native && !self->rows)
		self->rows = capture_jpeg_rows_new();
	struct capture_rect band = { 0 };
	bool partial = native && self->rows && feed_band(self, w, h, quality, &band);
	if (!partial && self->rows)
		capture_dirty(self->cap, self->window, &band);	/* all of it: start over */

	struct frame* raw = NULL;
	rc = feed_read(self, partial ? &band : NULL, &raw);
	if (rc == 0 && partial && (raw->width != w || raw->height != band.height)) {
		/* Resized just now: all of it. */
		frame_unref(raw);
		partial = false;
		rc = feed_read(self, NULL, &raw);
	}
	if (rc < 0)
		return rc;
	if (!self->window)
		self->rect = (struct capture_rect){ 0, 0, partial ? w : raw->width,
			partial ? h : raw->height };
	int64_t captured_ns = clock_ns();

	uint8_t* jpeg = NULL;
	size_t len = 0;
	rc = -ESTALE;
	if (partial || (self->rows && raw->width == w && raw->height == h)) {
		rc = capture_jpeg_rows_encode(self->rows, raw, partial ? band.y : 0, h, quality,
				&jpeg, &len);
		if (rc == 0) {
			self->image_w = w;
			self->image_h = h;
		} else if (partial) {
			/* Only a band in hand: the rows start over at once. */
			frame_unref(raw);
			self->seen = 0;
			return rc;
		}
	}
	if (rc < 0) {
		/* A scaled feed, the size changed meanwhile, or the rows failed. */
		desktop_scaled_size(raw->width, raw->height, self->max_dimension, &w, &h);
		struct frame* img = w != raw->width || h != raw->height
				? capture_scale(raw, w, h) : raw;
		if (!img) {
			frame_unref(raw);
			return -ENOMEM;
		}
		rc = capture_encode_jpeg(img, quality, &jpeg, &len);
		self->image_w = img->width;
		self->image_h = img->height;
		if (img != raw)
			frame_unref(img);
	}
	frame_unref(raw);
	if (rc < 0)
		return rc;
	free(self->jpeg);
	self->jpeg = jpeg;

	out->jpeg = jpeg;
	out->len = len;
	out->width = self->image_w;
	out->height = self->image_h;
	out->captured_ns = captured_ns;
	if (desktop_feed_cursor(self, &out->cursor_x, &out->cursor_y,
			&out->cursor_visible) < 0) {
		out->cursor_x = out->cursor_y = -1;
		out->cursor_visible = false;
	}
	return 0;
}

int desktop_feed_cursor(struct desktop_feed* self, int* x, int* y, bool* visible)
{
	if (!self->image_w || !self->rect.width)
		return -ENOTCONN;
	int rx, ry;
	/* Relative to the screen, then to the last grab's target rectangle. */
	int rc = capture_pointer(self->cap, 0, &rx, &ry);
	if (rc < 0)
		return rc;
	int dx = rx - self->rect.x, dy = ry - self->rect.y;
	*x = desktop_unmap(dx, self->rect.width, self->image_w);
	*y = desktop_unmap(dy, self->rect.height, self->image_h);
	*visible = dx >= 0 && dy >= 0 && dx < self->rect.width && dy < self->rect.height;
	return 0;
}

void desktop_feed_close(struct desktop_feed* self)
{
	if (!self)
		return;
	if (self->window)
		capture_untrack(self->cap, self->window);
	capture_destroy(self->cap);
	capture_jpeg_rows_free(self->rows);
	free(self->jpeg);
	free(self);
}

int desktop_windows(struct capture_window_info** list, size_t* n)
{
	*list = NULL;
	*n = 0;
	if (desktop_is_gnome() && !desktop_gnome_shell())
		return desktop__gnome_unsupported("windows", NULL, 0);
	char why[256];
	struct capture_window_info* all = NULL;
	size_t count = 0;
	int rc;
	if (desktop_is_gnome()) {
		/* A pooled context: a new one is a Mutter session and a stream. */
		struct desktop_capture* pooled = desktop_capture_get(why, sizeof(why));
		if (!pooled)
			return -ECONNRESET;
		rc = capture_list_windows(desktop_capture_backend(pooled), &all, &count);
		desktop_capture_put(pooled);
	} else {
		struct capture* cap = capture_create(desktop_display_name(), why, sizeof(why));
		if (!cap)
			return -ECONNRESET;
		rc = capture_list_windows(cap, &all, &count);
		capture_destroy(cap);
	}
	if (rc < 0)
		return rc;
	size_t kept = 0;
	for (size_t i = 0; i < count; i++)
		if (all[i].mapped)	/* nothing to show until it is mapped */
			all[kept++] = all[i];
	*list = all;
	*n = kept;
	return 0;
}
