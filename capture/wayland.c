/* The Wayland capture context, for a wlroots compositor (sway) named by a
 * "wayland:<socket>[?sway=<ipc>]" address: screencopy for pixels,
 * copy_with_damage for change tracking, sway's IPC for the window list,
 * focus and move (without it: foreign-toplevel's list, no geometry), and the process's last virtual pointer position for the
 * pointer (a Wayland client cannot ask the compositor where it is).
 *
 * One coordinate space: the layout's logical coordinates, as sway's window
 * rectangles and the virtual pointer use them. An output with scale > 1
 * hands over frames in buffer pixels (logical size x scale); they are
 * scaled down to the logical size (capture_scale) so that a frame pixel is
 * a desktop pixel on every output. */
#include "capture/capture_private.h"
#include "base/clock.h"
#include "base/log.h"
#include "wayland/wayland.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WL_TIMEOUT_MS 3000	/* every compositor and IPC call's bound */
#define WL_FOCUS_TIMEOUT_MS 1000	/* capture_focus_window waits at most this */
#define WL_MOVE_TIMEOUT_MS 1000	/* capture_move_window's read back */
#define WL_MAX_TRACKED 64

struct wl_tracked {
	uint32_t window;	/* 0 = the screen; else a sway con id */
	uint64_t counter;
	struct capture_rect rect;	/* where it was at the last poll */
	bool visible;
	bool gone;
	bool used;
};

struct capture_wl {
	struct capture head;
	struct wayland* wl;
	char ipc[WAYLAND_ADDRESS_MAX];	/* sway's IPC socket; "" = none */
	bool lost;
	struct wl_tracked tracked[WL_MAX_TRACKED];	/* slot 0: the screen */
	unsigned evict;
	uint64_t change_clock;	/* counters take values from it */
};

static struct capture_wl* wl_of(struct capture* base)
{
	return (struct capture_wl*)base;
}

static const struct capture_wl* wl_cof(const struct capture* base)
{
	return (const struct capture_wl*)base;
}

/* ---- errors ---- */

/* A wayland/ error as the face's: a dead connection is -ECONNRESET. */
static int wl_fail(struct capture_wl* self, int rc, const char* what)
{
	if (rc == -EPIPE || rc == -EPROTO) {
		self->lost = true;
		return capture__fail(&self->head, -ECONNRESET, "the Wayland connection was lost (%s)",
				what);
	}
	if (rc == -ETIMEDOUT)
		return capture__fail(&self->head, rc, "%s: the compositor did not answer in %d ms",
				what, WL_TIMEOUT_MS);
	return capture__fail(&self->head, rc < 0 ? rc : -EIO, "%s failed: %s", what, strerror(-rc));
}

/* What needs a window's geometry (one-window shots, tracking, move and
 * resize) needs sway's IPC: foreign-toplevel gives none. */
static int no_ipc(struct capture_wl* self)
{
	return capture__fail(&self->head, -ENOTSUP,
			"a window's geometry on Wayland needs sway's IPC socket in the address "
			"(wayland:<socket>?sway=<ipc>, or SWAYSOCK); this compositor's window list "
			"(foreign-toplevel) has titles and states but no geometry: capture the screen "
			"or a region instead");
}

/* ---- rectangles ---- */

static bool intersect(const struct capture_rect* a, const struct capture_rect* b,
		struct capture_rect* out)
{
	long x0 = a->x > b->x ? a->x : b->x, y0 = a->y > b->y ? a->y : b->y;
	long x1 = (long)a->x + a->width, y1 = (long)a->y + a->height;
	long bx1 = (long)b->x + b->width, by1 = (long)b->y + b->height;
	if (bx1 < x1)
		x1 = bx1;
	if (by1 < y1)
		y1 = by1;
	if (a->width <= 0 || a->height <= 0 || x1 <= x0 || y1 <= y0)
		return false;
	if (out)
		*out = (struct capture_rect){ (int)x0, (int)y0, (int)(x1 - x0), (int)(y1 - y0) };
	return true;
}

static struct capture_rect layout_rect(const struct capture_wl* self)
{
	int32_t x, y, w, h;
	wayland_layout(self->wl, &x, &y, &w, &h);
	return (struct capture_rect){ x, y, w, h };
}

/* ---- pixels ---- */

/* A wayland/ frame as an opaque BGRX frame of the logical size lw x lh:
 * scaled down when the output's scale made it bigger. */
