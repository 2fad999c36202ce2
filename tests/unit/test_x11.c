/* x11/: the one error trap (per connection, never the process-wide handler;
 * a lost connection is survived), the top-level walk, and focus with and
 * without an EWMH window manager (a fake one on a thread); then capture/
 * and input/ on it: one errno for a lost display. Starts its own Xvfb
 * (-displayfd) and stops it; without Xvfb only the display-less checks run.
 * A stopped server (SIGSTOP): x11_abort_all ends a read, an open and an
 * input call waiting on it, and the input call sent nothing. */
#include "x11/x11.h"
#include "capture/capture.h"
#include "input/input.h"
#include "base/clock.h"
#include "tests/unit/tst.h"
#include "tests/unit/xvfb.h"

#include <X11/Xatom.h>
#include <X11/Xproto.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define BOGUS_WINDOW 0x7ffffff0UL

/* ---- process-wide handlers: the trap must leave them alone ---- */

static atomic_int global_errors, global_io_errors;

static int count_error(Display* dpy, XErrorEvent* ev)
{
	atomic_fetch_add(&global_errors, 1);
	return 0;
}

static int count_io_error(Display* dpy)
{
	atomic_fetch_add(&global_io_errors, 1);
	return 0;
}

static void mark_exit(Display* dpy, void* data)
{
	*(bool*)data = true;
	XUnlockDisplay(dpy);
}

static void test_no_display(void)
{
	struct x11_conn c;
	TST_CHECK(x11_open(&c, ":65000") == NULL);
	TST_CHECK(c.dpy == NULL);
	x11_close(&c);
	TST_EQ_INT(x11_errno(0), 0);
	TST_EQ_INT(x11_errno(BadWindow), -ENOENT);
	TST_EQ_INT(x11_errno(BadValue), -EINVAL);
	TST_EQ_INT(x11_errno(BadMatch), -EINVAL);
	TST_EQ_INT(x11_errno(BadAlloc), -ENOMEM);
	TST_EQ_INT(x11_errno(BadAccess), -EIO);
	TST_EQ_INT(x11_errno(-ECONNRESET), -ECONNRESET);
}

/* A trapped connection for one test (a failed check if it cannot). */
static bool open_conn(struct x11_conn* c, const char* display)
{
	bool ok = x11_open(c, display) != NULL;
	TST_CHECK(ok);
	return ok;
}

static Window make_window(Display* dpy, Window parent, int x, int y, bool map)
{
	Window w = XCreateSimpleWindow(dpy, parent, x, y, 100, 80, 0, 0, 0xffffff);
	if (map)
		XMapWindow(dpy, w);
	XSync(dpy, False);
	return w;
}

static void test_errors(const char* display)
{
	struct x11_conn a, b;
	TST_CHECK(x11_open(&a, display) != NULL);
	TST_CHECK(x11_open(&b, display) != NULL);
	if (!a.dpy || !b.dpy)
		return;
	TST_EQ_INT(x11_sync(&a), 0);

	/* Recorded on its connection, with the request; gone once taken. */
	XMapWindow(a.dpy, BOGUS_WINDOW);
	TST_EQ_INT(x11_sync(&a), BadWindow);
	TST_EQ_INT(x11_sync(&a), 0);

	/* The first error since the last take wins. */
	Window unmapped = make_window(a.dpy, DefaultRootWindow(a.dpy), 0, 0, false);
	XMapWindow(a.dpy, BOGUS_WINDOW);
	XSetInputFocus(a.dpy, unmapped, RevertToParent, CurrentTime);	/* BadMatch */
	XSync(a.dpy, False);
	TST_EQ_INT(a.error, BadWindow);
	TST_EQ_INT(a.error_request, X_MapWindow);
	TST_EQ_INT(x11_take(&a), BadWindow);
	TST_EQ_INT(x11_take(&a), 0);

	/* A call that waits for its reply has its error at once. */
	XWindowAttributes attr;
	TST_CHECK(!XGetWindowAttributes(a.dpy, BOGUS_WINDOW, &attr));
	TST_EQ_INT(x11_take(&a), BadWindow);

	/* Cleared before a request: an old error is not blamed on it. */
	XMapWindow(a.dpy, BOGUS_WINDOW);
	XSync(a.dpy, False);
	x11_clear(&a);
	TST_EQ_INT(x11_sync(&a), 0);

	/* Connections keep their errors apart. */
	XMapWindow(b.dpy, BOGUS_WINDOW);
	TST_EQ_INT(x11_sync(&b), BadWindow);
	TST_EQ_INT(x11_sync(&a), 0);

	/* An ignored code is never recorded. */
	x11_ignore(&b, BadWindow);
	XMapWindow(b.dpy, BOGUS_WINDOW);
	TST_EQ_INT(x11_sync(&b), 0);
	XSetInputFocus(b.dpy, unmapped, RevertToParent, CurrentTime);
	TST_EQ_INT(x11_sync(&b), BadMatch);

	/* None of it reached the process-wide handler; a connection that
	 * is not trapped still goes there. */
	TST_EQ_INT(atomic_load(&global_errors), 0);
	Display* plain = XOpenDisplay(display);
	TST_CHECK(plain != NULL);
	if (plain) {
		XMapWindow(plain, BOGUS_WINDOW);
		XSync(plain, False);
		TST_EQ_INT(atomic_load(&global_errors), 1);
		XCloseDisplay(plain);
	}
	TST_EQ_INT(a.error, 0);
	TST_CHECK(!x11_lost(&a));
	XDestroyWindow(a.dpy, unmapped);
	/* Errors while closing are trapped too. */
	XMapWindow(a.dpy, BOGUS_WINDOW);
	x11_close(&a);
	TST_CHECK(a.dpy == NULL);
	x11_close(&a);
	x11_close(&b);
	TST_EQ_INT(atomic_load(&global_errors), 1);
}

