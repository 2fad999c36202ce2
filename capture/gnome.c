/* capture/'s GNOME backend (Mutter): the screen from the ScreenCast
 * session's PipeWire stream (gnome/gnome.h), consumed in process.
 *
 * Mutter sends a frame when the monitor changed, so the newest frame is the
 * screen and its number is the screen's change counter (no round trip:
 * capture_changes's sync costs nothing more). The pointer is not in the
 * frames (the cast hides it). The root window is 0 (the screen), as on
 * wlroots. Windows come from GNOME Shell with deskd's extension (gnome/
 * shell/); a window is captured as its frame's part of the screen, and its
 * change counter is the screen's. Mutter alone has no window list: the
 * window calls return -ENOTSUP. */
#include "capture/capture_private.h"
#include "gnome/gnome.h"
#include "base/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OPEN_TIMEOUT_MS 5000
/* The first frame after the stream starts: usually 20-180 ms, but one
 * open in six or eight waited 1.2-2.3 s for Mutter (measured). */
#define FIRST_FRAME_MS 5000
#define FOCUS_WAIT_MS 1000
#define MOVE_WAIT_MS 1000
#define POLL_MS 10

struct capture_gnome {
	struct capture head;	/* first: the ops and the error */
	struct gnome* session;
	struct gnome_shell* shell;	/* the window calls; NULL until first needed */
	bool has_windows;	/* the shell answered with its list at create */
	char address[GNOME_ADDRESS_MAX];
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
	return capture__fail(base, -ENOTSUP, GNOME_NO_WINDOWS);
}

