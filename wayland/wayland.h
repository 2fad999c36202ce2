#pragma once

/* wayland/: the Wayland plumbing of a wlroots desktop, written once: a
 * connection to a compositor with its globals and outputs, screencopy into
 * shm, one virtual pointer and one virtual keyboard kept for the
 * connection's life, the data-control clipboard, an embedded headless sway,
 * sway's IPC (windows with geometry and pid, commands), and the
 * foreign-toplevel window list for compositors without it.
 *
 * No libwayland, xkbcommon or JSON types here: the structs are opaque or
 * plain. Every wait is bounded by a timeout in milliseconds; a function
 * returns 0 or a negative errno (-ETIMEDOUT: the compositor did not answer
 * in time; -EPIPE: the connection is gone; -EPROTO: the compositor raised a
 * protocol error, the connection is dead; -ENOTSUP: the compositor lacks
 * the global the call needs), or a pointer or NULL with *err set.
 *
 * Threads: a struct wayland is used by one thread at a time (the caller
 * serializes); nothing here starts a thread. Between calls nobody reads the
 * socket, so a caller that holds the clipboard or wants output hot-plug
 * events calls wayland_dispatch() from its loop (wayland_fd() to poll). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct wayland;

/* The globals a wlroots backend uses; wayland_has() says which are there. */
enum wayland_feature {
	WAYLAND_SHM = 1 << 0,		/* wl_shm */
	WAYLAND_SEAT = 1 << 1,		/* wl_seat */
	WAYLAND_XDG_OUTPUT = 1 << 2,	/* zxdg_output_manager_v1: logical geometry */
	WAYLAND_SCREENCOPY = 1 << 3,	/* zwlr_screencopy_manager_v1 */
	WAYLAND_VIRTUAL_POINTER = 1 << 4,	/* zwlr_virtual_pointer_manager_v1 */
	WAYLAND_VIRTUAL_KEYBOARD = 1 << 5,	/* zwp_virtual_keyboard_manager_v1 */
	WAYLAND_DATA_CONTROL = 1 << 6,	/* zwlr_data_control_manager_v1 */
	WAYLAND_FOREIGN_TOPLEVEL = 1 << 7,	/* zwlr_foreign_toplevel_manager_v1: windows without IPC */
};

/* One output. Logical geometry is in the compositor's layout space (what
 * the pointer and window rectangles use); the mode is in buffer pixels. */
struct wayland_output {
	char name[64];		/* "HEADLESS-1" (xdg-output or wl_output v4); "" if unknown */
	int32_t x, y;		/* logical position */
	int32_t width, height;	/* logical size */
	int32_t mode_width, mode_height;	/* current mode, pixels */
	int32_t scale;		/* integer scale factor (wl_output) */
	int32_t transform;	/* wl_output transform, 0 = normal */
};

/* ---- the address deskd passes down (address.c; pure) ---- */

/* "wayland:<socket path>[?sway=<IPC socket path>][&x11=<Xwayland display>]":
 * what desktop/ names a Wayland desktop by where an X11 one is ":N";
 * capture/ and input/ pick their Wayland implementation when they are
 * given one. */
#define WAYLAND_ADDRESS_MAX 512
/** Does address name a Wayland desktop ("wayland:" prefix)? NULL-safe. */
bool wayland_is_address(const char* address);
/** Write the address of the compositor socket (absolute) and, when ipc_path
 *  is non-empty, sway's IPC socket. -EINVAL (a relative path, or one that
 *  holds "?sway="), -ENAMETOOLONG. */
int wayland_address_format(const char* socket_path, const char* ipc_path, char* out,
		size_t size);
/** Split an address: the socket path, and the IPC path ("" when none).
 *  -EINVAL when it is not one, -ENAMETOOLONG. */
int wayland_address_parse(const char* address, char* socket_path, size_t socket_size,
		char* ipc_path, size_t ipc_size);
/** Append the compositor's Xwayland display (":N") to an address (in place,
 *  size bytes in all): X programs and typing into their windows use it.
 *  -EINVAL, -ENAMETOOLONG (the address unchanged). */
int wayland_address_add_x11(char* address, size_t size, const char* display);
/** The Xwayland display an address names: 0, -ENOENT (none), -EINVAL. */
int wayland_address_x11(const char* address, char* out, size_t size);

