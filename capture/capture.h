#pragma once

/* capture/: screen and window capture, change tracking, scaling, PNG/JPEG
 * encoding, and the window list (EWMH), for screenshots, the live view and
 * the recorder. No X11 types here.
 *
 * Threads: a struct capture owns one X connection and is used by one thread
 * at a time (the caller serializes). Frames are immutable once returned and
 * may be shared between threads (frame_ref/frame_unref are atomic). The
 * scaler and the encoders are pure functions, callable from any thread.
 *
 * Errors: 0 or a negative errno. The ones with a meaning:
 *   -ENOENT      the window does not exist (never did, or is gone)
 *   -ENODATA     the window exists but is not mapped (minimized, hidden):
 *                nothing to capture until it is shown again
 *   -ERANGE      a region lies entirely outside the target
 *   -EINVAL      bad arguments
 *   -ECONNRESET  the X connection is gone: capture_destroy() and reopen
 *   -ENOMEM, -EIO (any other X error; capture_error() says which)
 * After a failure capture_error() returns a one-line reason. */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Frames ------------------------------------------------------------- */

/* A reference-counted image. Pixels are BGRX: 4 bytes per pixel in the order
 * B, G, R, X (a little-endian uint32 0xXXRRGGBB). X is 0xff: frames are
 * opaque (the X server's pad byte is never treated as alpha), except in a
 * lent frame (capture_screen_lent), whose X bytes are the display's. */
struct frame {
	int width, height;
	int stride;		/* bytes per row, >= 4 * width */
	uint8_t* data;		/* owned by the frame, or lent to it */
	atomic_int refs;	/* private: use frame_ref/frame_unref */
	size_t capacity;	/* private: size of the data block */
	bool lent;		/* private: data is a capture context's own buffer */
};

/** A new frame of w x h (contents undefined) with one reference, or NULL. */
struct frame* frame_new(int width, int height);
/** Take a reference; returns self. A lent frame cannot be kept: its
 *  reference is an owned copy (NULL if out of memory). NULL-safe. */
struct frame* frame_ref(struct frame* self);
/** Drop a reference; frees the frame with the last one. NULL-safe. */
void frame_unref(struct frame* self);

/** Rectangles: x, y of the top-left corner, width and height. */
struct capture_rect {
	int x, y, width, height;
};

/* ---- Capture context ---------------------------------------------------- */

struct capture;

/* On Wayland (a "wayland:<socket>[?sway=<ipc>]" name, wayland/wayland.h;
 * wlroots/sway): coordinates are the layout's logical ones (an output at
 * scale > 1 is scaled down to them); the root window is 0 (the screen);
 * window ids are sway con ids; a window is captured as the part of the
 * outputs it covers (on wlroots 0.15 a covered window shows what covers
 * it; one not on a visible workspace gives -ENODATA); cursor asks the
 * compositor to draw its cursor (a headless output draws it into every
 * frame anyway); capture_pointer knows only where deskd last moved the
 * pointer (-ENODATA before that); change counters come from screencopy
 * damage; without ?sway= the window calls return -ENOTSUP. */

/** Open a connection to display `name` (":N"; NULL = $DISPLAY) and set up
 *  XShm (when offered), Composite, Damage and XFixes. Returns NULL with a
 *  reason in err on failure. X errors on this connection are recorded, never
 *  fatal; losing the display makes calls return -ECONNRESET. */
struct capture* capture_create(const char* name, char* err, size_t err_size);
/** Close the connection and free everything. NULL-safe. Frames already
 *  returned stay valid. */
void capture_destroy(struct capture* self);

/** Reason for the last failure on this context (never NULL). */
const char* capture_error(const struct capture* self);
/** Is the connection still usable? (false once the display went away) */
bool capture_connected(const struct capture* self);
/** The connection's file descriptor, for poll() in an event loop. */
int capture_fd(const struct capture* self);

