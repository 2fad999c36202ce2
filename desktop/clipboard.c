/* The clipboard: X selections (CLIPBOARD and PRIMARY), owned and served by
 * one thread with an X connection and an unmapped window of its own, and
 * read on a short-lived connection of the caller's (desktop/desktop.h).
 *
 * After a write deskd owns the selection and answers SelectionRequest for
 * TARGETS, TIMESTAMP, UTF8_STRING, STRING (Latin-1), TEXT and
 * text/plain;charset=utf-8 (text), or image/png (an image), with INCR for
 * data larger than one request, until another client takes the selection
 * (SelectionClear). A read converts from the current owner (deskd itself
 * included, through the X server) with a bounded wait. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "x11/x11.h"
#include "base/clock.h"
#include "base/log.h"

#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xlibint.h>	/* resource_mask: which client made a window */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLAIM_TIMEOUT_MS 2000
#define INCR_TIMEOUT_MS 10000	/* a requestor that stops reading is dropped */
#define MAX_TRANSFERS 16
#define RECENT 32	/* requestors of the last deliveries, for a paste's wait */

enum { A_CLIPBOARD, A_TARGETS, A_TIMESTAMP, A_UTF8, A_TEXT, A_PLAIN_UTF8, A_PNG,
	A_INCR, A_PROP, N_ATOMS };

static const char* const atom_names[N_ATOMS] = {
	"CLIPBOARD", "TARGETS", "TIMESTAMP", "UTF8_STRING", "TEXT",
	"text/plain;charset=utf-8", "image/png", "INCR", "_DESKD_SELECTION",
};

struct owned {
	unsigned char* data;	/* NULL: not ours */
	size_t len;
	bool image;
	bool release;		/* pending only: give the selection up */
	Time since;
};

/* An INCR transfer to one requestor: the next chunk goes when it deleted
 * the property. */
struct transfer {
	Window requestor;
	Atom property, type;
	unsigned char* data;
	size_t len, off;
	int64_t last_ms;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool running, stop;
	pthread_t thread;
	int wake[2];
	/* Under lock: what callers asked for and what the thread did. */
	struct owned pending[2];
	unsigned long asked[2], claimed[2];
	int claim_rc[2];
	unsigned long served;	/* SelectionRequests answered with data */
	unsigned long delivered;	/* of them, sent whole (INCR: the last chunk) */
	unsigned long recent[RECENT];	/* the client (window & ~mask) of delivery n % RECENT */
	unsigned long client_mask;	/* the server's resource id mask */
	bool owns[2];
	/* The thread's. */
	struct x11_conn x;	/* the owner's connection, trapped (x11/) */
	Display* dpy;		/* x.dpy */
	Window win;
	Atom atoms[N_ATOMS];
	struct owned own[2];
	struct transfer transfers[MAX_TRANSFERS];
} C = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.wake = { -1, -1 },
};

static Atom selection_atom(Display* dpy, enum desktop_selection sel, const Atom* atoms)
{
	return sel == DESKTOP_PRIMARY ? XA_PRIMARY : atoms[A_CLIPBOARD];
}

static int selection_index(Atom a)
{
	return a == XA_PRIMARY ? DESKTOP_PRIMARY : a == C.atoms[A_CLIPBOARD] ? DESKTOP_CLIPBOARD : -1;
}

static bool is_text_target(Atom t)
{
	return t == C.atoms[A_UTF8] || t == C.atoms[A_TEXT] || t == C.atoms[A_PLAIN_UTF8]
			|| t == XA_STRING;
}

/* UTF-8 to Latin-1 for STRING: what Latin-1 cannot say becomes '?'. */
static unsigned char* to_latin1(const unsigned char* s, size_t len, size_t* out_len)
{
	unsigned char* out = malloc(len ? len : 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		unsigned c = s[i];
		if (c < 0x80) {
			out[o++] = (unsigned char)c;
			i++;
		} else if ((c & 0xe0) == 0xc0 && i + 1 < len) {
			unsigned cp = (c & 0x1f) << 6 | (s[i + 1] & 0x3f);
			out[o++] = cp < 0x100 ? (unsigned char)cp : '?';
			i += 2;
		} else {
			out[o++] = '?';
			for (i++; i < len && (s[i] & 0xc0) == 0x80; i++)
				;
		}
	}
	*out_len = o;
	return out;
}

