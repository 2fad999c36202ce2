#pragma once

/* x11/: the X11 plumbing of the backends, written once: a connection with
 * its errors trapped, the walk up to a top-level window, and focusing one.
 *
 * A private helper, not a module face: it exposes Xlib types on purpose and
 * is included only by code that already talks Xlib: the backends' .c files
 * and their folder-private headers (capture/x11_private.h,
 * input/x11_private.h); desktop/'s .c files may follow. No face includes it.
 *
 * Errors, per connection and never process-wide: x11_open() hooks every
 * error code of the new connection (XESetWireToError), so X errors are
 * recorded in its struct x11_conn and never reach the process-wide handler,
 * let alone Xlib's default one that exits. A lost connection marks the
 * struct lost through the connection's IO exit handler instead of exiting.
 * The one process-wide thing is an IO error handler, installed once, that
 * returns for our connections (Xlib's default one would exit before the
 * connection's exit handler is called) and chains to the one installed
 * before it for other connections.
 *
 * A stopped server (SIGSTOP, overload): Xlib waits for replies, and
 * XOpenDisplay for the connection setup, with no bound. So the owner of a
 * hang detector calls x11_abort_all() when the server has not answered for
 * its bound: every open connection (but the kept ones) is marked lost and
 * its socket shut down, so a thread blocked on it returns at once as if the
 * connection had been lost (-ECONNRESET), and what sat in Xlib's output
 * buffer is never sent; opens under way give up, and new ones fail at once
 * until x11_resume(). (An open first waits for the server's answer to a
 * connection setup on a socket of its own, which the abort can end, so that
 * XOpenDisplay, which cannot be interrupted and holds Xlib's global lock
 * while it waits, starts only while the server answers.)
 *
 * What was written to the socket before the abort waits in the kernel for
 * the server; Xorg's servers (Xvfb 21 tested) drop the unread requests of
 * a client that hung up (shutdown(SHUT_RDWR); after SHUT_WR alone they ran
 * them), but the protocol promises nothing, so a caller whose requests must
 * not run late (input) also makes a round trip right before writing them:
 * they go out only while the server answers.
 *
 * Threads: a connection is used by one thread at a time (the caller
 * serializes); errors are recorded on that thread. x11_lost(),
 * x11_abort_all(), x11_resume() and x11_held() may be called from any
 * thread. */

#include <X11/Xlib.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct x11_conn {
	Display* dpy;		/* NULL until x11_open, and after x11_close */
	atomic_bool lost;	/* the connection is gone */
	int error;		/* first X error code since the last take; 0 none */
	unsigned char error_request, error_minor;	/* its request */
	unsigned char ignored[32];	/* error codes never recorded (bits) */
	bool kept;		/* x11_keep: never aborted */
	int64_t answered_ns;	/* when x11_sync last came back (base/clock.h ns) */
	struct x11_conn* next;	/* on the list of open connections (conn.c) */
};

/** Open display name (":N"; NULL = $DISPLAY) with the trap on it. Returns
 *  the connection (also in self->dpy), or NULL (errno ECONNREFUSED: no such
 *  server; EAGAIN: held, see x11_abort_all; ETIMEDOUT: given up at an
 *  abort while the server did not answer). self must stay where it is
 *  until x11_close: the connection points to it. */
Display* x11_open(struct x11_conn* self, const char* name);
/** Close the connection (errors while closing are still trapped). Safe on
 *  a lost connection and on one never opened; while held (x11_abort_all)
 *  it does not wait for the server. */
void x11_close(struct x11_conn* self);
/** Never record this error code on this connection (e.g. one that is
 *  expected and harmless, such as BadDamage for a window just destroyed). */
void x11_ignore(struct x11_conn* self, int code);
/** Is the connection gone? Any thread. */
bool x11_lost(const struct x11_conn* self);

/** The server does not answer: abort every open connection not kept
 *  (marked lost, socket shut down: blocked callers return at once, nothing
 *  buffered is sent), give up opens under way, and hold new opens (they
 *  fail at once) until x11_resume. Never blocks, never calls Xlib. Returns
 *  how many connections it aborted. */
int x11_abort_all(void);
/** The server answers again (or is gone for good): opens go on. */
void x11_resume(void);
/** Between x11_abort_all and x11_resume? */
bool x11_held(void);
/** Never abort this connection: one nobody waits on, read only when its
 *  socket polls readable (the display watcher), so that it stays up
 *  through a stop. */
void x11_keep(struct x11_conn* self);

/** Forget the recorded error: do it before the requests to check. */
void x11_clear(struct x11_conn* self);
/** The error recorded since the last clear (0 = none), without a round
 *  trip (after a call that waited for its reply), and clear it. */
