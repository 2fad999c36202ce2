/* Window states: minimize, maximize, restore, fullscreen, raise, resize and
 * close, each asked of the window manager the EWMH/ICCCM way and then
 * verified on the window's properties and geometry with a bounded wait, so
 * the caller learns what the window manager actually did (some refuse, and
 * without one nothing minimizes or maximizes). One short-lived X connection
 * per operation; callers hold the desktop lock. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "x11/x11.h"
#include "base/clock.h"
#include "base/log.h"

#include <X11/Xatom.h>
#include <X11/Xutil.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS 10
#define SETTLE_MS 60		/* geometry unchanged this long: the WM is done */
#define WATCH_POLL_MS 20	/* desktop__window_wait's reads of a list */
#define WATCH_KILL_WAIT_MS 1000
#define KILL_WAIT_MS 1000	/* for the windows of a killed client to go */

struct op {
	struct x11_conn x;
	Display* dpy;
	Window w;
	bool wm, ewmh;
	int64_t end;
	const struct desktop_window_request* req;
	struct desktop_window_outcome* out;
};

void desktop__window_note(struct desktop_window_outcome* out, const char* fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->note, sizeof(out->note), fmt, ap);
	va_end(ap);
}

int desktop__window_wait(struct desktop__window_watch* w,
		bool (*done)(struct desktop__window_watch* w))
{
	for (;;) {
		int rc = w->observe(w);
		if (rc < 0)
			return rc;
		if (done(w))
			return 1;
		if (clock_ms() >= w->end || (w->req->cancelled && atomic_load(w->req->cancelled)))
			return 0;
		clock_sleep_ms(WATCH_POLL_MS);
	}
}

int desktop__window_run(struct desktop__window_watch* w,
		int (*run)(struct desktop__window_watch* w), char* err, size_t err_size)
{
	const struct desktop_window_request* req = w->req;
	int rc = w->observe(w);
	if (rc == -ENOENT) {
		snprintf(err, err_size, "window %u does not exist", req->window);
		return rc;
	}
	if (rc < 0)
		return rc;
	w->out->before = w->out->after;
	rc = run(w);
	if (rc == -EINVAL) {
		snprintf(err, err_size, "unknown window operation");
		return -EINVAL;
	}
	if (rc == -ENOENT && req->op != DESKTOP_WINDOW_CLOSE) {
		snprintf(err, err_size, "window %u went away", req->window);
		return rc;
	}
	return rc < 0 && rc != -ENOENT ? rc : 0;
}

static bool never(struct desktop__window_watch* w)
{
	(void)w;
	return false;
}

int desktop__window_close(struct desktop__window_watch* w,
		int (*ask)(struct desktop__window_watch* w))
{
	struct desktop_window_outcome* out = w->out;
	int rc = ask(w);	/* the app may ask the person first */
	if (rc < 0 && rc != -EINVAL && rc != -ENOENT)
		return rc;
	rc = desktop__window_wait(w, never);
	out->closed = rc == -ENOENT;
	if (!out->closed && w->req->force && out->before.pid > 0) {
		kill((pid_t)out->before.pid, SIGTERM);
		out->killed = true;
		w->end = clock_ms() + WATCH_KILL_WAIT_MS;
		out->closed = desktop__window_wait(w, never) == -ENOENT;
	}
	out->applied = out->closed;
	if (out->closed)
		return 0;
	if (w->req->force && out->before.pid <= 0)
		desktop__window_note(out, "the window is still there and its pid is unknown: it cannot be ended");
	else if (!w->req->force)
		desktop__window_note(out, "the window is still there after %d ms (a dialog asking to save?); "
				"answer it, or force: true ends its client", w->req->timeout_ms);
	return 0;
}

/* Is the wait over: past o->end, or the caller gave up? */
static bool time_up(const struct op* o, int64_t end)
{
	return clock_ms() >= end || (o->req->cancelled && atomic_load(o->req->cancelled));
}

static Atom atom(struct op* o, const char* name)
{
	return XInternAtom(o->dpy, name, False);
}

static void to_state(const struct x11_window_state* s, struct desktop_window_state* out)
{
	memset(out, 0, sizeof(*out));
	out->exists = true;
	out->mapped = s->viewable;
	out->minimized = s->iconic || s->hidden;
	out->maximized = s->max_vert && s->max_horz;
	out->fullscreen = s->fullscreen;
	out->modal = s->modal;
	out->x = s->x;
	out->y = s->y;
	out->width = s->width;
	out->height = s->height;
	out->transient_for = (uint32_t)s->transient_for;
	out->pid = s->pid;
	out->takes_delete = s->takes_delete;
}

