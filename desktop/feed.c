/* The live view's capture source, on capture/capture.h: one capture context
 * (its own X connection) per feed, used by the feed's producer thread only.
 *
 * The pointer position comes from a small xcb connection of the source's
 * own: xcb never exits the process on errors and needs no process-wide
 * handler, so it cannot disturb capture/'s error trapping. */

#include "desktop/feed.h"
#include "capture/capture.h"
#include "desktop/desktop.h"
#include "tools/tools.h"

#include <xcb/xcb.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct live_source {
	struct capture* cap;
	uint32_t window;
	int max_dimension;
	uint64_t seen;		/* change counter consumed by the last grab */
	uint8_t* jpeg;
	/* The last grab's geometry, to map the pointer into JPEG pixels. */
	struct capture_rect rect;	/* the target in desktop pixels */
	int image_w, image_h;

	xcb_connection_t* xcb;
	xcb_window_t root;
};

static int live_source_fail(const char** code, const char* c, char* err,
		size_t err_size, const char* message)
{
	*code = c;
	snprintf(err, err_size, "%s", message);
	return 0;
}

static void live_source_pointer_open(struct live_source* self)
{
	int screen = 0;
	self->xcb = xcb_connect(desktop_display_name(), &screen);
	if (xcb_connection_has_error(self->xcb)) {
		xcb_disconnect(self->xcb);
		self->xcb = NULL;
		return;
	}
	xcb_screen_iterator_t it = xcb_setup_roots_iterator(xcb_get_setup(self->xcb));
	for (int i = 0; i < screen && it.rem; i++)
		xcb_screen_next(&it);
	self->root = it.rem ? it.data->root : 0;
}

struct live_source* live_source_open(uint32_t window, int max_dimension,
		const char** code, char* err, size_t err_size)
{
	struct live_source* self = calloc(1, sizeof(*self));
	if (!self) {
		live_source_fail(code, "internal", err, err_size, "out of memory");
		return NULL;
	}
	self->window = window;
	self->max_dimension = max_dimension;
	char why[256] = "";
	self->cap = capture_create(desktop_display_name(), why, sizeof(why));
	if (!self->cap) {
		live_source_fail(code, "display_unavailable", err, err_size,
				why[0] ? why : "cannot connect to the display");
		goto capture_failure;
	}
	if (window) {
		int rc = capture_window_geometry(self->cap, window, &self->rect);
		if (rc == -ENOENT) {
			snprintf(why, sizeof(why), "no window 0x%x; pick one from the window list",
					(unsigned)window);
			live_source_fail(code, "window_not_found", err, err_size, why);
			goto target_failure;
		}
		if (rc < 0) {
			live_source_fail(code, "internal", err, err_size, capture_error(self->cap));
			goto target_failure;
		}
	} else {
		capture_screen_size(self->cap, &self->rect.width, &self->rect.height);
	}
	/* Start tracking now so the first grab consumes the initial change. */
	uint64_t counter = 0;
	if (capture_changes(self->cap, window, &counter) == -ENOENT) {
		live_source_fail(code, "window_not_found", err, err_size, "the window is gone");
		goto target_failure;
	}
	live_source_pointer_open(self);
	return self;

target_failure:
	capture_destroy(self->cap);
capture_failure:
	free(self);
	return NULL;
}

int live_source_wait(struct live_source* self, int timeout_ms)
{
	uint64_t counter = 0;
	int rc = capture_wait_changes(self->cap, self->window, self->seen,
			timeout_ms, &counter);
	if (rc == 0)
		return counter > self->seen ? 1 : 0;
	if (rc == -ETIMEDOUT)
		return 0;
	if (rc == -ECONNRESET)
		return -EPIPE;
	return rc;
}

