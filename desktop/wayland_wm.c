/* Window states on a Wayland desktop: desktop_window_op through sway's IPC
 * (wm.c hands over when the desktop is Wayland). Each operation is a sway
 * command on the window's con id, then a bounded wait that reads get_tree
 * back, so the caller learns what sway did. sway tiles: it has no minimize
 * or maximize (a tiled window already fills its part of the workspace), so
 * those report applied false with a note; resize makes the window floating
 * first. Without sway's IPC (a compositor that is not sway, or no
 * SWAYSOCK) the same operations go through foreign-toplevel's requests
 * (wayland/toplevel.c) and are read back from its states: every one but
 * resize (no geometry there: -ENOTSUP). Private to desktop/. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "wayland/wayland.h"
#include "base/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define IPC_TIMEOUT_MS 2000

struct wl_op {
	struct desktop__window_watch w;	/* first: the request, outcome, end */
	char ipc[WAYLAND_ADDRESS_MAX];
};

static struct wl_op* op_of(struct desktop__window_watch* w)
{
	return (struct wl_op*)w;
}

/* The window's state now into out->after: 0, -ENOENT (gone), or the IPC's
 * -errno. */
static int toplevel_observe(struct wl_op* o)
{
	struct wayland_toplevel t;
	int rc = wayland_toplevel_get(o->w.req->window, &t);
	if (rc == -ENODATA)
		rc = -ECONNRESET;	/* the watcher lost the compositor */
	if (rc < 0) {
		memset(&o->w.out->after, 0, sizeof(o->w.out->after));
		return rc;
	}
	o->w.out->after = (struct desktop_window_state){
		.exists = true, .mapped = true, .minimized = t.minimized, .maximized = t.maximized,
		.fullscreen = t.fullscreen, .transient_for = t.parent,
	};
	return 0;
}

static int wl_observe(struct desktop__window_watch* w)
{
	struct wl_op* o = op_of(w);
	if (!o->ipc[0])
		return toplevel_observe(o);
	struct wayland_window* list;
	size_t n;
	int rc = wayland_sway_windows(o->ipc, IPC_TIMEOUT_MS, &list, &n);
	if (rc < 0)
		return rc;
	rc = -ENOENT;
	for (size_t i = 0; i < n; i++) {
		const struct wayland_window* v = &list[i];
		if ((uint32_t)v->id != o->w.req->window)
			continue;
		o->w.out->after = (struct desktop_window_state){
			.exists = true, .mapped = true, .fullscreen = v->fullscreen,
			.x = v->x, .y = v->y, .width = v->width, .height = v->height,
			.pid = v->pid,
		};
		rc = 0;
		break;
	}
	wayland_windows_free(list, n);
	if (rc == -ENOENT)
		memset(&o->w.out->after, 0, sizeof(o->w.out->after));
	return rc;
}

static bool wl_focused(struct wl_op* o)
{
	struct wayland_toplevel t;
	if (!o->ipc[0])
		return wayland_toplevel_get(o->w.req->window, &t) == 0 && t.activated;
	struct wayland_window* list;
	size_t n;
	if (wayland_sway_windows(o->ipc, IPC_TIMEOUT_MS, &list, &n) < 0)
		return false;
	bool focused = false;
	for (size_t i = 0; i < n; i++)
		if ((uint32_t)list[i].id == o->w.req->window)
			focused = list[i].focused;
	wayland_windows_free(list, n);
	return focused;
}

