/* input/'s wlroots backend (sway): the same operations as x11.c through
 * wayland/'s one virtual pointer and one virtual keyboard, kept for the
 * context's life (a device made per call makes the seat announce its
 * capability again, and GTK drops the first event after it).
 *
 * Coordinates are the layout's logical ones (desktop pixels). Typing is
 * exact for any Unicode: wayland_type uploads a keymap made of the text's
 * own characters, so there are no spare keycodes to run out of and nothing
 * to wait for (input_type_some types everything). Stats: chars counts code
 * points; remapped counts them all (every character goes through a
 * generated keymap, none through a default layout); batches stays 0 (no
 * keycodes are rebound as on X11). input_set_timing is a no-op (there is
 * no binding wait).
 *
 * An X window (Xwayland) with the focus: keys and text go to it through
 * an X11 context on the Xwayland display the address names (XTest there
 * reaches its clients), not through the virtual keyboard, whose per-string
 * keymaps Xwayland's clients do not follow (they read keys with the layout
 * Xwayland started with: "warm" arrived as "1234" in xterm). Which window
 * has the focus comes from sway's IPC, asked once per call; without IPC
 * from Xwayland's input focus; without an Xwayland everything goes through
 * the virtual keyboard.
 *
 * A dead connection (-EPIPE, -EPROTO from wayland/) makes this and every
 * later call fail with -ECONNRESET, as on X11, so the owner recreates the
 * context. */
#include "input/input_private.h"
#include "wayland/wayland.h"
#include "base/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every compositor round trip's bound. */
#define CALL_TIMEOUT_MS 5000
/* Typing's bound grows with the text: the compositor takes keys at far
 * more than 1 per ms, so this only catches a compositor that stopped. */
#define TYPE_MS_PER_CHAR 2
/* After creating the devices: clients bind wl_pointer and wl_keyboard when
 * the seat shows the capability and lose events that come before. */
#define DEVICE_SETTLE_MS 100
#define CONNECT_TIMEOUT_MS 5000
/* How often focus_window reads sway's tree back. */
#define FOCUS_POLL_MS 10

struct input_wl {
	struct input head;	/* first: the ops and the one mutex */
	struct wayland* wl;
	char ipc[256];		/* sway's IPC socket, "" when the address has none */
	bool dead;
	bool buttons_down[10];	/* by input_button, to let go at the end */
	char x11_display[32];	/* the compositor's Xwayland, "" none */
	struct input* x11;	/* keys and text for its windows; made when first needed */
};

static const struct input_ops wl_ops;

static struct input_wl* wl_of(struct input* in)
{
	return (struct input_wl*)in;
}

/* A wayland/ result: a dead connection stays dead, and is -ECONNRESET. */
static int wl_rc(struct input_wl* self, int rc)
{
	if (rc == -EPIPE || rc == -EPROTO || rc == -ECONNRESET)
		self->dead = true;
	return self->dead && rc < 0 ? -ECONNRESET : rc;
}

struct input* input__wayland_new(const char* address, char* err, size_t err_size)
{
	char socket_path[256];
	struct input_wl* self = calloc(1, sizeof(*self));
	if (!self) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	int e = wayland_address_parse(address, socket_path, sizeof(socket_path),
			self->ipc, sizeof(self->ipc));
	if (e < 0) {
		snprintf(err, err_size, "bad Wayland address %s: %s", address, strerror(-e));
		free(self);
		return NULL;
	}
	self->wl = wayland_connect(socket_path, NULL, CONNECT_TIMEOUT_MS, &e);
	if (!self->wl) {
		snprintf(err, err_size, "cannot connect to %s: %s", socket_path, strerror(-e));
		free(self);
		return NULL;
	}
	e = wayland_input_open(self->wl, DEVICE_SETTLE_MS, CALL_TIMEOUT_MS);
	if (e < 0) {
		snprintf(err, err_size, "no virtual input on %s: %s (missing: %s)", socket_path,
				strerror(-e), wayland_missing(self->wl));
		wayland_disconnect(self->wl);
		free(self);
		return NULL;
	}
	if (wayland_address_x11(address, self->x11_display, sizeof(self->x11_display)) < 0)
		self->x11_display[0] = '\0';
	input__head_init(&self->head, &wl_ops);
	return &self->head;
}

/* The X11 context on the Xwayland display, made when first needed and
 * remade when its connection died; NULL without one. */
static struct input* x_context(struct input_wl* self)
{
	if (self->x11 && !input_alive(self->x11)) {
		input_destroy(self->x11);
		self->x11 = NULL;
	}
	if (!self->x11) {
		char err[256];
		self->x11 = input_new(self->x11_display, err, sizeof(err));
	}
	return self->x11;
}

/* Is the focused window an X one? sway's tree says so exactly (shell
 * "xwayland"); without IPC, Xwayland's own input focus does (an X window
 * holds it only while it has the keyboard). */
