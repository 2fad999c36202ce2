/* input/'s GNOME backend (Mutter): the same operations as x11.c through one
 * RemoteDesktop session (gnome/gnome.h), kept for the context's life.
 *
 * Coordinates are the primary monitor's stream pixels, which are desktop
 * pixels on a one-monitor desktop. Keys go as keysyms: Mutter presses the
 * keysym's key of its current layout with the level's modifiers, and drops
 * a keysym the layout lacks without an error. So typing here takes only the
 * layout's characters (gnome_keysym_typable); input_focus_needs says
 * INPUT_CLIENT_LAYOUT_KEYS, and tools/ sends other text by paste (the
 * session's clipboard, desktop/). A character off the layout that still
 * reaches input_type is -ENOSPC with stats->unbound, before anything is
 * typed.
 *
 * A session that Mutter closed, or a bus that went away, makes this and
 * every later call fail with -ECONNRESET, as on X11, so the owner
 * recreates the context. */
#include "input/input_private.h"
#include "gnome/gnome.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPEN_TIMEOUT_MS 5000
/* After making the devices (gnome_input_warm). */
#define DEVICE_SETTLE_MS 100

struct input_gnome {
	struct input head;	/* first: the ops and the one mutex */
	struct gnome* session;
	char address[GNOME_ADDRESS_MAX];
	struct gnome_shell* shell;	/* window focus through deskd's extension, made at first use */
	bool dead;
	bool buttons_down[10];	/* by input_button, to let go at the end */
	int x, y;		/* where deskd put the pointer last */
	bool batch;		/* inside an action: flush once at its end */
};

static const struct input_ops gnome_ops;

static struct input_gnome* gn_of(struct input* in)
{
	return (struct input_gnome*)in;
}

/* A gnome/ result: a closed session stays closed, and is -ECONNRESET. */
static int gn_rc(struct input_gnome* self, int rc)
{
	if (rc == -EPIPE || rc == -ECONNRESET || (rc < 0 && !gnome_alive(self->session)))
		self->dead = true;
	return self->dead && rc < 0 ? -ECONNRESET : rc;
}

/* Events go out without waiting (gnome/gnome.h): an operation returns once
 * Mutter has taken them all, one round trip at its end, not one per event. */
static int flushed(struct input_gnome* self, int rc)
{
	if (rc == 0 && !self->batch)
		rc = gn_rc(self, gnome_input_flush(self->session));
	return rc;
}

/* An action of several events (a click, a drag, a chord, a text). */
static int batched(struct input_gnome* self, int rc_of_run)
{
	self->batch = false;
	return flushed(self, rc_of_run);
}

struct input* input__gnome_new(const char* address, char* err, size_t err_size)
{
	struct input_gnome* self = calloc(1, sizeof(*self));
	if (!self) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	snprintf(self->address, sizeof(self->address), "%s", address);
	self->session = gnome_open(address, 0, OPEN_TIMEOUT_MS, err, err_size);
	if (!self->session) {
		free(self);
		return NULL;
	}
	if (gnome_input_warm(self->session, DEVICE_SETTLE_MS) < 0) {
		snprintf(err, err_size, "Mutter refused the session's input devices: %s",
				gnome_error(self->session));
		gnome_close(self->session);
		free(self);
		return NULL;
	}
	int w, h;
	gnome_size(self->session, &w, &h);
	self->x = w / 2;
	self->y = h / 2;
	input__head_init(&self->head, &gnome_ops);
	return &self->head;
}

static int release_all_keys(struct input_gnome* self);

/* Let go of what is held (a key left down would repeat), then close. */
static void gn_destroy(struct input* in)
{
	struct input_gnome* self = gn_of(in);
	for (int b = 1; b <= 9 && !self->dead; b++)
		if (self->buttons_down[b])
			gn_rc(self, gnome_pointer_button(self->session, b, false));
	if (!self->dead)
		flushed(self, release_all_keys(self));
	gnome_shell_close(self->shell);
	gnome_close(self->session);
}

static bool gn_alive(struct input* in)
{
	struct input_gnome* self = gn_of(in);
	if (!self->dead && !gnome_alive(self->session))
		self->dead = true;
	return !self->dead;
}

static void gn_set_timing(struct input* in, int bind_wait_ms)
{
	(void)in;
	(void)bind_wait_ms;
}

