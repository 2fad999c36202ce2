/* Windows: properties, the walk up to the top level, and focus, for
 * capture/ and input/ alike. */
#include "x11/x11.h"
#include "base/clock.h"

#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <X11/extensions/XRes.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define WALK_MAX 64		/* window tree depth we follow */
#define FOCUS_POLL_MS 2
#define WM_GRACE_MS 100		/* the WM's turn before we focus directly */
#define FOCUS_RETRY_MS 50	/* between direct XSetInputFocus attempts */
#define PUBLISH_WAIT_MS 200	/* for _NET_ACTIVE_WINDOW after the focus */

long x11_property(Display* dpy, Window w, Atom prop, Atom type, long max_items,
		int* format, unsigned char** data)
{
	Atom actual;
	unsigned long n, after;
	*data = NULL;
	if (XGetWindowProperty(dpy, w, prop, 0, max_items, False, type, &actual,
			format, &n, &after, data) != Success || !*data) {
		if (*data)
			XFree(*data);
		*data = NULL;
		return -1;
	}
	if (actual == None) {
		XFree(*data);
		*data = NULL;
		return -1;
	}
	return (long)n;
}

/* Walk up from w. Returns true on meeting `stop`; otherwise false, with
 * the top level (the root's child on the way) in *top, None when a window
 * on the way does not exist. */
static bool walk_up(Display* dpy, Window w, Window stop, Window* top)
{
	*top = None;
	for (int depth = 0; w && w != PointerRoot && depth < WALK_MAX; depth++) {
		if (w == stop)
			return true;
		Window root, parent, *children = NULL;
		unsigned n;
		if (!XQueryTree(dpy, w, &root, &parent, &children, &n))
			return false;
		if (children)
			XFree(children);
		if (w == root)
			return false;
		if (parent == root || parent == None) {
			*top = w;
			return false;
		}
		w = parent;
	}
	return false;
}

Window x11_toplevel(Display* dpy, Window w)
{
	Window top;
	walk_up(dpy, w, None, &top);
	return top;
}

bool x11_contains(Display* dpy, Window w, Window inner)
{
	Window top;
	return w && walk_up(dpy, inner, w, &top);
}

bool x11_has_focus(Display* dpy, Window w)
{
	Window focus;
	int revert;
	XGetInputFocus(dpy, &focus, &revert);
	return focus != None && focus != PointerRoot && x11_contains(dpy, w, focus);
}

void x11_wm_message(Display* dpy, Window window, Atom type, const long data[5])
{
	XEvent ev;
	memset(&ev, 0, sizeof(ev));
	ev.xclient.type = ClientMessage;
	ev.xclient.window = window;
	ev.xclient.message_type = type;
	ev.xclient.format = 32;
	for (int i = 0; i < 5; i++)
		ev.xclient.data.l[i] = data[i];
	XSendEvent(dpy, DefaultRootWindow(dpy), False,
			SubstructureRedirectMask | SubstructureNotifyMask, &ev);
}

/* The window a property names (format 32, one item), or None. */
static Window window_property(Display* dpy, Window w, Atom prop)
{
	int format;
	unsigned char* data;
	long n = x11_property(dpy, w, prop, XA_WINDOW, 1, &format, &data);
	Window found = n == 1 && format == 32 ? (Window)((unsigned long*)(void*)data)[0] : None;
	if (data)
		XFree(data);
	return found;
}

bool x11_wm_supports(struct x11_conn* self, Atom atom)
{
	Display* dpy = self->dpy;
	Window root = DefaultRootWindow(dpy);
	/* A WM that quit leaves its root properties behind: the check window
	 * it names must exist and name itself. */
	Atom check = XInternAtom(dpy, "_NET_SUPPORTING_WM_CHECK", False);
	int saved = self->error;	/* the probe's BadWindow is not the caller's */
	Window wm = window_property(dpy, root, check);
	bool alive = wm && window_property(dpy, wm, check) == wm;
	self->error = saved;
	if (!alive)
		return false;
	int format;
	unsigned char* data;
	long n = x11_property(dpy, root, XInternAtom(dpy, "_NET_SUPPORTED", False), XA_ATOM,
			4096, &format, &data);
	bool found = false;
	for (long i = 0; i < n && format == 32 && !found; i++)
		found = ((unsigned long*)(void*)data)[i] == atom;
	if (data)
		XFree(data);
	return found;
}

