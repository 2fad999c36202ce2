#pragma once

/* Private to desktop/: what display.c (the display and its watcher) needs
 * from xvfb.c (the embedded desktop's processes). */

#include "desktop/desktop.h"
#include "base/log.h"

#include <sys/types.h>

/* pinger.c: the hang detector. */
/** The watcher's own connection is up (the server answered it). */
bool desktop__connected(void);
/** Is the X server not answering (since *since_ms, clock_ms())? */
bool desktop__hung(int64_t* since_ms);
int desktop__pinger_start(void);
/** Bounded (500 ms). */
void desktop__pinger_stop(void);

/* shots.c: close capture connections left idle by a burst (the watcher
 * calls it every round; it never blocks). */
void desktop__capture_trim(void);

/** Copy the --launch list and, for an embedded desktop, find Xvfb, the WM
 *  and setxkbmap on PATH. 0, -ENOENT (no Xvfb) or -ENOMEM. Main thread. */
int xvfb_configure(const struct options* opts, bool embedded);
/** Start Xvfb (number >= 0: try that display first). The display number,
 *  or -errno. */
int xvfb_start(int number);
/** On the display: setxkbmap and the WM (embedded only), then the --launch
 *  programs that are not running. */
void xvfb_start_clients(const char* display);
/** Reap what exited (logged), and as PID 1 also any orphan; true when the
 *  embedded Xvfb died. */
bool xvfb_reap(void);
/** Is the embedded Xvfb running? */
bool xvfb_running(void);
/** Xvfb died: stop the WM and let the --launch programs notice, before
 *  xvfb_start again. */
void xvfb_before_restart(void);
/** Stop every process (clients first, then Xvfb), bounded; keep_config
 *  when the watcher may still run (it could not be joined). */
void xvfb_stop(bool keep_config);

/* The output of the embedded desktop's programs (childlog.c): a pipe per
 * child, read by one thread that re-logs each line through base/log.h
 * naming the program (JSON lines with --log-format json). */

/** A pipe for a child's stdout and stderr, registered for program; the
 *  child gets *write_fd (the caller closes it after fork). Returns a handle
 *  for childlog_attach/cancel, or -errno (then the caller sends the output
 *  elsewhere). Any thread. */
int childlog_open(const char* program, enum log_level level, int* write_fd);
/** The child runs as pid: start reading its pipe. */
void childlog_attach(int handle, long pid);
/** The fork failed: forget the pipe. */
void childlog_cancel(int handle);
/** Log what is buffered, close every pipe, end the reader. Call after the
 *  programs were stopped; a later childlog_open starts it again. */
void childlog_stop(void);

/** xvfb.c's fork + exec (own process group, parent death signal, output
 *  re-logged as program) for buses.c. The pid or -errno. */
pid_t desktop__spawn(const char* path, char* const argv[], const char* display,
		int fd3, bool quiet, const char* program);

/* The embedded desktop's buses (buses.c): a private session dbus-daemon
 * and the AT-SPI bus on it, started before the WM and the programs. */
/** Start them (idempotent; failures are logged, never fatal). */
void buses_start(const char* display);
/** External display: use $DBUS_SESSION_BUS_ADDRESS, or say there is none. */
void buses_external(void);
/** Reap the dbus-daemon if it exited (watcher thread). */
void buses_reap(void);
/** Stop the dbus-daemon by PID (bounded), remove the runtime dir. */
void buses_stop(void);
/** "KEY=VALUE" entries every program deskd starts gets (NULL-ended; empty
 *  when deskd runs no buses), and whether an inherited entry is replaced
 *  or dropped by them (NO_AT_BRIDGE, an old DBUS_SESSION_BUS_ADDRESS). */
const char* const* buses_env(void);
bool buses_env_replaces(const char* entry);