/* The largest property deskd writes in one request (bytes). */
static size_t chunk_size(Display* dpy)
{
	long max = XExtendedMaxRequestSize(dpy);
	if (max <= 0)
		max = XMaxRequestSize(dpy);
	size_t bytes = (size_t)max * 4 - 1024;
	return bytes > 256 * 1024 ? 256 * 1024 : bytes;
}

/* A requestor got data whole. Lock held. */
static void note_delivered(Window requestor)
{
	C.recent[C.delivered % RECENT] = requestor & ~C.client_mask;
	C.delivered++;
}

/* Returns true when the data went in one piece (else an INCR transfer
 * started, or was refused). */
static bool send_data(XSelectionRequestEvent* r, Atom property, Atom type,
		const unsigned char* data, size_t len)
{
	size_t chunk = chunk_size(C.dpy);
	if (len <= chunk) {
		XChangeProperty(C.dpy, r->requestor, property, type, 8, PropModeReplace,
				data, (int)len);
		return true;
	}
	struct transfer* t = NULL;
	for (int i = 0; i < MAX_TRANSFERS && !t; i++)
		if (!C.transfers[i].data)
			t = &C.transfers[i];
	unsigned char* copy = t ? malloc(len) : NULL;
	if (!copy) {
		log_warn("clipboard: too many large transfers at once; refusing one");
		return false;
	}
	memcpy(copy, data, len);
	*t = (struct transfer){ r->requestor, property, type, copy, len, 0, clock_ms() };
	/* Hear the requestor delete the property, then send INCR. */
	XSelectInput(C.dpy, r->requestor, PropertyChangeMask);
	long size = (long)len;
	XChangeProperty(C.dpy, r->requestor, property, C.atoms[A_INCR], 32, PropModeReplace,
			(const unsigned char*)&size, 1);
	return false;
}

static void serve(XSelectionRequestEvent* r)
{
	XSelectionEvent reply = {
		.type = SelectionNotify, .display = r->display, .requestor = r->requestor,
		.selection = r->selection, .target = r->target, .property = None, .time = r->time,
	};
	int s = selection_index(r->selection);
	struct owned* o = s >= 0 ? &C.own[s] : NULL;
	Atom property = r->property != None ? r->property : r->target;	/* ICCCM: old clients */
	bool whole = false;
	if (o && o->data) {
		if (r->target == C.atoms[A_TARGETS]) {
			Atom list[7];
			int n = 0;
			list[n++] = C.atoms[A_TARGETS];
			list[n++] = C.atoms[A_TIMESTAMP];
			if (o->image) {
				list[n++] = C.atoms[A_PNG];
			} else {
				list[n++] = C.atoms[A_UTF8];
				list[n++] = C.atoms[A_PLAIN_UTF8];
				list[n++] = C.atoms[A_TEXT];
				list[n++] = XA_STRING;
			}
			XChangeProperty(C.dpy, r->requestor, property, XA_ATOM, 32, PropModeReplace,
					(const unsigned char*)list, n);
			reply.property = property;
		} else if (r->target == C.atoms[A_TIMESTAMP]) {
			long t = (long)o->since;
			XChangeProperty(C.dpy, r->requestor, property, XA_INTEGER, 32, PropModeReplace,
					(const unsigned char*)&t, 1);
			reply.property = property;
		} else if (!o->image && r->target == XA_STRING) {
			size_t n;
			unsigned char* latin1 = to_latin1(o->data, o->len, &n);
			if (latin1) {
				whole = send_data(r, property, XA_STRING, latin1, n);
				free(latin1);
				reply.property = property;
			}
		} else if (!o->image && is_text_target(r->target)) {
			/* TEXT is answered as UTF8_STRING, like other toolkits do. */
			Atom type = r->target == C.atoms[A_TEXT] ? C.atoms[A_UTF8] : r->target;
			whole = send_data(r, property, type, o->data, o->len);
			reply.property = property;
		} else if (o->image && r->target == C.atoms[A_PNG]) {
			whole = send_data(r, property, C.atoms[A_PNG], o->data, o->len);
			reply.property = property;
		}
	}
	XSendEvent(C.dpy, r->requestor, False, NoEventMask, (XEvent*)&reply);
	if (reply.property != None && r->target != C.atoms[A_TARGETS]
			&& r->target != C.atoms[A_TIMESTAMP]) {
		pthread_mutex_lock(&C.lock);
		C.served++;
		if (whole)
			note_delivered(r->requestor);
		pthread_cond_broadcast(&C.cond);
		pthread_mutex_unlock(&C.lock);
	}
}