/** Connect to display (a socket name such as "wayland-1", or an absolute
 *  path; NULL = $WAYLAND_DISPLAY or "wayland-0") in runtime_dir (NULL =
 *  $XDG_RUNTIME_DIR), bind the globals and wait (up to timeout_ms) for
 *  every output's geometry. Never changes the environment. Returns NULL
 *  with *err = -ENOENT (no such socket), -ECONNREFUSED, -ETIMEDOUT, -ENOMEM,
 *  -ENOTSUP (no wl_shm or no output). Missing optional globals are fine:
 *  see wayland_has() and wayland_missing(). */
struct wayland* wayland_connect(const char* display, const char* runtime_dir,
		int timeout_ms, int* err);
/** Destroy the devices and close the connection. NULL-safe. */
void wayland_disconnect(struct wayland* self);

/** Which enum wayland_feature bits the compositor offers. */
unsigned wayland_features(const struct wayland* self);
/** Does it offer all of these features? */
bool wayland_has(const struct wayland* self, unsigned features);
/** The interface names of the globals this backend uses that are missing,
 *  space-separated ("" when none). Borrowed until wayland_disconnect. */
const char* wayland_missing(const struct wayland* self);

/** How many outputs; outputs are numbered 0..n-1 in the order announced. */
int wayland_output_count(const struct wayland* self);
/** Output i (a copy), or -ENOENT. */
int wayland_output_get(const struct wayland* self, int i, struct wayland_output* out);
/** The bounding box of every output's logical rectangle. */
void wayland_layout(const struct wayland* self, int32_t* x, int32_t* y,
		int32_t* width, int32_t* height);

/** The connection's fd, to poll for POLLIN from a caller's loop. */
int wayland_fd(const struct wayland* self);
/** Flush, read and handle what the compositor sent, waiting up to
 *  timeout_ms for something to arrive (0: only what is there). 0 or -errno. */
int wayland_dispatch(struct wayland* self, int timeout_ms);
/** A round trip: returns once the compositor has handled every request
 *  sent so far (and their events were handled), or -ETIMEDOUT. */
int wayland_sync(struct wayland* self, int timeout_ms);

/* ---- capture (zwlr_screencopy_manager_v1) ---- */

enum wayland_pixel {
	WAYLAND_PIXEL_XRGB8888 = 0,	/* bytes B, G, R, X: alpha meaningless */
	WAYLAND_PIXEL_ARGB8888,		/* bytes B, G, R, A */
};

/* A captured frame: 4 bytes per pixel, B G R X|A in memory (xrgb8888 in
 * little endian, as X11's ZPixmap), rows top to bottom. */
struct wayland_frame {
	int width, height;	/* buffer pixels (logical size x scale) */
	int stride;		/* bytes per row, >= 4 * width */
	enum wayland_pixel pixel;
	bool y_inverted;	/* the compositor sent it bottom-up; data is already flipped */
	int64_t capture_ns;	/* how long the copy took (request to ready) */
	uint8_t* data;		/* stride * height bytes */
};

/** Copy output `output` (or the logical box x, y, width, height of it, when
 *  region is non-NULL: int32_t[4], in the output's logical coordinates) into
 *  a new frame, waiting up to timeout_ms for ready or failed (-EIO). The
 *  cursor is not drawn. *out is the caller's: wayland_frame_free(). */
int wayland_capture(struct wayland* self, int output, const int32_t* region,
		int timeout_ms, struct wayland_frame** out);
/** wayland_capture with screencopy's overlay_cursor: cursor asks the
 *  compositor to draw its cursor image in. An output whose cursor is drawn
 *  in software (headless) has it in every frame either way. */
int wayland_capture_cursor(struct wayland* self, int output, const int32_t* region,
		bool cursor, int timeout_ms, struct wayland_frame** out);
/** Has output `output` changed? Keeps one copy_with_damage frame pending
 *  per output (screencopy v2+, into a buffer of its own), which the
 *  compositor completes only once the output was repainted; each completion
 *  is noted and a new frame asked for at once. Waits up to timeout_ms (0:
 *  only what already arrived) for one. Returns 1 with box (int32_t[4]: x,
 *  y, width, height) the bounding box, in layout logical coordinates, of
 *  every damage since the last call that returned 1; 0 when nothing
 *  changed; -ENOTSUP, -ENOENT, -EIO (the frame failed), -EPIPE. The first
 *  frame reports the whole output. Cost: the compositor copies the output
 *  into shm once per repaint it reports (not per call). */
int wayland_damage(struct wayland* self, int output, int timeout_ms, int32_t* box);
/** Give back the shared memory kept between calls: the capture buffer and
 *  each output's damage watch (frame and buffer). The next capture makes
 *  its buffer again; the next wayland_damage reports the whole output.
 *  NULL-safe. */
