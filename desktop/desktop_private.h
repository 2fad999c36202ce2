#pragma once

/* Private to desktop/: what display.c (the display and its watcher) needs
 * from xvfb.c (the embedded desktop's processes), the children's
 * environment (env.c) and the launched programs (launch.c). */

#include "desktop/desktop.h"
#include "base/log.h"

#include <sys/types.h>

/* display.c: the settings desktop_configure took (all zero before). */
const struct desktop_config* desktop__config(void);

/* display.c, for a display backend's start and watcher (wayland_desktop.c). */
void desktop__set_display_name(const char* name);
void desktop__set_size(int width, int height);
void desktop__set_server_info(const char* info);
/** The display answers (up) or not; lost: count a disconnect. */
void desktop__set_available(bool up, bool lost);
/** Wait up to ms unless stopping; true when stopping (the watcher's loop). */
bool desktop__watcher_wait(int ms);

/* wayland_desktop.c: the Wayland display backend. */
int desktop__wayland_start(const struct desktop_config* config, bool embedded);
void* desktop__wayland_watch(void* ud);
void desktop__wayland_stop(bool keep_config);
/** Is pid the embedded sway (the orphan reaper leaves it alone)? */
bool desktop__wayland_tracked(pid_t pid);
/** The embedded sway's Xwayland display (":N") into out; false when none. */
bool desktop__xwayland_display(char* out, size_t size);

/* gnome_desktop.c: the GNOME display backend (an embedded headless Mutter
 * with PipeWire and WirePlumber on the session bus of buses.c). */
int desktop__gnome_start(const struct desktop_config* config, bool embedded);
void* desktop__gnome_watch(void* ud);
void desktop__gnome_stop(bool keep_config);
/** Is pid one of its processes (the orphan reaper leaves them alone)? */
bool desktop__gnome_tracked(pid_t pid);
/** What a GNOME desktop cannot do yet: the sentence into err; -ENOTSUP. */
int desktop__gnome_unsupported(const char* what, char* err, size_t err_size);
/* gnome_wm.c: desktop_window_op on GNOME (deskd's shell extension). */
int desktop__gnome_window_op(const struct desktop_window_request* req,
		struct desktop_window_outcome* out, char* err, size_t err_size);
/** Close its connection (a stop, before the shell). */
void desktop__gnome_wm_stop(void);

/* wayland_clipboard.c: desktop.h's clipboard calls on a Wayland desktop
 * (clipboard.c hands over to them); the same contracts. */
int desktop__wayland_clipboard_write(enum desktop_selection sel, const void* data, size_t len,
		bool image, char* err, size_t err_size);
int desktop__wayland_clipboard_read(enum desktop_selection sel, bool image, void** data,
		size_t* len, int timeout_ms, char* err, size_t err_size);
bool desktop__wayland_clipboard_owned(enum desktop_selection sel, unsigned long* served);
int desktop__wayland_clipboard_release(enum desktop_selection sel, char* err, size_t err_size);
unsigned long desktop__wayland_clipboard_delivered(void);
int desktop__wayland_clipboard_wait_delivered(unsigned long since, int timeout_ms,
		atomic_bool* cancelled);
void desktop__wayland_clipboard_stop(void);

/* wm.c: why a window operation was not applied, into out->note. */
void desktop__window_note(struct desktop_window_outcome* out, const char* fmt, ...)
		__attribute__((format(printf, 2, 3)));

/* wm.c: a window operation of a backend that reads the window back from a
 * list (wayland_wm.c, gnome_wm.c): the first member of its operation.
 * observe puts the window's state now into out->after: 0, -ENOENT (gone),
 * or -errno. */
struct desktop__window_watch {
	const struct desktop_window_request* req;
	struct desktop_window_outcome* out;
	int64_t end;
	int (*observe)(struct desktop__window_watch* w);
};
/** Observe until done says so (1), the time is up or the caller gave up
 *  (0), or the window went (-ENOENT); another observe error as it came. */
int desktop__window_wait(struct desktop__window_watch* w,
		bool (*done)(struct desktop__window_watch* w));
/** The operation around run: observe first (before), run, and the errors
 *  every such backend says alike into err. 0; -ENOENT (no such window, or
 *  it went away), -EINVAL; or another -errno when the backend did not
 *  answer, with err left for the caller. */
int desktop__window_run(struct desktop__window_watch* w,
		int (*run)(struct desktop__window_watch* w), char* err, size_t err_size);