static bool x_window_focused(struct input_wl* self)
{
	if (!self->x11_display[0])
		return false;
	if (!self->ipc[0]) {
		struct input* x = x_context(self);
		return x && input__x11_window_focused(x);
	}
	struct wayland_window* ws;
	size_t n;
	if (wayland_sway_windows(self->ipc, CALL_TIMEOUT_MS, &ws, &n) < 0)
		return false;
	bool x = false;
	for (size_t i = 0; i < n; i++)
		if (ws[i].focused)
			x = ws[i].xwayland;
	wayland_windows_free(ws, n);
	return x;
}

/* The X11 context for the focused X window's keys, or NULL (keys go
 * through the virtual keyboard then). */
static struct input* x_keys(struct input_wl* self)
{
	return x_window_focused(self) ? x_context(self) : NULL;
}

/* Let go of what is held (a key left down would repeat in the client),
 * then close. */
static void wl_destroy(struct input* in)
{
	struct input_wl* self = wl_of(in);
	for (int b = 1; b <= 9 && !self->dead; b++)
		if (self->buttons_down[b])
			wl_rc(self, wayland_pointer_button(self->wl, b, false, CALL_TIMEOUT_MS));
	if (!self->dead)
		wayland_keys_release_all(self->wl, CALL_TIMEOUT_MS);
	wayland_disconnect(self->wl);
	input_destroy(self->x11);	/* restores the Xwayland's keymap */
}

static bool wl_alive(struct input* in)
{
	return !wl_of(in)->dead;
}

static void wl_set_timing(struct input* in, int bind_wait_ms)
{
	(void)in;
	(void)bind_wait_ms;
}

/* No spare keycodes are needed: say how many distinct characters one
 * keymap holds. */
static int wl_spare(struct input* in)
{
	(void)in;
	return WAYLAND_KEYMAP_MAX;
}

static int wl_screen_size(struct input* in, int* width, int* height)
{
	struct input_wl* self = wl_of(in);
	int32_t x, y, w, h;
	if (self->dead)
		return -ECONNRESET;
	wayland_layout(self->wl, &x, &y, &w, &h);
	*width = w;
	*height = h;
	return 0;
}

/* The compositor does not tell a client where the pointer is: where deskd
 * put it last. */
static int wl_cursor_position(struct input* in, int* x, int* y)
{
	if (wl_of(in)->dead)
		return -ECONNRESET;
	int32_t px, py;
	int rc = wayland_pointer_last(&px, &py);
	if (rc < 0)
		return rc;
	*x = px;
	*y = py;
	return 0;
}

static int wl_move(struct input* in, int x, int y)
{
	struct input_wl* self = wl_of(in);
	return wl_rc(self, wayland_pointer_move(self->wl, x, y, CALL_TIMEOUT_MS));
}

static int wl_button(struct input* in, int button, bool down)
{
	struct input_wl* self = wl_of(in);
	int rc = wl_rc(self, wayland_pointer_button(self->wl, button, down, CALL_TIMEOUT_MS));
	if (rc == 0)
		self->buttons_down[button] = down;
	return rc;
}

/* Keys of a chord down in order or up in reverse (wayland_keys). */
static int keys_state(struct input_wl* self, const struct input_chord* c, bool down)
{
	if (!c || c->n == 0)
		return 0;
	if (self->dead)
		return -ECONNRESET;
	return wl_rc(self, wayland_keys(self->wl, c->keysyms, (size_t)c->n, down,
			CALL_TIMEOUT_MS));
}

static int wl_keys(struct input* in, const struct input_chord* chord, bool press,
		bool release)
{
	struct input_wl* self = wl_of(in);
	struct input* x = x_keys(self);
	if (x && press && release)
		return input_key_chord(x, chord);
	if (x)
		return input_key_chord_state(x, chord, press);
	int rc = press ? keys_state(self, chord, true) : 0;
	if (release) {
		int e = keys_state(self, chord, false);
		if (rc == 0)
			rc = e;
	}
	return rc;
}

static int wl_modifiers(struct input* in, const struct input_chord* mods, bool down)
{
	return keys_state(wl_of(in), mods, down);
}

/* Pointer actions with mods held (input.c's). */

static int wl_click(struct input* in, int button, int count, const struct input_chord* mods)
{
	struct pointer_action a = { .button = button, .count = count };
	return input__with_mods(in, mods, input__act_click, &a);
}

static int wl_drag(struct input* in, const int* xs, const int* ys, size_t n, int button,
		const struct input_chord* mods)
{
	struct pointer_action a = { .button = button, .xs = xs, .ys = ys, .n = n };
	return input__with_mods(in, mods, input__act_drag, &a);
}

static int act_scroll(struct input* in, const struct pointer_action* a)
{
	struct input_wl* self = wl_of(in);
	return wl_rc(self, wayland_pointer_scroll(self->wl, a->notches_x, a->notches_y,
			CALL_TIMEOUT_MS));
}

static int wl_scroll(struct input* in, int notches_x, int notches_y,
		const struct input_chord* mods)
{
	struct pointer_action a = { .notches_x = notches_x, .notches_y = notches_y };
	return input__with_mods(in, mods, act_scroll, &a);
}