static void test_walk(const char* display)
{
	struct x11_conn c;
	if (!open_conn(&c, display))
		return;
	Display* dpy = c.dpy;
	Window root = DefaultRootWindow(dpy);
	Window top = make_window(dpy, root, 10, 10, true);
	Window child = make_window(dpy, top, 5, 5, true);
	Window grandchild = make_window(dpy, child, 1, 1, true);
	TST_EQ_INT(x11_toplevel(dpy, grandchild), top);
	TST_EQ_INT(x11_toplevel(dpy, child), top);
	TST_EQ_INT(x11_toplevel(dpy, top), top);
	TST_EQ_INT(x11_toplevel(dpy, BOGUS_WINDOW), None);
	TST_CHECK(x11_contains(dpy, top, grandchild));
	TST_CHECK(x11_contains(dpy, top, top));
	TST_CHECK(!x11_contains(dpy, child, top));
	TST_CHECK(!x11_contains(dpy, top, root));
	TST_CHECK(!x11_contains(dpy, top, BOGUS_WINDOW));
	TST_CHECK(!x11_contains(dpy, None, top));
	x11_clear(&c);

	Atom prop = XInternAtom(dpy, "DESKD_TEST", False);
	long values[3] = { 7, 8, 9 };
	XChangeProperty(dpy, top, prop, XA_CARDINAL, 32, PropModeReplace,
			(unsigned char*)values, 3);
	int format;
	unsigned char* data;
	TST_EQ_INT(x11_property(dpy, top, prop, XA_CARDINAL, 16, &format, &data), 3);
	TST_EQ_INT(format, 32);
	TST_CHECK(data && ((unsigned long*)(void*)data)[2] == 9);
	if (data)
		XFree(data);
	TST_EQ_INT(x11_property(dpy, child, prop, XA_CARDINAL, 16, &format, &data), -1);
	TST_CHECK(data == NULL);
	/* No window manager here. */
	TST_CHECK(!x11_wm_supports(&c, XInternAtom(dpy, "_NET_ACTIVE_WINDOW", False)));
	TST_EQ_INT(x11_sync(&c), 0);
	XDestroyWindow(dpy, top);
	x11_close(&c);
}

