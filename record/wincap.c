/* Window capture for the recorder: XComposite (the window's own pixmap, so
 * covered and off-screen parts are right), XDamage to grab only when the
 * window changed, XShm to read the pixmap, XFixes for the pointer.
 *
 * X errors: every check that matters uses a synchronous call's return value
 * (XGetWindowAttributes, XGetGeometry, XShmGetImage, XGetImage), so nothing
 * depends on which process-wide handler runs; ours never exits. The I/O
 * error exit handler is set per connection, so a dead X server ends the
 * recording, not the process. */
#include "record/wincap.h"

#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xcomposite.h>
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xfixes.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

struct wincap {
	Display* dpy;
	Window win;
	Window root;
	Visual* visual;
	int depth;
	bool io_error;
	bool cursor;

	bool mapped;
	bool gone;
	bool dirty;
	bool need_pixmap;
	int width, height, border;	/* client area, border width */

	Pixmap pixmap;
	int pix_w, pix_h;

	bool has_damage;
	int damage_event;
	Damage damage;

	bool use_shm;
	XShmSegmentInfo shm;
	XImage* image;		/* pix_w x pix_h, shm or plain */
	bool have_image;

	bool has_xfixes;
	unsigned long cursor_serial;
	int cursor_x, cursor_y, win_x, win_y;
};

/* X errors: the handlers are process-wide and other modules (capture/)
 * install theirs too, so each keeps a registry of its own connections and
 * passes the others' errors on to the handler installed before it (unless
 * that is Xlib's default, which prints and exits). */
#define REGISTRY_MAX 64

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wincap* registry[REGISTRY_MAX];
static XErrorHandler previous_handler, default_handler;
static XIOErrorHandler previous_io_handler, default_io_handler;
static pthread_once_t handler_once = PTHREAD_ONCE_INIT;

static bool registered(Display* dpy)
{
	bool ours = false;
	pthread_mutex_lock(&registry_lock);
	for (int i = 0; i < REGISTRY_MAX; i++)
		if (registry[i] && registry[i]->dpy == dpy)
			ours = true;
	pthread_mutex_unlock(&registry_lock);
	return ours;
}

static int wincap_error_handler(Display* dpy, XErrorEvent* ev)
{
	/* Our checks use the return values of synchronous calls: our own
	 * errors need no recording, only never to be fatal. */
	if (!registered(dpy) && previous_handler && previous_handler != default_handler)
		return previous_handler(dpy, ev);
	return 0;
}

static int wincap_io_handler(Display* dpy)
{
	if (!registered(dpy) && previous_io_handler && previous_io_handler != default_io_handler)
		return previous_io_handler(dpy);
	return 0;	/* then the connection's exit handler decides */
}

static void wincap_io_exit(Display* dpy, void* ud)
{
	struct wincap* self = ud;
	self->io_error = true;	/* returning leaves the connection dead */
	/* _XIOError took the user lock (XLockDisplay) for the exit it
	 * expected: release it, or an XCloseDisplay on another thread waits
	 * for it forever. */
	XUnlockDisplay(dpy);
}

static void install_handler(void)
{
	XIOErrorHandler current_io = XSetIOErrorHandler(NULL);
	default_io_handler = XSetIOErrorHandler(current_io);
	previous_io_handler = XSetIOErrorHandler(wincap_io_handler);
	if (previous_io_handler == wincap_io_handler)
		previous_io_handler = NULL;
	XErrorHandler current = XSetErrorHandler(NULL);
	default_handler = XSetErrorHandler(current);
	previous_handler = XSetErrorHandler(wincap_error_handler);
	if (previous_handler == wincap_error_handler)
		previous_handler = NULL;
}