static void transfer_next(XPropertyEvent* p)
{
	for (int i = 0; i < MAX_TRANSFERS; i++) {
		struct transfer* t = &C.transfers[i];
		if (!t->data || t->requestor != p->window || t->property != p->atom)
			continue;
		size_t n = t->len - t->off;
		size_t chunk = chunk_size(C.dpy);
		if (n > chunk)
			n = chunk;
		XChangeProperty(C.dpy, t->requestor, t->property, t->type, 8, PropModeReplace,
				t->data + t->off, (int)n);
		t->last_ms = clock_ms();
		if (n == 0) {	/* the zero-length chunk ends it */
			Window requestor = t->requestor;
			free(t->data);
			memset(t, 0, sizeof(*t));
			pthread_mutex_lock(&C.lock);
			note_delivered(requestor);
			pthread_cond_broadcast(&C.cond);
			pthread_mutex_unlock(&C.lock);
		} else {
			t->off += n;
		}
	}
}

static void drop_stale_transfers(void)
{
	int64_t now = clock_ms();
	for (int i = 0; i < MAX_TRANSFERS; i++) {
		struct transfer* t = &C.transfers[i];
		if (t->data && now - t->last_ms > INCR_TIMEOUT_MS) {
			log_debug("clipboard: a requestor stopped reading an INCR transfer; dropped");
			free(t->data);
			memset(t, 0, sizeof(*t));
		}
	}
}

/* Take ownership of what callers asked for. Thread. */
static void claim_pending(void)
{
	for (int s = 0; s < 2; s++) {
		pthread_mutex_lock(&C.lock);
		bool want = C.claimed[s] != C.asked[s];
		struct owned p = C.pending[s];
		unsigned long seq = C.asked[s];
		C.pending[s].data = NULL;
		pthread_mutex_unlock(&C.lock);
		if (!want)
			continue;
		Atom sel = selection_atom(C.dpy, (enum desktop_selection)s, C.atoms);
		bool ok;
		if (p.release) {
			/* Give it up only if it is still ours (no one took it since). */
			if (XGetSelectionOwner(C.dpy, sel) == C.win)
				XSetSelectionOwner(C.dpy, sel, None, CurrentTime);
			ok = !x11_lost(&C.x);
			free(C.own[s].data);
			C.own[s] = (struct owned){ 0 };
		} else {
			XSetSelectionOwner(C.dpy, sel, C.win, CurrentTime);
			ok = XGetSelectionOwner(C.dpy, sel) == C.win && !x11_lost(&C.x);
			free(C.own[s].data);
			C.own[s] = ok ? p : (struct owned){ 0 };
			if (!ok)
				free(p.data);
		}
		pthread_mutex_lock(&C.lock);
		C.owns[s] = ok && !p.release;
		C.claimed[s] = seq;
		C.claim_rc[s] = ok ? 0 : -EBUSY;
		pthread_cond_broadcast(&C.cond);
		pthread_mutex_unlock(&C.lock);
	}
}