static void test_focus_no_wm(const char* display)
{
	struct x11_conn c;
	if (!open_conn(&c, display))
		return;
	Display* dpy = c.dpy;
	Window root = DefaultRootWindow(dpy);
	Window a = make_window(dpy, root, 0, 0, true);
	Window b = make_window(dpy, root, 200, 0, true);
	Window a_child = make_window(dpy, a, 5, 5, true);
	TST_EQ_INT(x11_focus_window(&c, b, 1000), 0);
	TST_CHECK(x11_has_focus(dpy, b));
	TST_EQ_INT(x11_focus_window(&c, a, 1000), 0);
	TST_CHECK(x11_has_focus(dpy, a));
	TST_CHECK(!x11_has_focus(dpy, b));
	/* Focus inside the window counts as in it. */
	XSetInputFocus(dpy, a_child, RevertToParent, CurrentTime);
	TST_CHECK(x11_has_focus(dpy, a));
	TST_EQ_INT(x11_focus_window(&c, a, 1000), 0);

	/* Unmapped: mapped (and raised), then focused. */
	Window hidden = make_window(dpy, root, 300, 200, false);
	TST_EQ_INT(x11_focus_window(&c, hidden, 1000), 0);
	XWindowAttributes attr;
	TST_CHECK(XGetWindowAttributes(dpy, hidden, &attr) && attr.map_state == IsViewable);
	TST_CHECK(x11_has_focus(dpy, hidden));

	TST_EQ_INT(x11_focus_window(&c, BOGUS_WINDOW, 1000), -ENOENT);
	TST_EQ_INT(x11_focus_window(&c, None, 1000), -ENOENT);

	/* Inside an unmapped parent it can never be viewable: bounded. */
	Window shut = make_window(dpy, root, 0, 300, false);
	Window inside = make_window(dpy, shut, 0, 0, true);
	int64_t t0 = clock_ms();
	TST_EQ_INT(x11_focus_window(&c, inside, 300), -ETIMEDOUT);
	int64_t took = clock_ms() - t0;
	TST_CHECK(took >= 300 && took < 3000);
	TST_EQ_INT(c.error, 0);	/* its own errors are not left behind */
	TST_EQ_INT(atomic_load(&global_errors), 1);
	XDestroyWindow(dpy, a);
	XDestroyWindow(dpy, b);
	XDestroyWindow(dpy, hidden);
	XDestroyWindow(dpy, shut);
	x11_close(&c);
}

/* ---- a fake EWMH window manager on its own connection and thread ---- */

struct fake_wm {
	Display* dpy;
	Window check;
	Atom active, supported, check_atom;
	bool obey;			/* act on _NET_ACTIVE_WINDOW, or ignore it */
	atomic_bool stop;
	atomic_int requests;
	atomic_long source;		/* data.l[0] of the last request */
	pthread_t thread;
};

static void* fake_wm_main(void* data)
{
	struct fake_wm* wm = data;
	while (!atomic_load(&wm->stop)) {
		struct pollfd p = { .fd = ConnectionNumber(wm->dpy), .events = POLLIN };
		if (!XPending(wm->dpy)) {
			poll(&p, 1, 10);
			continue;
		}
		XEvent ev;
		XNextEvent(wm->dpy, &ev);
		if (ev.type != ClientMessage || ev.xclient.message_type != wm->active)
			continue;
		atomic_store(&wm->source, ev.xclient.data.l[0]);
		atomic_fetch_add(&wm->requests, 1);
		if (!wm->obey)
			continue;
		Window w = ev.xclient.window;
		XRaiseWindow(wm->dpy, w);
		XSetInputFocus(wm->dpy, w, RevertToParent, CurrentTime);
		XChangeProperty(wm->dpy, DefaultRootWindow(wm->dpy), wm->active, XA_WINDOW, 32,
				PropModeReplace, (unsigned char*)&w, 1);
		XSync(wm->dpy, False);
	}
	return NULL;
}

static bool fake_wm_start(struct fake_wm* wm, const char* display, bool obey)
{
	memset(wm, 0, sizeof(*wm));
	wm->obey = obey;
	wm->dpy = XOpenDisplay(display);
	if (!wm->dpy)
		return false;
	Display* dpy = wm->dpy;
	Window root = DefaultRootWindow(dpy);
	wm->active = XInternAtom(dpy, "_NET_ACTIVE_WINDOW", False);
	wm->supported = XInternAtom(dpy, "_NET_SUPPORTED", False);
	wm->check_atom = XInternAtom(dpy, "_NET_SUPPORTING_WM_CHECK", False);
	wm->check = XCreateSimpleWindow(dpy, root, -10, -10, 1, 1, 0, 0, 0);
	XChangeProperty(dpy, wm->check, wm->check_atom, XA_WINDOW, 32, PropModeReplace,
			(unsigned char*)&wm->check, 1);
	XChangeProperty(dpy, root, wm->check_atom, XA_WINDOW, 32, PropModeReplace,
			(unsigned char*)&wm->check, 1);
	XChangeProperty(dpy, root, wm->supported, XA_ATOM, 32, PropModeReplace,
			(unsigned char*)&wm->active, 1);
	/* Client messages to the root reach a client selecting either mask. */
	XSelectInput(dpy, root, SubstructureNotifyMask);
	XSync(dpy, False);
	if (pthread_create(&wm->thread, NULL, fake_wm_main, wm) != 0) {
		XCloseDisplay(dpy);
		return false;
	}
	return true;
}