static int registry_add(struct wincap* self)
{
	pthread_once(&handler_once, install_handler);
	pthread_mutex_lock(&registry_lock);
	for (int i = 0; i < REGISTRY_MAX; i++) {
		if (!registry[i]) {
			registry[i] = self;
			pthread_mutex_unlock(&registry_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	return -EMFILE;
}

static void registry_remove(struct wincap* self)
{
	pthread_mutex_lock(&registry_lock);
	for (int i = 0; i < REGISTRY_MAX; i++)
		if (registry[i] == self)
			registry[i] = NULL;
	pthread_mutex_unlock(&registry_lock);
}

static void set_err(char* err, size_t err_size, const char* fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char* err, size_t err_size, const char* fmt, ...)
{
	if (!err || !err_size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, err_size, fmt, ap);
	va_end(ap);
}

static void free_image(struct wincap* self)
{
	if (!self->image)
		return;
	if (self->use_shm && self->shm.shmaddr) {
		XShmDetach(self->dpy, &self->shm);
		shmdt(self->shm.shmaddr);
		self->shm.shmaddr = NULL;
	}
	XDestroyImage(self->image);	/* frees data only for non-shm images */
	self->image = NULL;
}

/* An image for pix_w x pix_h; shm when possible. */
static int alloc_image(struct wincap* self)
{
	free_image(self);
	if (self->use_shm) {
		self->image = XShmCreateImage(self->dpy, self->visual, (unsigned)self->depth,
				ZPixmap, NULL, &self->shm, (unsigned)self->pix_w,
				(unsigned)self->pix_h);
		if (self->image) {
			size_t size = (size_t)self->image->bytes_per_line * (size_t)self->pix_h;
			self->shm.shmid = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
			if (self->shm.shmid >= 0) {
				self->shm.shmaddr = shmat(self->shm.shmid, NULL, 0);
				if (self->shm.shmaddr == (char*)-1)
					self->shm.shmaddr = NULL;
			}
			if (self->shm.shmaddr) {
				self->image->data = self->shm.shmaddr;
				self->shm.readOnly = False;
				Status ok = XShmAttach(self->dpy, &self->shm);
				XSync(self->dpy, False);
				/* Removed now: a crash can't leak it. */
				shmctl(self->shm.shmid, IPC_RMID, NULL);
				if (ok)
					return 0;
				shmdt(self->shm.shmaddr);
				self->shm.shmaddr = NULL;
			} else if (self->shm.shmid >= 0) {
				shmctl(self->shm.shmid, IPC_RMID, NULL);
			}
			XDestroyImage(self->image);
			self->image = NULL;
		}
		self->use_shm = false;	/* fall back to XGetImage */
	}
	self->image = XCreateImage(self->dpy, self->visual, (unsigned)self->depth,
			ZPixmap, 0, NULL, (unsigned)self->pix_w, (unsigned)self->pix_h, 32, 0);
	if (!self->image)
		return -ENOMEM;
	self->image->data = malloc((size_t)self->image->bytes_per_line * (size_t)self->pix_h);
	if (!self->image->data) {
		XDestroyImage(self->image);
		self->image = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Name the window's current pixmap (after map or resize). 0, or -ENOENT
 * when the window has none now (unmapped) or is gone. */
static int name_pixmap(struct wincap* self)
{
	if (self->pixmap) {
		XFreePixmap(self->dpy, self->pixmap);
		self->pixmap = None;
	}
	XWindowAttributes wa;
	if (!XGetWindowAttributes(self->dpy, self->win, &wa)) {
		self->gone = true;
		return -ENOENT;
	}
	self->width = wa.width;
	self->height = wa.height;
	self->border = wa.border_width;
	self->mapped = wa.map_state != IsUnmapped;
	if (wa.map_state != IsViewable)
		return -ENOENT;	/* no pixmap while unmapped */
	Pixmap p = XCompositeNameWindowPixmap(self->dpy, self->win);
	Window root;
	int x, y;
	unsigned w, h, bw, depth;
	if (!XGetGeometry(self->dpy, p, &root, &x, &y, &w, &h, &bw, &depth)) {
		/* The name failed (BadMatch: unmapped meanwhile); p is not ours. */
		return -ENOENT;
	}
	self->pixmap = p;
	self->need_pixmap = false;
	if ((int)w != self->pix_w || (int)h != self->pix_h || !self->image) {
		self->pix_w = (int)w;
		self->pix_h = (int)h;
		int rc = alloc_image(self);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int wincap_open(const char* display, unsigned long window, bool cursor,
		struct wincap** out, char* err, size_t err_size)
{
	int rc, ev, er, major, minor;

	*out = NULL;
	struct wincap* self = calloc(1, sizeof(*self));
	if (!self)
		return -ENOMEM;
	self->dpy = XOpenDisplay(display);
	if (!self->dpy) {
		set_err(err, err_size, "cannot open the X display %s",
				display ? display : "($DISPLAY)");
		rc = -ECONNREFUSED;
		goto display_failure;
	}
	XSetIOErrorExitHandler(self->dpy, wincap_io_exit, self);
	if (registry_add(self) < 0) {
		set_err(err, err_size, "too many recordings at once");
		rc = -EMFILE;
		goto extension_failure;
	}
	self->win = (Window)window;

	if (!XCompositeQueryExtension(self->dpy, &ev, &er)
			|| !XCompositeQueryVersion(self->dpy, &major, &minor)
			|| (major == 0 && minor < 2)) {
		set_err(err, err_size, "the X server has no Composite extension (0.2 or later)");
		rc = -ENOTSUP;
		goto extension_failure;
	}
	self->has_damage = XDamageQueryExtension(self->dpy, &self->damage_event, &er);
	self->use_shm = XShmQueryExtension(self->dpy);
	self->has_xfixes = cursor && XFixesQueryExtension(self->dpy, &ev, &er);
	self->cursor = cursor;

	XWindowAttributes wa;
	if (!window || !XGetWindowAttributes(self->dpy, self->win, &wa)) {
		set_err(err, err_size, "window 0x%lx not found (list windows with the windows tool)",
				window);
		rc = -ENOENT;
		goto window_failure;
	}
	if (wa.class != InputOutput || (wa.depth != 24 && wa.depth != 32)
			|| wa.visual->class != TrueColor) {
		set_err(err, err_size, "window 0x%lx has depth %d: only 24 and 32 bit TrueColor windows can be recorded",
				window, wa.depth);
		rc = -ENOTSUP;
		goto window_failure;
	}
	if (self->win == wa.root) {
		set_err(err, err_size, "0x%lx is the root window: give a window id from the windows tool",
				window);
		rc = -ENOTSUP;
		goto window_failure;
	}
	self->root = wa.root;
	self->visual = wa.visual;
	self->depth = wa.depth;
	self->width = wa.width;
	self->height = wa.height;
	self->border = wa.border_width;
	self->mapped = wa.map_state != IsUnmapped;

	XSelectInput(self->dpy, self->win, StructureNotifyMask);
	XCompositeRedirectWindow(self->dpy, self->win, CompositeRedirectAutomatic);
	if (self->has_damage)
		self->damage = XDamageCreate(self->dpy, self->win, XDamageReportNonEmpty);
	/* Parts that were covered when the window got its pixmap hold whatever
	 * was on top: ask the client to draw everything again. */
	XClearArea(self->dpy, self->win, 0, 0, 0, 0, True);
	XSync(self->dpy, False);
	if (!XGetWindowAttributes(self->dpy, self->win, &wa)) {
		set_err(err, err_size, "window 0x%lx disappeared", window);
		rc = -ENOENT;
		goto window_failure;
	}
	self->need_pixmap = true;
	self->dirty = true;
	*out = self;
	return 0;

window_failure:
extension_failure:
	XCloseDisplay(self->dpy);
	registry_remove(self);
display_failure:
	free(self);
	return rc;
}

void wincap_close(struct wincap* self)
{
	if (!self)
		return;
	if (!self->io_error) {
		free_image(self);
		if (self->pixmap)
			XFreePixmap(self->dpy, self->pixmap);
		if (self->damage && !self->gone)
			XDamageDestroy(self->dpy, self->damage);
		if (!self->gone)
			XCompositeUnredirectWindow(self->dpy, self->win, CompositeRedirectAutomatic);
		XSync(self->dpy, False);
	} else if (self->image) {
		if (!self->use_shm)
			free(self->image->data);
		else if (self->shm.shmaddr)
			shmdt(self->shm.shmaddr);
		self->image->data = NULL;
		XFree(self->image);
	}
	XCloseDisplay(self->dpy);
	registry_remove(self);
	free(self);
}

void wincap_size(const struct wincap* self, int* width, int* height)
{
	*width = self->width;
	*height = self->height;
}

static void handle_events(struct wincap* self)
{
	while (!self->io_error && XPending(self->dpy) > 0) {
		XEvent ev;
		XNextEvent(self->dpy, &ev);
		switch (ev.type) {
		case ConfigureNotify:
			if (ev.xconfigure.window != self->win)
				break;
			if (ev.xconfigure.width != self->width || ev.xconfigure.height != self->height
					|| ev.xconfigure.border_width != self->border) {
				self->width = ev.xconfigure.width;
				self->height = ev.xconfigure.height;
				self->border = ev.xconfigure.border_width;
				self->need_pixmap = true;
				self->dirty = true;
			}
			break;
		case MapNotify:
			if (ev.xmap.window == self->win) {
				self->mapped = true;
				self->need_pixmap = true;
				self->dirty = true;
			}
			break;
		case UnmapNotify:
			if (ev.xunmap.window == self->win)
				self->mapped = false;
			break;
		case DestroyNotify:
			if (ev.xdestroywindow.window == self->win)
				self->gone = true;
			break;
		default:
			if (self->has_damage && ev.type == self->damage_event + XDamageNotify)
				self->dirty = true;
			break;
		}
	}
}

/* Did the pointer move or change shape? Updates the cached position. */
static bool cursor_changed(struct wincap* self)
{
	Window child;
	int wx = 0, wy = 0;
	XTranslateCoordinates(self->dpy, self->win, self->root, 0, 0, &wx, &wy, &child);
	Window r, c;
	int rx, ry, x, y;
	unsigned mask;
	if (!XQueryPointer(self->dpy, self->root, &r, &c, &rx, &ry, &x, &y, &mask))
		return false;
	bool changed = rx != self->cursor_x || ry != self->cursor_y
		|| wx != self->win_x || wy != self->win_y;
	self->cursor_x = rx;
	self->cursor_y = ry;
	self->win_x = wx;
	self->win_y = wy;
	return changed;
}

/* Alpha-blend the pointer (premultiplied ARGB) into the client area. */
static void draw_cursor(struct wincap* self, int w, int h)
{
	XFixesCursorImage* ci = XFixesGetCursorImage(self->dpy);
	if (!ci)
		return;
	self->cursor_serial = ci->cursor_serial;
	int x0 = ci->x - ci->xhot - self->win_x;
	int y0 = ci->y - ci->yhot - self->win_y;
	uint8_t* base = (uint8_t*)self->image->data;
	int stride = self->image->bytes_per_line;
	for (int cy = 0; cy < ci->height; cy++) {
		int y = y0 + cy;
		if (y < 0 || y >= h)
			continue;
		for (int cx = 0; cx < ci->width; cx++) {
			int x = x0 + cx;
			if (x < 0 || x >= w)
				continue;
			unsigned long argb = ci->pixels[cy * ci->width + cx];
			unsigned a = (unsigned)(argb >> 24) & 255;
			if (!a)
				continue;
			uint8_t* p = base + (size_t)(y + self->border) * (size_t)stride
				+ (size_t)(x + self->border) * 4;
			unsigned inv = 255 - a;
			p[0] = (uint8_t)((argb & 255) + (p[0] * inv + 127) / 255);
			p[1] = (uint8_t)(((argb >> 8) & 255) + (p[1] * inv + 127) / 255);
			p[2] = (uint8_t)(((argb >> 16) & 255) + (p[2] * inv + 127) / 255);
		}
	}
	XFree(ci);
}

int wincap_grab(struct wincap* self, struct wincap_image* image)
{
	if (self->io_error)
		return -EPIPE;
	handle_events(self);
	if (self->io_error)
		return -EPIPE;
	if (self->gone)
		return -ENOENT;
	if (!self->mapped)
		return WINCAP_SAME;	/* keep showing the last frame */

	bool cursor_moved = self->has_xfixes && cursor_changed(self);
	if (!self->dirty && !self->need_pixmap && !cursor_moved && self->have_image)
		return WINCAP_SAME;
	if (self->need_pixmap || !self->pixmap) {
		int rc = name_pixmap(self);
		if (self->io_error)
			return -EPIPE;
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0)
			return self->gone ? -ENOENT : WINCAP_SAME;
	}
	/* Re-arm damage before reading, so changes made meanwhile are seen. */
	if (self->has_damage)
		XDamageSubtract(self->dpy, self->damage, None, None);
	self->dirty = !self->has_damage;	/* without XDamage: grab every time */

	Status ok;
	if (self->use_shm)
		ok = XShmGetImage(self->dpy, self->pixmap, self->image, 0, 0, AllPlanes);
	else
		ok = XGetSubImage(self->dpy, self->pixmap, 0, 0, (unsigned)self->pix_w,
				(unsigned)self->pix_h, AllPlanes, ZPixmap, self->image, 0, 0) != NULL;
	if (self->io_error)
		return -EPIPE;
	if (!ok) {
		/* The pixmap went stale (resized or unmapped before we saw the
		 * event): name it again next time. */
		self->need_pixmap = true;
		self->dirty = true;
		return WINCAP_SAME;
	}
	int w = self->width, h = self->height;
	if (w + 2 * self->border > self->pix_w)
		w = self->pix_w - 2 * self->border;
	if (h + 2 * self->border > self->pix_h)
		h = self->pix_h - 2 * self->border;
	if (w <= 0 || h <= 0)
		return WINCAP_SAME;
	if (self->has_xfixes)
		draw_cursor(self, w, h);
	self->have_image = true;
	image->stride = self->image->bytes_per_line;
	image->data = (const uint8_t*)self->image->data
		+ (size_t)self->border * (size_t)image->stride + (size_t)self->border * 4;
	image->width = w;
	image->height = h;
	return WINCAP_NEW;
}