/* No keycodes are rebound: nothing is spare. */
static int gn_spare(struct input* in)
{
	(void)in;
	return 0;
}

static int gn_screen_size(struct input* in, int* width, int* height)
{
	struct input_gnome* self = gn_of(in);
	if (self->dead)
		return -ECONNRESET;
	gnome_size(self->session, width, height);
	return 0;
}

/* Mutter does not say where the pointer is: where deskd put it last. */
static int gn_cursor_position(struct input* in, int* x, int* y)
{
	struct input_gnome* self = gn_of(in);
	if (self->dead)
		return -ECONNRESET;
	*x = self->x;
	*y = self->y;
	return 0;
}

static int gn_move(struct input* in, int x, int y)
{
	struct input_gnome* self = gn_of(in);
	int rc = gn_rc(self, gnome_pointer_move(self->session, x, y));
	if (rc == 0) {
		self->x = x;
		self->y = y;
	}
	return flushed(self, rc);
}

/* A button as input.h numbers them (1 left, 2 middle, 3 right, 4-7 the
 * wheel, 8 back, 9 forward): the wheel's are a scroll notch. */
static int press_button(struct input_gnome* self, int button, bool down)
{
	static const struct { int dx, dy; } wheel[] = { { 0, -1 }, { 0, 1 }, { -1, 0 }, { 1, 0 } };
	if (button >= 4 && button <= 7) {
		if (!down)
			return 0;
		const int dx = wheel[button - 4].dx, dy = wheel[button - 4].dy;
		return gn_rc(self, dy ? gnome_pointer_scroll(self->session, 0, dy)
				: gnome_pointer_scroll(self->session, 1, dx));
	}
	int rc = gn_rc(self, gnome_pointer_button(self->session, button, down));
	if (rc == 0)
		self->buttons_down[button] = down;
	return rc;
}

static int gn_button(struct input* in, int button, bool down)
{
	struct input_gnome* self = gn_of(in);
	return flushed(self, press_button(self, button, down));
}

/* ---- keys ---- */

/* The keysyms deskd holds down, to let go of at the end. */
static int keys_state(struct input_gnome* self, const struct input_chord* c, bool down)
{
	if (!c || c->n == 0)
		return 0;
	if (self->dead)
		return -ECONNRESET;
	for (int i = 0; i < c->n; i++) {
		uint32_t k = c->keysyms[down ? i : c->n - 1 - i];
		int rc = gn_rc(self, gnome_key_keysym(self->session, k, down));
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Modifiers a failed call may have left down. */
static int release_all_keys(struct input_gnome* self)
{
	static const uint32_t mods[] = { 0xffe1, 0xffe2, 0xffe3, 0xffe4, 0xffe9, 0xffea,
		0xffeb, 0xffec, 0xfe03 };	/* Shift, Control, Alt, Super (L, R), AltGr */
	int rc = 0;
	for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]) && rc == 0; i++)
		rc = gn_rc(self, gnome_key_keysym(self->session, mods[i], false));
	return rc;
}

static int gn_keys(struct input* in, const struct input_chord* chord, bool press, bool release)
{
	struct input_gnome* self = gn_of(in);
	int rc = press ? keys_state(self, chord, true) : 0;
	if (release) {
		int e = keys_state(self, chord, false);
		if (rc == 0)
			rc = e;
	}
	return flushed(self, rc);
}

static int gn_modifiers(struct input* in, const struct input_chord* mods, bool down)
{
	struct input_gnome* self = gn_of(in);
	return flushed(self, keys_state(self, mods, down));
}

/* ---- pointer actions with modifiers held (input.c's) ---- */

static int gn_click(struct input* in, int button, int count, const struct input_chord* mods)
{
	struct pointer_action a = { .button = button, .count = count };
	gn_of(in)->batch = true;
	return batched(gn_of(in), input__with_mods(in, mods, input__act_click, &a));
}

static int gn_drag(struct input* in, const int* xs, const int* ys, size_t n, int button,
		const struct input_chord* mods)
{
	struct pointer_action a = { .button = button, .xs = xs, .ys = ys, .n = n };
	gn_of(in)->batch = true;
	return batched(gn_of(in), input__with_mods(in, mods, input__act_drag, &a));
}