/* The window's state now into o->out->after: 0, -ENOENT (gone), -ECONNRESET. */
static int observe(struct op* o)
{
	struct x11_window_state s;
	int rc = x11_window_state(&o->x, o->w, &s);
	if (rc == -ENOENT) {
		memset(&o->out->after, 0, sizeof(o->out->after));
		return rc;
	}
	if (rc < 0)
		return rc;
	to_state(&s, &o->out->after);
	return 0;
}

/* Wait until done(o) holds on the observed state, until o->end. Returns 1
 * (holds), 0 (timed out), -ENOENT (the window went away), -ECONNRESET. */
static int wait_for(struct op* o, bool (*done)(const struct desktop_window_state*,
		const struct desktop_window_request*))
{
	XFlush(o->dpy);
	for (;;) {
		int rc = observe(o);
		if (rc < 0)
			return rc;
		if (done(&o->out->after, o->req))
			return 1;
		if (time_up(o, o->end))
			return 0;
		clock_sleep_ms(POLL_MS);
	}
}

/* Wait until the geometry has not changed for SETTLE_MS (or o->end). */
static int settle(struct op* o)
{
	XFlush(o->dpy);
	struct desktop_window_state last = o->out->after;
	int64_t still_since = clock_ms();
	for (;;) {
		int rc = observe(o);
		if (rc < 0)
			return rc;
		const struct desktop_window_state* a = &o->out->after;
		if (a->x != last.x || a->y != last.y || a->width != last.width
				|| a->height != last.height) {
			last = *a;
			still_since = clock_ms();
		}
		if (clock_ms() - still_since >= SETTLE_MS || time_up(o, o->end))
			return 0;
		clock_sleep_ms(POLL_MS);
	}
}

static bool is_minimized(const struct desktop_window_state* s, const struct desktop_window_request* r)
{
	(void)r;
	return s->minimized;
}

static bool not_minimized(const struct desktop_window_state* s, const struct desktop_window_request* r)
{
	(void)r;
	return !s->minimized && s->mapped;
}

static bool is_maximized(const struct desktop_window_state* s, const struct desktop_window_request* r)
{
	(void)r;
	return s->maximized && s->mapped;
}

static bool is_fullscreen(const struct desktop_window_state* s, const struct desktop_window_request* r)
{
	(void)r;
	return s->fullscreen && s->mapped;
}

static bool is_normal(const struct desktop_window_state* s, const struct desktop_window_request* r)
{
	(void)r;
	return s->mapped && !s->minimized && !s->maximized && !s->fullscreen;
}

static bool has_size(const struct desktop_window_state* s, const struct desktop_window_request* r)
{
	return s->width == r->width && s->height == r->height;
}

/* No window manager: the operations that only a WM performs are not done
 * (deskd does not play the WM's part). */
static int refuse_without_wm(struct op* o, const char* what)
{
	o->out->applied = false;
	desktop__window_note(o->out, "no window manager runs on this display: nothing %s a window", what);
	return 0;
}

/* Deiconify: ICCCM says map it; the WM shows it. */
static int unminimize(struct op* o)
{
	if (!o->out->after.minimized && o->out->after.mapped)
		return 1;
	if (o->ewmh) {
		/* Activation deiconifies under every EWMH WM (source: pager). */
		const long data[5] = { 2, CurrentTime, 0 };
		x11_wm_message(o->dpy, o->w, atom(o, "_NET_ACTIVE_WINDOW"), data);
	}
	XMapWindow(o->dpy, o->w);
	return wait_for(o, not_minimized);
}

static int op_minimize(struct op* o)
{
	if (o->out->after.minimized) {
		o->out->applied = true;
		return 0;
	}
	if (!o->wm)
		return refuse_without_wm(o, "minimizes");
	XIconifyWindow(o->dpy, o->w, DefaultScreen(o->dpy));
	int rc = wait_for(o, is_minimized);
	o->out->applied = rc == 1;
	/* The WM unmaps it right after saying so: report it settled. */
	for (int64_t end = clock_ms() + 100; rc == 1 && o->out->after.mapped && clock_ms() < end;) {
		clock_sleep_ms(POLL_MS);
		int r = observe(o);
		if (r < 0)
			return r;
	}
	if (rc == 0)
		desktop__window_note(o->out, "the window manager did not minimize the window");
	return rc < 0 ? rc : 0;
}

