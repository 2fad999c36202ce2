#pragma once

/* The desktop: the display deskd works on. Either an existing X server
 * (--display / $DISPLAY), an embedded Xvfb started with -displayfd, with a
 * window manager and --launch programs, all stopped by PID when deskd stops,
 * or a Wayland one (wayland_desktop.c: an embedded headless sway, or a
 * running wlroots compositor). Each subsystem opens its own connection to
 * desktop_display_name(), and capture/ and input/ pick their X11 or Wayland
 * implementation by that name, so no caller above knows which one runs.
 *
 * Threads: desktop_start and desktop_stop run on the main thread (once each).
 * Everything else may be called from any thread. A watcher thread owns one X
 * connection of its own: it notices when the X server goes away
 * (desktop_available() turns false), reconnects when it is back, restarts an
 * embedded Xvfb that died (same size, same display number when it is free,
 * then the WM and the --launch programs that exited), reaps the programs it
 * started, and keeps the screen size current (RandR / root ConfigureNotify).
 *
 * X errors: every Xlib connection of deskd is opened with x11_open()
 * (x11/x11.h), which traps its errors per connection and marks it lost
 * instead of letting Xlib exit the process; there is no process-wide error
 * handler to install. */

#include "record/record.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/** What desktop/ runs with: the command line's settings for it (server/
 *  fills this from the options). Zero is the default for each field. The
 *  strings and lists are borrowed: they must outlive every use of desktop/. */
struct desktop_config {
	const char* display;	/* --display: an existing X server; NULL or "": embedded (or Wayland) */
	bool wayland;		/* --desktop wayland: the embedded desktop is a headless sway */
	bool gnome;		/* --desktop gnome or mutter: a headless GNOME (gnome_desktop.c) */
	bool gnome_shell;	/* --desktop gnome: GNOME Shell; else Mutter alone */
	const char* gnome_bus;	/* --gnome-bus: attach to the GNOME session on this bus */
	bool gnome_portal;	/* --gnome-portal: through the desktop portal */
	const char* wayland_display;	/* --wayland-display: attach to this compositor (socket name or path) */
	const char* sway_socket;	/* its sway IPC socket ($SWAYSOCK), or NULL */
	const char* xwayland_display;	/* its Xwayland (":N", $DISPLAY beside it), or NULL */
	bool display_reattach;	/* --display-reattach */
	int virtual_width, virtual_height;	/* the embedded screen; 0: 1280x800 */
	const char* wm;		/* "none" disables; NULL: openbox if installed */
	char* const* launch;	/* --launch programs ("none": not even the default terminal) */
	int n_launch;
	char* const* allow_launch;	/* --allow-launch: what the launch tool may start */
	int n_allow_launch;
	const char* data_dir;	/* recordings go to <data_dir>/recordings */
	char* const* output_root;	/* --output-root: where a recording's out may be */
	int n_output_root;
	int max_recordings;	/* running at once; 0: 4 */
	int memory_idle_ms;	/* --memory-idle: give capture memory back after this long
				 * without a capture; 0: 10 s, < 0: never */
};

/** Take the settings (copied; what they point to is borrowed, see struct
 *  desktop_config) for desktop_start, launches and recordings. Main thread,
 *  before desktop_start; until then every field is zero. */
void desktop_configure(const struct desktop_config* config);
/** Connect to, or start, the display desktop_configure named. Returns 0 or
 *  -errno (logged). An external display that is not reachable yet is not an
 *  error: tools say display_unavailable until the watcher connects. Main
 *  thread. */
int desktop_start(void);
/** Stop what desktop_start started (WM, launched programs, Xvfb): SIGTERM to
 *  each process group, up to 2 s, then SIGKILL; reaps. Idempotent. */
void desktop_stop(void);

/** ":N", or on Wayland "wayland:<socket>[?sway=<ipc>]" (wayland/wayland.h);
 *  valid after desktop_start until desktop_stop ("" before). The string
 *  stays valid even if an embedded Xvfb is restarted on another number. */
const char* desktop_display_name(void);
/** Did deskd start the display (Xvfb, or sway) itself? */
bool desktop_is_embedded(void);
/** Is the desktop Wayland, that is wlroots? (what runs: "x11", "wayland"
 *  or "gnome", desktop_backend) */
