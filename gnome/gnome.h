#pragma once

/* gnome/: the plumbing of a GNOME desktop, written once: Mutter's own
 * D-Bus APIs (org.gnome.Mutter.RemoteDesktop and .ScreenCast, the ones
 * gnome-remote-desktop uses) on a private connection to the session bus,
 * and the screen-cast's PipeWire stream consumed in process.
 *
 * Mutter ties a session to the bus connection that made it, so a struct
 * gnome owns one connection for its whole life: a RemoteDesktop session
 * linked to a ScreenCast of the first monitor (its stream is what absolute
 * pointer motion is measured in), and, when asked, the stream's frames and
 * the session's clipboard.
 *
 * No D-Bus or PipeWire types here. Every wait is bounded; a function returns
 * 0 or a negative errno (-ETIMEDOUT: Mutter did not answer in time; -EPIPE:
 * the bus or the session is gone; -ENOTSUP: Mutter lacks what the call
 * needs), or a pointer or NULL with *err set.
 *
 * Threads: one thread of its own per struct gnome reads the bus (signals:
 * the stream's node, the session's end, clipboard transfers); PipeWire's
 * frames arrive on PipeWire's own loop thread. Every function may be called
 * from any thread. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the address deskd passes down (address.c; pure) ---- */

/* "gnome:<session bus address>[?pipewire=<socket path>][&wayland=<socket
 * path>][&portal=1]": what desktop/ names a GNOME desktop by, where an X11
 * one is ":N". The bus address is D-Bus's own ("unix:path=/run/.../bus");
 * the PipeWire socket is the daemon Mutter casts to (absent: PipeWire's own
 * lookup); the Wayland socket is the compositor's, for the programs deskd
 * starts there; portal=1 reaches the desktop through the desktop portal
 * instead of Mutter's API (gnome_open). No part may hold '?' or '&'. */
#define GNOME_ADDRESS_MAX 512
struct gnome_address {
	char bus[256];
	char pipewire[128];	/* "" when absent */
	char wayland[128];	/* "" when absent */
	char portal[2];		/* "1": through the desktop portal; "" Mutter's API */
};
/** Does address name a GNOME desktop ("gnome:" prefix)? NULL-safe. */
bool gnome_is_address(const char* address);
/** Build an address; -ENAMETOOLONG if it does not fit, -EINVAL for an
 *  empty bus or a part with '?' or '&'. */
int gnome_address_format(const struct gnome_address* parts, char* out, size_t size);
/** Split an address into its parts; -EINVAL if it is not a GNOME address
 *  or has an unknown part, -ENAMETOOLONG for a part too long. */
int gnome_address_parse(const char* address, struct gnome_address* parts);

/* ---- a session ---- */

struct gnome;

enum gnome_want {
	GNOME_FRAMES = 1 << 0,		/* consume the stream's frames */
	GNOME_CLIPBOARD = 1 << 1,	/* the session's clipboard */
};

/* Why a portal session has no clipboard, as the tools say it. */
#define GNOME_PORTAL_NO_CLIPBOARD "no clipboard through the desktop portal (its Clipboard " \
	"interface came in xdg-desktop-portal 1.18; this one has none, or did not enable it)"
/* How long a person has to answer the portal's dialog. */
#define GNOME_CONSENT_MS 120000

/** Is Mutter's RemoteDesktop service (with portal=1: the desktop portal's
 *  RemoteDesktop) on the bus at this address (one bounded round trip, no
 *  session made)? The display watcher's probe. */
bool gnome_reachable(const char* address, int timeout_ms);

/** Tell the address's bus what the services it starts need to find the
 *  desktop (UpdateActivationEnvironment: WAYLAND_DISPLAY, the address's
 *  Wayland socket; XDG_SESSION_TYPE wayland; XDG_CURRENT_DESKTOP GNOME), as
 *  gnome-session does on a real session. */
int gnome_activation_environment(const char* address, int timeout_ms, char* err,
		size_t err_size);

/** Connect to the address's bus and start a session: RemoteDesktop, its
 *  ScreenCast of the first monitor, the stream's node; the frames and the
 *  clipboard when wanted. Bounded by timeout_ms overall.
 *
 *  With portal=1 the session is the desktop portal's
 *  (org.freedesktop.portal.RemoteDesktop with a ScreenCast source, for a
 *  deskd that Mutter's API is closed to): its Start shows the person a
 *  dialog, so the wait for their answer is bounded by GNOME_CONSENT_MS, not
 *  timeout_ms (-ECANCELED when they decline, -EACCES when they share the
 *  screen without remote interaction). The process keeps one portal
 *  session per address: a second gnome_open while one is open returns it
 *  again (counted; gnome_close ends it with the last), so one approval
 *  serves the capture, the input and the tools. The clipboard is the
 *  portal's Clipboard where it has one (xdg-desktop-portal 1.18 on) and
 *  enabled it at Start; else GNOME_CLIPBOARD fails with
 *  GNOME_PORTAL_NO_CLIPBOARD. */
