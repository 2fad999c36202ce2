/* The window list (EWMH, with a fallback without a window manager), focus
 * and move/resize. */
#include "capture/x11_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <X11/Xatom.h>
#include <X11/Xutil.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAPTURE_FOCUS_TIMEOUT_MS 1000	/* capture_focus_window waits at most this */

static Window active_window(struct capture_x11* self, bool* have_ewmh)
{
	int format;
	unsigned char* data;
	long n = x11_property(self->x.dpy, self->root, self->net_active_window, XA_WINDOW, 1,
			&format, &data);
	Window w = None;
	*have_ewmh = n >= 0;
	if (n == 1 && format == 32)
		w = (Window)((unsigned long*)(void*)data)[0];
	if (data)
		XFree(data);
	return w;
}

/* Copy UTF-8 (or Latin-1 when latin1) into dst, at most max_chars code
 * points; invalid sequences become U+FFFD, control characters spaces. */
static void copy_text(char* dst, size_t dst_size, const unsigned char* s, size_t len,
		bool latin1, int max_chars)
{
	size_t o = 0;
	int chars = 0;
	for (size_t i = 0; i < len && chars < max_chars;) {
		uint32_t cp;
		size_t n = 1;
		unsigned char c = s[i];
		if (c == 0)
			break;
		if (latin1 || c < 0x80) {
			cp = c;
		} else {
			int extra = c >= 0xf0 && c < 0xf5 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
			cp = 0xfffd;
			if (extra > 0 && i + (size_t)extra < len + 0) {
				uint32_t v = c & (0x3f >> extra);
				bool ok = true;
				for (int k = 1; k <= extra; k++) {
					if ((s[i + (size_t)k] & 0xc0) != 0x80) {
						ok = false;
						break;
					}
					v = v << 6 | (s[i + (size_t)k] & 0x3f);
				}
				if (ok && !((extra == 2 && v < 0x800) || (extra == 3 && (v < 0x10000 || v > 0x10ffff))
						|| (v >= 0xd800 && v < 0xe000))) {
					cp = v;
					n = (size_t)extra + 1;
				}
			}
		}
		i += n;
		if (cp < 0x20 || cp == 0x7f)
			cp = ' ';
		char buf[4];
		size_t bn;
		if (cp < 0x80) {
			buf[0] = (char)cp;
			bn = 1;
		} else if (cp < 0x800) {
			buf[0] = (char)(0xc0 | (cp >> 6));
			buf[1] = (char)(0x80 | (cp & 0x3f));
			bn = 2;
		} else if (cp < 0x10000) {
			buf[0] = (char)(0xe0 | (cp >> 12));
			buf[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
			buf[2] = (char)(0x80 | (cp & 0x3f));
			bn = 3;
		} else {
			buf[0] = (char)(0xf0 | (cp >> 18));
			buf[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
			buf[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
			buf[3] = (char)(0x80 | (cp & 0x3f));
			bn = 4;
		}
		if (o + bn >= dst_size)
			break;
		memcpy(dst + o, buf, bn);
		o += bn;
		chars++;
	}
	dst[o] = '\0';
}

static void read_title(struct capture_x11* self, Window w, struct capture_window_info* out)
{
	int format;
	unsigned char* data;
	long n = x11_property(self->x.dpy, w, self->net_wm_name, self->utf8_string, 4096,
			&format, &data);
	if (n > 0 && format == 8) {
		copy_text(out->title, sizeof(out->title), data, (size_t)n, false, CAPTURE_TITLE_MAX);
		XFree(data);
		return;
	}
	if (data)
		XFree(data);
	XTextProperty tp;
	if (XGetWMName(self->x.dpy, w, &tp) && tp.value) {
		bool latin1 = tp.encoding == XA_STRING;
		copy_text(out->title, sizeof(out->title), tp.value, tp.nitems, latin1,
				CAPTURE_TITLE_MAX);
		XFree(tp.value);
	}
}

static void fill_info(struct capture_x11* self, Window w, const XWindowAttributes* attr,
		Window active, bool have_ewmh, Window focus, struct capture_window_info* out)
{
	memset(out, 0, sizeof(*out));
	out->id = (uint32_t)w;
	int rx = 0, ry = 0;
	Window child;
	XTranslateCoordinates(self->x.dpy, w, self->root, 0, 0, &rx, &ry, &child);
	out->rect = (struct capture_rect){ rx, ry, attr->width, attr->height };
	out->mapped = attr->map_state == IsViewable;
	out->visible = out->mapped && rx < self->screen_w && ry < self->screen_h
			&& rx + attr->width > 0 && ry + attr->height > 0;
	read_title(self, w, out);
	XClassHint cls = { 0 };
	if (XGetClassHint(self->x.dpy, w, &cls)) {
		if (cls.res_class)
			copy_text(out->app, sizeof(out->app), (unsigned char*)cls.res_class,
					strlen(cls.res_class), false, 100);
		if (cls.res_name)
			copy_text(out->instance, sizeof(out->instance), (unsigned char*)cls.res_name,
					strlen(cls.res_name), false, 100);
		XFree(cls.res_class);
		XFree(cls.res_name);
	}
	struct x11_window_state st;
	if (x11_window_state(&self->x, w, &st) == 0) {
		out->pid = (int)st.pid;
		out->minimized = st.iconic || st.hidden;
		out->maximized = st.max_vert && st.max_horz;
		out->fullscreen = st.fullscreen;
		out->modal = st.modal;
		out->transient_for = (uint32_t)st.transient_for;
	}
	/* The input focus is the truth (a WM updates _NET_ACTIVE_WINDOW a
	 * little later); the EWMH property only when focus is nowhere useful. */
	if (focus == None || focus == PointerRoot || focus == self->root)
		out->focused = have_ewmh && active == w;
	else
		out->focused = x11_contains(self->x.dpy, w, focus);
}

static bool has_wm_state(struct capture_x11* self, Window w)
{
	int format;
	unsigned char* data;
	long n = x11_property(self->x.dpy, w, self->wm_state, AnyPropertyType, 2, &format, &data);
	if (data)
		XFree(data);
	return n > 0;
}

/* The client inside a WM frame: the first descendant (depth <= 2) with WM_STATE. */
static Window find_client(struct capture_x11* self, Window w, int depth)
{
	if (has_wm_state(self, w))
		return w;
	if (depth >= 2)
		return None;
	Window root, parent, *children = NULL;
	unsigned n;
	if (!XQueryTree(self->x.dpy, w, &root, &parent, &children, &n))
		return None;
	Window found = None;
	for (unsigned i = n; i-- > 0 && !found;)
		found = find_client(self, children[i], depth + 1);
	if (children)
		XFree(children);
	return found;
}

static int list_ids(struct capture_x11* self, Window** ids, size_t* n)
{
	int format;
	unsigned char* data;
	*ids = NULL;
	*n = 0;
	long count = x11_property(self->x.dpy, self->root, self->net_client_list_stacking, XA_WINDOW,
			4096, &format, &data);
	if (count < 0)
		count = x11_property(self->x.dpy, self->root, self->net_client_list, XA_WINDOW, 4096,
				&format, &data);
	if (count >= 0 && format == 32) {
		*ids = calloc((size_t)count + 1, sizeof(Window));
		if (!*ids) {
			XFree(data);
			return -ENOMEM;
		}
		for (long i = 0; i < count; i++)
			(*ids)[i] = (Window)((unsigned long*)(void*)data)[i];
		*n = (size_t)count;
		XFree(data);
		return 0;
	}
	if (data)
		XFree(data);
	/* No EWMH window manager: the root's mapped children (or the clients
	 * inside them, for a non-EWMH reparenting WM). */
	Window root, parent, *children = NULL;
	unsigned nc;
	if (!XQueryTree(self->x.dpy, self->root, &root, &parent, &children, &nc))
		return capture__fail(&self->head, -EIO, "cannot list the root's children");
	*ids = calloc((size_t)nc + 1, sizeof(Window));
	if (!*ids) {
		if (children)
			XFree(children);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < nc; i++) {
		XWindowAttributes attr;
		if (!XGetWindowAttributes(self->x.dpy, children[i], &attr))
			continue;
		if (attr.map_state != IsViewable || attr.override_redirect)
			continue;
		Window client = find_client(self, children[i], 0);
		if (!client) {
			char* name = NULL;
			bool named = XFetchName(self->x.dpy, children[i], &name) && name;
			if (name)
				XFree(name);
			if (!named && attr.class != InputOutput)
				continue;
			client = children[i];
		}
		(*ids)[(*n)++] = client;
	}
	if (children)
		XFree(children);
	return 0;
}

int x11cap_list_windows(struct capture* base, struct capture_window_info** out,
		size_t* n)
{
	struct capture_x11* self = x11_of(base);
	*out = NULL;
	*n = 0;
	if (x11_lost(&self->x))
		return capture__fail(&self->head, -ECONNRESET, "the X connection was lost");
	x11_clear(&self->x);
	Window* ids;
	size_t count;
	int rc = list_ids(self, &ids, &count);
	if (rc < 0)
		return rc;
	struct capture_window_info* list = calloc(count ? count : 1, sizeof(*list));
	if (!list) {
		free(ids);
		return -ENOMEM;
	}
	bool have_ewmh;
	Window active = active_window(self, &have_ewmh);
	Window focus;
	int revert;
	XGetInputFocus(self->x.dpy, &focus, &revert);
	size_t m = 0;
	for (size_t i = 0; i < count; i++) {
		XWindowAttributes attr;
		/* Windows go away at any moment: skip the ones that did. */
		if (!XGetWindowAttributes(self->x.dpy, ids[i], &attr))
			continue;
		fill_info(self, ids[i], &attr, active, have_ewmh, focus, &list[m++]);
	}
	free(ids);
	x11_sync(&self->x);
	if (x11_lost(&self->x)) {
		free(list);
		return capture__fail(&self->head, -ECONNRESET, "the X connection was lost");
	}
	*out = list;
	*n = m;
	return 0;
}

int x11cap_window_info(struct capture* base, uint32_t window,
		struct capture_window_info* out)
{
	struct capture_x11* self = x11_of(base);
	if (x11_lost(&self->x))
		return capture__fail(&self->head, -ECONNRESET, "the X connection was lost");
	XWindowAttributes attr;
	x11_clear(&self->x);
	if (!window || !XGetWindowAttributes(self->x.dpy, window, &attr))
		return capture__fail(&self->head, -ENOENT, LOG_WINDOW " does not exist", LOG_WINDOW_ID(window));
	bool have_ewmh;
	Window active = active_window(self, &have_ewmh);
	Window focus;
	int revert;
	XGetInputFocus(self->x.dpy, &focus, &revert);
	fill_info(self, window, &attr, active, have_ewmh, focus, out);
	x11_sync(&self->x);
	return 0;
}

int x11cap_focus_window(struct capture* base, uint32_t window)
{
	struct capture_x11* self = x11_of(base);
	switch (x11_focus_window(&self->x, window, CAPTURE_FOCUS_TIMEOUT_MS)) {
	case 0:
		return 0;
	case -ECONNRESET:
		return capture__fail(&self->head, -ECONNRESET, "the X connection was lost");
	case -ENOENT:
		return capture__fail(&self->head, -ENOENT, LOG_WINDOW " does not exist", LOG_WINDOW_ID(window));
	default:
		return capture__fail(&self->head, -ETIMEDOUT, LOG_WINDOW " did not get the focus within %d ms",
				LOG_WINDOW_ID(window), CAPTURE_FOCUS_TIMEOUT_MS);
	}
}

int x11cap_move_window(struct capture* base, uint32_t window, const int* x,
		const int* y, const int* width, const int* height,
		struct capture_rect* result)
{
	struct capture_x11* self = x11_of(base);
	struct capture_rect g;
	int rc = capture_window_geometry(&self->head, window, &g);
	if (rc < 0)
		return rc;
	struct capture_rect want = {
		x ? *x : g.x, y ? *y : g.y, width ? *width : g.width, height ? *height : g.height,
	};
	if (want.width < 1 || want.height < 1 || want.width > 32767 || want.height > 32767)
		return capture__fail(&self->head, -EINVAL, "width and height must be 1..32767");
	XWindowAttributes attr;
	if (!XGetWindowAttributes(self->x.dpy, window, &attr))
		return capture__fail(&self->head, -ENOENT, LOG_WINDOW " is gone", LOG_WINDOW_ID(window));
	bool ewmh = x11_wm_supports(&self->x, self->net_moveresize_window);

	/* Ask, then check; a WM may place the frame instead of the client, so
	 * correct the position by the offset seen, once. */
	int req_x = want.x, req_y = want.y;
	for (int attempt = 0; attempt < 2; attempt++) {
		x11_clear(&self->x);
		if (ewmh) {
			/* StaticGravity (10): x, y are the client's own position. */
			const long data[5] = { 10 | 1 << 8 | 1 << 9 | 1 << 10 | 1 << 11 | 2 << 12,
				req_x, req_y, want.width, want.height };
			x11_wm_message(self->x.dpy, window, self->net_moveresize_window, data);
		} else {
			/* XMoveWindow places the border's outer corner. */
			XMoveResizeWindow(self->x.dpy, window, req_x - attr.border_width,
					req_y - attr.border_width, (unsigned)want.width,
					(unsigned)want.height);
		}
		if (x11_sync(&self->x) < 0)
			return capture__fail(&self->head, -ECONNRESET, "the X connection was lost");
		/* Wait until the geometry stops changing (at most about 1 s). */
		struct capture_rect last = g;
		int stable = 0;
		for (int i = 0; i < 200 && stable < 10; i++) {
			clock_sleep_ms(5);
			rc = capture_window_geometry(&self->head, window, &g);
			if (rc < 0)
				return rc;
			if (memcmp(&g, &want, sizeof(g)) == 0)
				break;
			stable = memcmp(&g, &last, sizeof(g)) == 0 ? stable + 1 : 0;
			last = g;
		}
		if (g.x == want.x && g.y == want.y)
			break;
		req_x += want.x - g.x;
		req_y += want.y - g.y;
	}
	if (result)
		*result = g;
	return 0;
}