static int op_state(struct op* o, const char* a, const char* b,
		bool (*done)(const struct desktop_window_state*, const struct desktop_window_request*),
		const char* what)
{
	if (done(&o->out->after, o->req)) {
		o->out->applied = true;
		return 0;
	}
	if (!o->wm)
		return refuse_without_wm(o, what);
	int rc = unminimize(o);
	if (rc < 0)
		return rc;
	x11_change_wm_state(o->dpy, o->w, 1, atom(o, a), b ? atom(o, b) : None);
	rc = wait_for(o, done);
	if (rc == 1)
		rc = settle(o);	/* the new geometry follows the state */
	if (rc < 0)
		return rc;
	o->out->applied = done(&o->out->after, o->req);
	if (!o->out->applied)
		desktop__window_note(o->out, o->ewmh ? "the window manager did not %s the window"
				: "the window manager does not speak EWMH: it did not %s the window",
				strcmp(what, "maximizes") == 0 ? "maximize" : "make fullscreen");
	return 0;
}

static int op_restore(struct op* o)
{
	struct desktop_window_state* a = &o->out->after;
	if (!o->wm) {
		/* Only unmapped (withdrawn) windows can be brought back. */
		if (!a->mapped)
			XMapRaised(o->dpy, o->w);
		int rc = wait_for(o, is_normal);
		if (rc < 0)
			return rc;
		o->out->applied = rc == 1;
		if (!o->out->applied)
			desktop__window_note(o->out, "no window manager runs on this display: the window stays %s",
					a->maximized ? "maximized" : a->fullscreen ? "fullscreen" : "as it is");
		return 0;
	}
	int rc = unminimize(o);
	if (rc < 0)
		return rc;
	/* Both, whatever the state says: a fullscreen window's maximized
	 * state may not show until fullscreen ends (openbox). */
	x11_change_wm_state(o->dpy, o->w, 0, atom(o, "_NET_WM_STATE_FULLSCREEN"), None);
	x11_change_wm_state(o->dpy, o->w, 0, atom(o, "_NET_WM_STATE_MAXIMIZED_VERT"),
			atom(o, "_NET_WM_STATE_MAXIMIZED_HORZ"));
	rc = wait_for(o, is_normal);
	if (rc == 1)
		rc = settle(o);
	if (rc < 0)
		return rc;
	o->out->applied = is_normal(a, o->req);
	if (!o->out->applied)
		desktop__window_note(o->out, "the window manager left the window %s",
				a->minimized ? "minimized" : a->fullscreen ? "fullscreen" : "maximized");
	return 0;
}

/* Is the window's top level the topmost mapped, managed one? With an EWMH
 * WM, the last of _NET_CLIENT_LIST_STACKING; else the root's children. */
static bool on_top(struct op* o)
{
	int format = 0;
	unsigned char* data = NULL;
	long n = o->ewmh ? x11_property(o->dpy, DefaultRootWindow(o->dpy),
			atom(o, "_NET_CLIENT_LIST_STACKING"), XA_WINDOW, 4096, &format, &data) : -1;
	if (n >= 0) {
		bool top = false;
		/* The last one that is not minimized. */
		for (long i = n - 1; i >= 0 && format == 32; i--) {
			Window c = (Window)((unsigned long*)(void*)data)[i];
			struct x11_window_state s;
			if (x11_window_state(&o->x, c, &s) < 0 || !s.viewable)
				continue;
			top = c == o->w;
			break;
		}
		XFree(data);
		return top;
	}
	if (data)
		XFree(data);
	Window top = x11_toplevel(o->dpy, o->w), root, parent, *children = NULL;
	unsigned nc;
	if (!top || !XQueryTree(o->dpy, DefaultRootWindow(o->dpy), &root, &parent, &children, &nc))
		return false;
	bool found = false;
	for (unsigned i = nc; i-- > 0;) {
		XWindowAttributes attr;
		if (!XGetWindowAttributes(o->dpy, children[i], &attr) || attr.map_state != IsViewable
				|| attr.override_redirect)
			continue;
		found = children[i] == top;
		break;
	}
	if (children)
		XFree(children);
	return found;
}

static int op_raise(struct op* o)
{
	int rc = unminimize(o);
	if (rc < 0)
		return rc;
	if (o->ewmh && x11_wm_supports(&o->x, atom(o, "_NET_RESTACK_WINDOW"))) {
		const long data[5] = { 2, None, Above, 0, 0 };
		x11_wm_message(o->dpy, o->w, atom(o, "_NET_RESTACK_WINDOW"), data);
	} else {
		/* A WM sees this as a ConfigureRequest of the client; without one
		 * the top level is the window itself. */
		Window top = o->wm ? o->w : x11_toplevel(o->dpy, o->w);
		XRaiseWindow(o->dpy, top ? top : o->w);
	}
	XFlush(o->dpy);
	for (;;) {
		if (x11_sync(&o->x) == -ECONNRESET)
			return -ECONNRESET;
		if ((o->out->applied = on_top(o)))
			break;
		if (time_up(o, o->end))
			break;
		clock_sleep_ms(POLL_MS);
	}
	if ((rc = observe(o)) < 0)
		return rc;
	if (!o->out->applied)
		desktop__window_note(o->out, "another window stays above it (a window manager's layer, or it refused)");
	return 0;
}