bool desktop_is_wayland(void);
/** Is the desktop GNOME's Mutter (a "gnome:" address, gnome/gnome.h)? */
bool desktop_is_gnome(void);
/** Does the GNOME desktop run GNOME Shell with deskd's extension, so that
 *  it has a window list (Mutter alone has none)? false on other desktops. */
bool desktop_gnome_shell(void);
/** The programs --desktop gnome (shell) or mutter start, in start order
 *  (doctor); *n of them. */
const char* const* desktop_gnome_programs(bool shell, size_t* n);
/** deskd gnome-extension: deskd's GNOME Shell extension written into the
 *  user's data folder ($XDG_DATA_HOME, else ~/.local/share) for GNOME Shell
 *  *major (0: the one gnome-shell on PATH says). Fills dir (where it went),
 *  *major and *module (the 45-on form); -errno with a sentence in err. */
int desktop_gnome_extension_write(int* major, bool* module, char* dir, size_t dir_size,
		char* err, size_t err_size);
const char* desktop_backend(void);
/** Is the X server reachable and answering right now? (a cheap cached
 *  check, any thread; false while it has not answered for 2 s) */
bool desktop_available(void);
/** Screen size in pixels (cached; refreshed on reconnect and on RandR or
 *  root ConfigureNotify). 0x0 before the first connection. */
void desktop_screen_size(int* width, int* height);
/** Why the display is unavailable although an X server answers on it (the
 *  server is not the one deskd attached to; --display-reattach), in out;
 *  false (out "") when there is no such refusal. */
bool desktop_unavailable_reason(char* out, size_t size);
/** "The X.Org Foundation 12101007" of the last connection, or "". */
void desktop_server_info(char* out, size_t size);
/** How many times the display connection was lost so far. */
unsigned desktop_disconnects(void);

/** The desktop lock: actions that change the desktop run one at a time, in
 *  arrival order (a FIFO ticket lock). Captures do not take it. */
void desktop_lock(void);
void desktop_unlock(void);
/** Holding the lock: let the actions waiting for it run first, then take it
 *  back (long work, such as typing a long text, between its steps). Returns
 *  true when others ran meanwhile (the focus may have moved). */
bool desktop_lock_yield(void);
/** Holding the lock: give it up for ms (waiting on something outside the
 *  desktop, such as a keymap slot draining), then take it back behind
 *  whoever came meanwhile. Returns true when others ran meanwhile. */
bool desktop_lock_pause(int ms);

/* The session bus the accessibility tools use (buses.c): deskd's own for an
 * embedded desktop (a private dbus-daemon, with the AT-SPI bus brought up
 * and enabled before any program starts), else the caller's. */
struct desktop_buses {
	bool embedded;		/* deskd started them */
	int pid;		/* deskd's session dbus-daemon, 0 none */
	char session[512];	/* the session bus address, "" none */
	char reason[256];	/* why there is none */
};
void desktop_buses(struct desktop_buses* out);

/* What doctor reports of a display. */
struct desktop_probe {
	int width, height;
	char vendor[128];
	int release;
};

/** Connect to display on a short-lived connection of its own: its size,
 *  vendor, and which of the n extensions are present (present[i]). Returns
 *  0, -ECONNREFUSED (cannot connect) or -ECONNRESET (lost while probing).
 *  Any thread. */
int desktop_probe(const char* display, const char* const* extensions, size_t n,
		bool* present, struct desktop_probe* out);

/* What doctor reports of a Wayland compositor: one line per protocol deskd
 * uses, present or not, with what it is for. */
#define DESKTOP_WAYLAND_FEATURES 8
struct desktop_wayland_probe {
	int width, height;	/* the outputs' layout box */
	int outputs;
	bool sway_ipc;		/* the address names sway's IPC and it answers */
	bool toplevels;		/* zwlr_foreign_toplevel_manager_v1: windows without IPC */
	int n;
	struct {
		const char* name;	/* "zwlr_screencopy_manager_v1" */
		const char* purpose;	/* "screenshots, the live view, recording" */
		bool present;
		bool spare_with_ipc;	/* not needed when sway's IPC answers */
	} features[DESKTOP_WAYLAND_FEATURES];
};

/** Connect to the compositor of a "wayland:" address on a short-lived
 *  connection: its outputs and which protocols it offers. 0, -EINVAL (not
 *  a Wayland address) or the connection's -errno. Any thread. */