/* Its window attributes, or -ENOENT / -ECONNRESET. Takes the error. */
static int attributes(struct x11_conn* self, Window window, XWindowAttributes* attr)
{
	x11_clear(self);
	bool ok = XGetWindowAttributes(self->dpy, window, attr);
	if (x11_lost(self))
		return -ECONNRESET;
	x11_take(self);
	return ok ? 0 : -ENOENT;
}

int x11_focus_window(struct x11_conn* self, Window window, int timeout_ms)
{
	Display* dpy = self->dpy;
	XWindowAttributes attr;
	if (x11_lost(self))
		return -ECONNRESET;
	if (!window)
		return -ENOENT;
	int rc = attributes(self, window, &attr);
	if (rc < 0)
		return rc;
	Atom active = XInternAtom(dpy, "_NET_ACTIVE_WINDOW", False);
	bool ewmh = x11_wm_supports(self, active);
	int64_t start = clock_ms(), end = start + (timeout_ms > 0 ? timeout_ms : 0);
	int64_t direct_at = start;
	if (ewmh) {
		/* Source 2, a pager; no timestamp; no window of ours is active. */
		const long data[5] = { 2, CurrentTime, 0 };
		x11_wm_message(dpy, window, active, data);
		direct_at += timeout_ms / 4 < WM_GRACE_MS ? timeout_ms / 4 : WM_GRACE_MS;
	}
	bool mapped = false, raised = false;
	for (;;) {
		/* Errors of ours (a focus on a window unmapped meanwhile) are
		 * dropped; a window gone shows in its attributes. */
		if (x11_sync(self) == -ECONNRESET)
			return -ECONNRESET;
		rc = attributes(self, window, &attr);
		if (rc < 0)
			return rc;
		if (attr.map_state == IsViewable && x11_has_focus(dpy, window))
			break;
		int64_t now = clock_ms();
		if (now >= end)
			return -ETIMEDOUT;
		/* No WM, or it has not acted: do it ourselves. A WM gets the
		 * map as a request and maps the window its way. */
		if (now >= direct_at && attr.map_state != IsViewable && !mapped) {
			XMapRaised(dpy, window);
			mapped = true;
			continue;
		}
		if (now >= direct_at && attr.map_state == IsViewable) {
			if (!raised) {
				Window top = x11_toplevel(dpy, window);
				if (top)
					XRaiseWindow(dpy, top);
				raised = true;
			}
			XSetInputFocus(dpy, window, RevertToParent, CurrentTime);
			direct_at = now + FOCUS_RETRY_MS;
			continue;
		}
		clock_sleep_ms(FOCUS_POLL_MS);
	}
	/* Callers read _NET_ACTIVE_WINDOW next (window lists): give the WM a
	 * moment to publish the focus there too. */
	int64_t publish_end = clock_ms() + PUBLISH_WAIT_MS;
	if (publish_end > end)
		publish_end = end;
	while (ewmh && clock_ms() < publish_end
			&& !x11_contains(dpy, window_property(dpy, DefaultRootWindow(dpy), active), window))
		clock_sleep_ms(FOCUS_POLL_MS);
	return x11_sync(self) == -ECONNRESET ? -ECONNRESET : 0;
}

/* ---- Window states ---- */

/* The pid of the client that made window w, as the X server knows it
 * (X-Resource 1.2): for windows without _NET_WM_PID (Tk, Xt and some Java
 * apps). 0 when it cannot say (a remote client, an older server). */
long x11_client_pid(Display* dpy, Window w)
{
	int event_base, error_base, major = 0, minor = 0;
	if (!XResQueryExtension(dpy, &event_base, &error_base)
			|| !XResQueryVersion(dpy, &major, &minor) || major < 1 || (major == 1 && minor < 2))
		return 0;
	XResClientIdSpec spec = { .client = w, .mask = XRES_CLIENT_ID_PID_MASK };
	long n = 0;
	XResClientIdValue* ids = NULL;
	if (XResQueryClientIds(dpy, 1, &spec, &n, &ids) != Success)
		return 0;
	long pid = 0;
	for (long i = 0; i < n && pid <= 0; i++)
		pid = XResGetClientPid(&ids[i]);
	XResClientIdsDestroy(n, ids);
	return pid > 0 ? pid : 0;
}