static void* clipboard_main(void* ud)
{
	for (;;) {
		pthread_mutex_lock(&C.lock);
		bool stop = C.stop;
		pthread_mutex_unlock(&C.lock);
		if (stop || x11_lost(&C.x))
			break;
		claim_pending();
		while (!x11_lost(&C.x) && XPending(C.dpy) > 0) {
			XEvent ev;
			XNextEvent(C.dpy, &ev);
			if (ev.type == SelectionRequest) {
				serve(&ev.xselectionrequest);
			} else if (ev.type == SelectionClear) {
				int s = selection_index(ev.xselectionclear.selection);
				if (s >= 0) {
					free(C.own[s].data);
					C.own[s] = (struct owned){ 0 };
					pthread_mutex_lock(&C.lock);
					C.owns[s] = false;
					pthread_mutex_unlock(&C.lock);
				}
			} else if (ev.type == PropertyNotify
					&& ev.xproperty.state == PropertyDelete) {
				transfer_next(&ev.xproperty);
			}
		}
		XFlush(C.dpy);
		drop_stale_transfers();
		/* Writing a 256 KiB chunk, Xlib reads what arrives meanwhile (the
		 * requestor's next delete) into its queue: the socket then looks
		 * idle and poll slept its 500 ms (the 1 MB round trip's p95). */
		if (XEventsQueued(C.dpy, QueuedAlready) > 0)
			continue;
		struct pollfd pfd[2] = {
			{ ConnectionNumber(C.dpy), POLLIN, 0 },
			{ C.wake[0], POLLIN, 0 },
		};
		if (poll(pfd, 2, 500) > 0 && (pfd[1].revents & POLLIN)) {
			char buf[64];
			while (read(C.wake[0], buf, sizeof(buf)) > 0)
				;
		}
	}
	/* Gone (stop, or the display): what deskd owned is gone too. */
	pthread_mutex_lock(&C.lock);
	C.owns[0] = C.owns[1] = false;
	for (int s = 0; s < 2; s++) {
		C.claimed[s] = C.asked[s];
		C.claim_rc[s] = -ECONNRESET;
	}
	pthread_cond_broadcast(&C.cond);
	pthread_mutex_unlock(&C.lock);
	return NULL;
}

/* Tear down a finished thread's connection and state. Lock not held. */
static void clipboard_reset(void)
{
	pthread_join(C.thread, NULL);
	for (int s = 0; s < 2; s++) {
		free(C.own[s].data);
		C.own[s] = (struct owned){ 0 };
	}
	for (int i = 0; i < MAX_TRANSFERS; i++) {
		free(C.transfers[i].data);
		memset(&C.transfers[i], 0, sizeof(C.transfers[i]));
	}
	x11_close(&C.x);
	C.dpy = NULL;
	for (int i = 0; i < 2; i++) {
		close(C.wake[i]);
		C.wake[i] = -1;
	}
	C.running = false;
}

/* The owner thread, started on first use and again after a display loss. */
static int clipboard_start(char* err, size_t err_size)
{
	if (C.running && x11_lost(&C.x))
		clipboard_reset();	/* the display went away: start over */
	if (C.running)
		return 0;
	C.dpy = x11_open(&C.x, desktop_display_name());
	if (!C.dpy) {
		snprintf(err, err_size, "cannot connect to the display %s", desktop_display_name());
		return -ECONNRESET;
	}
	/* A requestor that vanished mid-transfer is no news. */
	x11_ignore(&C.x, BadWindow);
	XInternAtoms(C.dpy, (char**)atom_names, N_ATOMS, False, C.atoms);
	C.client_mask = ((struct _XDisplay*)C.dpy)->resource_mask;
	C.win = XCreateSimpleWindow(C.dpy, DefaultRootWindow(C.dpy), -10, -10, 1, 1, 0, 0, 0);
	XStoreName(C.dpy, C.win, "deskd clipboard");
	XSync(C.dpy, False);
	if (pipe2(C.wake, O_CLOEXEC | O_NONBLOCK) < 0
			|| pthread_create(&C.thread, NULL, clipboard_main, NULL) != 0) {
		snprintf(err, err_size, "cannot start the clipboard thread");
		x11_close(&C.x);
		C.dpy = NULL;
		return -EAGAIN;
	}
	C.running = true;
	return 0;
}

static void wake(void)
{
	if (C.wake[1] >= 0 && write(C.wake[1], "x", 1) < 0 && errno != EAGAIN)
		log_debug("clipboard: cannot wake the thread: %s", strerror(errno));
}

static int ask_thread(enum desktop_selection sel, struct owned p, char* err, size_t err_size);