static void gn_destroy(struct capture* base)
{
	struct capture_gnome* self = gn_of(base);
	gnome_shell_close(self->shell);
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

/* With the shell's window list: a window is its frame's part of the screen. */
static bool gn_has_window_capture(const struct capture* base)
{
	return gn_cof(base)->has_windows;
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

/* ---- windows (GNOME Shell with deskd's extension) ---- */

/* deskd's window ids are the low 32 bits of Mutter's 64-bit ones (a random
 * 32-bit base plus a counter: consecutive, so the low bits do not clash). */
static uint32_t short_id(uint64_t id)
{
	return (uint32_t)id;
}

/* The window calls' connection, made when first needed (and again when
 * the bus dropped it); NULL with the failure recorded. */
static struct gnome_shell* shell_of(struct capture_gnome* self, int* rc)
{
	if (self->shell && !gnome_shell_alive(self->shell)) {
		gnome_shell_close(self->shell);
		self->shell = NULL;
	}
	if (!self->shell) {
		char err[256];
		self->shell = gnome_shell_open(self->address, OPEN_TIMEOUT_MS, err, sizeof(err));
		if (!self->shell)
			*rc = capture__fail(&self->head, -ECONNRESET, "%s", err);
	}
	return self->shell;
}

static int shell_fail(struct capture_gnome* self, int rc)
{
	if (rc == -ENOTSUP)
		return no_windows(&self->head);
	if (rc == -ENOENT)
		return capture__fail(&self->head, rc, "%s", gnome_shell_error(self->shell));
	return capture__fail(&self->head, rc == -EPIPE ? -ECONNRESET : rc, "%s",
			gnome_shell_error(self->shell));
}

/* The shell's windows; rc < 0 with the failure recorded. */
static int shell_windows(struct capture_gnome* self, struct gnome_window** ws, size_t* n)
{
	int rc = 0;
	struct gnome_shell* shell = shell_of(self, &rc);
	if (!shell)
		return rc;
	rc = gnome_windows(shell, ws, n);
	return rc < 0 ? shell_fail(self, rc) : 0;
}

static void fill_info(const struct gnome_window* w, struct capture_window_info* out)
{
	memset(out, 0, sizeof(*out));
	out->id = short_id(w->id);
	out->pid = w->pid;
	snprintf(out->title, sizeof(out->title), "%s", w->title);
	snprintf(out->app, sizeof(out->app), "%s", w->wm_class);
	snprintf(out->instance, sizeof(out->instance), "%s", w->app_id[0] ? w->app_id : w->wm_class);
	out->rect = (struct capture_rect){ w->x, w->y, w->width, w->height };
	out->focused = w->flags & GNOME_WINDOW_FOCUSED;
	out->minimized = w->flags & GNOME_WINDOW_MINIMIZED;
	out->mapped = !out->minimized;
	out->visible = out->mapped && (w->flags & GNOME_WINDOW_ON_WORKSPACE);
	out->maximized = w->flags & GNOME_WINDOW_MAXIMIZED;
	out->fullscreen = w->flags & GNOME_WINDOW_FULLSCREEN;
	out->modal = w->flags & GNOME_WINDOW_MODAL;
	out->transient_for = short_id(w->transient_for);
	out->wayland_native = !(w->flags & GNOME_WINDOW_X11);
	/* GTK's extents start at its surface, shadows included (the buffer). */
	out->surface_dx = w->buffer_x - w->x;
	out->surface_dy = w->buffer_y - w->y;
}

/* One window by deskd's id; -ENOENT. */
static int find_window(struct capture_gnome* self, uint32_t window, struct gnome_window* out)
{
	struct gnome_window* ws;
	size_t n;
	int rc = shell_windows(self, &ws, &n);
	if (rc < 0)
		return rc;
	rc = capture__fail(&self->head, -ENOENT, "no window %u", (unsigned)window);
	for (size_t i = 0; i < n; i++)
		if (short_id(ws[i].id) == window) {
			*out = ws[i];
			rc = 0;
		}
	free(ws);
	return rc;
}

static int gn_list_windows(struct capture* base, struct capture_window_info** out, size_t* n)
{
	struct capture_gnome* self = gn_of(base);
	struct gnome_window* ws;
	size_t count;
	*out = NULL;
	*n = 0;
	int rc = shell_windows(self, &ws, &count);
	if (rc < 0)
		return rc;
	if (count) {
		*out = calloc(count, sizeof(**out));
		if (!*out) {
			free(ws);
			return capture__fail(base, -ENOMEM, "out of memory");
		}
	}
	for (size_t i = 0; i < count; i++)
		fill_info(&ws[i], &(*out)[i]);
	*n = count;
	free(ws);
	return 0;
}

static int gn_window_info(struct capture* base, uint32_t window, struct capture_window_info* out)
{
	struct gnome_window w;
	int rc = find_window(gn_of(base), window, &w);
	if (rc == 0)
		fill_info(&w, out);
	return rc;
}

static int gn_window_geometry(struct capture* base, uint32_t window, struct capture_rect* out)
{
	if (window == 0) {
		*out = (struct capture_rect){ 0 };
		gn_screen_size(base, &out->width, &out->height);
		return 0;
	}
	struct gnome_window w;
	int rc = find_window(gn_of(base), window, &w);
	if (rc == 0)
		*out = (struct capture_rect){ w.x, w.y, w.width, w.height };
	return rc;
}

/* A window is the part of the screen its frame covers (what covers it
 * shows, as on wlroots); region is in window coordinates. */
static int gn_window(struct capture* base, uint32_t window, const struct capture_rect* region,
		bool cursor, struct frame** out)
{
	if (window == 0)
		return gn_screen(base, region, cursor, out);
	struct gnome_window w;
	int rc = find_window(gn_of(base), window, &w);
	if (rc < 0)
		return rc;
	if (w.flags & GNOME_WINDOW_MINIMIZED || !(w.flags & GNOME_WINDOW_ON_WORKSPACE))
		return capture__fail(base, -ENODATA, "window %u is not on the screen", (unsigned)window);
	struct capture_rect r = { w.x, w.y, w.width, w.height };
	if (region) {
		int x0 = region->x > 0 ? region->x : 0, y0 = region->y > 0 ? region->y : 0;
		int x1 = region->x + region->width, y1 = region->y + region->height;
		x1 = x1 < w.width ? x1 : w.width;
		y1 = y1 < w.height ? y1 : w.height;
		if (x1 <= x0 || y1 <= y0)
			return capture__fail(base, -ERANGE, "the region misses the window");
		r = (struct capture_rect){ w.x + x0, w.y + y0, x1 - x0, y1 - y0 };
	}
	return gn_screen(base, &r, cursor, out);
}

static int gn_pointer(struct capture* base, uint32_t window, int* x, int* y)
{
	return capture__fail(base, -ENODATA, "Mutter does not say where the pointer is");
}

static int gn_changes(struct capture* base, uint32_t window, bool sync, uint64_t* counter)
{
	struct capture_gnome* self = gn_of(base);
	struct gnome_window w;
	int rc = window ? find_window(self, window, &w) : 0;
	if (rc < 0)
		return rc;
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

/* Activate, then wait (bounded) until the shell says it has the focus. */
static int gn_focus_window(struct capture* base, uint32_t window)
{
	struct capture_gnome* self = gn_of(base);
	int rc = 0;
	struct gnome_shell* shell = shell_of(self, &rc);
	if (!shell)
		return rc;
	rc = gnome_window_focus(shell, window, FOCUS_WAIT_MS);
	if (rc == -ETIMEDOUT)
		return capture__fail(base, rc, "window %u did not take the focus", (unsigned)window);
	if (rc == -ENOENT)
		return capture__fail(base, rc, "no window %u", (unsigned)window);
	return rc < 0 ? shell_fail(self, rc) : 0;
}

/* Move and resize the frame, then wait (bounded) for the shell to show it. */
static int gn_move_window(struct capture* base, uint32_t window, const int* x, const int* y,
		const int* width, const int* height, struct capture_rect* result)
{
	struct capture_gnome* self = gn_of(base);
	struct gnome_window w;
	int rc = find_window(self, window, &w);
	if (rc < 0)
		return rc;
	struct capture_rect want = { x ? *x : w.x, y ? *y : w.y, width ? *width : w.width,
		height ? *height : w.height };
	if ((rc = gnome_window_move_resize(self->shell, w.id, want.x, want.y, want.width,
			want.height)) < 0)
		return shell_fail(self, rc);
	int64_t end = clock_ms() + MOVE_WAIT_MS;
	struct capture_rect got;
	do {
		clock_sleep_ms(POLL_MS);
		if ((rc = find_window(self, window, &w)) < 0)
			return rc;
		got = (struct capture_rect){ w.x, w.y, w.width, w.height };
	} while (memcmp(&got, &want, sizeof(got)) != 0 && clock_ms() < end);
	if (result)
		*result = got;	/* the shell may have kept it inside the work area */
	return 0;
}

/* --memory-idle: the stream's spare frame copy goes; the newest frame is
 * the screen until Mutter sends another, so it stays. */
static void gn_release(struct capture* base)
{
	gnome_frame_release(gn_of(base)->session);
}

static const struct capture_ops gnome_ops = {
	.destroy = gn_destroy,
	.connected = gn_connected,
	.fd = gn_fd,
	.root_window = gn_root_window,
	.screen_size = gn_screen_size,
	.has_shm = gn_has_shm,
	.has_window_capture = gn_has_window_capture,
	.release = gn_release,
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
	snprintf(self->address, sizeof(self->address), "%s", address);
	self->session = gnome_open(address, GNOME_FRAMES, OPEN_TIMEOUT_MS, err, err_size);
	if (!self->session) {
		free(self);
		return NULL;
	}
	struct gnome_window* ws;
	size_t n;
	if (shell_windows(self, &ws, &n) == 0) {
		self->has_windows = true;
		free(ws);
	}
	self->head.error[0] = '\0';
	return &self->head;
}