static struct frame* frame_from_wayland(const struct wayland_frame* wf, int lw, int lh)
{
	struct frame* f = frame_new(wf->width, wf->height);
	if (!f)
		return NULL;
	for (int y = 0; y < wf->height; y++) {
		const uint8_t* s = wf->data + (size_t)y * (size_t)wf->stride;
		uint8_t* d = f->data + (size_t)y * (size_t)f->stride;
		memcpy(d, s, 4 * (size_t)wf->width);
		for (int x = 0; x < wf->width; x++)
			d[4 * x + 3] = 0xff;	/* X or A: frames are opaque */
	}
	if (wf->width == lw && wf->height == lh)
		return f;
	/* scale > 1: buffer pixels down to logical ones (one space for all) */
	struct frame* scaled = lw <= wf->width && lh <= wf->height ? capture_scale(f, lw, lh) : NULL;
	frame_unref(f);
	return scaled;
}

/* Output i's part `local` (logical, relative to the output) as a frame of
 * its logical size. */
static int grab_output(struct capture_wl* self, int i, const struct capture_rect* local,
		bool cursor, struct frame** out)
{
	int32_t region[4] = { local->x, local->y, local->width, local->height };
	struct wayland_frame* wf = NULL;
	int rc = wayland_capture_cursor(self->wl, i, region, cursor, WL_TIMEOUT_MS, &wf);
	if (rc < 0)
		return wl_fail(self, rc, "screencopy");
	*out = frame_from_wayland(wf, local->width, local->height);
	wayland_frame_free(wf);
	return *out ? 0 : capture__fail(&self->head, -ENOMEM, "out of memory");
}

static void blit(struct frame* dst, const struct frame* src, int x, int y)
{
	for (int j = 0; j < src->height; j++)
		memcpy(dst->data + (size_t)(y + j) * (size_t)dst->stride + 4 * (size_t)x,
				src->data + (size_t)j * (size_t)src->stride, 4 * (size_t)src->width);
}

static void fill_black(struct frame* f)
{
	for (int y = 0; y < f->height; y++) {
		uint32_t* row = (uint32_t*)(void*)(f->data + (size_t)y * (size_t)f->stride);
		for (int x = 0; x < f->width; x++)
			row[x] = 0xff000000u;
	}
}

/* The layout rectangle r from every output it touches; what no output
 * shows is black. One output that holds all of r: its frame as it is. */
static int grab_layout(struct capture_wl* self, const struct capture_rect* r, bool cursor,
		struct frame** out)
{
	struct frame* result = NULL;
	int n = wayland_output_count(self->wl);
	for (int i = 0; i < n; i++) {
		struct wayland_output o;
		struct capture_rect orect, part, local;
		if (wayland_output_get(self->wl, i, &o) < 0)
			continue;
		orect = (struct capture_rect){ o.x, o.y, o.width, o.height };
		if (!intersect(r, &orect, &part))
			continue;
		local = (struct capture_rect){ part.x - o.x, part.y - o.y, part.width, part.height };
		struct frame* piece;
		int rc = grab_output(self, i, &local, cursor, &piece);
		if (rc < 0) {
			frame_unref(result);
			return rc;
		}
		if (!result && part.width == r->width && part.height == r->height) {
			*out = piece;
			return 0;
		}
		if (!result && (result = frame_new(r->width, r->height)))
			fill_black(result);
		if (result)
			blit(result, piece, part.x - r->x, part.y - r->y);
		frame_unref(piece);
		if (!result)
			return capture__fail(&self->head, -ENOMEM, "out of memory");
	}
	if (!result)
		return capture__fail(&self->head, -ERANGE, "the region lies on no output");
	*out = result;
	return 0;
}

static int wl_screen(struct capture* base, const struct capture_rect* region, bool cursor,
		struct frame** out)
{
	struct capture_wl* self = wl_of(base);
	*out = NULL;
	if (self->lost)
		return wl_fail(self, -EPIPE, "capture");
	struct capture_rect all = layout_rect(self), r;
	struct capture_rect want = region ? *region : all;
	if (region)	/* region: screen coordinates, the layout's origin at 0,0 */
		want.x += all.x, want.y += all.y;
	if (!intersect(&want, &all, &r))
		return capture__fail(base, -ERANGE, "the region lies outside the %dx%d screen",
				all.width, all.height);
	return grab_layout(self, &r, cursor, out);
}