int desktop_clipboard_write(enum desktop_selection sel, const void* data, size_t len,
		bool image, char* err, size_t err_size)
{
	if (desktop_is_wayland())
		return desktop__wayland_clipboard_write(sel, data, len, image, err, err_size);
	if (desktop_is_gnome())
		return desktop__gnome_clipboard_write(sel, data, len, image, err, err_size);
	if (len > DESKTOP_CLIPBOARD_MAX) {
		snprintf(err, err_size, "%zu bytes is over the clipboard limit of %d bytes",
				len, DESKTOP_CLIPBOARD_MAX);
		return -EFBIG;
	}
	unsigned char* copy = malloc(len ? len : 1);
	if (!copy) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	memcpy(copy, data, len);
	static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&start_lock);
	int rc = clipboard_start(err, err_size);
	pthread_mutex_unlock(&start_lock);
	if (rc < 0) {
		free(copy);
		return rc;
	}
	return ask_thread(sel, (struct owned){ copy, len, image, false, CurrentTime }, err, err_size);
}

/* Hand p (owned data, or a release) to the thread; wait until it is done. */
static int ask_thread(enum desktop_selection sel, struct owned p, char* err, size_t err_size)
{
	int rc;
	pthread_mutex_lock(&C.lock);
	free(C.pending[sel].data);
	C.pending[sel] = p;
	unsigned long mine = ++C.asked[sel];
	pthread_mutex_unlock(&C.lock);
	wake();
	int64_t end = clock_ms() + CLAIM_TIMEOUT_MS;
	pthread_mutex_lock(&C.lock);
	while (C.claimed[sel] < mine && clock_ms() < end) {
		struct timespec ts = clock_realtime_in(20);
		pthread_cond_timedwait(&C.cond, &C.lock, &ts);
	}
	rc = C.claimed[sel] >= mine ? C.claim_rc[sel] : -ETIMEDOUT;
	pthread_mutex_unlock(&C.lock);
	if (rc == -EBUSY)
		snprintf(err, err_size, "the X server did not give deskd the selection");
	else if (rc == -ETIMEDOUT)
		snprintf(err, err_size, "the clipboard thread did not answer in %d ms", CLAIM_TIMEOUT_MS);
	else if (rc < 0)
		snprintf(err, err_size, "the display went away");
	return rc;
}

int desktop_clipboard_release(enum desktop_selection sel, char* err, size_t err_size)
{
	if (desktop_is_wayland())
		return desktop__wayland_clipboard_release(sel, err, err_size);
	if (desktop_is_gnome())
		return desktop__gnome_clipboard_release(sel, err, err_size);
	pthread_mutex_lock(&C.lock);
	bool owns = C.owns[sel];
	pthread_mutex_unlock(&C.lock);
	if (!owns || !C.running)
		return 0;
	return ask_thread(sel, (struct owned){ .release = true }, err, err_size);
}

unsigned long desktop_clipboard_delivered(void)
{
	if (desktop_is_wayland())
		return desktop__wayland_clipboard_delivered();
	if (desktop_is_gnome())
		return desktop__gnome_clipboard_delivered();
	pthread_mutex_lock(&C.lock);
	unsigned long n = C.delivered;
	pthread_mutex_unlock(&C.lock);
	return n;
}

/* Was one of the deliveries after since to window's client (any when 0)? Lock held. */
static bool delivered_to(unsigned long since, uint32_t window)
{
	if (C.delivered <= since)
		return false;
	if (!window || !C.client_mask)
		return true;
	unsigned long from = C.delivered - since > RECENT ? C.delivered - RECENT : since;
	for (unsigned long n = from; n < C.delivered; n++)
		if (C.recent[n % RECENT] == (window & ~C.client_mask))
			return true;
	return false;
}