int desktop_wayland_probe(const char* address, struct desktop_wayland_probe* out);
/** Is name a Wayland desktop's address ("wayland:...")? Pure, NULL-safe. */
bool desktop_is_wayland_address(const char* name);

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

/* ---- The coordinate space (coords.c; pure) --------------------------------
 * The screenshot space of a target is a pure function of the target's size
 * and the max dimension in effect; tools, the live view and cursor_position
 * map through these two functions only. */

/** Size of an image of a w x h target scaled so its longest side is at most
 *  max_dimension (0 = native); never upscales; at least 1x1. */
void desktop_scaled_size(int w, int h, int max_dimension, int* out_w, int* out_h);
/** Image pixel -> desktop offset in the target: floor(v * physical / image),
 *  exact for scale 1. */
int desktop_map(int v, int physical, int image);
/** Desktop offset in the target -> image pixel, the exact inverse of
 *  desktop_map: the largest v with desktop_map(v) <= d, so
 *  desktop_unmap(desktop_map(v)) == v at every scale (a click at v reports
 *  its cursor at v); also for negative d (left of or above the target). */
int desktop_unmap(int d, int physical, int image);

/* A target resolved for coordinate mapping: the screen (window 0) or a
 * window's client area, in absolute desktop pixels. */
struct desktop_target {
	uint32_t window;		/* 0 = the whole screen */
	int x, y, width, height;	/* desktop rectangle */
	int image_width, image_height;	/* screenshot space for max_dimension */
};

/** Resolve the target on a pooled capture context for max_dimension.
 *  Returns 0, -ENOENT (no such window) or -ECONNRESET (no display), with a
 *  message in err. */
int desktop_target(uint32_t window, int max_dimension, struct desktop_target* out,
		char* err, size_t err_size);

/* ---- Captures and the screenshot cache (shots.c) ---------------------------
 * Tool calls run on worker threads, several at once, so capture contexts (one
 * X connection each) come from a small pool; a context is used by one thread
 * between get and put. Change tracking is per context (XDamage); a global
 * generation per target, bumped whenever any context sees a change, keys the
 * cache of encoded screenshots, so an unchanged target is not captured or
 * encoded again. */

struct capture;
struct capture_rect;
struct desktop_capture;

/** A context for this thread's exclusive use, or NULL (display unreachable,
 *  or every context busy for 5 s) with the reason in err. */
struct desktop_capture* desktop_capture_get(char* err, size_t err_size);
/** The same, for a screenshot: one that captured before if any is idle
 *  (its shared image is made already); desktop_capture_get prefers the
 *  others, so few contexts hold one. */
struct desktop_capture* desktop_capture_get_warm(char* err, size_t err_size);
/** Give it back (a dead one is dropped). NULL-safe. */
void desktop_capture_put(struct desktop_capture* self);
/** The backend context, for capture_* calls between get and put. */
struct capture* desktop_capture_backend(struct desktop_capture* self);
/** The target's desktop rectangle (window 0 = the screen); 0 or -errno of
 *  capture_window_geometry. */
int desktop_capture_resolve(struct desktop_capture* self, uint32_t window,
		struct capture_rect* rect);

/* An encoded image and its base64, shared by the cache and its users. */
struct desktop_image {
	atomic_int refs;
	uint8_t* data;
	size_t len;
	char* b64;
	size_t b64_len;
	int width, height;
};

void desktop_image_unref(struct desktop_image* self);

struct desktop_shot {
	uint32_t window;		/* 0 = the screen */
	const struct capture_rect* part; /* in target pixels; NULL = the whole target */
	int region[4];			/* the part in screenshot space (cache key), or 0s */
	int width, height;		/* output size (the part scaled) */
	int target_width, target_height;
	bool jpeg;
	int quality;			/* JPEG only */
	bool cursor;			/* draw the pointer (never cached) */
};

/** Capture, scale and encode (PNG with band reuse, or JPEG), or take the
 *  cached image when the target did not change. Returns 0 with *out (a
 *  reference), or -errno with a message in err: the capture's errnos
 *  (-ENOENT, -ERANGE, -ECONNRESET, ...), -ENOMEM, -EIO (encoding). */
int desktop_shot(struct desktop_capture* dc, const struct desktop_shot* req,
		struct desktop_image** out, char* err, size_t err_size);

