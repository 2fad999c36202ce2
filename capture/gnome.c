/* capture/'s GNOME backend (Mutter): the screen from the ScreenCast
 * session's PipeWire stream (gnome/gnome.h), consumed in process.
 *
 * Mutter sends a frame when the monitor changed, so the newest frame is the
 * screen and its number is the screen's change counter (no round trip:
 * capture_changes's sync costs nothing more). The pointer is not in the
 * frames (the cast hides it). Mutter alone has no window list: the window
 * calls return -ENOTSUP, and the root window is 0 (the screen), as on
 * wlroots. */
#include "capture/capture_private.h"
#include "gnome/gnome.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OPEN_TIMEOUT_MS 5000
/* The first frame after the stream starts (Mutter sends one at once). */
#define FIRST_FRAME_MS 2000

struct capture_gnome {
	struct capture head;	/* first: the ops and the error */
	struct gnome* session;
};

static struct capture_gnome* gn_of(struct capture* base)
{
	return (struct capture_gnome*)base;
}

static const struct capture_gnome* gn_cof(const struct capture* base)
{
	return (const struct capture_gnome*)base;
}

static int gn_fail(struct capture_gnome* self, int rc, const char* what)
{
	if (!gnome_alive(self->session))
		return capture__fail(&self->head, -ECONNRESET, "%s: Mutter's session is gone (%s)",
				what, gnome_error(self->session));
	return capture__fail(&self->head, rc, "%s: %s", what, gnome_error(self->session));
}

static int no_windows(struct capture* base)
{
	return capture__fail(base, -ENOTSUP, "Mutter alone offers no window list "
			"(GNOME Shell is needed for windows)");
}

static void gn_destroy(struct capture* base)
{
	struct capture_gnome* self = gn_of(base);
	gnome_close(self->session);
	free(self);
}

static bool gn_connected(const struct capture* base)
{
	return gnome_alive(gn_cof(base)->session);
}

static int gn_fd(const struct capture* base)
{
	return gnome_frame_fd(gn_cof(base)->session);
}

static uint32_t gn_root_window(const struct capture* base)
{
	return 0;
}

static void gn_screen_size(const struct capture* base, int* width, int* height)
{
	gnome_size(gn_cof(base)->session, width, height);
}

static bool gn_has_shm(const struct capture* base)
{
	return true;	/* PipeWire's shared memory */
}

static bool gn_has_window_capture(const struct capture* base)
{
	return false;
}

static int gn_screen(struct capture* base, const struct capture_rect* region, bool cursor,
		struct frame** out)
{
	struct capture_gnome* self = gn_of(base);
	int w, h;
	gnome_size(self->session, &w, &h);
	struct capture_rect r = { 0, 0, w, h };
	if (region) {
		int x0 = region->x > 0 ? region->x : 0, y0 = region->y > 0 ? region->y : 0;
		int x1 = region->x + region->width, y1 = region->y + region->height;
		x1 = x1 < w ? x1 : w;
		y1 = y1 < h ? y1 : h;
		if (x1 <= x0 || y1 <= y0)
			return capture__fail(base, -ERANGE, "the region misses the screen");
		r = (struct capture_rect){ x0, y0, x1 - x0, y1 - y0 };
	}
	uint64_t seq;
	if (gnome_frame_seq(self->session) == 0) {
		int rc = gnome_frame_wait(self->session, 0, FIRST_FRAME_MS, &seq);
		if (rc < 0)
			return gn_fail(self, rc, "no frame from Mutter's screen cast yet");
	}
	struct frame* f = frame_new(r.width, r.height);
	if (!f)
		return capture__fail(base, -ENOMEM, "out of memory");
	int rc = gnome_frame_read(self->session, r.x, r.y, r.width, r.height, f->data, f->stride, &seq);
	if (rc < 0) {
		frame_unref(f);
		return gn_fail(self, rc, "reading Mutter's frame");
	}
	*out = f;
	return 0;
}

static int gn_window(struct capture* base, uint32_t window, const struct capture_rect* region,
		bool cursor, struct frame** out)
{
	if (window == 0)
		return gn_screen(base, region, cursor, out);
	return no_windows(base);
}

static int gn_window_geometry(struct capture* base, uint32_t window, struct capture_rect* out)
{
	if (window != 0)
		return no_windows(base);
	*out = (struct capture_rect){ 0 };
	gn_screen_size(base, &out->width, &out->height);
	return 0;
}

static int gn_pointer(struct capture* base, uint32_t window, int* x, int* y)
{
	return capture__fail(base, -ENODATA, "Mutter does not say where the pointer is");
}

static int gn_changes(struct capture* base, uint32_t window, bool sync, uint64_t* counter)
{
	struct capture_gnome* self = gn_of(base);
	if (window != 0)
		return no_windows(base);
	if (!gnome_alive(self->session))
		return gn_fail(self, -ECONNRESET, "changes");
	uint64_t drained;
	int fd = gnome_frame_fd(self->session);
	if (fd >= 0 && read(fd, &drained, sizeof(drained)) < 0) {
		/* EAGAIN: no frame since the last read */
	}
	*counter = gnome_frame_seq(self->session);
	return 0;
}

static void gn_untrack(struct capture* base, uint32_t window)
{
}

static int gn_list_windows(struct capture* base, struct capture_window_info** out, size_t* n)
{
	return no_windows(base);
}

static int gn_window_info(struct capture* base, uint32_t window, struct capture_window_info* out)
{
	return no_windows(base);
}

static int gn_focus_window(struct capture* base, uint32_t window)
{
	return no_windows(base);
}

static int gn_move_window(struct capture* base, uint32_t window, const int* x, const int* y,
		const int* width, const int* height, struct capture_rect* result)
{
	return no_windows(base);
}

static const struct capture_ops gnome_ops = {
	.destroy = gn_destroy,
	.connected = gn_connected,
	.fd = gn_fd,
	.root_window = gn_root_window,
	.screen_size = gn_screen_size,
	.has_shm = gn_has_shm,
	.has_window_capture = gn_has_window_capture,
	.screen = gn_screen,
	.window = gn_window,
	.window_geometry = gn_window_geometry,
	.pointer = gn_pointer,
	.changes = gn_changes,
	.untrack = gn_untrack,
	.list_windows = gn_list_windows,
	.window_info = gn_window_info,
	.focus_window = gn_focus_window,
	.move_window = gn_move_window,
};

struct capture* capture__gnome_create(const char* address, char* err, size_t err_size)
{
	struct capture_gnome* self = calloc(1, sizeof(*self));
	if (!self) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	self->head.ops = &gnome_ops;
	self->session = gnome_open(address, GNOME_FRAMES, OPEN_TIMEOUT_MS, err, err_size);
	if (!self->session) {
		free(self);
		return NULL;
	}
	return &self->head;
}
