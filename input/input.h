#pragma once

/* input: pointer and keyboard on a desktop, key names, chords and Unicode
 * typing. input_new picks the backend by the name: an X display (":N",
 * XTest; what the comments below describe) or a wayland: address
 * (wayland_is_address: wlroots virtual devices, input/wayland.c, whose
 * header says where it differs: every character typed through a per-run
 * keymap, so stats->remapped == stats->chars, no spare keycodes needed,
 * input_type_some types everything, focus by sway con id through IPC).
 *
 * One struct input owns one X connection (its own, never shared) and a
 * mutex: every call on it may come from any thread and is serialized inside.
 * X errors are trapped on this connection only (never Xlib's default
 * handler); a lost connection makes every call fail with -ECONNRESET (as in
 * capture/), after which the owner destroys the context and creates a new
 * one.
 *
 * The pure parts (UTF-8 decoding, key names, chords, scroll notches) need no
 * display and are what the unit tests cover. Coordinates here are always
 * absolute desktop pixels; mapping from screenshot space is the caller's. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Buttons, X numbering. */
enum input_button {
	INPUT_BUTTON_LEFT = 1,
	INPUT_BUTTON_MIDDLE = 2,
	INPUT_BUTTON_RIGHT = 3,
	INPUT_BUTTON_WHEEL_UP = 4,
	INPUT_BUTTON_WHEEL_DOWN = 5,
	INPUT_BUTTON_WHEEL_LEFT = 6,
	INPUT_BUTTON_WHEEL_RIGHT = 7,
	INPUT_BUTTON_BACK = 8,
	INPUT_BUTTON_FORWARD = 9,
};

/** Pixels of scroll per wheel notch (one button 4/5/6/7 click). */
#define INPUT_PIXELS_PER_NOTCH 100
/** Most wheel notches one scroll sends per axis. */
#define INPUT_MAX_NOTCHES 1000
/** Most keys in one chord (modifiers included). */
#define INPUT_MAX_CHORD 8

/* ---- Pure helpers (no display) ---- */

/** Decode one UTF-8 sequence at s[*pos] (len bytes in all) into *cp and
 *  advance *pos. Rejects overlong forms, surrogates, code points above
 *  U+10FFFF, truncated and stray continuation bytes: returns -EILSEQ and
 *  leaves *pos at the offending byte. */
int input_utf8_next(const char* s, size_t len, size_t* pos, uint32_t* cp);
/** Check a whole string; returns 0, or -EILSEQ with the byte offset of the
 *  first bad sequence in *bad_offset (may be NULL). */
int input_utf8_validate(const char* s, size_t len, size_t* bad_offset);
/** Can text be typed? 0; -EILSEQ for invalid UTF-8; -EINVAL for a control
 *  character other than \n, \r, \t, \b and ESC. The byte offset of the
 *  culprit goes to *bad_offset (may be NULL). */
int input_text_check(const char* s, size_t len, size_t* bad_offset);

/** The keysym for a key name: OpenAI names (CTRL, ENTER, ARROWLEFT, ...),
 *  xdotool/X keysym names (ctrl, Return, Left, F5, ...), any case, or one
 *  character ("a", "/", "é"). Returns 0 and sets *keysym, or -ENOENT. */
int input_key_lookup(const char* name, uint32_t* keysym);
/** Up to n names closest to an unknown name (edit distance, case-folded),
 *  written comma-separated into out. Returns how many were written. */
int input_key_suggest(const char* name, char* out, size_t size, int n);
/** The X name of a keysym ("Control_L", "a", "U20AC"), for messages. */
int input_keysym_name(uint32_t keysym, char* out, size_t size);
/** Is the keysym a modifier (Shift, Control, Alt, Super, Meta, Hyper)? */
bool input_keysym_is_modifier(uint32_t keysym);

/* A chord: keys pressed in order, released in reverse. */
struct input_chord {
	int n;
	uint32_t keysyms[INPUT_MAX_CHORD];
};

/** Add one named key to a chord. On an unknown name returns -ENOENT and
 *  writes "unknown key 'x'; closest: a, b, c" into err; -E2BIG when full. */
int input_chord_add(struct input_chord* self, const char* name, char* err,
		size_t err_size);