int live_source_grab(struct live_source* self, int quality,
		struct live_source_frame* out)
{
	/* Consume the changes first: a change during the capture shows up as
	 * a new change (at worst one extra frame, never a missed one). */
	uint64_t counter = 0;
	int rc = capture_changes(self->cap, self->window, &counter);
	if (rc < 0)
		return rc == -ECONNRESET ? -EPIPE : rc;
	self->seen = counter;

	struct frame* raw = NULL;
	if (self->window) {
		rc = capture_window_geometry(self->cap, self->window, &self->rect);
		if (rc == 0)
			rc = capture_window(self->cap, self->window, NULL, false, &raw);
	} else {
		self->rect.x = self->rect.y = 0;
		rc = capture_screen(self->cap, NULL, false, &raw);
		if (rc == 0) {
			self->rect.width = raw->width;
			self->rect.height = raw->height;
		}
	}
	if (rc < 0)
		return rc == -ECONNRESET ? -EPIPE : rc;

	int w, h;
	tools_scaled_size(raw->width, raw->height, self->max_dimension, &w, &h);
	struct frame* img = raw;
	if (w != raw->width || h != raw->height) {
		img = capture_scale(raw, w, h);
		frame_unref(raw);
		if (!img)
			return -ENOMEM;
	}
	uint8_t* jpeg = NULL;
	size_t len = 0;
	rc = capture_encode_jpeg(img, quality, &jpeg, &len);
	self->image_w = img->width;
	self->image_h = img->height;
	frame_unref(img);
	if (rc < 0)
		return rc;
	free(self->jpeg);
	self->jpeg = jpeg;

	out->jpeg = jpeg;
	out->len = len;
	out->width = self->image_w;
	out->height = self->image_h;
	if (live_source_cursor(self, &out->cursor_x, &out->cursor_y,
			&out->cursor_visible) < 0) {
		out->cursor_x = out->cursor_y = -1;
		out->cursor_visible = false;
	}
	return 0;
}

int live_source_cursor(struct live_source* self, int* x, int* y, bool* visible)
{
	if (!self->xcb || !self->image_w || !self->rect.width)
		return -ENOTCONN;
	xcb_query_pointer_reply_t* r = xcb_query_pointer_reply(self->xcb,
			xcb_query_pointer(self->xcb, self->root), NULL);
	if (!r)
		return -EPIPE;
	int dx = r->root_x - self->rect.x;
	int dy = r->root_y - self->rect.y;
	free(r);
	/* Desktop pixels -> JPEG pixels (floor, like the screenshot mapping). */
	*x = (int)((int64_t)dx * self->image_w / self->rect.width);
	*y = (int)((int64_t)dy * self->image_h / self->rect.height);
	*visible = dx >= 0 && dy >= 0 && dx < self->rect.width && dy < self->rect.height;
	return 0;
}

void live_source_close(struct live_source* self)
{
	if (!self)
		return;
	if (self->window)
		capture_untrack(self->cap, self->window);
	capture_destroy(self->cap);
	if (self->xcb)
		xcb_disconnect(self->xcb);
	free(self->jpeg);
	free(self);
}

json_t* live_source_windows(void)
{
	json_t* out = json_array();
	char why[256];
	struct capture* cap = capture_create(desktop_display_name(), why, sizeof(why));
	if (!cap || !out)
		goto done;
	struct capture_window_info* list = NULL;
	size_t n = 0;
	if (capture_list_windows(cap, &list, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			const struct capture_window_info* w = &list[i];
			if (!w->mapped)
				continue;	/* nothing to show until it is mapped */
			json_array_append_new(out, json_pack(
					"{s:I, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:b, s:b}",
					"id", (json_int_t)w->id, "pid", w->pid,
					"title", w->title, "app", w->app,
					"x", w->rect.x, "y", w->rect.y,
					"width", w->rect.width, "height", w->rect.height,
					"focused", w->focused, "visible", w->visible));
		}
	}
	free(list);
done:
	capture_destroy(cap);
	return out ? out : json_array();
}