/* Stop the thread; the WM "quits" but leaves its root properties, like a
 * crashed one. */
static void fake_wm_stop(struct fake_wm* wm)
{
	atomic_store(&wm->stop, true);
	pthread_join(wm->thread, NULL);
	XCloseDisplay(wm->dpy);
}

static void test_focus_ewmh(const char* display)
{
	struct x11_conn c;
	if (!open_conn(&c, display))
		return;
	Display* dpy = c.dpy;
	Window root = DefaultRootWindow(dpy);
	Atom active = XInternAtom(dpy, "_NET_ACTIVE_WINDOW", False);
	Window a = make_window(dpy, root, 0, 0, true);
	Window b = make_window(dpy, root, 200, 0, true);
	XSetInputFocus(dpy, b, RevertToParent, CurrentTime);
	XSync(dpy, False);

	/* A WM that obeys: asked as a pager (source 2), focus and
	 * _NET_ACTIVE_WINDOW both arrive, well before the direct fallback. */
	struct fake_wm wm;
	TST_CHECK(fake_wm_start(&wm, display, true));
	TST_CHECK(x11_wm_supports(&c, active));
	int64_t t0 = clock_ms();
	TST_EQ_INT(x11_focus_window(&c, a, 2000), 0);
	TST_CHECK(clock_ms() - t0 < 2000);
	TST_EQ_INT(atomic_load(&wm.requests), 1);
	TST_EQ_INT(atomic_load(&wm.source), 2);
	TST_CHECK(x11_has_focus(dpy, a));
	int format;
	unsigned char* data;
	TST_EQ_INT(x11_property(dpy, root, active, XA_WINDOW, 1, &format, &data), 1);
	TST_CHECK(data && ((unsigned long*)(void*)data)[0] == a);
	if (data)
		XFree(data);
	fake_wm_stop(&wm);

	/* Its properties stay, but the check window is gone: no WM. */
	TST_CHECK(!x11_wm_supports(&c, active));
	TST_EQ_INT(c.error, 0);

	/* A WM that ignores the request: focused directly after a moment. */
	TST_CHECK(fake_wm_start(&wm, display, false));
	t0 = clock_ms();
	TST_EQ_INT(x11_focus_window(&c, b, 2000), 0);
	int64_t took = clock_ms() - t0;
	TST_CHECK(took >= 50 && took < 2000);	/* it had its turn first */
	TST_EQ_INT(atomic_load(&wm.requests), 1);
	TST_CHECK(x11_has_focus(dpy, b));
	fake_wm_stop(&wm);
	XDeleteProperty(dpy, root, active);
	XDeleteProperty(dpy, root, XInternAtom(dpy, "_NET_SUPPORTED", False));
	XDeleteProperty(dpy, root, XInternAtom(dpy, "_NET_SUPPORTING_WM_CHECK", False));
	XDestroyWindow(dpy, a);
	XDestroyWindow(dpy, b);
	TST_EQ_INT(x11_sync(&c), 0);
	x11_close(&c);
	TST_EQ_INT(atomic_load(&global_errors), 1);
}

/* Last: the X server goes away under a trapped connection, an untrapped
 * one, a capture context and an input context. Nobody exits; the trapped
 * ones (and the backends) say -ECONNRESET. */
/* ---- a stopped server: x11_abort_all ends every wait on it ---- */

struct blocked {
	const char* display;
	struct x11_conn* conn;
	struct input* in;
	int what;		/* 0 x11_sync, 1 x11_open, 2 input_move */
	int rc;
	atomic_bool done;
};

static void* blocked_main(void* data)
{
	struct blocked* b = data;
	if (b->what == 0)
		b->rc = x11_sync(b->conn);
	else if (b->what == 1)
		b->rc = x11_open(b->conn, b->display) ? 0 : -errno;
	else
		b->rc = input_move(b->in, 333, 222);
	atomic_store(&b->done, true);
	return NULL;
}