struct gnome* gnome_open(const char* address, unsigned want, int timeout_ms,
		char* err, size_t err_size);
/** Where the portal keeps the person's grant between runs (call before the
 *  first gnome_open; NULL or "": not kept). Where the portal's RemoteDesktop
 *  has persistence (version 2, xdg-desktop-portal 1.18 and GNOME 45 on),
 *  the session asks it to last until the person revokes it, the file's
 *  restore token is offered at Start (the dialog is skipped when it still
 *  holds) and the token Start gives back replaces it, written whole, 0600.
 *  A kept file someone else could read fails gnome_open with the reason. */
void gnome_portal_token_file(const char* path);
/** Stop the session and close the connection (the session ends with it). */
void gnome_close(struct gnome* self);
/** Are the connection and the session still there? */
bool gnome_alive(struct gnome* self);
/** The monitor's size in the stream's (logical) pixels. */
void gnome_size(const struct gnome* self, int* width, int* height);
/** Why the last call failed (a sentence). */
const char* gnome_error(const struct gnome* self);

/* ---- frames (GNOME_FRAMES) ---- */

/** The number of the newest frame (0: none yet). Mutter sends a frame when
 *  the screen changed, so a new number means a change. */
uint64_t gnome_frame_seq(struct gnome* self);
/** Wait until a frame newer than after arrived; its number in *seq. */
int gnome_frame_wait(struct gnome* self, uint64_t after, int timeout_ms, uint64_t* seq);
/** A file descriptor that polls readable when a frame arrived since the
 *  last gnome_frame_seq/read (an eventfd; read it to clear it). */
int gnome_frame_fd(struct gnome* self);
/** Give back what the frames keep besides the newest one: the spare copy
 *  the next frame is written into (made again then) and our pages of
 *  Mutter's stream buffers (mapped shared; faulted in again at the next
 *  frame). */
void gnome_frame_release(struct gnome* self);
/** Copy the newest frame's rectangle x, y, width x height (clipped to the
 *  frame by the caller) as 32-bit BGRX rows into dst (dst_stride bytes per
 *  row); the frame's number in *seq. -EAGAIN when no frame arrived yet. */
int gnome_frame_read(struct gnome* self, int x, int y, int width, int height,
		uint8_t* dst, int dst_stride, uint64_t* seq);

/* ---- input ---- */

/* Buttons are numbered as on X11 (1 left, 2 middle, 3 right, 8 back,
 * 9 forward; the wheel is gnome_pointer_scroll); keycodes are evdev codes
 * (the X11 keycode minus 8); keysyms are X11 keysyms. */
/** Make the session's pointer and keyboard now, without moving or typing
 *  anything, and wait settle_ms: Mutter makes each device at its first
 *  event, and the apps lose the events that come before they bound it
 *  (typing right after a new session typed nothing, measured). */
int gnome_input_warm(struct gnome* self, int settle_ms);
/* The events below are sent without waiting for Mutter (0 means sent, or
 * -EPIPE for a session known to be gone); gnome_input_flush waits until
 * Mutter has taken every one sent before it, and is where a failure
 * shows. */
int gnome_input_flush(struct gnome* self);
int gnome_pointer_move(struct gnome* self, double x, double y);
/** -EINVAL for a button Mutter has no code for. */
int gnome_pointer_button(struct gnome* self, int button, bool down);
/** axis 0 vertical, 1 horizontal; steps > 0 down or right. */
int gnome_pointer_scroll(struct gnome* self, unsigned axis, int steps);
int gnome_key_keycode(struct gnome* self, uint32_t evdev_keycode, bool down);
/** Mutter presses the keysym's key in the current layout (with the level's
 *  modifiers); a keysym the layout lacks is dropped by Mutter without an
 *  error, so callers send only keysyms gnome_keysym_typable says yes to. */
int gnome_key_keysym(struct gnome* self, uint32_t keysym, bool down);
/** Can a keysym be typed on this session's layout? */
bool gnome_keysym_typable(struct gnome* self, uint32_t keysym);

/* ---- the clipboard (GNOME_CLIPBOARD) ---- */

/** Offer text (UTF-8) as the clipboard's content; served to every app
 *  that asks until another owner takes it or the next offer. */
int gnome_clipboard_offer(struct gnome* self, const char* text, size_t len);
/** How many times an app has read the offered content (to know a paste
 *  was taken). */