/* Without IPC: what each operation asks foreign-toplevel for. */
static const struct {
	enum desktop_window_op op;
	enum wayland_toplevel_request requests[3];
	int n;
} TOPLEVEL_REQUESTS[] = {
	{ DESKTOP_WINDOW_MINIMIZE, { WAYLAND_TOPLEVEL_MINIMIZE }, 1 },
	{ DESKTOP_WINDOW_MAXIMIZE, { WAYLAND_TOPLEVEL_MAXIMIZE }, 1 },
	{ DESKTOP_WINDOW_FULLSCREEN, { WAYLAND_TOPLEVEL_FULLSCREEN }, 1 },
	{ DESKTOP_WINDOW_RESTORE, { WAYLAND_TOPLEVEL_UNFULLSCREEN, WAYLAND_TOPLEVEL_UNMAXIMIZE,
				    WAYLAND_TOPLEVEL_UNMINIMIZE }, 3 },
	{ DESKTOP_WINDOW_RAISE, { WAYLAND_TOPLEVEL_ACTIVATE }, 1 },
	{ DESKTOP_WINDOW_CLOSE, { WAYLAND_TOPLEVEL_CLOSE }, 1 },
};

static int toplevel_command(struct wl_op* o)
{
	for (size_t i = 0; i < sizeof(TOPLEVEL_REQUESTS) / sizeof(TOPLEVEL_REQUESTS[0]); i++) {
		if (TOPLEVEL_REQUESTS[i].op != o->w.req->op)
			continue;
		for (int j = 0; j < TOPLEVEL_REQUESTS[i].n; j++) {
			int rc = wayland_toplevel_request(o->w.req->window, TOPLEVEL_REQUESTS[i].requests[j]);
			if (rc == -ENOTSUP) {
				desktop__window_note(o->w.out, "the compositor's foreign-toplevel is too "
						"old for this (version 1 has no fullscreen)");
				return -EINVAL;
			}
			if (rc < 0)
				return rc == -ENODATA ? -ECONNRESET : rc;
		}
		return 0;
	}
	return -EINVAL;
}

/* Run what (a sway command on the window), or without IPC the
 * operation's foreign-toplevel requests (what is NULL then). */
static int wl_command(struct wl_op* o, const char* what)
{
	if (!o->ipc[0])
		return toplevel_command(o);
	char cmd[160], error[256] = "";
	snprintf(cmd, sizeof(cmd), "[con_id=%u] %s", o->w.req->window, what);
	int rc = wayland_sway_command(o->ipc, cmd, IPC_TIMEOUT_MS, error, sizeof(error));
	if (rc == -EINVAL)
		desktop__window_note(o->w.out, "sway refused '%s': %s", what, error);
	return rc;
}

static bool is_full(struct desktop__window_watch* w) { return w->out->after.fullscreen; }
static bool not_full(struct desktop__window_watch* w) { return !w->out->after.fullscreen; }
static bool has_focus(struct desktop__window_watch* w) { return wl_focused(op_of(w)); }
static bool sized(struct desktop__window_watch* w)
{
	return w->out->after.width == w->req->width && w->out->after.height == w->req->height;
}

/* A command, then its wait; applied when the wait saw it. */
static int wl_apply(struct wl_op* o, const char* cmd, bool (*done)(struct desktop__window_watch* w))
{
	int rc = wl_command(o, cmd);
	if (rc == -EINVAL)
		return 0;	/* refused: noted, not applied */
	if (rc < 0)
		return rc;
	rc = desktop__window_wait(&o->w, done);
	if (rc < 0)
		return rc;
	o->w.out->applied = rc == 1;
	if (!o->w.out->applied && !o->w.out->note[0])
		desktop__window_note(o->w.out, "%s did not do it within %d ms", o->w.out->wm_name,
				o->w.req->timeout_ms);
	return 0;
}

/* xdg_toplevel.close (sway's kill), or foreign-toplevel's close. */
static int ask_close(struct desktop__window_watch* w)
{
	return wl_command(op_of(w), "kill");
}

static bool is_min(struct desktop__window_watch* w) { return w->out->after.minimized; }
static bool is_max(struct desktop__window_watch* w) { return w->out->after.maximized; }
static bool restored(struct desktop__window_watch* w)
{
	const struct desktop_window_state* a = &w->out->after;
	return !a->fullscreen && !a->maximized && !a->minimized;
}