/* The text as wayland_type takes it: NUL-terminated, "\r\n" one Return
 * (as on X11; a lone "\r" is Return too, wayland_type's own rule).
 * *chars: its code points. NULL when out of memory. */
static char* type_text(const char* text, size_t len, size_t* chars)
{
	char* s = malloc(len + 1);
	if (!s)
		return NULL;
	size_t k = 0;
	*chars = 0;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
			continue;
		if (((unsigned char)text[i] & 0xc0) != 0x80)
			(*chars)++;
		s[k++] = text[i];
	}
	s[k] = '\0';
	return s;
}

static int wl_type(struct input* in, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset, size_t* done,
		int* wait_ms)
{
	struct input_wl* self = wl_of(in);
	int rc = input_text_check(text, len, bad_offset);
	if (rc < 0)
		return rc;
	if (self->dead)
		return -ECONNRESET;
	struct input* x = x_keys(self);
	if (x && done)
		return input_type_some(x, text, len, stats, bad_offset, done, wait_ms);
	if (x)
		return input_type(x, text, len, stats, bad_offset);
	size_t chars;
	char* s = type_text(text, len, &chars);
	if (!s)
		return -ENOMEM;
	int timeout = CALL_TIMEOUT_MS + (int)(chars > 1000000 ? 1000000 : chars) * TYPE_MS_PER_CHAR;
	rc = wl_rc(self, wayland_type(self->wl, s, 0, timeout));
	free(s);
	if (rc < 0)
		return rc;
	if (stats) {
		stats->chars = chars;
		stats->remapped = chars;
	}
	if (done)
		*done = len;
	if (wait_ms)
		*wait_ms = 0;
	return 0;
}

/* ---- windows: sway's con ids, or foreign-toplevel's without IPC ---- */

/* Is con id in sway's tree (*found), and focused (*focused)? */
static int con_state(const char* ipc, int64_t id, int timeout_ms, bool* found, bool* focused)
{
	struct wayland_window* ws;
	size_t n;
	int rc = wayland_sway_windows(ipc, timeout_ms, &ws, &n);
	if (rc < 0)
		return rc;
	*found = *focused = false;
	for (size_t i = 0; i < n; i++) {
		if (ws[i].id == id) {
			*found = true;
			*focused = ws[i].focused;
		}
	}
	wayland_windows_free(ws, n);
	return 0;
}

/* Without IPC: the foreign-toplevel list's ids (wayland/toplevel.c),
 * activated until the compositor says it is the active one. */
static int focus_toplevel(uint32_t window, int64_t deadline)
{
	struct wayland_toplevel t;
	int rc = wayland_toplevel_get(window, &t);
	if (rc == 0)
		rc = wayland_toplevel_request(window, WAYLAND_TOPLEVEL_ACTIVATE);
	while (rc == 0) {
		if ((rc = wayland_toplevel_get(window, &t)) < 0 || t.activated)
			break;
		if (clock_ms() >= deadline)
			return -ETIMEDOUT;
		clock_sleep_ms(FOCUS_POLL_MS);
	}
	return rc == -ENODATA ? -ENOTSUP : rc;
}

static int wl_focus(struct input* in, uint32_t window, int timeout_ms)
{
	struct input_wl* self = wl_of(in);
	if (self->dead)
		return -ECONNRESET;
	int64_t deadline = clock_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	if (!self->ipc[0])
		return focus_toplevel(window, deadline);
	bool found, focused;
	int rc = con_state(self->ipc, window, CALL_TIMEOUT_MS, &found, &focused);
	if (rc < 0)
		return rc;
	if (!found)
		return -ENOENT;
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "[con_id=%u] focus", (unsigned)window);
	rc = wayland_sway_command(self->ipc, cmd, CALL_TIMEOUT_MS, NULL, 0);
	if (rc < 0)
		return rc == -EINVAL ? -ENOENT : rc;
	for (;;) {
		rc = con_state(self->ipc, window, CALL_TIMEOUT_MS, &found, &focused);
		if (rc < 0)
			return rc;
		if (!found)
			return -ENOENT;
		if (focused)
			return 0;
		if (clock_ms() >= deadline)
			return -ETIMEDOUT;
		clock_sleep_ms(FOCUS_POLL_MS);
	}
}

static const struct input_ops wl_ops = {
	.name = "wayland",
	.destroy = wl_destroy,
	.alive = wl_alive,
	.screen_size = wl_screen_size,
	.cursor_position = wl_cursor_position,
	.move = wl_move,
	.button = wl_button,
	.click = wl_click,
	.drag = wl_drag,
	.scroll = wl_scroll,
	.keys = wl_keys,
	.modifiers = wl_modifiers,
	.type = wl_type,
	.set_timing = wl_set_timing,
	.spare_keycodes = wl_spare,
	.spare_slots = wl_spare,
	.focus_window = wl_focus,
};