/* ---- windows from sway's tree ---- */

/* The window with sway con id `window` (a copy; strings not kept). */
static int find_window(struct capture_wl* self, uint32_t window, struct wayland_window* out)
{
	if (!self->ipc[0])
		return no_ipc(self);
	struct wayland_window* ws;
	size_t n;
	int rc = wayland_sway_windows(self->ipc, WL_TIMEOUT_MS, &ws, &n);
	if (rc < 0)
		return capture__fail(&self->head, rc == -ETIMEDOUT ? rc : -EIO,
				"sway's IPC get_tree failed: %s", strerror(-rc));
	rc = capture__fail(&self->head, -ENOENT, "window %u does not exist (a sway con id)",
			(unsigned)window);
	for (size_t i = 0; i < n; i++) {
		if (ws[i].id == (int64_t)window) {
			*out = ws[i];
			out->app_id = out->title = NULL;
			rc = 0;
		}
	}
	wayland_windows_free(ws, n);
	return rc;
}

static struct capture_rect window_rect(const struct wayland_window* w)
{
	return (struct capture_rect){ w->x, w->y, w->width, w->height };
}

static int wl_window_geometry(struct capture* base, uint32_t window, struct capture_rect* out)
{
	struct wayland_window w;
	int rc = find_window(wl_of(base), window, &w);
	if (rc == 0)
		*out = window_rect(&w);
	return rc;
}

/* A window is the layout rectangle it covers: on wlroots 0.15 screencopy
 * sees outputs only, so a covered window shows what covers it, and a
 * window on a hidden workspace cannot be captured at all. What lies off
 * every output is black. */
static int wl_window(struct capture* base, uint32_t window, const struct capture_rect* region,
		bool cursor, struct frame** out)
{
	struct capture_wl* self = wl_of(base);
	*out = NULL;
	if (!window)	/* the root: the screen */
		return wl_screen(base, region, cursor, out);
	struct wayland_window w;
	int rc = find_window(self, window, &w);
	if (rc < 0)
		return rc;
	if (!w.visible)
		return capture__fail(base, -ENODATA,
				"window %u is not visible (on another workspace, or a hidden tab); "
				"focus it first to show it", (unsigned)window);
	struct capture_rect all = { 0, 0, w.width, w.height }, r;
	if (!intersect(region ? region : &all, &all, &r))
		return capture__fail(base, -ERANGE, "the region lies outside the %dx%d window",
				w.width, w.height);
	r.x += w.x;
	r.y += w.y;
	return grab_layout(self, &r, cursor, out);
}

static int wl_pointer(struct capture* base, uint32_t window, int* x, int* y)
{
	struct capture_wl* self = wl_of(base);
	int32_t px, py;
	if (wayland_pointer_last(&px, &py) < 0)
		return capture__fail(base, -ENODATA, "the pointer has not been moved by deskd yet "
				"(Wayland clients cannot ask the compositor where it is)");
	struct capture_rect origin = layout_rect(self);
	if (window) {
		int rc = wl_window_geometry(base, window, &origin);
		if (rc < 0)
			return rc;
	}
	*x = px - origin.x;
	*y = py - origin.y;
	return 0;
}

/* ---- change tracking: copy_with_damage ---- */

/* Cost: the compositor copies a repainted output into our shm once per
 * repaint (about a capture's worth, while something changes); a poll while
 * nothing changes is a round trip, plus one get_tree when windows are
 * tracked (their rectangles: a moved window changed). */

static struct wl_tracked* tracked_find(struct capture_wl* self, uint32_t window)
{
	for (int i = 0; i < WL_MAX_TRACKED; i++)
		if (self->tracked[i].used && self->tracked[i].window == window)
			return &self->tracked[i];
	return NULL;
}

static void tracked_bump(struct capture_wl* self, struct wl_tracked* t)
{
	t->counter = ++self->change_clock;
}

/* Damage in layout box `box` changes the screen and every visible tracked
 * window it touches. */
static void apply_damage(struct capture_wl* self, const struct capture_rect* box)
{
	for (int i = 0; i < WL_MAX_TRACKED; i++) {
		struct wl_tracked* t = &self->tracked[i];
		if (!t->used || t->gone)
			continue;
		if (!t->window || (t->visible && intersect(box, &t->rect, NULL)))
			tracked_bump(self, t);
	}
}