int x11_take(struct x11_conn* self);
/** Wait until the server processed every request sent, then take the
 *  recorded error: 0, an X error code (> 0), or -ECONNRESET when the
 *  connection is gone. */
int x11_sync(struct x11_conn* self);
/** An X error code as -errno: BadWindow -ENOENT, BadValue and BadMatch
 *  -EINVAL, BadAlloc -ENOMEM, others -EIO; 0 and negative values as they
 *  are (so x11_errno(x11_sync(c)) is 0 or -errno). */
int x11_errno(int code);

/* ---- Windows ---- */

/** A property as an array of longs (format 32) or bytes (format 8): the
 *  number of items, or -1 when it is not there; *data (NULL on -1) is the
 *  caller's to XFree. */
long x11_property(Display* dpy, Window w, Atom prop, Atom type, long max_items,
		int* format, unsigned char** data);
/** The top-level window that holds w: the root's child it is in (w
 *  itself, or the WM's frame around it). None when w does not exist. */
Window x11_toplevel(Display* dpy, Window w);
/** Is `inner` the window w or inside it? */
bool x11_contains(Display* dpy, Window w, Window inner);
/** Does the input focus lie in w (on it or inside it)? */
bool x11_has_focus(Display* dpy, Window w);
/** An EWMH request to the window manager about window: a client message
 *  of the given type to the root. */
void x11_wm_message(Display* dpy, Window window, Atom type, const long data[5]);
/** Is there a running EWMH window manager that supports atom (listed in
 *  _NET_SUPPORTED, with a live _NET_SUPPORTING_WM_CHECK window)? */
bool x11_wm_supports(struct x11_conn* self, Atom atom);

/** Activate a window and wait until the input focus is in it, at most
 *  timeout_ms. With an EWMH window manager: _NET_ACTIVE_WINDOW with source
 *  indication 2 (a pager: a direct user request, which WMs honour without
 *  focus-stealing prevention), and if the WM has not done it within a
 *  moment, or without one: map (when unmapped), raise the top-level window
 *  and XSetInputFocus directly. With a WM, it also waits (bounded) for the
 *  WM to publish _NET_ACTIVE_WINDOW. Returns 0, -ENOENT (no such window, or
 *  it went away), -ETIMEDOUT, -ECONNRESET. Clears the recorded error. */
int x11_focus_window(struct x11_conn* self, Window window, int timeout_ms);

/* ---- Window states (ICCCM and EWMH) ---- */

struct x11_window_state {
	bool viewable;		/* map_state IsViewable */
	bool iconic;		/* WM_STATE IconicState */
	bool withdrawn;		/* no WM_STATE, or WithdrawnState */
	bool hidden;		/* _NET_WM_STATE_HIDDEN */
	bool max_vert, max_horz;	/* _NET_WM_STATE_MAXIMIZED_* */
	bool fullscreen;	/* _NET_WM_STATE_FULLSCREEN */
	bool modal;		/* _NET_WM_STATE_MODAL */
	bool above;		/* _NET_WM_STATE_ABOVE */
	bool takes_delete;	/* WM_PROTOCOLS lists WM_DELETE_WINDOW */
	Window transient_for;	/* WM_TRANSIENT_FOR, or None */
	long pid;		/* _NET_WM_PID, else the X server's record of its client (X-Resource), or 0 */
	int x, y, width, height;	/* the client area, root coordinates */
};

/** The pid of the client that made window w, as the X server knows it
 *  (X-Resource 1.2), or 0 when it cannot say (a remote client, an older
 *  server). */
long x11_client_pid(Display* dpy, Window w);
/** Read a window's state: 0, -ENOENT (no such window) or -ECONNRESET.
 *  Clears the recorded error. */
int x11_window_state(struct x11_conn* self, Window w, struct x11_window_state* out);
/** Ask the window manager to change _NET_WM_STATE: action 0 remove, 1 add,
 *  2 toggle; a and b are state atoms (b may be None); as a pager (source 2). */
void x11_change_wm_state(Display* dpy, Window w, int action, Atom a, Atom b);
/** Is a window manager running (a client selected SubstructureRedirect on
 *  the root), EWMH or not? */
bool x11_wm_running(Display* dpy);
/** The EWMH window manager's name (_NET_WM_NAME of its check window) in
 *  out, or "" when there is none. */
void x11_wm_name(struct x11_conn* self, char* out, size_t size);
/** Ask the client to close w: WM_PROTOCOLS / WM_DELETE_WINDOW, sent to w. */
void x11_send_delete(Display* dpy, Window w);
