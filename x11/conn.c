/* One X connection with its errors trapped (x11.h says how, and why not
 * the process-wide handler).
 *
 * The hooks get only the Display, so the connection carries a pointer to
 * its struct x11_conn on its own extension-data list (XAddToExtensionList),
 * tagged by our free_private function: no registry, no global lock, no
 * limit on connections. Xlib itself keeps nothing on a display's list, and
 * frees the entry at XCloseDisplay, after the last error can arrive. */
#include "x11/x11.h"

#include <X11/Xlibint.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The tag of our entry; the struct x11_conn belongs to its owner, so
 * nothing is freed here. */
static int conn_entry_free(XExtData* entry)
{
	entry->private_data = NULL;
	return 0;
}

static struct x11_conn* conn_of(Display* dpy)
{
	XEDataObject obj = { .display = dpy };
	for (XExtData* e = *XEHeadOfExtensionList(obj); e; e = e->next)
		if (e->free_private == conn_entry_free)
			return (struct x11_conn*)(void*)e->private_data;
	return NULL;
}

/* Every X error of a trapped connection comes here first (Xlib calls the
 * per-display vector before the process-wide handler), on the thread that
 * reads the connection. Returning False ends it: no handler sees it. */
static Bool on_error(Display* dpy, XErrorEvent* ev, xError* wire)
{
	(void)wire;
	struct x11_conn* self = conn_of(dpy);
	unsigned code = ev->error_code;
	if (self && !self->error && !(self->ignored[code / 8] & (1u << (code % 8)))) {
		self->error = (int)code;
		self->error_request = ev->request_code;
		self->error_minor = ev->minor_code;
	}
	return False;
}

/* Xlib's _XIOError calls the process-wide IO handler, then the
 * connection's exit handler. Its default IO handler prints and exits, so
 * this one is installed in its place; for connections not ours it calls the
 * one that was there before, if any (with none, their exit handler still
 * decides: Xlib's default exits, as it always did). */
static XIOErrorHandler io_previous;
static pthread_once_t io_once = PTHREAD_ONCE_INIT;

static int on_io_error(Display* dpy)
{
	if (!conn_of(dpy) && io_previous)
		return io_previous(dpy);
	return 0;
}

static void install_io_handler(void)
{
	/* XSetIOErrorHandler(NULL) puts the default back and returns what was
	 * there; setting that again returns the default's address. */
	XIOErrorHandler current = XSetIOErrorHandler(NULL);
	XIOErrorHandler dflt = XSetIOErrorHandler(current);
	io_previous = current == dflt || current == on_io_error ? NULL : current;
	XSetIOErrorHandler(on_io_error);
}

/* Returning (instead of exiting) leaves the connection dead: every later
 * call on it fails at once. _XIOError took the display's user lock
 * (XLockDisplay) for the exit it expected: release it, or an XCloseDisplay
 * on another thread would wait for it forever. */
static void on_io_exit(Display* dpy, void* data)
{
	struct x11_conn* self = data;
	atomic_store(&self->lost, true);
	XUnlockDisplay(dpy);
}

Display* x11_open(struct x11_conn* self, const char* name)
{
	memset(self, 0, sizeof(*self));
	atomic_init(&self->lost, false);
	pthread_once(&io_once, install_io_handler);
	Display* dpy = XOpenDisplay(name);
	if (!dpy)
		return NULL;
	XSetIOErrorExitHandler(dpy, on_io_exit, self);
	XExtCodes* codes = XAddExtension(dpy);	/* a number of our own for the entry */
	XExtData* entry = calloc(1, sizeof(*entry));
	if (!codes || !entry) {
		free(entry);
		XCloseDisplay(dpy);
		return NULL;
	}
	entry->number = codes->extension;
	entry->free_private = conn_entry_free;
	entry->private_data = (XPointer)(void*)self;
	XEDataObject obj = { .display = dpy };
	XAddToExtensionList(XEHeadOfExtensionList(obj), entry);
	/* Code 0 is not an error; Xlib leaves that slot unset. */
	for (int code = 1; code < 256; code++)
		XESetWireToError(dpy, code, on_error);
	self->dpy = dpy;
	return dpy;
}

void x11_close(struct x11_conn* self)
{
	if (!self->dpy)
		return;
	XCloseDisplay(self->dpy);
	self->dpy = NULL;
}

void x11_ignore(struct x11_conn* self, int code)
{
	if (code > 0 && code < 256)
		self->ignored[code / 8] |= (unsigned char)(1u << (code % 8));
}

bool x11_lost(const struct x11_conn* self)
{
	return atomic_load(&self->lost);
}

void x11_clear(struct x11_conn* self)
{
	self->error = 0;
}

int x11_take(struct x11_conn* self)
{
	int code = self->error;
	self->error = 0;
	return code;
}

int x11_sync(struct x11_conn* self)
{
	if (x11_lost(self))
		return -ECONNRESET;
	XSync(self->dpy, False);
	if (x11_lost(self))
		return -ECONNRESET;
	return x11_take(self);
}

int x11_errno(int code)
{
	switch (code) {
	case Success: return 0;
	case BadWindow: return -ENOENT;
	case BadValue: return -EINVAL;
	case BadMatch: return -EINVAL;
	case BadAlloc: return -ENOMEM;
	default: return code < 0 ? code : -EIO;
	}
}