/* What every output's damage watch has to say now. */
static int poll_damage(struct capture_wl* self)
{
	int n = wayland_output_count(self->wl);
	for (int i = 0; i < n; i++) {
		int32_t b[4];
		int rc = wayland_damage(self->wl, i, 0, b);
		if (rc < 0)
			return wl_fail(self, rc, "screencopy damage");
		if (rc > 0) {
			struct capture_rect box = { b[0], b[1], b[2], b[3] };
			apply_damage(self, &box);
		}
	}
	return 0;
}

/* The tracked windows' rectangles from sway: a window that moved, was
 * resized, shown or hidden changed; one not in the tree is gone. */
static int refresh_windows(struct capture_wl* self)
{
	bool any = false;
	for (int i = 1; i < WL_MAX_TRACKED; i++)
		any = any || (self->tracked[i].used && !self->tracked[i].gone);
	if (!any || !self->ipc[0])
		return 0;
	struct wayland_window* ws;
	size_t n;
	int rc = wayland_sway_windows(self->ipc, WL_TIMEOUT_MS, &ws, &n);
	if (rc < 0)
		return capture__fail(&self->head, -EIO, "sway's IPC get_tree failed: %s", strerror(-rc));
	for (int i = 1; i < WL_MAX_TRACKED; i++) {
		struct wl_tracked* t = &self->tracked[i];
		if (!t->used || t->gone)
			continue;
		t->gone = true;
		for (size_t k = 0; k < n; k++) {
			if (ws[k].id != (int64_t)t->window)
				continue;
			struct capture_rect r = window_rect(&ws[k]);
			if (memcmp(&r, &t->rect, sizeof(r)) != 0 || ws[k].visible != t->visible)
				tracked_bump(self, t);
			t->rect = r;
			t->visible = ws[k].visible;
			t->gone = false;
		}
	}
	wayland_windows_free(ws, n);
	return 0;
}

/* Find or make a window's slot (evicting one when full); first poll = a change. */
static int tracked_get(struct capture_wl* self, uint32_t window, struct wl_tracked** out)
{
	struct wl_tracked* t = tracked_find(self, window);
	if (t && !t->gone) {
		*out = t;
		return 0;
	}
	struct wayland_window w;
	int rc = find_window(self, window, &w);
	if (rc < 0)
		return rc;
	for (int i = 1; i < WL_MAX_TRACKED && !t; i++)
		if (!self->tracked[i].used)
			t = &self->tracked[i];
	if (!t)
		t = &self->tracked[1 + self->evict++ % (WL_MAX_TRACKED - 1)];
	*t = (struct wl_tracked){ .window = window, .rect = window_rect(&w),
		.visible = w.visible, .used = true };
	tracked_bump(self, t);
	*out = t;
	return 0;
}

static int wl_changes(struct capture* base, uint32_t window, bool sync, uint64_t* counter)
{
	struct capture_wl* self = wl_of(base);
	if (self->lost)
		return wl_fail(self, -EPIPE, "changes");
	struct wl_tracked* t = &self->tracked[0];
	int rc = window ? tracked_get(self, window, &t) : 0;
	if (rc < 0)
		return rc;
	/* A watch moves on by events: a round trip brings the answers to
	 * the requests the first poll sent (the layout, the copy). */
	if ((rc = poll_damage(self)) < 0)
		return rc;
	if (sync) {
		if ((rc = wayland_sync(self->wl, WL_TIMEOUT_MS)) < 0)
			return wl_fail(self, rc, "changes");
		if ((rc = poll_damage(self)) < 0 || (rc = refresh_windows(self)) < 0)
			return rc;
	}
	if (t->gone)
		return capture__fail(base, -ENOENT, "window %u is gone", (unsigned)window);
	*counter = t->counter;
	return 0;
}

static void wl_untrack(struct capture* base, uint32_t window)
{
	struct wl_tracked* t = window ? tracked_find(wl_of(base), window) : NULL;
	if (t)
		memset(t, 0, sizeof(*t));
}

/* ---- the window list, focus and move (sway IPC) ---- */

/* Copy at most CAPTURE_TITLE_MAX code points of UTF-8 (sway's JSON reader
 * gave valid UTF-8); control characters become spaces. */