/** Close: ask (the backend's close request, -EINVAL when refused and
 *  noted), wait for the window to go; with force, SIGTERM to its pid and a
 *  second wait. Fills closed, killed, applied and the note. */
int desktop__window_close(struct desktop__window_watch* w,
		int (*ask)(struct desktop__window_watch* w));
/* gnome_clipboard.c: desktop.h's clipboard calls on a GNOME desktop
 * (Mutter's RemoteDesktop clipboard; text only, no PRIMARY). */
int desktop__gnome_clipboard_write(enum desktop_selection sel, const void* data, size_t len,
		bool image, char* err, size_t err_size);
int desktop__gnome_clipboard_read(enum desktop_selection sel, bool image, void** data,
		size_t* len, int timeout_ms, char* err, size_t err_size);
bool desktop__gnome_clipboard_owned(enum desktop_selection sel, unsigned long* served);
int desktop__gnome_clipboard_release(enum desktop_selection sel, char* err, size_t err_size);
unsigned long desktop__gnome_clipboard_delivered(void);
int desktop__gnome_clipboard_wait_delivered(unsigned long since, int timeout_ms,
		atomic_bool* cancelled);
void desktop__gnome_clipboard_stop(void);

/* wayland_wm.c: desktop_window_op on a Wayland desktop (sway's IPC). */
int desktop__wayland_window_op(const struct desktop_window_request* req,
		struct desktop_window_outcome* out, char* err, size_t err_size);

/* pinger.c: the hang detector. */
/** The watcher's own connection is up (the server answered it). */
bool desktop__connected(void);
/** Is the X server not answering (since *since_ms, clock_ms())? The first
 *  call that says so for an exchange aborts every X connection but the
 *  watcher's (x11_abort_all), so calls blocked on the server return. */
bool desktop__hung(int64_t* since_ms);
int desktop__pinger_start(void);
/** Bounded (500 ms). */
void desktop__pinger_stop(void);

/* shots.c: close capture connections left idle by a burst, and give back
 * what is kept warm for captures once none came for --memory-idle (the
 * watcher calls it every round; it never blocks). */
void desktop__capture_trim(void);
/** A capture is being made (a screenshot, a live frame): what is kept warm
 *  for the next one stays until --memory-idle after the last of these. */
void desktop__capture_used(void);
/** Close every idle capture connection now (a stop, before the compositor:
 *  Mutter does not end on SIGTERM while a session of deskd's casts). */
void desktop__capture_close_idle(void);
/* hands.c: close the input context unless in use (the same reason). */
void desktop__input_close(void);

/* The environment of every program deskd starts on the display (env.c):
 * --launch, the WM, launch. Other parts of desktop/ publish variables here
 * (buses.c: the session and AT-SPI bus addresses) before they start. */

/** Publish NAME=value for the programs started from now on (value NULL
 *  withdraws it). 0, -EINVAL (bad name), -ENOSPC (16 at most), -ENOMEM.
 *  Any thread. */
int desktop__env_set(const char* name, const char* value);
/** Remove NAME from what the programs inherit (NO_AT_BRIDGE), until
 *  desktop__env_set(name, ...) or desktop__env_reset. Same errors. */
int desktop__env_unset(const char* name);
/** A child's environment: deskd's without DISPLAY and without the names
 *  published or given in extra ("NAME=value", n_extra of them), then the
 *  published ones, then extra (a DISPLAY there is dropped), then
 *  DISPLAY=display. NULL-ended, malloc'd: free with desktop__env_free.
 *  NULL on -ENOMEM. Any thread. */
char** desktop__env_build(const char* display, char* const* extra, size_t n_extra);
void desktop__env_free(char** env);
/** Withdraw every published variable (desktop_stop). */
void desktop__env_reset(void);

/* Starting a program (xvfb.c): fork + exec with the parent death signal in
 * its own process group; only async-signal-safe calls run between fork and
 * exec. */
struct desktop__spawn_args {
	const char* path;	/* the executable, as found */
	bool by_fd;		/* exec exec_fd instead of path (launch.c, --allow-launch) */
	int exec_fd;		/* with by_fd: the checked program, opened O_PATH */
	char* const* argv;
	const char* display;	/* its DISPLAY */
	char* const* env;	/* extra "NAME=value" (desktop__env_build), or NULL */
	size_t n_env;
	const char* cwd;	/* or NULL: deskd's */
	int fd3;		/* becomes the child's fd 3, or -1 */
	bool quiet;		/* stdout and stderr to /dev/null, else to childlog */
	const char* program;	/* the name its output is logged under */
	enum log_level level;
};