/** The root window's id (capture_window on it captures the screen). */
uint32_t capture_root_window(const struct capture* self);
/** Screen size in pixels. */
void capture_screen_size(const struct capture* self, int* width, int* height);
/** Does the server offer MIT-SHM? (informational: there is a fallback) */
bool capture_has_shm(const struct capture* self);
/** Can a window be captured (and recorded) by itself? X11: with Composite,
 *  its own pixels even when covered. Wayland: always, as its rectangle on
 *  the outputs (what covers it shows: wlroots 0.15 has no per-window
 *  capture). */
bool capture_has_window_capture(const struct capture* self);
/** Give back what the context keeps for the next capture (X11: its shared
 *  image, a screen's worth); that capture makes it again. The context
 *  stays usable. One round trip. */
void capture_release(struct capture* self);
/** Free the big buffers (frames, PNG scratch) cached for reuse by any
 *  thread; buffers in use are not touched. Returns the bytes freed. */
size_t capture_buffers_release(void);

/** Capture the screen, or `region` of it (NULL = all) clipped to the screen.
 *  With cursor, the pointer image is alpha-blended in. *out is a new
 *  reference (frame_unref it). -ERANGE when region misses the screen. */
int capture_screen(struct capture* self, const struct capture_rect* region,
		bool cursor, struct frame** out);

/** Capture a window's client area (without border or WM frame), or `region`
 *  of it (window coordinates, clipped), through Composite: correct when the
 *  window is covered or partly off-screen. The window is redirected
 *  (automatic) on first use, by this connection. -ENOENT, -ENODATA (not
 *  mapped), -ERANGE. *out is a new reference. */
int capture_window(struct capture* self, uint32_t window,
		const struct capture_rect* region, bool cursor, struct frame** out);

/** capture_screen and capture_window without the copy (at 1920x1080, 1.3 of
 *  a capture's 2.6 ms): the frame may be lent the context's shared image,
 *  valid until the next call on this context. Read it, or scale it, and
 *  unref it before then; frame_ref() on it gives an owned copy. Backends
 *  that cannot lend give an owned frame. */
int capture_screen_lent(struct capture* self, const struct capture_rect* region,
		bool cursor, struct frame** out);
int capture_window_lent(struct capture* self, uint32_t window,
		const struct capture_rect* region, bool cursor, struct frame** out);

/** A window's client area in root (desktop) coordinates; -ENOENT. */
int capture_window_geometry(struct capture* self, uint32_t window,
		struct capture_rect* out);
/** The pointer's hot spot relative to the window's client area (window 0:
 *  the screen), in one round trip; it may lie outside the window (negative
 *  or past its size). -ENOENT, -ENODATA (on another X screen),
 *  -ECONNRESET. */
int capture_pointer(struct capture* self, uint32_t window, int* x, int* y);

/* ---- Change tracking (XDamage), poll style ------------------------------- */

/* Each target (window 0 = the screen, else a window) has a change counter
 * on this context that only grows: it increases whenever the target's
 * pixels changed since the previous poll. Tracking a target starts on its
 * first poll (which counts as a change). The screen is always tracked. */

/** Process what the X server has sent up to now (one round trip), then
 *  report the target's counter. -ENOENT when the window is gone. */
int capture_changes(struct capture* self, uint32_t window, uint64_t* counter);
/** Like capture_changes without the round trip: only what the X server has
 *  sent so far is processed, so a change made just now may show at a later
 *  call (the first poll of a window still takes one round trip). For a
 *  caller that polls anyway, such as the recorder once per frame. */
int capture_changes_arrived(struct capture* self, uint32_t window,
		uint64_t* counter);
/** Which part of the target changed (in its pixels) in the changes taken in
 *  by capture_changes since the last call: 1 and the bounding box in *out
 *  (empty: width 0), or 0 when unknown: the first call, which starts
 *  tracking, and a backend without regions. -ENOENT: the window is gone. */