unsigned long gnome_clipboard_delivered(struct gnome* self);
/** Read the clipboard's text (whoever owns it): malloc'd, NUL-terminated;
 *  -ENOENT when it is empty or has no text. */
int gnome_clipboard_read(struct gnome* self, int timeout_ms, char** text, size_t* len);

/* ---- windows (GNOME Shell with deskd's extension, gnome/shell/) ---- */

/* Mutter alone has no window list, and GNOME Shell gives geometry and pids
 * only through Eval, which a user's session refuses: deskd's extension
 * (dev.deskd.Shell at /dev/deskd/Shell on the shell's bus name) offers
 * exactly these calls. Without it they return -ENOTSUP. Ids are Mutter's
 * 64-bit window ids. */
enum gnome_window_flag {
	GNOME_WINDOW_FOCUSED = 1 << 0,
	GNOME_WINDOW_MINIMIZED = 1 << 1,
	GNOME_WINDOW_MAXIMIZED = 1 << 2,
	GNOME_WINDOW_FULLSCREEN = 1 << 3,
	GNOME_WINDOW_ON_WORKSPACE = 1 << 4,	/* on the current workspace */
	GNOME_WINDOW_X11 = 1 << 5,		/* an X11 (Xwayland) client */
	GNOME_WINDOW_MODAL = 1 << 6,
};
struct gnome_window {
	uint64_t id;
	char title[1025];	/* UTF-8, cut */
	char wm_class[128];
	char app_id[128];	/* the GTK application id or the sandbox's, or "" */
	int pid;		/* 0 when unknown */
	int x, y, width, height;	/* the frame: what the user sees as the window */
	int buffer_x, buffer_y, buffer_width, buffer_height;	/* the surface, with CSD shadows */
	unsigned flags;		/* enum gnome_window_flag */
	uint64_t transient_for;	/* 0 none */
};
/** Does GNOME Shell at this address answer with deskd's extension, and has
 *  it left the overview it starts in (one bounded round trip each)? */
bool gnome_shell_ready(const char* address, int timeout_ms);

/* A connection for these calls (no Mutter session); any thread. Errors:
 * -ENOTSUP when the shell or its extension is not there, -ENOENT for a
 * window it does not know, -EPIPE when the bus is gone. */
struct gnome_shell;
struct gnome_shell* gnome_shell_open(const char* address, int timeout_ms, char* err,
		size_t err_size);
void gnome_shell_close(struct gnome_shell* self);
bool gnome_shell_alive(struct gnome_shell* self);
const char* gnome_shell_error(const struct gnome_shell* self);
/** The windows, bottom of the stack first; *out malloc'd (free()). */
int gnome_windows(struct gnome_shell* self, struct gnome_window** out, size_t* n);
int gnome_window_activate(struct gnome_shell* self, uint64_t id);
/** Activate deskd's window (the low 32 bits of Mutter's id), then wait
 *  until the shell lists it focused, at most timeout_ms: 0, -ENOENT (not
 *  listed), -ETIMEDOUT, or the calls' errors. */
int gnome_window_focus(struct gnome_shell* self, uint32_t window, int timeout_ms);
/** Move and resize the frame (a maximized window is unmaximized first). */
int gnome_window_move_resize(struct gnome_shell* self, uint64_t id, int x, int y, int width,
		int height);
/** state: minimize, unminimize, maximize, unmaximize, fullscreen,
 *  unfullscreen, raise. */
int gnome_window_state(struct gnome_shell* self, uint64_t id, const char* state);
int gnome_window_close(struct gnome_shell* self, uint64_t id);

/* The extension's uuid, its folder's name under gnome-shell/extensions/. */
#define GNOME_EXTENSION_UUID "deskd@deskd.dev"
/* Why there is no window list, as the tools say it. */
#define GNOME_NO_WINDOWS "no window list: Mutter alone has none, and GNOME Shell gives it " \
	"with deskd's extension (deskd gnome-extension; gnome-extensions enable " \
	GNOME_EXTENSION_UUID ")"
/* GNOME Shell 45 moved extensions to JavaScript modules: an extension is
 * written in one form or the other. */
#define GNOME_SHELL_FIRST_MODULES 45
/** Write the extension for GNOME Shell shell_major (42 on) into
 *  <data_dir>/gnome-shell/extensions/<uuid>/ (data_dir: the shell's
 *  XDG_DATA_HOME), folders 0700 and files 0600. */
int gnome_extension_install(const char* data_dir, int shell_major, char* err, size_t err_size);
/** The major version `program --version` says ("GNOME Shell 43.9": 43),
 *  within 5 s; -errno with a sentence in err. */
int gnome_shell_major(const char* program, char* err, size_t err_size);