static bool all_done(struct blocked* b, int n, int timeout_ms)
{
	int64_t end = clock_ms() + timeout_ms;
	for (;;) {
		bool all = true;
		for (int i = 0; i < n; i++)
			all = all && atomic_load(&b[i].done);
		if (all || clock_ms() >= end)
			return all;
		clock_sleep_ms(5);
	}
}

static void test_stopped(const char* display)
{
	struct x11_conn c, kept, opened, later;
	TST_CHECK(x11_open(&c, display) != NULL);
	TST_CHECK(x11_open(&kept, display) != NULL);
	x11_keep(&kept);
	char err[256] = "";
	struct input* in = input_new(display, err, sizeof(err));
	TST_CHECK(in != NULL);
	if (!c.dpy || !kept.dpy || !in)
		return;
	TST_EQ_INT(input_move(in, 10, 10), 0);
	/* Past input's 20 ms "answered a moment ago" window: a call inside it
	 * skips the round trip, and its move ran after SIGCONT (twice in
	 * fresh-test and make check: the pointer at 333,222). */
	clock_sleep_ms(50);

	kill(xvfb_pid, SIGSTOP);
	struct blocked b[3] = {
		{ .display = display, .conn = &c, .what = 0 },
		{ .display = display, .conn = &opened, .what = 1 },
		{ .display = display, .in = in, .what = 2 },
	};
	pthread_t threads[3];
	for (int i = 0; i < 3; i++)
		TST_EQ_INT(pthread_create(&threads[i], NULL, blocked_main, &b[i]), 0);
	/* They wait for the stopped server... */
	TST_CHECK(!all_done(b, 3, 300));
	/* ...until the abort, and then at once. */
	int64_t t0 = clock_ms();
	TST_CHECK(x11_abort_all() >= 2);	/* c and input's; not the kept one */
	TST_CHECK(all_done(b, 3, 1000));
	TST_CHECK(clock_ms() - t0 < 1000);
	for (int i = 0; i < 3; i++)
		pthread_join(threads[i], NULL);
	TST_EQ_INT(b[0].rc, -ECONNRESET);
	TST_CHECK(x11_lost(&c));
	TST_EQ_INT(b[1].rc, -ETIMEDOUT);	/* the open gave up */
	TST_EQ_INT(b[2].rc, -ECONNRESET);	/* nothing was sent */
	TST_CHECK(!input_alive(in));
	TST_CHECK(!x11_lost(&kept));
	/* Held: opens fail at once; closing does not wait for the server. */
	TST_CHECK(x11_held());
	t0 = clock_ms();
	TST_CHECK(x11_open(&later, display) == NULL);
	TST_EQ_INT(errno, EAGAIN);
	x11_close(&c);
	input_destroy(in);
	TST_CHECK(clock_ms() - t0 < 1000);

	/* It goes on: the move was never sent; the kept one still works. */
	kill(xvfb_pid, SIGCONT);
	x11_resume();
	TST_CHECK(!x11_held());
	clock_sleep_ms(300);
	TST_EQ_INT(x11_sync(&kept), 0);
	Window root, child;
	int x = -1, y = -1, wx, wy;
	unsigned mask;
	XQueryPointer(kept.dpy, DefaultRootWindow(kept.dpy), &root, &child, &x, &y, &wx, &wy, &mask);
	TST_EQ_INT(x, 10);
	TST_EQ_INT(y, 10);
	TST_CHECK(x11_open(&later, display) != NULL);
	TST_EQ_INT(x11_sync(&later), 0);
	x11_close(&later);
	x11_close(&kept);
}