int desktop_clipboard_wait_delivered(unsigned long since, uint32_t window, int timeout_ms,
		atomic_bool* cancelled)
{
	if (desktop_is_wayland())
		return desktop__wayland_clipboard_wait_delivered(since, timeout_ms, cancelled);
	if (desktop_is_gnome())
		return desktop__gnome_clipboard_wait_delivered(since, timeout_ms, cancelled);
	int64_t end = clock_ms() + timeout_ms;
	pthread_mutex_lock(&C.lock);
	while (!delivered_to(since, window) && clock_ms() < end
			&& !(cancelled && atomic_load(cancelled))) {
		struct timespec ts = clock_realtime_in(20);
		pthread_cond_timedwait(&C.cond, &C.lock, &ts);
	}
	int rc = delivered_to(since, window) ? 0 : cancelled && atomic_load(cancelled)
		? -ECANCELED : -ETIMEDOUT;
	pthread_mutex_unlock(&C.lock);
	return rc;
}

bool desktop_clipboard_owned(enum desktop_selection sel, unsigned long* served)
{
	if (desktop_is_wayland())
		return desktop__wayland_clipboard_owned(sel, served);
	if (desktop_is_gnome())
		return desktop__gnome_clipboard_owned(sel, served);
	pthread_mutex_lock(&C.lock);
	bool owns = C.owns[sel];
	if (served)
		*served = C.served;
	pthread_mutex_unlock(&C.lock);
	return owns;
}

/* ---- Reading, on a connection of the caller's ------------------------------ */

/* Wait for an event of type on win (SelectionNotify, or PropertyNotify of
 * prop with state NewValue) until end; 1, 0 (time is up) or -1 (display). */
static int wait_event(Display* dpy, const struct x11_conn* conn, Window win, int type,
		Atom prop, int64_t end, XEvent* out)
{
	for (;;) {
		while (!x11_lost(conn) && XPending(dpy) > 0) {
			XNextEvent(dpy, out);
			if (out->type != type || out->xany.window != win)
				continue;
			if (type == PropertyNotify && (out->xproperty.atom != prop
					|| out->xproperty.state != PropertyNewValue))
				continue;
			return 1;
		}
		if (x11_lost(conn))
			return -1;
		int64_t left = end - clock_ms();
		if (left <= 0)
			return 0;
		struct pollfd pfd = { ConnectionNumber(dpy), POLLIN, 0 };
		poll(&pfd, 1, left > 50 ? 50 : (int)left);
	}
}

/* Read and delete prop: its bytes appended to buf, its type in *type. */
static int take_property(Display* dpy, Window win, Atom prop, Atom* type,
		unsigned char** buf, size_t* len)
{
	int format;
	unsigned long n = 0, after = 0;
	unsigned char* data = NULL;
	if (XGetWindowProperty(dpy, win, prop, 0, (DESKTOP_CLIPBOARD_MAX + 3) / 4 + 1, True,
			AnyPropertyType, type, &format, &n, &after, &data) != Success)
		return -EIO;
	size_t bytes = format == 32 ? n * sizeof(long) : format == 16 ? n * 2 : n;
	if (*type == XInternAtom(dpy, "INCR", False)) {
		XFree(data);
		return 1;
	}
	if (*len + bytes > DESKTOP_CLIPBOARD_MAX || after) {
		XFree(data);
		return -EFBIG;
	}
	unsigned char* grown = realloc(*buf, *len + bytes + 1);
	if (!grown) {
		XFree(data);
		return -ENOMEM;
	}
	memcpy(grown + *len, data, bytes);
	*len += bytes;
	grown[*len] = '\0';
	*buf = grown;
	XFree(data);
	return 0;
}