void wayland_release_buffers(struct wayland* self);
/** Free a frame. NULL-safe. */
void wayland_frame_free(struct wayland_frame* frame);
/** Pixel (x, y) of a frame as 0xRRGGBB (alpha dropped). */
uint32_t wayland_frame_rgb(const struct wayland_frame* frame, int x, int y);

/* ---- input: one virtual pointer, one virtual keyboard ---- */

/** Create the virtual pointer and keyboard now (the first input call does
 *  it otherwise), then wait settle_ms: a client such as GTK binds its
 *  wl_pointer and wl_keyboard when the seat first shows the capability, and
 *  loses events that come before. Idempotent. -ENOTSUP without the managers
 *  or a seat. */
int wayland_input_open(struct wayland* self, int settle_ms, int timeout_ms);

/* Buttons as on X11 (1 left, 2 middle, 3 right, 8 back, 9 forward). */
/** Move the pointer to (x, y) in the layout's logical space. -EINVAL off
 *  every output's box. Returns once the compositor has handled it. */
int wayland_pointer_move(struct wayland* self, int32_t x, int32_t y, int timeout_ms);
/** Where deskd's virtual pointer was last moved to (any connection of this
 *  process: clients cannot ask the compositor), layout coordinates; 0, or
 *  -ENODATA before the first move. Any thread. */
int wayland_pointer_last(int32_t* x, int32_t* y);
/** Press (down) or release a button where the pointer is. */
int wayland_pointer_button(struct wayland* self, int button, bool down, int timeout_ms);
/** Move to (x, y) and click button count times. */
int wayland_pointer_click(struct wayland* self, int32_t x, int32_t y, int button,
		int count, int timeout_ms);
/** Scroll by wheel steps: dy > 0 down, dx > 0 right. */
int wayland_pointer_scroll(struct wayland* self, int dx, int dy, int timeout_ms);

/** Type UTF-8 text exactly: for each run of at most a keymap's worth of
 *  distinct characters, upload a keymap holding exactly those characters
 *  (one keycode each, the character's keysym) to the one virtual keyboard,
 *  then press and release each with increasing timestamps, delay_ms apart
 *  (0: as fast as the compositor takes them). "\n" and "\r" type Return,
 *  "\t" Tab, "\b" BackSpace, ESC Escape; other control characters and
 *  invalid UTF-8: -EINVAL, nothing typed.
 *  Returns once the compositor has handled every key. */
int wayland_type(struct wayland* self, const char* utf8, int delay_ms, int timeout_ms);
/** Press a chord such as "ctrl+a", "ctrl+shift+Left", "Return", "super+1":
 *  modifiers (shift, ctrl|control, alt, super|meta|logo, altgr) then one key
 *  named by its keysym name (xkb names, case-sensitive, or one character),
 *  through the same keyboard with a keymap that holds the modifiers; the
 *  modifier state goes with it. -EINVAL for an unknown name. */
int wayland_key_chord(struct wayland* self, const char* chord, int timeout_ms);

/** Press (down: in order) or release (up: in reverse order) keys named by
 *  keysym, through the same keyboard, and keep them held between calls.
 *  Modifier keysyms (Shift_L/R, Control_L/R, Alt_L/R, Meta_L/R, Super_L/R,
 *  Hyper_L/R, ISO_Level3_Shift) are the chord keymap's modifier keys, their
 *  state sent along; any other keysym gets a key of its own in a chord
 *  keymap uploaded when a new key is needed (at most 64 distinct keys until
 *  none is down: -E2BIG). Releasing a key that is not down is harmless.
 *  Typing (wayland_type) meanwhile swaps the keymap without the held
 *  modifiers applying to the text; the next call puts the held state back.
 *  -EINVAL for NoSymbol. */
int wayland_keys(struct wayland* self, const uint32_t* keysyms, size_t n, bool down,
		int timeout_ms);
/** Is any key or modifier held by wayland_keys? */
bool wayland_keys_held(const struct wayland* self);
/** Release every key wayland_keys holds (at the end of a context). */
int wayland_keys_release_all(struct wayland* self, int timeout_ms);

/** The xkb keymap text (xkb_v1) that types exactly the distinct code points
 *  of cps[0..n-1] (no duplicates, n <= WAYLAND_KEYMAP_MAX) at keycodes
 *  9, 10, ... (evdev 1, 2, ...), plus the modifier keys when mods: a pure
 *  helper, used by wayland_type and by the unit tests. malloc'd, NULL and
 *  *err on failure (-EINVAL: a code point without a keysym). */