/** Start it. The pid, or -errno: of the fork, of chdir to cwd, or of
 *  execve (reported back by the child over a close-on-exec pipe, so a
 *  program that cannot run is an error here, not an exit code later).
 *  by_fd: execveat(exec_fd, "", AT_EMPTY_PATH), the file that was checked
 *  whatever its path names by now; a #! script gets the descriptor
 *  inherited (its interpreter reads /dev/fd/N, which is its $0). */
pid_t desktop__spawn_with(const struct desktop__spawn_args* s);

/* A started program, for the helpers below (xvfb.c). */
struct desktop__child {
	pid_t pid;		/* 0 when not running */
	char label[64];
};
/** Did it exit? Reaps it when it did (also true when it is not our child). */
bool desktop__child_exited(pid_t pid, int* status);
/** "exit code N", "signal NAME" */
void desktop__describe_status(int status, char* out, size_t size);
/** Stop these: SIGTERM to each process group, up to grace_ms, then
 *  SIGKILL; reaps, and sets each pid to 0. */
void desktop__stop_children(struct desktop__child** list, int n, int grace_ms);

/* The programs the launch tool started (launch.c). */
/** Reap those that exited (the watcher, every round). */
void launch__reap(void);
/** Is pid one of them (not yet reaped)? */
bool launch__tracked(pid_t pid);
/** SIGTERM to each running one's process group (the first step of a stop
 *  that waits for other programs meanwhile). */
void launch__terminate(void);
/** Stop them all: SIGTERM to each group, up to grace_ms, then SIGKILL;
 *  reaps. Later launches are refused (-ESHUTDOWN). */
void launch__stop(int grace_ms);

enum desktop__kind {
	DESKTOP__EXTERNAL,		/* a display deskd attached to */
	DESKTOP__EMBEDDED_X11,		/* deskd's Xvfb and WM */
	DESKTOP__EMBEDDED_WAYLAND,	/* deskd's sway */
	DESKTOP__EMBEDDED_GNOME,	/* deskd's Mutter */
};
/** Copy the --launch list (with the default terminal for an embedded
 *  desktop: xterm, or foot on Wayland and GNOME) and, for an embedded X11 desktop,
 *  find Xvfb, the WM and setxkbmap on PATH. 0, -ENOENT (no Xvfb) or
 *  -ENOMEM. Main thread. */
int xvfb_configure(const struct desktop_config* config, enum desktop__kind kind);
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
/** Stop the programs on the display (--launch, the launch tool's, the WM),
 *  bounded: the first step of xvfb_stop, for a desktop whose compositor
 *  stops between them and the session bus (gnome_desktop.c). */
void xvfb_stop_programs(void);
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
/** The last lines (at most 1 KiB, whole lines, '\n'-ended) a program
 *  attached as pid wrote, into out (NUL-terminated); for one that ended,
 *  waits up to wait_ms for the reader to reach the end of its output.
 *  Kept for the last 16 programs that ended. The bytes written. */
size_t childlog_tail(long pid, int wait_ms, char* out, size_t size);
/** Log what is buffered, close every pipe, end the reader. Call after the
 *  programs were stopped; a later childlog_open starts it again. */
void childlog_stop(void);

/* The embedded desktop's buses (buses.c): a private session dbus-daemon
 * and the AT-SPI bus on it, started before the WM and the programs, which
 * get their addresses and the accessibility switches through env.c. */
/** Start them (idempotent; failures are logged, never fatal). */
void buses_start(const char* display);
/** "--address=unix:path=<dir>/<name>" for a dbus-daemon, the path escaped
 *  as D-Bus addresses want (bytes outside [-0-9A-Za-z_/.*] as %XX; name is
 *  deskd's own, plain). */
int buses__listen_address(const char* dir, const char* name, char* out, size_t size);
/** The embedded session bus's private runtime dir (XDG_RUNTIME_DIR, 0700)
 *  and its address; false when it is not running. Any thread. */
bool buses_session(char* runtime_dir, size_t rt_size, char* address, size_t addr_size);
/** External display: use address (a GNOME session's bus), else
 *  $DBUS_SESSION_BUS_ADDRESS, or say there is none. */
void buses_external(const char* address);
/** Reap the dbus-daemon if it exited (watcher thread). */
void buses_reap(void);
/** Is pid the session dbus-daemon (for the PID 1 orphan reaper)? */
bool buses_tracked(pid_t pid);
/** Stop the dbus-daemon by PID (bounded), remove the runtime dir. */
void buses_stop(void);