/** Wait until the target changed (unless need_change is false) and then
 *  stayed still for stable_ms, at most timeout_ms and never past deadline_ms
 *  (monotonic, 0 = none); returns -ECANCELED as soon as *cancelled is set.
 *  Returns 0 or -errno; *changed and *stable tell how far it got. */
int desktop_wait_change(struct desktop_capture* dc, uint32_t window,
		int timeout_ms, int stable_ms, bool need_change,
		const atomic_bool* cancelled, int64_t deadline_ms,
		bool* changed, bool* stable);
/** Wait until the target (0 = screen) had no damage for quiet_ms, at most
 *  timeout_ms. Returns 0 when settled (or the window is gone), -ETIMEDOUT. */
int desktop_settle(uint32_t window, int quiet_ms, int timeout_ms);

/* ---- The one input context (hands.c) ---------------------------------------
 * One per process, so there is one pool of spare keycodes on the display;
 * replaced when the display went away, destroyed at exit (which restores the
 * keymap). Serialize actions with desktop_lock(). */

struct input;

/** Borrow the context, connecting when needed; NULL with a reason in err. */
struct input* desktop_input_get(char* err, size_t err_size);
/** Give it back. NULL-safe. */
void desktop_input_put(struct input* in);

/* ---- One pair of hands (hands.c) ---------------------------------------------
 * The agent's typing (tools/input.c) and a person's (the control channel,
 * docs/CONTROL.md) run the same loop: UTF-8-safe chunks of at most
 * DESKTOP_TYPE_CHUNK_BYTES ending after a space when there is one (other
 * actions run only between chunks, never inside a word); where a keymap slot
 * has to drain first, the wait gives the desktop lock up (other clients'
 * actions run meanwhile), bounded by DESKTOP_TYPE_DRAIN_MAX_MS without
 * progress. Callers hold the desktop lock and a borrowed input context. */

#define DESKTOP_TYPE_CHUNK_BYTES 256
#define DESKTOP_TYPE_DRAIN_MAX_MS 25000	/* waiting for one spare keycode to drain */

struct desktop_typing {
	/* Set by the caller. */
	bool yield;		/* between chunks, let waiting actions run first */
	/* Between two chunks, before and after the wait: true stops typing
	 * (-ECANCELED); the hook says why to its caller. May be NULL. */
	bool (*stop)(void* ud, const struct desktop_typing* t);
	/* After a wait in which other actions ran (the focus may have moved):
	 * < 0 stops typing (-ECANCELED). May be NULL. */
	int (*others_ran)(void* ud);
	/* After a chunk, when text is left. May be NULL. */
	void (*progress)(void* ud, const struct desktop_typing* t);
	void* ud;
	/* How far it got (set by desktop_hands_type). */
	size_t total;		/* characters (code points) of the text */
	size_t typed, remapped, paced;	/* as struct input_type_stats */
	bool drain_timeout;	/* -ETIMEDOUT: no slot drained in time */
	uint32_t unbound;	/* -ENOSPC: as struct input_type_stats */
};

/** Type UTF-8 text (checked: input_text_check) with the loop above. Returns
 *  0 when all was typed, -ECANCELED when a hook stopped it, -ETIMEDOUT with
 *  drain_timeout, or input_type_some's -errno. Holding the desktop lock. */
int desktop_hands_type(struct input* in, const char* text, size_t len,
		struct desktop_typing* t);

/* A person's hands: a queue of input run by one thread, in arrival order,
 * batch by batch under the desktop lock with the one input context. An op
 * carries the lease it was sent under and is dropped once that lease is no
 * longer current, so input from a tab that lost control never runs; a text
 * op stops between its chunks when the lease changes. Pointer ops are in
 * the pixels of a frame of the window (0 = the screen) scaled to
 * max_dimension, mapped as the agent's coordinates are (desktop_map). */

#define DESKTOP_HANDS_QUEUE 256		/* ops waiting for the desktop */
#define DESKTOP_HANDS_MAX_KEYS 16	/* keys held at once */

enum desktop_hands_kind {
	DESKTOP_HANDS_MOVE, DESKTOP_HANDS_BUTTON, DESKTOP_HANDS_WHEEL,
	DESKTOP_HANDS_KEY, DESKTOP_HANDS_TEXT,
	DESKTOP_HANDS_RELEASE_ALL,	/* whatever is still pressed comes up */
};