/** Parse an xdotool-style chord "ctrl+shift+t" ("ctrl++" is ctrl and plus;
 *  spaces around names are ignored). Errors as input_chord_add, -EINVAL for
 *  an empty chord or empty name. */
int input_chord_parse(struct input_chord* self, const char* text, char* err,
		size_t err_size);
/** After parsing a chord with modifiers: a single uppercase letter means
 *  its key ("ctrl+A" is ctrl+a), so fold it. Called by the parsers. */
void input_chord_normalize(struct input_chord* self);

/** Scroll pixels to wheel notches: round(|px| / INPUT_PIXELS_PER_NOTCH),
 *  at least 1 for any non-zero px, sign kept. */
int input_pixels_to_notches(double pixels);

/* ---- The desktop side (X11 or Wayland) ---- */

struct input;

/** Connect to display_name (":N", or a wayland: or gnome: address); NULL
 *  on failure with a reason in err. */
struct input* input_new(const char* display_name, char* err, size_t err_size);
/** Release held keys and buttons, wait (at most 3 s) for clients to work
 *  through keys on bound slots, restore every spare keycode exactly as it
 *  was, close the connection. NULL-safe. */
void input_destroy(struct input* self);
/** False once the connection was lost. */
bool input_alive(struct input* self);

/** Screen size in pixels. */
int input_screen_size(struct input* self, int* width, int* height);
/** The pointer position in desktop pixels. */
int input_cursor_position(struct input* self, int* x, int* y);

/** Move the pointer to (x, y). */
int input_move(struct input* self, int x, int y);
/** Press (down) or release a button, 1..9. Pointer actions return once the
 *  server shows the buttons not held as released (at most 500 ms): a window
 *  manager's synchronous grab freezes the pointer until it replays a press,
 *  and a motion sent meanwhile would move the click. */
int input_button(struct input* self, int button, bool down);
/** input_move then input_button, with one round trip to the server where
 *  the backend can (a person's click waits for none in between). */
int input_button_at(struct input* self, int x, int y, int button, bool down);
/** Click count times at the current position with mods held throughout
 *  (pressed before, released after, also on failure). mods may be NULL. */
int input_click(struct input* self, int button, int count,
		const struct input_chord* mods);
/** Press button 1 at path[0], move through every point (with intermediate
 *  motion about every 16 px), release at the last. xs/ys have n >= 2. */
int input_drag(struct input* self, const int* xs, const int* ys, size_t n,
		int button, const struct input_chord* mods);
/** Send notches_x (right > 0) and notches_y (down > 0) wheel clicks at the
 *  current position with mods held. */
int input_scroll(struct input* self, int notches_x, int notches_y,
		const struct input_chord* mods);

/** Press the keys of a chord in order (adding Shift for shifted symbols
 *  unless the chord already has it), release them in reverse. Symbols not on
 *  the keymap go through spare slots, as in input_type. */
int input_key_chord(struct input* self, const struct input_chord* chord);
/** Press (down) or release the keys of a chord (for hold_key, mouse_down
 *  with keys). Releasing a key that is not down is harmless. */
int input_key_chord_state(struct input* self, const struct input_chord* chord,
		bool down);
/** Press or release modifiers (no Shift added); for holding during pointer
 *  actions. */
int input_modifiers(struct input* self, const struct input_chord* mods,
		bool down);

/* Typing */
struct input_type_stats {
	size_t chars;		/* code points typed */
	size_t remapped;	/* of which went through a spare keycode */
	size_t batches;		/* keymap rebinds (spare keycodes bound anew) */
	size_t paced;		/* waits for the app to take the keys before a
				 * character (LibreOffice: before one above
				 * U+FFFF, which it would insert before them) */
	uint32_t unbound;	/* -ENOSPC: the first character off the keymap,
				 * which no spare keycode can carry */
};

