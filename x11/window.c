/* Windows: properties, the walk up to the top level, and focus, for
 * capture/ and input/ alike. */
#include "x11/x11.h"
#include "base/clock.h"

#include <X11/Xatom.h>

#include <errno.h>
#include <stdint.h>
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