int capture_dirty(struct capture* self, uint32_t window, struct capture_rect* out);
/** Block until the target's counter exceeds `since`, at most timeout_ms
 *  (0 = just check). Returns 0 (and the counter), -ETIMEDOUT, -ENOENT,
 *  -ECONNRESET. Keep timeouts short and loop to honour cancellation. */
int capture_wait_changes(struct capture* self, uint32_t window, uint64_t since,
		int timeout_ms, uint64_t* counter);
/** Stop tracking a window (frees its damage object). Harmless if untracked. */
void capture_untrack(struct capture* self, uint32_t window);

/* ---- Windows (EWMH, with a fallback when there is no window manager) ---- */

#define CAPTURE_TITLE_MAX 256	/* characters (UTF-8 code points) */

struct capture_window_info {
	uint32_t id;		/* the client window (what capture_window takes) */
	int pid;		/* _NET_WM_PID, or 0 when unknown */
	char title[CAPTURE_TITLE_MAX * 4 + 1];	/* UTF-8, cut at 256 characters */
	char app[128];		/* WM_CLASS class ("XTerm"), or "" */
	char instance[128];	/* WM_CLASS instance ("xterm"), or "" */
	struct capture_rect rect;	/* client area, root coordinates */
	bool focused;
	bool visible;		/* viewable and intersecting the screen */
	bool mapped;
	bool minimized;		/* WM_STATE Iconic or _NET_WM_STATE_HIDDEN */
	bool maximized;		/* _NET_WM_STATE_MAXIMIZED_VERT and _HORZ */
	bool fullscreen, modal;	/* _NET_WM_STATE_FULLSCREEN, _MODAL */
	uint32_t transient_for;	/* WM_TRANSIENT_FOR (the window it is a dialog of), or 0 */
	bool wayland_native;	/* a Wayland client (not X11 or Xwayland): it does not know
				 * where it is on screen (its AT-SPI extents are window-relative) */
	int surface_dx, surface_dy;	/* where such a client's own coordinates start, from
				 * rect's origin: GNOME's client-drawn shadows (negative); 0 elsewhere */
};

/** The top-level client windows, in stacking order (bottom first) when the
 *  window manager says so. *out is malloc'd (free() it); may be NULL with *n 0. */
int capture_list_windows(struct capture* self, struct capture_window_info** out,
		size_t* n);
/** One window's info (any window id); -ENOENT. */
int capture_window_info(struct capture* self, uint32_t window,
		struct capture_window_info* out);
/** Activate a window and wait (at most 1 s) until the input focus is in
 *  it: _NET_ACTIVE_WINDOW (as a pager) when an EWMH WM supports it; without
 *  one, or when it does not act within a moment, map it (if unmapped),
 *  raise it and set the focus directly. The same algorithm as
 *  input_focus_window. -ETIMEDOUT if focus never came, -ENOENT. */
int capture_focus_window(struct capture* self, uint32_t window);
/** Move and/or resize a window's client area to the given root position
 *  and size (NULL = keep), compensating for WM decorations; waits (bounded)
 *  for the new geometry and returns it in *result (may be NULL). */
int capture_move_window(struct capture* self, uint32_t window, const int* x,
		const int* y, const int* width, const int* height,
		struct capture_rect* result);

/* ---- Scaling and encoding (pure; any thread) ---------------------------- */

/** Downscale (area average, box filter) src to exactly width x height
 *  (each <= the source's; equal sizes give a copy). New frame or NULL. */
struct frame* capture_scale(const struct frame* src, int width, int height);
/** A new frame with a copy of rect of src (clipped; NULL when empty). */
struct frame* capture_crop(const struct frame* src, const struct capture_rect* rect);

/** PNG (RGB, 8 bits, fast: zlib level 1, rows deflated in parallel bands).
 *  *out is malloc'd (free() it). */