static void test_lost(const char* display)
{
	struct x11_conn c;
	TST_CHECK(x11_open(&c, display) != NULL);
	Display* plain = XOpenDisplay(display);
	bool plain_exit = false;
	if (plain)
		XSetIOErrorExitHandler(plain, mark_exit, &plain_exit);
	char err[256] = "";
	struct capture* cap = capture_create(display, err, sizeof(err));
	TST_CHECK(cap != NULL);
	struct input* in = input_new(display, err, sizeof(err));
	TST_CHECK(in != NULL);
	if (!c.dpy || !plain || !cap || !in)
		return;
	int x, y;
	TST_EQ_INT(input_cursor_position(in, &x, &y), 0);

	xvfb_kill(SIGKILL);
	TST_EQ_INT(x11_sync(&c), -ECONNRESET);
	TST_CHECK(x11_lost(&c));
	TST_EQ_INT(x11_sync(&c), -ECONNRESET);
	/* Ours did not go to the handler that was there before ours... */
	TST_EQ_INT(atomic_load(&global_io_errors), 0);
	/* ...another connection did, and then to its own exit handler. */
	XSync(plain, False);
	TST_EQ_INT(atomic_load(&global_io_errors), 1);
	TST_CHECK(plain_exit);

	uint64_t counter;
	TST_EQ_INT(capture_changes(cap, 0, &counter), -ECONNRESET);
	TST_CHECK(!capture_connected(cap));
	TST_EQ_INT(input_move(in, 1, 1), -ECONNRESET);
	TST_EQ_INT(input_cursor_position(in, &x, &y), -ECONNRESET);
	TST_EQ_INT(input_focus_window(in, 1, 100), -ECONNRESET);
	TST_CHECK(!input_alive(in));
	capture_destroy(cap);
	input_destroy(in);
	x11_close(&c);
	XCloseDisplay(plain);
}

/* A solid rectangle on the root window, drawn and synced. */
static void paint_root(Display* dpy, unsigned long pixel, int x, int y, int w, int h)
{
	GC gc = XCreateGC(dpy, DefaultRootWindow(dpy), 0, NULL);
	XSetForeground(dpy, gc, pixel);
	XFillRectangle(dpy, DefaultRootWindow(dpy), gc, x, y, (unsigned)w, (unsigned)h);
	XFreeGC(dpy, gc);
	XSync(dpy, False);
}

static bool same_pixels(const struct frame* a, const struct frame* b)
{
	if (a->width != b->width || a->height != b->height)
		return false;
	for (int y = 0; y < a->height; y++)
		for (int x = 0; x < a->width; x++) {
			uint32_t p, q;
			memcpy(&p, a->data + (size_t)y * (size_t)a->stride + 4 * (size_t)x, 4);
			memcpy(&q, b->data + (size_t)y * (size_t)b->stride + 4 * (size_t)x, 4);
			if ((p & 0xffffff) != (q & 0xffffff))
				return false;
		}
	return true;
}

static uint32_t pixel_at(const struct frame* f, int x, int y)
{
	uint32_t p;
	memcpy(&p, f->data + (size_t)y * (size_t)f->stride + 4 * (size_t)x, 4);
	return p & 0xffffff;
}

/* A lent capture (the shared image itself): the pixels of an owned one, the
 * same PNG and JPEG bytes; a reference taken on it is a copy that keeps
 * them when the next capture overwrites the shared image. */