struct desktop_hands_op {
	enum desktop_hands_kind kind;
	uint64_t sender, lease;	/* who sent it (for failed), its lease */
	uint32_t window;
	int max_dimension;
	int x, y;		/* frame pixels */
	int button;		/* BUTTON: 1..9 */
	bool down;		/* BUTTON, KEY */
	int notches_x, notches_y;	/* WHEEL */
	uint32_t keysym;	/* KEY */
	char* text;		/* TEXT (malloc'd, NUL-terminated) */
	size_t len;
	int64_t received_ns;	/* clock_ns() when its message arrived (trace) */
};

/* What the hands ask of their owner (the live view). */
struct desktop_hands_owner {
	/** Is this lease still the current one? Any thread. */
	bool (*current)(uint64_t lease);
	/** An op of sender failed: rc (-errno: -ECONNRESET no display,
	 *  -ERANGE out of the frame, -ETIMEDOUT, ...) and why. Hands thread. */
	void (*failed)(uint64_t sender, int rc, const char* message);
	size_t max_text;	/* text ops typed in a row merge up to this */
};

/** Start the hands thread; the owner outlives desktop_hands_stop. 0 or
 *  -EAGAIN. */
int desktop_hands_start(const struct desktop_hands_owner* owner);
/** Stop and join the thread, dropping what is queued. Idempotent. */
void desktop_hands_stop(void);
/** Queue an op (its text is stolen, op->text set NULL). A move behind a
 *  move of the same lease and frame replaces it. False when the queue is
 *  full or stopped. Any thread. */
bool desktop_hands_push(struct desktop_hands_op* op);
/** Ops queued or running (a long paste or a slow app is not idleness), and
 *  in *done_ms (may be NULL) when the last one ended (clock_ms, 0 never). */
int desktop_hands_pending(int64_t* done_ms);

/* The vocabulary of input for callers above that do not drive input/
 * themselves (pure, any thread). */

/** The keysym of a key name (input_key_lookup's names). -ENOENT with up to
 *  three closest names, comma-separated, in near ("" none). */
int desktop_key_lookup(const char* name, uint32_t* keysym, char* near,
		size_t near_size);
/** Is s exactly one printable character (UTF-8, not a control character)? */
bool desktop_text_one_char(const char* s);
/** Can text be typed? As input_text_check. */
int desktop_text_check(const char* s, size_t len, size_t* bad_offset);
/** Scroll pixels to wheel notches, as input_pixels_to_notches. */
int desktop_pixels_to_notches(double pixels);

/* ---- Live feeds (feed.c) -------------------------------------------------------
 * What a live-view producer thread needs: one capture context (its own X
 * connection) per feed, used by that thread only. */

struct desktop_feed;
struct capture_window_info;

struct desktop_feed_frame {
	const unsigned char* jpeg;	/* owned by the feed; valid until the next grab */
	size_t len;
	int width, height;		/* of the JPEG */
	int cursor_x, cursor_y;		/* pointer in JPEG pixels; may lie outside */
	bool cursor_visible;		/* the pointer is over the target */
	int64_t captured_ns;		/* clock_ns() when the pixels were read (trace) */
};

/** Open a feed of the screen (window 0) or a window, scaled so its longest
 *  side is at most max_dimension (0 = native). Returns NULL with -errno in
 *  *rc (-ENOENT no such window, -ECONNRESET no display, -ENOMEM) and a
 *  message in err. The calling thread owns the feed. */
struct desktop_feed* desktop_feed_open(uint32_t window, int max_dimension, int* rc,
		char* err, size_t err_size);
/** Wait up to timeout_ms for a change of the target's pixels since the last
 *  grab. Returns 1 (changed), 0 (nothing changed) or -errno (-ENOENT: the
 *  window is gone; -ECONNRESET: the display is gone). */
int desktop_feed_wait(struct desktop_feed* self, int timeout_ms);
/** Capture and encode the target now (JPEG at quality). Returns 0 or -errno. */
int desktop_feed_grab(struct desktop_feed* self, int quality,
		struct desktop_feed_frame* out);
