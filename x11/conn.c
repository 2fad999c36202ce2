/* One X connection with its errors trapped (x11.h says how, and why not
 * the process-wide handler), and the abort of every one at once when the
 * server stops answering.
 *
 * The hooks get only the Display, so the connection carries a pointer to
 * its struct x11_conn on its own extension-data list (XAddToExtensionList),
 * tagged by our free_private function: errors need no registry and no
 * global lock. Xlib itself keeps nothing on a display's list, and frees the
 * entry at XCloseDisplay, after the last error can arrive.
 *
 * The abort does need to reach every open connection, so those are also on
 * a list (under `reg`), touched only at open, close and abort; the abort
 * only marks them lost and calls shutdown(2) on their sockets: it never
 * calls Xlib, so it cannot deadlock with a thread inside Xlib, and a
 * connection is off the list before XCloseDisplay closes its fd, so the fd
 * it shuts down is always that connection's. */
#include "x11/x11.h"
#include "base/clock.h"

#include <X11/Xlibint.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

/* Put the trap on a new connection. */
static bool trap(Display* dpy, struct x11_conn* self)
{
	XSetIOErrorExitHandler(dpy, on_io_exit, self);
	XExtCodes* codes = XAddExtension(dpy);	/* a number of our own for the entry */
	XExtData* entry = calloc(1, sizeof(*entry));
	if (!codes || !entry) {
		free(entry);
		return false;
	}
	entry->number = codes->extension;
	entry->free_private = conn_entry_free;
	entry->private_data = (XPointer)(void*)self;
	XEDataObject obj = { .display = dpy };
	XAddToExtensionList(XEHeadOfExtensionList(obj), entry);
	/* Code 0 is not an error; Xlib leaves that slot unset. */
	for (int code = 1; code < 256; code++)
		XESetWireToError(dpy, code, on_error);
	return true;
}

/* ---- The abort: the open connections, the preflight, the hold ----------- */

static struct {
	pthread_mutex_t lock;
	struct x11_conn* head;		/* open connections (x11_open .. x11_close) */
	unsigned long aborts;		/* x11_abort_all calls */
	bool held;			/* between x11_abort_all and x11_resume */
} reg = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Lock held. Marked lost first: a caller that looks before its next
 * request sends nothing; one inside Xlib gets EOF or EPIPE from the socket
 * and goes through the IO error path (on_io_exit). */
static void abort_locked(struct x11_conn* c)
{
	atomic_store(&c->lost, true);
	shutdown(ConnectionNumber(c->dpy), SHUT_RDWR);
}