int x11_window_state(struct x11_conn* self, Window w, struct x11_window_state* out)
{
	Display* dpy = self->dpy;
	memset(out, 0, sizeof(*out));
	if (x11_lost(self))
		return -ECONNRESET;
	XWindowAttributes attr;
	int rc = attributes(self, w, &attr);
	if (rc < 0)
		return rc;
	out->viewable = attr.map_state == IsViewable;
	Window child;
	XTranslateCoordinates(dpy, w, attr.root, 0, 0, &out->x, &out->y, &child);
	out->width = attr.width;
	out->height = attr.height;

	int format;
	unsigned char* data;
	Atom wm_state = XInternAtom(dpy, "WM_STATE", False);
	long n = x11_property(dpy, w, wm_state, wm_state, 2, &format, &data);
	long st = n >= 1 && format == 32 ? (long)((unsigned long*)(void*)data)[0] : WithdrawnState;
	out->iconic = st == IconicState;
	out->withdrawn = st == WithdrawnState;
	if (data)
		XFree(data);

	Atom names[] = {
		XInternAtom(dpy, "_NET_WM_STATE_HIDDEN", False),
		XInternAtom(dpy, "_NET_WM_STATE_MAXIMIZED_VERT", False),
		XInternAtom(dpy, "_NET_WM_STATE_MAXIMIZED_HORZ", False),
		XInternAtom(dpy, "_NET_WM_STATE_FULLSCREEN", False),
		XInternAtom(dpy, "_NET_WM_STATE_MODAL", False),
		XInternAtom(dpy, "_NET_WM_STATE_ABOVE", False),
	};
	bool* flags[] = { &out->hidden, &out->max_vert, &out->max_horz, &out->fullscreen,
		&out->modal, &out->above };
	n = x11_property(dpy, w, XInternAtom(dpy, "_NET_WM_STATE", False), XA_ATOM, 64,
			&format, &data);
	for (long i = 0; i < n && format == 32; i++)
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (((unsigned long*)(void*)data)[i] == names[k])
				*flags[k] = true;
	if (data)
		XFree(data);

	Atom* protocols = NULL;
	int count = 0;
	Atom del = XInternAtom(dpy, "WM_DELETE_WINDOW", False);
	if (XGetWMProtocols(dpy, w, &protocols, &count) && protocols) {
		for (int i = 0; i < count; i++)
			out->takes_delete |= protocols[i] == del;
		XFree(protocols);
	}
	Window parent = None;
	if (XGetTransientForHint(dpy, w, &parent))
		out->transient_for = parent;
	n = x11_property(dpy, w, XInternAtom(dpy, "_NET_WM_PID", False), XA_CARDINAL, 1, &format,
			&data);
	if (n == 1 && format == 32)
		out->pid = (long)((unsigned long*)(void*)data)[0];
	if (data)
		XFree(data);
	if (out->pid <= 0)
		out->pid = x11_client_pid(dpy, w);
	/* The window went away between the requests: say so. */
	if (x11_lost(self))
		return -ECONNRESET;
	return x11_take(self) == BadWindow ? -ENOENT : 0;
}

void x11_change_wm_state(Display* dpy, Window w, int action, Atom a, Atom b)
{
	const long data[5] = { action, (long)a, (long)b, 2, 0 };
	x11_wm_message(dpy, w, XInternAtom(dpy, "_NET_WM_STATE", False), data);
}

bool x11_wm_running(Display* dpy)
{
	XWindowAttributes attr;
	if (!XGetWindowAttributes(dpy, DefaultRootWindow(dpy), &attr))
		return false;
	return (attr.all_event_masks & SubstructureRedirectMask) != 0;
}

void x11_wm_name(struct x11_conn* self, char* out, size_t size)
{
	Display* dpy = self->dpy;
	out[0] = '\0';
	Atom check = XInternAtom(dpy, "_NET_SUPPORTING_WM_CHECK", False);
	int saved = self->error;
	Window wm = window_property(dpy, DefaultRootWindow(dpy), check);
	if (wm && window_property(dpy, wm, check) == wm) {
		int format;
		unsigned char* data;
		long n = x11_property(dpy, wm, XInternAtom(dpy, "_NET_WM_NAME", False),
				XInternAtom(dpy, "UTF8_STRING", False), 64, &format, &data);
		if (n > 0 && format == 8)
			snprintf(out, size, "%.*s", (int)n, (const char*)data);
		if (data)
			XFree(data);
	}
	self->error = saved;
}

void x11_send_delete(Display* dpy, Window w)
{
	XEvent ev;
	memset(&ev, 0, sizeof(ev));
	ev.xclient.type = ClientMessage;
	ev.xclient.window = w;
	ev.xclient.message_type = XInternAtom(dpy, "WM_PROTOCOLS", False);
	ev.xclient.format = 32;
	ev.xclient.data.l[0] = (long)XInternAtom(dpy, "WM_DELETE_WINDOW", False);
	ev.xclient.data.l[1] = CurrentTime;
	XSendEvent(dpy, w, False, NoEventMask, &ev);
}