static void copy_title(char* dst, size_t size, const char* s)
{
	size_t o = 0;
	int chars = 0;
	for (const unsigned char* p = (const unsigned char*)s; *p && chars < CAPTURE_TITLE_MAX;) {
		size_t n = *p < 0x80 ? 1 : *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : 2;
		if (o + n >= size || strnlen((const char*)p, n) < n)
			break;
		memcpy(dst + o, p, n);
		if (n == 1 && (*p < 0x20 || *p == 0x7f))
			dst[o] = ' ';
		o += n;
		p += n;
		chars++;
	}
	dst[o] = '\0';
}

static void fill_info(const struct wayland_window* w, struct capture_window_info* out)
{
	memset(out, 0, sizeof(*out));
	out->id = (uint32_t)w->id;
	out->pid = (int)w->pid;
	copy_title(out->title, sizeof(out->title), w->title);
	snprintf(out->app, sizeof(out->app), "%s", w->app_id);
	out->rect = window_rect(w);
	out->focused = w->focused;
	out->visible = w->visible;
	out->mapped = true;	/* sway's tree holds mapped views only */
	out->minimized = false;	/* sway has no minimize */
	out->fullscreen = w->fullscreen;
	out->wayland_native = !w->xwayland;
}

/* ---- the window list without IPC: foreign-toplevel (wayland/toplevel.c) ---- */

/* What foreign-toplevel says of a window: no geometry (rect 0x0), no pid,
 * and no way to tell a Wayland client from an Xwayland one. */
static void fill_toplevel_info(const struct wayland_toplevel* t, struct capture_window_info* out)
{
	memset(out, 0, sizeof(*out));
	out->id = t->id;
	copy_title(out->title, sizeof(out->title), t->title);
	snprintf(out->app, sizeof(out->app), "%s", t->app_id);
	out->focused = t->activated;
	out->visible = !t->minimized;
	out->mapped = true;
	out->minimized = t->minimized;
	out->maximized = t->maximized;
	out->fullscreen = t->fullscreen;
	out->transient_for = t->parent;
}

static int no_toplevels(struct capture_wl* self, int rc)
{
	if (rc == -ENODATA)
		return capture__fail(&self->head, -ENOTSUP,
				"windows on Wayland need sway's IPC (wayland:<socket>?sway=<ipc>, or "
				"SWAYSOCK) or the compositor's foreign-toplevel list%s",
				wayland_has(self->wl, WAYLAND_FOREIGN_TOPLEVEL)
						? ", which deskd's display watcher has not bound yet"
						: ", which this compositor does not offer");
	return capture__fail(&self->head, rc, "the compositor's window list: %s", strerror(-rc));
}