static int op_resize(struct op* o)
{
	const struct desktop_window_request* r = o->req;
	if (has_size(&o->out->after, r)) {
		o->out->applied = true;
		return 0;
	}
	if (o->ewmh && x11_wm_supports(&o->x, atom(o, "_NET_MOVERESIZE_WINDOW"))) {
		/* Width and height only (flags bits 10, 11), StaticGravity, as a pager. */
		const long data[5] = { 10 | 1 << 10 | 1 << 11 | 2 << 12, 0, 0, r->width, r->height };
		x11_wm_message(o->dpy, o->w, atom(o, "_NET_MOVERESIZE_WINDOW"), data);
	} else {
		XResizeWindow(o->dpy, o->w, (unsigned)r->width, (unsigned)r->height);
	}
	/* Until it has the size, or another one the WM chose (size hints):
	 * any change of size, then still. */
	XFlush(o->dpy);
	int rc;
	for (;;) {
		if ((rc = observe(o)) < 0)
			return rc;
		const struct desktop_window_state* a = &o->out->after;
		if (has_size(a, r) || a->width != o->out->before.width
				|| a->height != o->out->before.height || time_up(o, o->end))
			break;
		clock_sleep_ms(POLL_MS);
	}
	if ((rc = settle(o)) < 0)
		return rc;
	o->out->applied = has_size(&o->out->after, r);
	if (!o->out->applied)
		desktop__window_note(o->out, "the window is %dx%d, not %dx%d (size hints, a maximized state or the "
				"window manager decided)", o->out->after.width, o->out->after.height,
				r->width, r->height);
	return 0;
}

/* The mapped windows that are transient for w (its dialogs), into out. */
static void find_dialogs(struct op* o)
{
	struct desktop_window_outcome* out = o->out;
	out->n_dialogs = 0;
	Window root, parent, *children = NULL;
	unsigned nc;
	if (!XQueryTree(o->dpy, DefaultRootWindow(o->dpy), &root, &parent, &children, &nc))
		return;
	for (unsigned i = 0; i < nc && out->n_dialogs < DESKTOP_WINDOW_DIALOGS; i++) {
		/* The client inside a WM frame, or the window itself. */
		Window cands[2] = { children[i], None };
		Window r2, p2, *sub = NULL;
		unsigned ns;
		if (XQueryTree(o->dpy, children[i], &r2, &p2, &sub, &ns) && sub) {
			if (ns >= 1)
				cands[1] = sub[ns - 1];
			XFree(sub);
		}
		for (int k = 0; k < 2 && cands[k]; k++) {
			Window t = None;
			XWindowAttributes attr;
			if (cands[k] != o->w && XGetTransientForHint(o->dpy, cands[k], &t) && t == o->w
					&& XGetWindowAttributes(o->dpy, cands[k], &attr)
					&& attr.map_state == IsViewable) {
				out->dialogs[out->n_dialogs++] = (uint32_t)cands[k];
				break;
			}
		}
	}
	if (children)
		XFree(children);
	x11_clear(&o->x);
}

static bool is_gone(const struct desktop_window_state* s, const struct desktop_window_request* r)
{
	(void)r;
	return !s->exists || (!s->mapped && !s->minimized);
}

/* Wait for the window to go (destroyed, or withdrawn); 1 gone, 0 not. A
 * dialog of its own ends the wait early: the client asks the user. */
static int wait_gone(struct op* o, int64_t end, bool stop_at_dialog)
{
	XFlush(o->dpy);
	for (;;) {
		int rc = observe(o);
		if (rc == -ENOENT)
			return 1;
		if (rc < 0)
			return rc;
		if (is_gone(&o->out->after, o->req))
			return 1;
		if (stop_at_dialog) {
			find_dialogs(o);
			if (o->out->n_dialogs > 0)
				return 0;
		}
		if (time_up(o, end))
			return 0;
		clock_sleep_ms(POLL_MS);
	}
}