/** Type UTF-8 text: keymap characters directly (Shift for level 2),
 *  others through spare slots; "\n" and "\r\n" -> Return, "\t" -> Tab,
 *  "\b" -> BackSpace, ESC -> Escape. Errors of input_text_check() (offset
 *  in *bad_offset) come before anything is typed; -ENOSPC when characters
 *  are off the keymap and the display has no spare keycode.
 *
 *  Slots: each spare keycode (empty, and without a meaning of its own to
 *  browsers: not a browser, media, power or launch key) gives 4 levels
 *  (FOUR_LEVEL: plain, Shift, Level3, both) when the keymap has an
 *  ISO_Level3_Shift key, else 2 (TWO_LEVEL); a pool of fewer than 192
 *  slots (Xvfb's stock keymap: 12 keys, 48) gives each key up to 4 groups,
 *  the group locked for the key's strokes. A character goes on a slot as
 *  its Unicode keysym (0x1000000 + code point; Latin-1 as is), with no case
 *  logic: every symbol gets a slot of its own. All the new symbols of a
 *  call are bound in one XKB request before its first key, followed by a
 *  wait of bind_wait_ms. Bindings stay (least recently used goes first)
 *  and are restored exactly at input_destroy().
 *
 *  Why a slot is never rebound at once: clients translate a keycode with
 *  the keymap as it is when they get to the key, so a lagging client would
 *  turn queued keys into the slot's next symbol. A slot changes only once
 *  the client that got its last key answered a _NET_WM_PING sent after it
 *  (it answers after handling the keys), or, for a client without
 *  _NET_WM_PING, 3 s (plus 1 ms per key) after its last key. A call that
 *  needs more new symbols than there are drained slots types in segments
 *  and waits for the earlier segments' slots to drain (bounded). */
int input_type(struct input* self, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset);
/** As input_type, but where input_type would wait for a slot to drain,
 *  return 0 instead with *done < len (the bytes typed, always whole
 *  characters) and *wait_ms > 0 (when to try the rest: the nearest
 *  quarantine's end, or a short poll for ping answers). So a caller can
 *  wait without its own locks (the desktop lock: other clients' actions
 *  run meanwhile). *done == len and *wait_ms == 0 when all was typed. */
int input_type_some(struct input* self, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset, size_t* done,
		int* wait_ms);

/** Tuning, for tests and the bench: the wait after a binding request
 *  before its first key. Chromium translates the first key after a change
 *  with the old binding without it (INPUT.md: 8/14 exact with no wait,
 *  14/14 with 50 ms, 164/164 with 30 ms). */
#define INPUT_BIND_WAIT_MS 40
void input_set_timing(struct input* self, int bind_wait_ms);
/** How many spare keycodes, and how many slots (keycodes x levels x
 *  groups), this display offers. */
int input_spare_keycodes(struct input* self);
int input_spare_slots(struct input* self);

/* What the client with the keyboard focus needs of typing: it takes keys
 * only for characters up to U+FFFF (Java's AWT keeps the low 16 bits of a
 * keysym above): send those by paste. */
#define INPUT_CLIENT_BMP_KEYS (1u << 8)
/* The desktop's keyboard takes only the characters of its layout (GNOME:
 * Mutter drops a keysym its layout lacks): send other text by paste. */
#define INPUT_CLIENT_LAYOUT_KEYS (1u << 9)
/* The client drops U+FEFF as a key (Qt 5 decodes each key's text as UTF-8
 * and skips a byte-order mark); by paste only at the start of a text. */
#define INPUT_CLIENT_NO_BOM_KEYS (1u << 10)
/** The INPUT_CLIENT_* flags of the client with the keyboard focus (X11: by
 *  the WM_CLASS of the focus window and its ancestors, and the libraries of
 *  the process the X server records for it); 0 on wlroots, and
 *  INPUT_CLIENT_LAYOUT_KEYS on GNOME, whatever has the focus. */
unsigned input_focus_needs(struct input* self);

/** Activate a window as capture_focus_window does (through the window
 *  manager when there is one; directly, mapping and raising it, without one
 *  or when it does not act within a moment); waits until focus arrived, at
 *  most timeout_ms. -ENOENT if the window does not exist, -ETIMEDOUT if
 *  focus never came. */
int input_focus_window(struct input* self, uint32_t window, int timeout_ms);

/** Wait until no client holds the pointer grab (a menu or popup closing
 *  lets go of it after its accessible is gone, and until then takes the
 *  next click for itself), at most timeout_ms: 0, -ETIMEDOUT, or
 *  -ECONNRESET. Where the backend cannot tell (Wayland), 0 at once. */
int input_wait_ungrabbed(struct input* self, int timeout_ms);