/** The pointer in JPEG pixels of the last grab's geometry; 0 or -errno. */
int desktop_feed_cursor(struct desktop_feed* self, int* x, int* y, bool* visible);
/** NULL-safe. */
void desktop_feed_close(struct desktop_feed* self);

/** The mapped windows, as the windows tool lists them: *list is malloc'd
 *  (free it), *n its length; 0 or -errno. Any thread (own connection). */
int desktop_windows(struct capture_window_info** list, size_t* n);

/* ---- Recordings (recordings.c) ---------------------------------------------------
 * The registry of recorders (record/record.h): running and the last 256
 * finished ones. A recording ends by itself (record_stop, window destroyed,
 * max_seconds, display gone), when its owner ends, or at shutdown; it is
 * published then. Any thread. */

struct desktop_recording {
	char id[48];			/* "rec-20261201-091500-a1b2c3" */
	uint32_t window;
	char path[PATH_MAX + 64];	/* where the file is (or will be) published */
	int fps;
	time_t started;
	struct record_stats stats;	/* live while running, final after */
	int result;			/* 0, or the recorder's -errno once it ended */
};

struct desktop_record_params {
	uint32_t window;
	const char* out;		/* absolute path, or NULL: <data-dir>/recordings/<id>.mp4 */
	int fps;
	double max_seconds;
	bool cursor;
	const void* owner;		/* for desktop_record_stop(NULL, owner) */
};

/** At startup: remove staging left by a crash (data dir, output roots). */
void desktop_recordings_init(void);
/** At shutdown (first thing after the signal, before the display goes):
 *  finalize and publish every running recording, wait for them, free the
 *  registry; later starts get -ESHUTDOWN. */
void desktop_recordings_shutdown(void);
/** Start one. 0 with *out, or -errno with the message in err: -EINVAL (bad
 *  out path), -EEXIST, -ENOENT (no window), -ECONNREFUSED (no display),
 *  -ENOTSUP, -EMFILE (--max-recordings reached), -ESHUTDOWN, or another. */
int desktop_record_start(const struct desktop_record_params* params,
		struct desktop_recording* out, char* err, size_t err_size);
/** Stop the recording id, or (id NULL) the owner's only one (a running one
 *  first, else one that ended by itself and was not reported). Blocks while
 *  it finalizes. 0 with *out (out->result: the recorder's outcome), -ENOENT
 *  (no such id), -EBUSY (*n_running > 1 of the owner's are running), -ESRCH
 *  (the owner has none). */
int desktop_record_stop(const char* id, const void* owner,
		struct desktop_recording* out, int* n_running);
/** Every recording, newest first: *list malloc'd (free it); 0 or -ENOMEM. */
int desktop_recordings(struct desktop_recording** list, size_t* n);
/** Path of a finished recording's published file; 0, -ENOENT, -ENAMETOOLONG. */
int desktop_recording_path(const char* id, char* path, size_t size);
/** Delete a finished recording's file and forget it (a failed one is only
 *  forgotten). Only the registry's own file at the path it published, never
 *  through a symlink. 0, or -errno with the message in err: -ENOENT (no such
 *  id), -EBUSY (still recording), -ELOOP (its folder is now a symlink),
 *  -EPERM (the file is a symlink or not ours), another. */
int desktop_recording_delete(const char* id, char* err, size_t err_size);
/** The owner of these recordings ended: finish them (they publish). */
void desktop_recordings_end(char* const* ids, size_t n);

/* ---- Launched programs (launch.c) ---------------------------------------------------
 * The launch tool's programs: no shell, the program found on PATH, checked
 * against --allow-launch, started on the display as deskd's children (own
 * process group, the desktop's environment: env.c), reaped by the watcher
 * and stopped with deskd, with everything they started (deskd is their
 * child subreaper). Any thread. */

#define DESKTOP_LAUNCH_ARGS_MAX 256		/* argv items */
#define DESKTOP_LAUNCH_ARG_MAX 4096		/* bytes per argv item or env value */
#define DESKTOP_LAUNCH_ENV_MAX 64		/* env variables */
#define DESKTOP_LAUNCH_ENV_NAME_MAX 128
#define DESKTOP_LAUNCH_TOTAL_MAX 65536		/* argv and env together */
#define DESKTOP_LAUNCH_KEPT 64			/* running ones or with a live group (at most), then the last ended */