static void unlink_locked(struct x11_conn* c)
{
	for (struct x11_conn** p = &reg.head; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	c->next = NULL;
}

/* XOpenDisplay waits for the server's answer to the connection setup with
 * no bound, and does so holding Xlib's global lock, which every other
 * XOpenDisplay and XCloseDisplay (and libXext's display lookups) take too:
 * one open stuck on a stopped server would stop them all until it goes on.
 * Its socket is made inside xcb, out of reach; and an IO error in the
 * rest of XOpenDisplay (its own round trips) would go to Xlib's default exit
 * handler, which exits, before ours can be set. So before it, a preflight on
 * a socket of our own: the 12-byte setup request, waited for in short polls
 * that an abort ends. The server answers it (accepted or not, it answered),
 * so it answers XOpenDisplay right after; the preflight socket is closed
 * only then (the last client leaving would reset a server without
 * -noreset). Local displays only (":N", "unix:N"); others open unchecked.
 * Returns the socket (close it after XOpenDisplay), -1 when there is
 * nothing to check, -ETIMEDOUT when an abort came first. */
/* Has x11_abort_all run since aborts was read? */
static bool aborted_since(unsigned long aborts)
{
	pthread_mutex_lock(&reg.lock);
	bool aborted = reg.aborts != aborts;
	pthread_mutex_unlock(&reg.lock);
	return aborted;
}

static int preflight(const char* name, unsigned long aborts)
{
	if (!name || !*name)
		name = getenv("DISPLAY");
	if (!name)
		return -1;
	if (strncmp(name, "unix:", 5) == 0)
		name += 4;
	if (name[0] != ':' || name[1] < '0' || name[1] > '9')
		return -1;
	int number = atoi(name + 1);
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = -1;
	for (int abstract = 1; abstract >= 0 && fd < 0; abstract--) {
		memset(addr.sun_path, 0, sizeof(addr.sun_path));
		int n = snprintf(addr.sun_path + abstract, sizeof(addr.sun_path) - 1,
				"/tmp/.X11-unix/X%d", number);
		socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + n);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -1;
		int rc;
		/* A full backlog (EAGAIN) is a server not accepting: wait. */
		while ((rc = connect(fd, (struct sockaddr*)&addr, len)) < 0 && errno == EAGAIN) {
			if (aborted_since(aborts)) {
				close(fd);
				return -ETIMEDOUT;
			}
			poll(NULL, 0, 10);
		}
		if (rc < 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return -1;	/* XOpenDisplay says why */
	/* Little-endian, protocol 11.0, no authorization. */
	static const unsigned char request[12] = { 'l', 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	if (send(fd, request, sizeof(request), MSG_NOSIGNAL) != (ssize_t)sizeof(request)) {
		close(fd);
		return -1;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 20) != 0)
			return fd;	/* an answer, an EOF or an error: it is not stopped */
		if (aborted_since(aborts)) {
			close(fd);
			return -ETIMEDOUT;
		}
	}
}

int x11_abort_all(void)
{
	int n = 0;
	pthread_mutex_lock(&reg.lock);
	reg.aborts++;
	reg.held = true;
	for (struct x11_conn* c = reg.head; c; c = c->next)
		if (!c->kept && !atomic_load(&c->lost)) {
			abort_locked(c);
			n++;
		}
	pthread_mutex_unlock(&reg.lock);
	return n;
}

void x11_resume(void)
{
	pthread_mutex_lock(&reg.lock);
	reg.held = false;
	pthread_mutex_unlock(&reg.lock);
}

bool x11_held(void)
{
	pthread_mutex_lock(&reg.lock);
	bool held = reg.held;
	pthread_mutex_unlock(&reg.lock);
	return held;
}

void x11_keep(struct x11_conn* self)
{
	pthread_mutex_lock(&reg.lock);
	self->kept = true;
	pthread_mutex_unlock(&reg.lock);
}

/* ---- Open and close ------------------------------------------------------ */

Display* x11_open(struct x11_conn* self, const char* name)
{
	memset(self, 0, sizeof(*self));
	atomic_init(&self->lost, false);
	pthread_once(&io_once, install_io_handler);
	pthread_mutex_lock(&reg.lock);
	bool held = reg.held;
	unsigned long aborts = reg.aborts;
	pthread_mutex_unlock(&reg.lock);
	if (held) {
		errno = EAGAIN;	/* the server does not answer: do not wait for it */
		return NULL;
	}
	int check = preflight(name, aborts);
	if (check == -ETIMEDOUT) {
		errno = ETIMEDOUT;
		return NULL;
	}
	Display* dpy = XOpenDisplay(name);
	if (check >= 0)
		close(check);
	if (!dpy) {
		errno = ECONNREFUSED;
		return NULL;
	}
	if (!trap(dpy, self)) {
		XCloseDisplay(dpy);
		errno = ENOMEM;
		return NULL;
	}
	self->dpy = dpy;
	pthread_mutex_lock(&reg.lock);
	self->next = reg.head;
	reg.head = self;
	/* An abort came after the open finished: this one is aborted too. */
	bool aborted = reg.aborts != aborts;
	if (aborted)
		abort_locked(self);
	pthread_mutex_unlock(&reg.lock);
	if (aborted) {
		x11_close(self);
		errno = ETIMEDOUT;
		return NULL;
	}
	return dpy;
}

void x11_close(struct x11_conn* self)
{
	if (!self->dpy)
		return;
	pthread_mutex_lock(&reg.lock);
	unlink_locked(self);
	/* XCloseDisplay waits for the server: not for one known to be stopped. */
	if (reg.held && !atomic_load(&self->lost))
		abort_locked(self);
	pthread_mutex_unlock(&reg.lock);
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
	self->answered_ns = clock_ns();
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
