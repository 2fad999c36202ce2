#pragma once

/* The desktop: the X display deskd works on. Either an existing one
 * (--display / $DISPLAY) or an embedded Xvfb started with -displayfd, with a
 * window manager and --launch programs, all stopped by PID when deskd stops.
 * Each subsystem opens its own X connection to desktop_display_name().
 *
 * Threads: desktop_start and desktop_stop run on the main thread (once each).
 * Everything else may be called from any thread. A watcher thread owns one X
 * connection of its own: it notices when the X server goes away
 * (desktop_available() turns false), reconnects when it is back, restarts an
 * embedded Xvfb that died (same size, same display number when it is free,
 * then the WM and the --launch programs that exited), reaps the programs it
 * started, and keeps the screen size current (RandR / root ConfigureNotify).
 *
 * X errors: desktop_start installs process-wide handlers (XSetErrorHandler,
 * XSetIOErrorHandler) that log and return, so Xlib's default handler never
 * runs. Xlib still exits after the IO error handler unless the connection has
 * an exit handler: every X connection in deskd must call
 * XSetIOErrorExitHandler(dpy, fn, ud) right after XOpenDisplay with an fn that
 * returns (it may set a per-connection "dead" flag); after it ran, Xlib calls
 * on that Display are no-ops and only XCloseDisplay may follow. */

#include <stdbool.h>
#include <stddef.h>

struct options;

/** Connect to, or start, the display. Returns 0 or -errno (logged).
 *  An external display that is not reachable yet is not an error: tools say
 *  display_unavailable until the watcher connects. Main thread. */
int desktop_start(const struct options* opts);
/** Stop what desktop_start started (WM, launched programs, Xvfb): SIGTERM to
 *  each process group, up to 2 s, then SIGKILL; reaps. Idempotent. */
void desktop_stop(void);

/** ":N"; valid after desktop_start until desktop_stop ("" before). The
 *  string stays valid even if an embedded Xvfb is restarted on another number. */
const char* desktop_display_name(void);
/** Did deskd start the Xvfb itself? */
bool desktop_is_embedded(void);
/** Is the X server reachable right now? (a cheap cached check, any thread) */
bool desktop_available(void);
/** Screen size in pixels (cached; refreshed on reconnect and on RandR or
 *  root ConfigureNotify). 0x0 before the first connection. */
void desktop_screen_size(int* width, int* height);
/** "The X.Org Foundation 12101007" of the last connection, or "". */
void desktop_server_info(char* out, size_t size);
/** How many times the display connection was lost so far. */
unsigned desktop_disconnects(void);

/** The desktop lock: actions that change the desktop run one at a time, in
 *  arrival order (a FIFO ticket lock). Captures do not take it. */
void desktop_lock(void);
void desktop_unlock(void);

/* Helpers (pure, unit-tested). */

/** Find an executable: name with a '/' is checked as is, else each entry of
 *  path (a $PATH string; NULL = "/usr/local/bin:/usr/bin:/bin"). Writes the
 *  full path into out; returns 0 or -ENOENT / -ENAMETOOLONG. */
int desktop_find_program(const char* name, const char* path, char* out,
		size_t size);
/** Parse what Xvfb wrote to -displayfd ("12\n"): the display number, or
 *  -EINVAL when it is not a complete line with a number. */
int desktop_parse_display_number(const char* text, size_t len);
/** The /bin/sh -c script for a --launch command: "exec CMD" when CMD is one
 *  simple command (no shell syntax), else CMD. Returns 1 (exec added), 0, or
 *  -ENAMETOOLONG. */
int desktop_launch_script(const char* cmd, char* out, size_t size);