struct desktop_launch_params {
	char* const* argv;	/* argv[0]: a name looked up on PATH, or an absolute path */
	size_t argc;
	char* const* env;	/* "NAME=value" added to the desktop's environment */
	size_t n_env;
	const char* cwd;	/* an existing directory (absolute), or NULL */
	bool wait_for_window;
	int timeout_ms;		/* for the window */
	const atomic_bool* cancelled;	/* may be NULL */
	int64_t deadline_ms;	/* monotonic, 0 = none */
};

struct desktop_launch_result {
	long pid;
	char path[PATH_MAX];	/* the executable that runs */
	char program[64];	/* its file name */
	uint32_t window;	/* its first mapped top-level window, or 0 */
	bool timed_out;		/* no window within timeout_ms */
	bool exited;		/* it ended while deskd waited for its window */
	int exit_code;		/* when exited normally, else -1 */
	int signal;		/* when killed by a signal, else 0 */
	int64_t waited_ms;
	char output[1024];	/* exited: the last lines it wrote (stdout and stderr), or "" */
	char note[160];		/* why deskd did not wait for its window (GNOME), or "" */
};

/* One launched program, as status lists it. */
struct desktop_launched {
	long pid;
	char program[64];
	char path[PATH_MAX];
	time_t started, ended;
	bool running;
	int exit_code;		/* once ended: its exit code, or -1 */
	int signal;		/* once ended by a signal: its number, else 0 */
};

/** Check, start and (wait_for_window) find the first window of argv.
 *  Nothing is started on an error: -EINVAL (bad argv, env or cwd), -ENOENT
 *  (no such program), -EPERM (not allowed: --allow-launch, an env variable
 *  it refuses, or an external display without it), -ENOEXEC (exec failed:
 *  not executable), -EMFILE (DESKTOP_LAUNCH_KEPT running), -ECONNRESET (no
 *  display), -ESHUTDOWN;
 *  after a start, an error of the window search (-ECONNRESET) still leaves
 *  out->pid set. A message in err either way. */
int desktop_launch(const struct desktop_launch_params* params,
		struct desktop_launch_result* out, char* err, size_t err_size);
/** Check a launch's argv, env and cwd without starting anything (it reads
 *  nothing but cwd's stat; any thread): 0, -EINVAL (malformed) or -EPERM.
 *  allow_list: an --allow-launch list is in force; env may then not set a
 *  variable that makes programs load or run code it names (every LD_*,
 *  GLIBC_TUNABLES, PATH, SHELL, BASH_ENV, PYTHON*, PERL*, NODE_*, GTK*,
 *  GIO_*, GST_*, QT_PLUGIN_PATH, ...: the table in launch.c, each with why).
 *  The reason, naming the variable, in err. desktop_launch calls it first. */
int desktop_launch_check(const struct desktop_launch_params* params, bool allow_list,
		char* err, size_t err_size);
/** May the program at path (as found) be launched under the options? 0 or
 *  -EPERM with the reason in err. Entries of --allow-launch name files:
 *  one with '/' that file, one without the program it finds on deskd's
 *  PATH; path matches when it is the same file (st_dev and st_ino, after
 *  symlinks). desktop_launch checks, and executes, one descriptor. */
int desktop_launch_allowed(const char* path, char* err, size_t err_size);
/** The launched programs, running first: *list malloc'd (free it). */
int desktop_launched_list(struct desktop_launched** list, size_t* n);

/* ---- Window states (wm.c) -------------------------------------------------------
 * Each operation asks the window manager (EWMH _NET_WM_STATE and
 * _NET_RESTACK_WINDOW/_NET_MOVERESIZE_WINDOW, ICCCM iconify and
 * WM_DELETE_WINDOW), then waits (bounded) and reads back what it did:
 * applied false with the observed state when it refused or when no window
 * manager runs (nothing minimizes, maximizes or makes fullscreen then).
 * Any thread (own connection); callers hold the desktop lock. */

enum desktop_window_op {
	DESKTOP_WINDOW_MINIMIZE,
	DESKTOP_WINDOW_MAXIMIZE,
	DESKTOP_WINDOW_RESTORE,	/* not minimized, maximized or fullscreen */
	DESKTOP_WINDOW_FULLSCREEN,
	DESKTOP_WINDOW_RAISE,
	DESKTOP_WINDOW_RESIZE,
	DESKTOP_WINDOW_CLOSE,	/* WM_DELETE_WINDOW; force: then end the client */
};