int capture_encode_png(const struct frame* src, uint8_t** out, size_t* len);
/* Incremental PNG: the image is cut into up to 16 bands, each deflated on
 * its own; a state keeps the previous image (a frame reference) and its
 * compressed bands, and the next encode reuses every band whose rows (and
 * the rows before it, which it depends on) did not change. The output is
 * a normal PNG. A state is used by one thread at a time. */
struct capture_png_state;

/** Like capture_encode_png, with a state (*state NULL: created here). */
int capture_encode_png_cached(struct capture_png_state** state,
		const struct frame* src, uint8_t** out, size_t* len);
/** How many bands the last encode with this state reused (for tests). */
int capture_png_state_reused(const struct capture_png_state* state);
/** Free a state (drops its frame reference). NULL-safe. */
void capture_png_state_free(struct capture_png_state* state);
/** Decode a PNG or JPEG (as the encoders above write them; any 8-bit PNG)
 *  into a new frame, or NULL (not an image, broken, or more than
 *  CAPTURE_DECODE_MAX_PIXELS). */
#define CAPTURE_DECODE_MAX_PIXELS (64u * 1024 * 1024)
struct frame* capture_decode(const void* data, size_t len);
/** Like capture_decode, reduced on the way where that is cheap (deskd's own
 *  PNGs: k x k averages; JPEG: the decoder's DCT scaling) while its longer
 *  side stays at least side pixels; *width and *height get the image's own
 *  size. A thumbnail's input: 1/25 of a full decode's memory. */
struct frame* capture_decode_reduced(const void* data, size_t len, int side,
		int* width, int* height);

/* A PNG's header, read without decoding anything: what an image claims to
 * be before anyone inflates it (a 74-byte PNG may claim 50000x50000, 10 GB
 * as RGBA: a decompression bomb for whoever decodes it). */
struct capture_png_header {
	uint32_t width, height;	/* 1 .. 2^31-1 */
	uint8_t bit_depth;	/* 1, 2, 4, 8 or 16, as the colour type allows */
	uint8_t color_type;	/* 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA */
	uint8_t interlace;	/* 0 none, 1 Adam7 */
};
#define CAPTURE_PNG_HEADER_BYTES 33	/* signature (8) + the IHDR chunk (25) */
/** Check the signature and the IHDR chunk that must follow it (length 13,
 *  type, CRC, the field values the PNG specification allows) in the first
 *  CAPTURE_PNG_HEADER_BYTES of data: 0 and *out, or -EINVAL with why (a
 *  static string) in *why. Pure: no allocation, any thread. */
int capture_png_header(const void* data, size_t len, struct capture_png_header* out,
		const char** why);
/** JPEG through libturbojpeg (4:2:0, quality 1..100). *out is malloc'd. */
int capture_encode_jpeg(const struct frame* src, int quality, uint8_t** out,
		size_t* len);
/** A JPEG kept in rows of 16 pixels, for a feed of frames of one size:
 *  a change re-encodes only the rows it touched (capture/encode.c). */
struct capture_jpeg_rows;
struct capture_jpeg_rows* capture_jpeg_rows_new(void);
void capture_jpeg_rows_free(struct capture_jpeg_rows* self);
/** Are all rows of an image of this size and quality kept? */
bool capture_jpeg_rows_ready(const struct capture_jpeg_rows* self, int width, int height,
		int quality);
/** Encode band, the image's rows from y (a multiple of 16) to the image's
 *  end or a multiple of 16, then the whole image of the given height from
 *  the kept rows into *out (malloc'd). Until capture_jpeg_rows_ready for
 *  this size and quality, only the whole image (y 0, band->height ==
 *  height): -ESTALE otherwise. 0, -EINVAL, -ENOMEM, -EIO. */
int capture_jpeg_rows_encode(struct capture_jpeg_rows* self, const struct frame* band,
		int y, int height, int quality, uint8_t** out, size_t* len);