int desktop_clipboard_read(enum desktop_selection sel, bool image, void** data,
		size_t* len, int timeout_ms, char* err, size_t err_size)
{
	if (desktop_is_wayland())
		return desktop__wayland_clipboard_read(sel, image, data, len, timeout_ms, err,
				err_size);
	if (desktop_is_gnome())
		return desktop__gnome_clipboard_read(sel, image, data, len, timeout_ms, err,
				err_size);
	*data = NULL;
	*len = 0;
	const char* name = sel == DESKTOP_PRIMARY ? "PRIMARY" : "CLIPBOARD";
	struct x11_conn conn = { 0 };
	Display* dpy = x11_open(&conn, desktop_display_name());
	if (!dpy) {
		snprintf(err, err_size, "cannot connect to the display %s", desktop_display_name());
		return -ECONNRESET;
	}
	Atom atoms[N_ATOMS];
	XInternAtoms(dpy, (char**)atom_names, N_ATOMS, False, atoms);
	Atom selection = selection_atom(dpy, sel, atoms);
	int rc = 0;
	unsigned char* buf = NULL;
	size_t got = 0;
	if (XGetSelectionOwner(dpy, selection) == None) {
		snprintf(err, err_size, "nothing owns the %s selection (it is empty)", name);
		rc = -ENOENT;
		goto done;
	}
	Window win = XCreateSimpleWindow(dpy, DefaultRootWindow(dpy), -10, -10, 1, 1, 0, 0, 0);
	XSelectInput(dpy, win, PropertyChangeMask);
	int64_t end = clock_ms() + timeout_ms;
	/* Text: UTF8_STRING, else STRING (Latin-1, converted). */
	const Atom text_targets[] = { atoms[A_UTF8], XA_STRING };
	const Atom* targets = image ? &atoms[A_PNG] : text_targets;
	int n_targets = image ? 1 : 2;
	rc = -ENODATA;
	for (int i = 0; i < n_targets && rc == -ENODATA; i++) {
		XConvertSelection(dpy, selection, targets[i], atoms[A_PROP], win, CurrentTime);
		XFlush(dpy);
		XEvent ev;
		int w = wait_event(dpy, &conn, win, SelectionNotify, None, end, &ev);
		if (w <= 0) {
			rc = w < 0 ? -ECONNRESET : -ETIMEDOUT;
			break;
		}
		if (ev.xselection.property == None)
			continue;	/* the owner does not offer this target */
		Atom type;
		rc = take_property(dpy, win, atoms[A_PROP], &type, &buf, &got);
		if (rc == 1) {	/* INCR: chunks until a zero-length one */
			for (;;) {
				w = wait_event(dpy, &conn, win, PropertyNotify, atoms[A_PROP], end, &ev);
				if (w <= 0) {
					rc = w < 0 ? -ECONNRESET : -ETIMEDOUT;
					break;
				}
				size_t before = got;
				rc = take_property(dpy, win, atoms[A_PROP], &type, &buf, &got);
				if (rc < 0 || got == before)
					break;
			}
		}
		if (rc == 0 && targets[i] == XA_STRING && got) {
			/* Latin-1 -> UTF-8 */
			unsigned char* u = malloc(got * 2 + 1);
			size_t o = 0;
			for (size_t k = 0; u && k < got; k++) {
				if (buf[k] < 0x80) {
					u[o++] = buf[k];
				} else {
					u[o++] = (unsigned char)(0xc0 | buf[k] >> 6);
					u[o++] = (unsigned char)(0x80 | (buf[k] & 0x3f));
				}
			}
			if (!u) {
				rc = -ENOMEM;
			} else {
				u[o] = '\0';
				free(buf);
				buf = u;
				got = o;
			}
		}
	}
	if (rc == -ENODATA)
		snprintf(err, err_size, "the owner of %s offers no %s", name,
				image ? "image/png" : "text (UTF8_STRING or STRING)");
	else if (rc == -ETIMEDOUT)
		snprintf(err, err_size, "the owner of %s did not answer within %d ms", name, timeout_ms);
	else if (rc == -EFBIG)
		snprintf(err, err_size, "the %s content is over the limit of %d bytes", name,
				DESKTOP_CLIPBOARD_MAX);
	else if (rc < 0)
		snprintf(err, err_size, "reading %s failed: %s", name, strerror(-rc));
done:
	x11_close(&conn);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*data = buf ? buf : calloc(1, 1);
	*len = got;
	return *data ? 0 : -ENOMEM;
}

void desktop_clipboard_stop(void)
{
	if (desktop_is_wayland()) {
		desktop__wayland_clipboard_stop();
		return;
	}
	if (desktop_is_gnome()) {
		desktop__gnome_clipboard_stop();
		return;
	}
	if (!C.running)
		return;
	if (desktop__hung(NULL))
		return;	/* its thread may be stuck on the server: leave it */
	pthread_mutex_lock(&C.lock);
	C.stop = true;
	pthread_mutex_unlock(&C.lock);
	wake();
	clipboard_reset();
	C.stop = false;
}