#define WAYLAND_KEYMAP_MAX 230
char* wayland_keymap_text(const uint32_t* cps, size_t n, bool mods, int* err);

/* ---- clipboard (zwlr_data_control_manager_v1) ---- */

/** Offer text as the clipboard (text/plain;charset=utf-8, text/plain,
 *  UTF8_STRING, STRING, TEXT). It is served while the caller dispatches
 *  (wayland_dispatch) and until another client takes the clipboard. */
int wayland_clipboard_set(struct wayland* self, const char* utf8, int timeout_ms);
/** Read the clipboard as text into a malloc'd *out (NUL-terminated; *len
 *  bytes, may be NULL). -ENOENT: the clipboard is empty or offers no text. */
int wayland_clipboard_get(struct wayland* self, int timeout_ms, char** out, size_t* len);

#define WAYLAND_CLIPBOARD_MAX (8u << 20)
/** Offer len bytes (copied) as the clipboard: text (the text types above)
 *  or, with image, PNG (image/png). Served as wayland_clipboard_set's. */
int wayland_clipboard_put(struct wayland* self, const void* data, size_t len, bool image,
		int timeout_ms);
/** Read the clipboard as text or (image) PNG: *data malloc'd and
 *  NUL-terminated, *len bytes. -ENOENT (empty), -ENODATA (no such format),
 *  -EFBIG (more than max bytes), -ETIMEDOUT. */
int wayland_clipboard_take(struct wayland* self, bool image, size_t max, int timeout_ms,
		void** data, size_t* len);
/** Is what this connection offered still the clipboard? *served (may be
 *  NULL): how many reads of it were answered whole so far. */
bool wayland_clipboard_owned(const struct wayland* self, unsigned long* served);
unsigned long wayland_clipboard_served(const struct wayland* self);
/** Stop offering it (the clipboard is empty then), if it is still ours. */
int wayland_clipboard_clear(struct wayland* self, int timeout_ms);

/* ---- an embedded headless sway ---- */

struct wayland_sway;

struct wayland_sway_options {
	int width, height;	/* HEADLESS-1's resolution; 0: 1280x800 */
	const char* log_path;	/* sway's stdout and stderr; NULL: /dev/null */
	int log_fd;		/* > 0: write them here instead (duplicated; the caller closes it) */
	const char* user;	/* when root: run sway as this user; NULL: "deskd-compositor", else "nobody" */
	bool xwayland;		/* xwayland enable (default disable) */
	bool die_with_parent;	/* PR_SET_PDEATHSIG: sway dies with the calling thread */
	int timeout_ms;		/* for the sockets to appear; 0: 10000 */
};

/** Start sway headless (WLR_BACKENDS=headless, WLR_RENDERER=pixman,
 *  WLR_LIBINPUT_NO_DEVICES=1) with a generated config in a new private 0700
 *  XDG_RUNTIME_DIR, and wait for its wayland-N and IPC sockets. sway refuses
 *  to run as root: when the caller is root, the child drops to the
 *  compositor user (the runtime dir is that user's; root still reaches the
 *  sockets). NULL with *err: -ENOENT (no sway), -ETIMEDOUT, -ECHILD (sway
 *  exited; see the log). */
struct wayland_sway* wayland_sway_start(const struct wayland_sway_options* options, int* err);
/** Stop sway by its pid (SIGTERM, then SIGKILL after 2 s), reap it, remove
 *  its runtime dir. NULL-safe. */
void wayland_sway_stop(struct wayland_sway* self);
/** Its socket name ("wayland-1"), runtime dir, IPC socket path and pid;
 *  the strings are borrowed until wayland_sway_stop. */
const char* wayland_sway_display(const struct wayland_sway* self);
const char* wayland_sway_runtime_dir(const struct wayland_sway* self);
const char* wayland_sway_ipc_path(const struct wayland_sway* self);
pid_t wayland_sway_pid(const struct wayland_sway* self);

/** The DISPLAY (":N") of the embedded sway's Xwayland (options.xwayland),
 *  waiting up to timeout_ms for sway to say it: 0, -ENOENT (no Xwayland),
 *  -ETIMEDOUT, -ENAMETOOLONG. */
int wayland_sway_xwayland_display(const struct wayland_sway* self, int timeout_ms, char* out,
		size_t size);