static int op_close(struct op* o)
{
	struct desktop_window_outcome* out = o->out;
	int rc = 0;
	if (out->before.takes_delete) {
		x11_send_delete(o->dpy, o->w);
		rc = wait_gone(o, o->end, !o->req->force);
		if (rc < 0)
			return rc;
		out->closed = rc == 1;
	}
	if (!out->closed && o->req->force) {
		/* The grace period is over: end the client's connection (the X
		 * server destroys its windows; the program normally exits). */
		XKillClient(o->dpy, o->w);
		out->killed = true;
		rc = wait_gone(o, clock_ms() + KILL_WAIT_MS, false);
		if (rc < 0)
			return rc;
		out->closed = rc == 1;
	}
	out->applied = out->closed;
	if (out->closed) {
		memset(&out->after, 0, sizeof(out->after));
		return 0;
	}
	find_dialogs(o);
	if (!out->before.takes_delete)
		desktop__window_note(out, "the window does not take WM_DELETE_WINDOW; force: true ends its client");
	else if (out->n_dialogs)
		desktop__window_note(out, "the window is still there: it opened a dialog (unsaved changes?); "
				"answer it, or force: true");
	else
		desktop__window_note(out, "the window is still there after %d ms; force: true ends its client",
				o->req->timeout_ms);
	return 0;
}

int desktop_window_op(const struct desktop_window_request* req,
		struct desktop_window_outcome* out, char* err, size_t err_size)
{
	memset(out, 0, sizeof(*out));
	if (req->op == DESKTOP_WINDOW_RESIZE && (req->width < 1 || req->height < 1
			|| req->width > 32767 || req->height > 32767)) {
		snprintf(err, err_size, "width and height must be 1..32767");
		return -EINVAL;
	}
	if (desktop_is_wayland())
		return desktop__wayland_window_op(req, out, err, err_size);
	if (desktop_is_gnome())
		return desktop__gnome_window_op(req, out, err, err_size);
	struct op o = { .w = (Window)req->window, .req = req, .out = out };
	/* XOpenDisplay on a stopped X server never returns. */
	if (desktop__hung(NULL) || !x11_open(&o.x, desktop_display_name())) {
		snprintf(err, err_size, "cannot connect to the display %s", desktop_display_name());
		return -ECONNRESET;
	}
	o.dpy = o.x.dpy;
	o.end = clock_ms() + (req->timeout_ms > 0 ? req->timeout_ms : 0);
	o.wm = x11_wm_running(o.dpy);
	o.ewmh = x11_wm_supports(&o.x, atom(&o, "_NET_WM_STATE"));
	out->wm = o.wm;
	x11_wm_name(&o.x, out->wm_name, sizeof(out->wm_name));
	int rc = observe(&o);
	if (rc == -ENOENT) {
		snprintf(err, err_size, "window 0x%lx does not exist", (unsigned long)o.w);
		goto done;
	}
	if (rc < 0)
		goto lost;
	out->before = out->after;
	switch (req->op) {
	case DESKTOP_WINDOW_MINIMIZE: rc = op_minimize(&o); break;
	case DESKTOP_WINDOW_MAXIMIZE:
		rc = op_state(&o, "_NET_WM_STATE_MAXIMIZED_VERT", "_NET_WM_STATE_MAXIMIZED_HORZ",
				is_maximized, "maximizes");
		break;
	case DESKTOP_WINDOW_FULLSCREEN:
		rc = op_state(&o, "_NET_WM_STATE_FULLSCREEN", NULL, is_fullscreen, "makes fullscreen");
		break;
	case DESKTOP_WINDOW_RESTORE: rc = op_restore(&o); break;
	case DESKTOP_WINDOW_RAISE: rc = op_raise(&o); break;
	case DESKTOP_WINDOW_RESIZE: rc = op_resize(&o); break;
	case DESKTOP_WINDOW_CLOSE: rc = op_close(&o); break;
	default: rc = -EINVAL; snprintf(err, err_size, "unknown window operation"); goto done;
	}
	if (rc == -ENOENT && req->op != DESKTOP_WINDOW_CLOSE) {
		snprintf(err, err_size, "window 0x%lx went away", (unsigned long)o.w);
		goto done;
	}
	if (rc == -ENOENT) {
		/* Closed while we looked. */
		out->closed = out->applied = true;
		memset(&out->after, 0, sizeof(out->after));
		rc = 0;
	}
	if (rc < 0)
		goto lost;
	XSync(o.dpy, False);
	if (x11_lost(&o.x))
		goto lost;
	x11_close(&o.x);
	return 0;
lost:
	rc = -ECONNRESET;
	snprintf(err, err_size, "the display connection was lost");
done:
	x11_close(&o.x);
	return rc;
}