static int act_scroll(struct input* in, const struct pointer_action* a)
{
	struct input_gnome* self = gn_of(in);
	int rc = a->notches_y ? gn_rc(self, gnome_pointer_scroll(self->session, 0, a->notches_y)) : 0;
	if (rc == 0 && a->notches_x)
		rc = gn_rc(self, gnome_pointer_scroll(self->session, 1, a->notches_x));
	return rc;
}

static int gn_scroll(struct input* in, int notches_x, int notches_y,
		const struct input_chord* mods)
{
	struct pointer_action a = { .notches_x = notches_x, .notches_y = notches_y };
	gn_of(in)->batch = true;
	return batched(gn_of(in), input__with_mods(in, mods, act_scroll, &a));
}

/* ---- typing ---- */

/* The keysym a character is typed with: the control characters' keys as
 * on X11 ("\n" Return, "\t" Tab, "\b" BackSpace, ESC Escape), else the
 * Unicode keysym rule (Latin-1 as itself, the rest 0x1000000 + U). */
static uint32_t keysym_of(uint32_t cp)
{
	switch (cp) {
	case '\n': case '\r': return 0xff0d;
	case '\t': return 0xff09;
	case '\b': return 0xff08;
	case 0x1b: return 0xff1b;
	default: return cp < 0x100 ? cp : 0x1000000 + cp;
	}
}

static int gn_type(struct input* in, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset, size_t* done, int* wait_ms)
{
	struct input_gnome* self = gn_of(in);
	int rc = input_text_check(text, len, bad_offset);
	if (rc < 0)
		return rc;
	if (self->dead)
		return -ECONNRESET;
	/* First every character, so that nothing is typed when one cannot be. */
	for (size_t i = 0; i < len;) {
		size_t at = i;
		uint32_t cp;
		input_utf8_next(text, len, &i, &cp);	/* valid: checked above */
		if (!gnome_keysym_typable(self->session, keysym_of(cp))) {
			if (stats)
				stats->unbound = cp;
			if (bad_offset)
				*bad_offset = at;
			return -ENOSPC;
		}
	}
	size_t chars = 0;
	for (size_t i = 0; i < len; chars++) {
		size_t at = i;
		uint32_t cp;
		input_utf8_next(text, len, &i, &cp);
		if (cp == '\r' && i < len && text[i] == '\n') {
			chars--;	/* "\r\n" is one Return, as on X11 */
			continue;
		}
		uint32_t k = keysym_of(cp);
		rc = gn_rc(self, gnome_key_keysym(self->session, k, true));
		if (rc == 0)
			rc = gn_rc(self, gnome_key_keysym(self->session, k, false));
		if (rc < 0) {
			if (done)
				*done = at;
			return rc;
		}
	}
	if ((rc = flushed(self, 0)) < 0)
		return rc;
	if (stats)
		stats->chars = chars;
	if (done)
		*done = len;
	if (wait_ms)
		*wait_ms = 0;
	return 0;
}

/* Through deskd's GNOME Shell extension (Mutter alone has no window calls:
 * -ENOTSUP), as capture/ does. */
static int gn_focus(struct input* in, uint32_t window, int timeout_ms)
{
	struct input_gnome* self = gn_of(in);
	if (self->shell && !gnome_shell_alive(self->shell)) {
		gnome_shell_close(self->shell);
		self->shell = NULL;
	}
	char err[256];
	if (!self->shell)
		self->shell = gnome_shell_open(self->address, OPEN_TIMEOUT_MS, err, sizeof(err));
	return self->shell ? gnome_window_focus(self->shell, window, timeout_ms) : -ENOTSUP;
}

static unsigned gn_focus_needs(struct input* in)
{
	(void)in;
	return INPUT_CLIENT_LAYOUT_KEYS;
}

static const struct input_ops gnome_ops = {
	.name = "gnome",
	.destroy = gn_destroy,
	.alive = gn_alive,
	.screen_size = gn_screen_size,
	.cursor_position = gn_cursor_position,
	.move = gn_move,
	.button = gn_button,
	.click = gn_click,
	.drag = gn_drag,
	.scroll = gn_scroll,
	.keys = gn_keys,
	.modifiers = gn_modifiers,
	.type = gn_type,
	.set_timing = gn_set_timing,
	.spare_keycodes = gn_spare,
	.spare_slots = gn_spare,
	.focus_window = gn_focus,
	.focus_needs = gn_focus_needs,
};