/* sway's commands for each operation. */
static int sway_op(struct wl_op* o)
{
	const struct desktop_window_request* req = o->w.req;
	switch (req->op) {
	case DESKTOP_WINDOW_MINIMIZE:
		desktop__window_note(o->w.out, "sway has no minimize (windows tile); nothing changed");
		return 0;
	case DESKTOP_WINDOW_MAXIMIZE:
		desktop__window_note(o->w.out, "sway has no maximize (a tiled window fills its space); "
				"fullscreen is what it offers");
		return 0;
	case DESKTOP_WINDOW_FULLSCREEN: return wl_apply(o, "fullscreen enable", is_full);
	case DESKTOP_WINDOW_RESTORE: return wl_apply(o, "fullscreen disable", not_full);
	case DESKTOP_WINDOW_RAISE: return wl_apply(o, "focus", has_focus);
	case DESKTOP_WINDOW_RESIZE: {
		char cmd[96];
		snprintf(cmd, sizeof(cmd), "floating enable, resize set %d px %d px", req->width,
				req->height);
		return wl_apply(o, cmd, sized);
	}
	case DESKTOP_WINDOW_CLOSE: return desktop__window_close(&o->w, ask_close);
	default: return -EINVAL;
	}
}

/* foreign-toplevel's requests (TOPLEVEL_REQUESTS), read back from its
 * states; a compositor may ignore one (sway: minimize, maximize). */
static int toplevel_op(struct wl_op* o)
{
	switch (o->w.req->op) {
	case DESKTOP_WINDOW_MINIMIZE: return wl_apply(o, NULL, is_min);
	case DESKTOP_WINDOW_MAXIMIZE: return wl_apply(o, NULL, is_max);
	case DESKTOP_WINDOW_FULLSCREEN: return wl_apply(o, NULL, is_full);
	case DESKTOP_WINDOW_RESTORE: return wl_apply(o, NULL, restored);
	case DESKTOP_WINDOW_RAISE: return wl_apply(o, NULL, has_focus);
	case DESKTOP_WINDOW_CLOSE: return desktop__window_close(&o->w, ask_close);
	default: return -EINVAL;
	}
}

static int wl_run(struct desktop__window_watch* w)
{
	struct wl_op* o = op_of(w);
	return o->ipc[0] ? sway_op(o) : toplevel_op(o);
}

int desktop__wayland_window_op(const struct desktop_window_request* req,
		struct desktop_window_outcome* out, char* err, size_t err_size)
{
	struct wl_op o = { .w = { .req = req, .out = out, .observe = wl_observe } };
	char sock[WAYLAND_ADDRESS_MAX];
	if (wayland_address_parse(desktop_display_name(), sock, sizeof(sock), o.ipc,
			sizeof(o.ipc)) < 0)
		return -EINVAL;
	if (!o.ipc[0] && !wayland_toplevels_tracked()) {
		snprintf(err, err_size, "window states need sway's IPC (SWAYSOCK) or the "
				"compositor's foreign-toplevel list; this Wayland desktop offers neither");
		return -ENOTSUP;
	}
	if (!o.ipc[0] && req->op == DESKTOP_WINDOW_RESIZE) {
		snprintf(err, err_size, "resize needs sway's IPC (SWAYSOCK): this compositor's "
				"window list (foreign-toplevel) has no geometry");
		return -ENOTSUP;
	}
	out->wm = true;
	snprintf(out->wm_name, sizeof(out->wm_name), "%s", o.ipc[0] ? "sway" : "the compositor");
	o.w.end = clock_ms() + (req->timeout_ms > 0 ? req->timeout_ms : 0);
	int rc = desktop__window_run(&o.w, wl_run, err, err_size);
	if (rc == 0 || rc == -ENOENT || rc == -EINVAL)
		return rc;
	snprintf(err, err_size, "%s did not answer (%s)",
			o.ipc[0] ? "sway's IPC" : "the compositor", strerror(-rc));
	return -ECONNRESET;
}