static int list_toplevels(struct capture_wl* self, struct capture_window_info** out, size_t* n)
{
	struct wayland_toplevel* ts;
	size_t count;
	int rc = wayland_toplevels(&ts, &count);
	if (rc < 0)
		return no_toplevels(self, rc);
	struct capture_window_info* list = calloc(count ? count : 1, sizeof(*list));
	if (!list) {
		free(ts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++)
		fill_toplevel_info(&ts[i], &list[i]);
	free(ts);
	*out = list;
	*n = count;
	return 0;
}

static int toplevel_info(struct capture_wl* self, uint32_t window, struct capture_window_info* out)
{
	struct wayland_toplevel t;
	int rc = wayland_toplevel_get(window, &t);
	if (rc == -ENOENT)
		return capture__fail(&self->head, -ENOENT, "window %u does not exist", (unsigned)window);
	if (rc < 0)
		return no_toplevels(self, rc);
	fill_toplevel_info(&t, out);
	return 0;
}

/* Activate, then wait for the compositor to say it is the active one. */
static int focus_toplevel(struct capture_wl* self, uint32_t window)
{
	struct capture_window_info info;
	int rc = toplevel_info(self, window, &info);
	if (rc < 0)
		return rc;
	rc = wayland_toplevel_request(window, WAYLAND_TOPLEVEL_ACTIVATE);
	if (rc < 0)
		return capture__fail(&self->head, rc == -ENOENT ? rc : -EIO,
				"activating window %u: %s", (unsigned)window, strerror(-rc));
	int64_t end = clock_ms() + WL_FOCUS_TIMEOUT_MS;
	do {
		if ((rc = toplevel_info(self, window, &info)) < 0)
			return rc;
		if (info.focused)
			return 0;
		clock_sleep_ms(10);
	} while (clock_ms() < end);
	return capture__fail(&self->head, -ETIMEDOUT,
			"window %u did not become the active one within %d ms", (unsigned)window,
			WL_FOCUS_TIMEOUT_MS);
}

/* sway's windows, or the reason there are none (no IPC: -ENOTSUP). */
static int read_tree(struct capture_wl* self, struct wayland_window** ws, size_t* n)
{
	if (!self->ipc[0])
		return no_ipc(self);
	int rc = wayland_sway_windows(self->ipc, WL_TIMEOUT_MS, ws, n);
	if (rc < 0)
		return capture__fail(&self->head, rc == -ETIMEDOUT ? rc : -EIO,
				"sway's IPC get_tree failed: %s", strerror(-rc));
	return 0;
}

static int wl_list_windows(struct capture* base, struct capture_window_info** out, size_t* n)
{
	struct capture_wl* self = wl_of(base);
	*out = NULL;
	*n = 0;
	if (!self->ipc[0])
		return list_toplevels(self, out, n);
	struct wayland_window* ws;
	size_t count;
	int rc = read_tree(self, &ws, &count);
	if (rc < 0)
		return rc;
	struct capture_window_info* list = calloc(count ? count : 1, sizeof(*list));
	if (!list) {
		wayland_windows_free(ws, count);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++)
		fill_info(&ws[i], &list[i]);
	wayland_windows_free(ws, count);
	*out = list;
	*n = count;
	return 0;
}

static int wl_window_info(struct capture* base, uint32_t window, struct capture_window_info* out)
{
	struct capture_wl* self = wl_of(base);
	if (!self->ipc[0])
		return toplevel_info(self, window, out);
	struct wayland_window* ws;
	size_t n;
	int rc = read_tree(self, &ws, &n);
	if (rc < 0)
		return rc;
	rc = capture__fail(base, -ENOENT, "window %u does not exist (a sway con id)",
			(unsigned)window);
	for (size_t i = 0; i < n; i++) {
		if (ws[i].id == (int64_t)window) {
			fill_info(&ws[i], out);
			rc = 0;
		}
	}
	wayland_windows_free(ws, n);
	return rc;
}

/* Run "[con_id=N] what" on sway. */
static int con_command(struct capture_wl* self, uint32_t window, const char* what)
{
	char cmd[256], msg[256];
	snprintf(cmd, sizeof(cmd), "[con_id=%u] %s", (unsigned)window, what);
	int rc = wayland_sway_command(self->ipc, cmd, WL_TIMEOUT_MS, msg, sizeof(msg));
	if (rc == -EINVAL)
		return capture__fail(&self->head, -EINVAL, "sway refused \"%s\": %s", cmd, msg);
	if (rc < 0)
		return capture__fail(&self->head, rc == -ETIMEDOUT ? rc : -EIO,
				"sway's IPC command failed: %s", strerror(-rc));
	return 0;
}

static int wl_focus_window(struct capture* base, uint32_t window)
{
	struct capture_wl* self = wl_of(base);
	if (!self->ipc[0])
		return focus_toplevel(self, window);
	struct wayland_window w;
	int rc = find_window(self, window, &w);
	if (rc < 0 || (rc = con_command(self, window, "focus")) < 0)
		return rc;
	int64_t end = clock_ms() + WL_FOCUS_TIMEOUT_MS;
	do {
		if ((rc = find_window(self, window, &w)) < 0)
			return rc;
		if (w.focused)
			return 0;
		clock_sleep_ms(10);
	} while (clock_ms() < end);
	return capture__fail(base, -ETIMEDOUT, "window %u did not get the focus within %d ms",
			(unsigned)window, WL_FOCUS_TIMEOUT_MS);
}

/* Floating (a tiled window's size is the layout's), then size and place;
 * sway's rect is the container's: the client area with the generated
 * config's "default_border none". */
static int wl_move_window(struct capture* base, uint32_t window, const int* x, const int* y,
		const int* width, const int* height, struct capture_rect* result)
{
	struct capture_wl* self = wl_of(base);
	struct capture_rect g;
	int rc = wl_window_geometry(base, window, &g);
	if (rc < 0)
		return rc;
	struct capture_rect want = {
		x ? *x : g.x, y ? *y : g.y, width ? *width : g.width, height ? *height : g.height,
	};
	if (want.width < 1 || want.height < 1 || want.width > 32767 || want.height > 32767)
		return capture__fail(base, -EINVAL, "width and height must be 1..32767");
	char what[160];
	snprintf(what, sizeof(what), "floating enable, resize set %d %d, move position %d %d",
			want.width, want.height, want.x, want.y);
	if ((rc = con_command(self, window, what)) < 0)
		return rc;
	/* read back until it is there or stops changing (bounded) */
	int64_t end = clock_ms() + WL_MOVE_TIMEOUT_MS;
	struct capture_rect last = g;
	int stable = 0;
	while (clock_ms() < end && stable < 10) {
		clock_sleep_ms(10);
		if ((rc = wl_window_geometry(base, window, &g)) < 0)
			return rc;
		if (memcmp(&g, &want, sizeof(g)) == 0)
			break;
		stable = memcmp(&g, &last, sizeof(g)) == 0 ? stable + 1 : 0;
		last = g;
	}
	if (result)
		*result = g;
	return 0;
}

/* ---- the context ---- */

static void wl_destroy(struct capture* base)
{
	struct capture_wl* self = wl_of(base);
	wayland_disconnect(self->wl);
	free(self);
}

static bool wl_connected(const struct capture* base)
{
	return !wl_cof(base)->lost;
}

static int wl_fd(const struct capture* base)
{
	return wayland_fd(wl_cof(base)->wl);
}

/* capture_window(0) is the screen, as the root window is on X11. */
static uint32_t wl_root_window(const struct capture* base)
{
	return 0;
}

static void wl_screen_size(const struct capture* base, int* width, int* height)
{
	struct capture_rect r = layout_rect(wl_cof(base));
	*width = r.width;
	*height = r.height;
}

static bool wl_has_shm(const struct capture* base)
{
	return true;	/* screencopy into wl_shm */
}

static bool wl_has_window_capture(const struct capture* base)
{
	return wl_cof(base)->ipc[0] != '\0';	/* its rectangle on the outputs (capture.h) */
}

/* --memory-idle: the screencopy buffer (its pages are in our RSS: we read
 * them) and the damage watches' buffers go; a spurious whole-output change
 * after is at worst one extra grab. */
static void wl_release(struct capture* base)
{
	struct capture_wl* self = wl_of(base);
	if (!self->lost)
		wayland_release_buffers(self->wl);
}

static const struct capture_ops wl_ops = {
	.destroy = wl_destroy,
	.connected = wl_connected,
	.fd = wl_fd,
	.root_window = wl_root_window,
	.screen_size = wl_screen_size,
	.has_shm = wl_has_shm,
	.has_window_capture = wl_has_window_capture,
	.release = wl_release,
	.screen = wl_screen,
	.window = wl_window,
	.window_geometry = wl_window_geometry,
	.pointer = wl_pointer,
	.changes = wl_changes,
	.untrack = wl_untrack,
	.list_windows = wl_list_windows,
	.window_info = wl_window_info,
	.focus_window = wl_focus_window,
	.move_window = wl_move_window,
};

struct capture* capture__wayland_create(const char* address, char* err, size_t err_size)
{
	char socket[WAYLAND_ADDRESS_MAX];
	struct capture_wl* self = calloc(1, sizeof(*self));
	if (!self) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	self->head.ops = &wl_ops;
	if (wayland_address_parse(address, socket, sizeof(socket), self->ipc,
				sizeof(self->ipc)) < 0) {
		snprintf(err, err_size, "not a Wayland address: %s", address);
		goto failure;
	}
	int e = 0;
	self->wl = wayland_connect(socket, NULL, WL_TIMEOUT_MS, &e);
	if (!self->wl) {
		snprintf(err, err_size, "cannot connect to the compositor at %s: %s", socket,
				strerror(-e));
		goto failure;
	}
	if (!wayland_has(self->wl, WAYLAND_SCREENCOPY)) {
		snprintf(err, err_size, "the compositor at %s offers no screencopy (missing: %s)",
				socket, wayland_missing(self->wl));
		goto failure;
	}
	/* the screen is always tracked (slot 0) */
	self->tracked[0] = (struct wl_tracked){ .window = 0, .used = true, .visible = true };
	tracked_bump(self, &self->tracked[0]);
	return &self->head;

failure:
	wayland_disconnect(self->wl);
	free(self);
	return NULL;
}