static void test_lent(const char* display)
{
	Display* dpy = XOpenDisplay(display);
	TST_CHECK(dpy != NULL);
	if (!dpy)
		return;
	char err[256];
	struct capture* cap = capture_create(display, err, sizeof(err));
	TST_CHECK(cap != NULL);
	if (!cap)
		return;
	paint_root(dpy, 0x336699, 0, 0, 640, 480);
	paint_root(dpy, 0xff8000, 10, 20, 30, 40);
	struct frame *owned = NULL, *lent = NULL;
	TST_EQ_INT(capture_screen(cap, NULL, false, &owned), 0);
	TST_CHECK(!owned->lent);
	TST_EQ_INT(capture_screen_lent(cap, NULL, false, &lent), 0);
	TST_CHECK(lent->lent == capture_has_shm(cap));
	TST_CHECK(same_pixels(owned, lent));
	TST_EQ_INT((int)pixel_at(lent, 15, 25), 0xff8000);
	uint8_t *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	TST_EQ_INT(capture_encode_png(owned, &a, &alen), 0);
	TST_EQ_INT(capture_encode_png(lent, &b, &blen), 0);
	TST_CHECK(alen == blen && memcmp(a, b, alen) == 0);
	free(a);
	free(b);
	TST_EQ_INT(capture_encode_jpeg(owned, 80, &a, &alen), 0);
	TST_EQ_INT(capture_encode_jpeg(lent, 80, &b, &blen), 0);
	TST_CHECK(alen == blen && memcmp(a, b, alen) == 0);
	free(a);
	free(b);
	struct frame* kept = frame_ref(lent);
	TST_CHECK(kept != NULL && kept != lent && !kept->lent && kept->data != lent->data);
	TST_CHECK(same_pixels(kept, owned));
	frame_unref(lent);
	/* The next capture overwrites the shared image, not the copy. */
	paint_root(dpy, 0x00ff00, 10, 20, 30, 40);
	TST_EQ_INT(capture_screen_lent(cap, NULL, false, &lent), 0);
	TST_EQ_INT((int)pixel_at(lent, 15, 25), 0x00ff00);
	TST_EQ_INT((int)pixel_at(kept, 15, 25), 0xff8000);
	frame_unref(lent);
	frame_unref(kept);
	frame_unref(owned);

	/* A PNG band state fed lent frames keeps its own copy, updated with
	 * the bands that changed: each image is a fresh state's, through
	 * whole, partial and no changes. */
	static const struct { unsigned long pixel; int x, y, w, h; bool partial; } steps[] = {
		{ 0x123456, 0, 0, 640, 480, false },
		{ 0xabcdef, 100, 100, 20, 20, true },
		{ 0xabcdef, 100, 100, 20, 20, true },	/* the same again: nothing changed */
		{ 0x00ff00, 0, 400, 640, 80, true },
		{ 0x00ff00, 0, 0, 640, 2, true },	/* the first band only */
		{ 0xff0000, 0, 0, 640, 480, false },
	};
	struct capture_png_state* state = NULL;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		paint_root(dpy, steps[i].pixel, steps[i].x, steps[i].y, steps[i].w, steps[i].h);
		TST_EQ_INT(capture_screen_lent(cap, NULL, false, &lent), 0);
		TST_EQ_INT(capture_encode_png_cached(&state, lent, &a, &alen), 0);
		frame_unref(lent);
		TST_EQ_INT(capture_screen(cap, NULL, false, &owned), 0);
		struct capture_png_state* fresh = NULL;	/* the same bands, none reused */
		TST_EQ_INT(capture_encode_png_cached(&fresh, owned, &b, &blen), 0);
		capture_png_state_free(fresh);
		frame_unref(owned);
		TST_CHECK(alen == blen && memcmp(a, b, alen) == 0);
		if (steps[i].partial)
			TST_CHECK(capture_png_state_reused(state) > 0);
		free(a);
		free(b);
	}
	capture_png_state_free(state);
	capture_destroy(cap);
	XCloseDisplay(dpy);
}

/* input_wait_ungrabbed: waits while another client holds the pointer
 * grab, at most its bound; returns once it is let go; holds none itself. */
static void test_wait_ungrabbed(const char* display)
{
	Display* other = XOpenDisplay(display);
	char err[256];
	struct input* in = input_new(display, err, sizeof(err));
	TST_CHECK(other != NULL && in != NULL);
	if (!other || !in) {
		if (other)
			XCloseDisplay(other);
		input_destroy(in);
		return;
	}
	TST_EQ_INT(input_wait_ungrabbed(in, 200), 0);
	TST_EQ_INT(XGrabPointer(other, DefaultRootWindow(other), False, 0, GrabModeAsync,
			GrabModeAsync, None, None, CurrentTime), GrabSuccess);
	XSync(other, False);
	int64_t t0 = clock_ms();
	TST_EQ_INT(input_wait_ungrabbed(in, 150), -ETIMEDOUT);
	TST_CHECK(clock_ms() - t0 >= 150);
	XUngrabPointer(other, CurrentTime);
	XSync(other, False);
	TST_EQ_INT(input_wait_ungrabbed(in, 1000), 0);
	/* deskd let go of its probe: another client can grab again. */
	TST_EQ_INT(XGrabPointer(other, DefaultRootWindow(other), False, 0, GrabModeAsync,
			GrabModeAsync, None, None, CurrentTime), GrabSuccess);
	XUngrabPointer(other, CurrentTime);
	XSync(other, False);
	input_destroy(in);
	XCloseDisplay(other);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);	/* as deskd: writes to an aborted connection */
	/* Stand-ins for what a process may have installed before us. */
	XSetErrorHandler(count_error);
	XSetIOErrorHandler(count_io_error);
	test_no_display();
	char display[32];
	if (xvfb_start(display, sizeof(display)) < 0) {
		printf("Xvfb did not start: only the checks without a display ran\n");
		TST_END();
	}
	test_errors(display);
	test_walk(display);
	test_focus_no_wm(display);
	test_focus_ewmh(display);
	test_lent(display);
	test_wait_ungrabbed(display);
	test_stopped(display);
	test_lost(display);
	xvfb_kill(SIGTERM);
	TST_END();
}