/* ---- sway IPC (SWAYSOCK) ---- */

/* A window from get_tree. */
struct wayland_window {
	int64_t id;		/* sway's con id (criteria [con_id=N]) */
	char* app_id;		/* xdg app_id, or the X11 class under Xwayland; never NULL */
	char* title;		/* never NULL */
	pid_t pid;		/* 0 if unknown */
	int32_t x, y, width, height;	/* rect: layout logical coordinates */
	bool focused;
	bool visible;		/* sway's "visible": shown on a visible workspace */
	bool floating;
	bool fullscreen;
	bool xwayland;		/* shell "xwayland" */
	uint32_t x11_window;	/* its X window id under Xwayland, else 0 */
};

/** The windows of the tree (leaf views, tiled and floating, on every
 *  workspace) into a malloc'd array *out of *n; free it with
 *  wayland_windows_free. ipc_path NULL: $SWAYSOCK. */
int wayland_sway_windows(const char* ipc_path, int timeout_ms,
		struct wayland_window** out, size_t* n);
void wayland_windows_free(struct wayland_window* windows, size_t n);
/** The windows of a get_tree reply (NUL-terminated JSON text, what the
 *  compositor sent): the parse wayland_sway_windows runs, pure (fuzzed).
 *  0, -EPROTO (not a tree deskd can read), -ENOMEM. */
int wayland_sway_parse_tree(const char* json, struct wayland_window** out, size_t* n);
/** Run a sway command ("[con_id=5] focus", "move position 10 10", ...).
 *  -EINVAL when sway says it failed; its message goes to error (size bytes)
 *  when error is non-NULL. */
int wayland_sway_command(const char* ipc_path, const char* command, int timeout_ms,
		char* error, size_t size);

/* ---- foreign toplevels (zwlr_foreign_toplevel_manager_v1; toplevel.c) ---- */

/* A wlroots compositor without sway's IPC (Hyprland, river, labwc, a sway
 * whose socket is hidden) still lists its windows this way: title, app id
 * and states, and takes activate, close, (un)maximize, (un)minimize and
 * (un)fullscreen. It gives no geometry, no pid and no stacking order. */
#define WAYLAND_TOPLEVEL_TITLE_MAX 1024
struct wayland_toplevel {
	uint32_t id;		/* deskd's: 1, 2, ... as they appeared; never reused in a process */
	uint32_t parent;	/* the id of the toplevel it is a dialog of, or 0 */
	char app_id[128];	/* cut on a UTF-8 boundary */
	char title[WAYLAND_TOPLEVEL_TITLE_MAX];
	bool activated, maximized, minimized, fullscreen;
};

enum wayland_toplevel_request {
	WAYLAND_TOPLEVEL_ACTIVATE,
	WAYLAND_TOPLEVEL_CLOSE,
	WAYLAND_TOPLEVEL_MAXIMIZE,
	WAYLAND_TOPLEVEL_UNMAXIMIZE,
	WAYLAND_TOPLEVEL_MINIMIZE,
	WAYLAND_TOPLEVEL_UNMINIMIZE,
	WAYLAND_TOPLEVEL_FULLSCREEN,
	WAYLAND_TOPLEVEL_UNFULLSCREEN,
};

/** Bind the manager on this connection and keep the process-wide list
 *  from its events (one connection at a time: -EBUSY when another
 *  tracks), waiting up to timeout_ms for the windows there are now. The
 *  list stays fresh only while the caller keeps dispatching the
 *  connection (wayland_dispatch from its loop); wayland_disconnect stops
 *  it. -ENOTSUP: the compositor lacks the manager. */
int wayland_toplevels_track(struct wayland* self, int timeout_ms);
/** Does a connection track the list? Any thread. */
bool wayland_toplevels_tracked(void);
/** The list now, oldest first, into a malloc'd *out (free()). Any
 *  thread. -ENODATA: no connection tracks it. */
int wayland_toplevels(struct wayland_toplevel** out, size_t* n);
/** One toplevel by id: 0, -ENOENT (gone), -ENODATA. Any thread. */
int wayland_toplevel_get(uint32_t id, struct wayland_toplevel* out);
/** Ask the compositor for something on toplevel id (through the tracking
 *  connection; the effect shows in the list once it is done). -ENOENT,
 *  -ENODATA, -ENOTSUP (activate without a seat, fullscreen before v2),
 *  -EPIPE. Any thread. */
int wayland_toplevel_request(uint32_t id, enum wayland_toplevel_request request);