struct desktop_window_state {
	bool exists, mapped, minimized, maximized, fullscreen, modal, takes_delete;
	int x, y, width, height;	/* client area, desktop pixels */
	uint32_t transient_for;		/* the window it is a dialog of, or 0 */
	long pid;			/* _NET_WM_PID, or 0 */
};

struct desktop_window_request {
	uint32_t window;
	enum desktop_window_op op;
	int width, height;	/* RESIZE */
	bool force;		/* CLOSE: end the client after timeout_ms */
	int timeout_ms;		/* how long to wait for the window manager (or the client) */
	const atomic_bool* cancelled;	/* ends the waits early when set; may be NULL */
};

#define DESKTOP_WINDOW_DIALOGS 8

struct desktop_window_outcome {
	bool applied;		/* the state asked for is the state observed */
	bool wm;		/* a window manager runs */
	char wm_name[64];	/* the EWMH one's name, or "" */
	struct desktop_window_state before, after;	/* after.exists false: gone */
	bool closed, killed;	/* CLOSE: the window went; its client was ended */
	uint32_t dialogs[DESKTOP_WINDOW_DIALOGS];	/* CLOSE: its dialogs left open */
	int n_dialogs;
	char note[256];		/* why not applied, or "" */
};

/** Do it and report. 0 (applied or not: a cancelled wait reports what it
 *  saw so far), -ENOENT (no such window, or it went away), -EINVAL,
 *  -ECONNRESET (no display, or it does not answer), with a message in err. */
int desktop_window_op(const struct desktop_window_request* req,
		struct desktop_window_outcome* out, char* err, size_t err_size);

/* ---- The clipboard (clipboard.c) ---------------------------------------------------
 * X selections as deskd owns and reads them. Text is UTF-8, exact (any
 * bytes, empty included); images are PNG. Any thread. */

#define DESKTOP_CLIPBOARD_MAX (8 << 20)	/* bytes, either way */

enum desktop_selection { DESKTOP_PRIMARY = 0, DESKTOP_CLIPBOARD = 1 };

/** Own the selection with this content (copied) until another client takes
 *  it. 0, or -EFBIG (over DESKTOP_CLIPBOARD_MAX), -ECONNRESET (no display),
 *  -EBUSY, -ETIMEDOUT, -ENOMEM, with a message in err. */
int desktop_clipboard_write(enum desktop_selection sel, const void* data, size_t len,
		bool image, char* err, size_t err_size);
/** The selection's content from its owner (text as UTF-8, or image/png),
 *  waiting at most timeout_ms. 0 with *data (malloc'd, NUL-terminated) and
 *  *len, or -ENOENT (nothing owns it), -ENODATA (no such format),
 *  -ETIMEDOUT (the owner did not answer), -EFBIG, -ECONNRESET, with a
 *  message in err. */
int desktop_clipboard_read(enum desktop_selection sel, bool image, void** data,
		size_t* len, int timeout_ms, char* err, size_t err_size);
/** Does deskd own the selection now? *served (may be NULL): how many
 *  requests for its data deskd has answered so far (a paste took it). */
bool desktop_clipboard_owned(enum desktop_selection sel, unsigned long* served);
/** Give up deskd's ownership of sel (nothing owns it then), if deskd still
 *  owns it; 0 or -errno (err says why). */
int desktop_clipboard_release(enum desktop_selection sel, char* err, size_t err_size);
/** How many requests for deskd's data (either selection) were answered
 *  whole so far: the reply, or an INCR transfer's last chunk. A paste
 *  notes it, sends the chord, then waits for it to grow. */
unsigned long desktop_clipboard_delivered(void);
/** Wait until a request answered after the since'th went to the client
 *  that made window (any X window of that client: toolkits convert with a
 *  window of their own; 0: any requestor, so a clipboard manager that
 *  fetches every new content does not count when a window is known), at
 *  most timeout_ms (cancelled may be NULL); 0, -ETIMEDOUT or -ECANCELED. */
int desktop_clipboard_wait_delivered(unsigned long since, uint32_t window, int timeout_ms,
		atomic_bool* cancelled);
/** At shutdown: give up the selections, stop the thread. */
void desktop_clipboard_stop(void);
