/* Input: one zwlr_virtual_pointer_v1 and one zwp_virtual_keyboard_v1 for
 * the connection's life (a device made per call makes the seat announce
 * its capability again, and GTK drops the first event after it). Text goes
 * through a keymap made for each run of characters: one keycode per
 * distinct character with that character's keysym, so every string types
 * exactly, whatever the layout of anyone else. */
#define _GNU_SOURCE
#include "wayland/wl_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xkbcommon/xkbcommon.h>

#define BTN_LEFT 0x110
#define BTN_RIGHT 0x111
#define BTN_MIDDLE 0x112
#define BTN_SIDE 0x113
#define BTN_EXTRA 0x114

#define FIRST_KEYCODE 9	/* xkb keycode of the first character; evdev = xkb - 8 */

/* The modifier keys of a chord keymap: keycode, keysym, real modifier. */
static const struct modkey {
	const char* names;	/* '|'-separated, lower case */
	const char* key;	/* xkb key name */
	const char* keysym;
	const char* modifier;
	uint32_t mask;		/* the real modifier's bit (Shift 0 ... Mod5 7) */
	uint32_t keycode;
} modkeys[] = {
	{ "shift", "LFSH", "Shift_L", "Shift", 1u << 0, 250 },
	{ "ctrl|control", "LCTL", "Control_L", "Control", 1u << 2, 251 },
	{ "alt", "LALT", "Alt_L", "Mod1", 1u << 3, 252 },
	{ "super|meta|logo|win", "LWIN", "Super_L", "Mod4", 1u << 6, 253 },
	{ "altgr", "RALT", "ISO_Level3_Shift", "Mod5", 1u << 7, 254 },
};
#define N_MODKEYS (sizeof(modkeys) / sizeof(modkeys[0]))

/* ---- keymaps ---- */

struct text {
	char* s;
	size_t len, cap;
	bool failed;
};

static void text_add(struct text* t, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(struct text* t, const char* fmt, ...)
{
	if (t->failed)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if (t->s && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap * 2 : 4096;
		while (cap < t->len + (size_t)n + 1)
			cap *= 2;
		char* s = realloc(t->s, cap);
		if (!s) {
			t->failed = true;
			return;
		}
		t->s = s;
		t->cap = cap;
	}
}

/* The keysym a character types (Return, Tab, BackSpace, Escape for their
 * control characters); NoSymbol for other controls. */
static xkb_keysym_t keysym_of(uint32_t cp)
{
	if (cp == '\n' || cp == '\r')
		return XKB_KEY_Return;
	if (cp == '\t')
		return XKB_KEY_Tab;
	if (cp == '\b')
		return XKB_KEY_BackSpace;
	if (cp == 0x1b)
		return XKB_KEY_Escape;
	if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) ||
			(cp >= 0xd800 && cp < 0xe000) || cp > 0x10ffff)
		return XKB_KEY_NoSymbol;
	/* Latin-1 as is, every other character as its Unicode keysym, not a
	 * legacy one (GTK drops permille's 0xad5 for one): as X11's slots */
	return cp < 0x100 ? xkb_utf32_to_keysym(cp) : 0x1000000 + cp;
}

/* A self-contained keymap (no includes, so no xkb data files are needed
 * by us or by the clients): syms[i] at keycode FIRST_KEYCODE + i, the
 * modifier keys too when mods. Compiled here once to check it and to send
 * the compiler's own normalized text. */
static char* keymap_build(const xkb_keysym_t* syms, size_t n, bool mods, int* err)
{
	struct text t = { 0 };
	char name[64];
	if (n > WAYLAND_KEYMAP_MAX) {
		*err = -E2BIG;
		return NULL;
	}
	text_add(&t, "xkb_keymap {\nxkb_keycodes \"deskd\" {\n\tminimum = 8;\n\tmaximum = 255;\n");
	for (size_t i = 0; i < n; i++)
		text_add(&t, "\t<K%zu> = %zu;\n", FIRST_KEYCODE + i, FIRST_KEYCODE + i);
	if (mods)
		for (size_t i = 0; i < N_MODKEYS; i++)
			text_add(&t, "\t<%s> = %u;\n", modkeys[i].key, modkeys[i].keycode);
	text_add(&t, "};\nxkb_types \"deskd\" {\n"
			"\ttype \"ONE_LEVEL\" { modifiers = none; level_name[Level1] = \"Any\"; };\n"
			"};\nxkb_compat \"deskd\" {\n"
			"\tinterpret Any+AnyOf(all) { action = SetMods(modifiers=modMapMods,clearLocks); };\n"
			"};\nxkb_symbols \"deskd\" {\n");
	for (size_t i = 0; i < n; i++) {
		if (xkb_keysym_get_name(syms[i], name, sizeof(name)) < 0) {
			free(t.s);
			*err = -EINVAL;
			return NULL;
		}
		text_add(&t, "\tkey <K%zu> { [ %s ] };\n", FIRST_KEYCODE + i, name);
	}
	if (mods)
		for (size_t i = 0; i < N_MODKEYS; i++)
			text_add(&t, "\tkey <%s> { [ %s ] };\n\tmodifier_map %s { <%s> };\n",
					modkeys[i].key, modkeys[i].keysym, modkeys[i].modifier,
					modkeys[i].key);
	text_add(&t, "};\n};\n");
	if (t.failed) {
		free(t.s);
		*err = -ENOMEM;
		return NULL;
	}
	struct xkb_context* ctx = xkb_context_new(XKB_CONTEXT_NO_DEFAULT_INCLUDES |
			XKB_CONTEXT_NO_ENVIRONMENT_NAMES);
	if (!ctx) {
		free(t.s);
		*err = -ENOMEM;
		return NULL;
	}
	struct xkb_keymap* km = xkb_keymap_new_from_string(ctx, t.s,
			XKB_KEYMAP_FORMAT_TEXT_V1, XKB_KEYMAP_COMPILE_NO_FLAGS);
	free(t.s);
	char* out = km ? xkb_keymap_get_as_string(km, XKB_KEYMAP_FORMAT_TEXT_V1) : NULL;
	if (!km)
		log_warn("wayland: a generated keymap did not compile (a bug in wayland/input.c)");
	xkb_keymap_unref(km);
	xkb_context_unref(ctx);
	if (!out)
		*err = km ? -ENOMEM : -EINVAL;
	return out;
}

char* wayland_keymap_text(const uint32_t* cps, size_t n, bool mods, int* err)
{
	xkb_keysym_t syms[WAYLAND_KEYMAP_MAX];
	int e = 0;
	if (!err)
		err = &e;
	if (n > WAYLAND_KEYMAP_MAX) {
		*err = -E2BIG;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		syms[i] = keysym_of(cps[i]);
		if (syms[i] == XKB_KEY_NoSymbol) {
			*err = -EINVAL;
			return NULL;
		}
	}
	return keymap_build(syms, n, mods, err);
}

/* ---- the devices ---- */

static int keymap_upload(struct wayland* self, const char* text)
{
	size_t size = strlen(text) + 1;
	void* data;
	int fd = wl__memfd("deskd-keymap", size, &data);
	if (fd < 0)
		return fd;
	memcpy(data, text, size);
	munmap(data, size);
	zwp_virtual_keyboard_v1_keymap(self->keyboard, WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1,
			fd, (uint32_t)size);
	close(fd);	/* libwayland sent a duplicate */
	return 0;
}

static int ensure_devices(struct wayland* self)
{
	if (self->pointer && self->keyboard)
		return 0;
	if (!self->seat || !self->pointer_manager || !self->keyboard_manager) {
		log_warn("wayland: no virtual input here (missing: %s)", self->missing);
		return -ENOTSUP;
	}
	if (!self->pointer) {
		self->pointer = zwlr_virtual_pointer_manager_v1_create_virtual_pointer(
				self->pointer_manager, self->seat);
		if (!self->pointer)
			return -ENOMEM;
	}
	if (!self->keyboard) {
		self->keyboard = zwp_virtual_keyboard_manager_v1_create_virtual_keyboard(
				self->keyboard_manager, self->seat);
		if (!self->keyboard)
			return -ENOMEM;
		/* a keyboard must have a keymap before its first key */
		int err;
		char* km = keymap_build(NULL, 0, true, &err);
		if (!km)
			return err;
		int r = keymap_upload(self, km);
		free(km);
		if (r < 0)
			return r;
		self->keymap_id = 1;
	}
	return 0;
}

int wayland_input_open(struct wayland* self, int settle_ms, int timeout_ms)
{
	bool fresh = !self->pointer || !self->keyboard;
	int r = ensure_devices(self);
	if (r < 0)
		return r;
	r = wayland_sync(self, timeout_ms);
	if (r < 0 || !fresh)
		return r;
	int64_t end = clock_ms() + settle_ms;
	while (clock_ms() < end) {
		r = wayland_dispatch(self, (int)(end - clock_ms()));
		if (r < 0)
			return r;
	}
	return 0;
}

/* Where deskd's virtual pointer went last, process-wide: a Wayland client
 * cannot ask the compositor where the pointer is, and the capture side (the
 * live view's cursor, cursor_position) has a connection of its own. Bit 63:
 * set once it moved. */
static _Atomic uint64_t last_pointer;

int wayland_pointer_move(struct wayland* self, int32_t x, int32_t y, int timeout_ms)
{
	int r = ensure_devices(self);
	if (r < 0)
		return r;
	/* Outputs added, moved or rescaled since the last call: their events
	 * wait unread on the socket, and the mapping below needs the layout as
	 * it is now. */
	if ((r = wayland_dispatch(self, 0)) < 0)
		return r;
	bool inside = false;
	for (int i = 0; i < self->n_outputs && !inside; i++) {
		const struct wayland_output* o = &self->outputs[i].info;
		inside = x >= o->x && y >= o->y && x < o->x + o->width && y < o->y + o->height;
	}
	if (!inside)
		return -EINVAL;
	int32_t lx, ly, lw, lh;
	wayland_layout(self, &lx, &ly, &lw, &lh);
	/* wlroots maps x / x_extent onto the whole layout box */
	zwlr_virtual_pointer_v1_motion_absolute(self->pointer, wl__time(self),
			(uint32_t)(x - lx), (uint32_t)(y - ly), (uint32_t)lw, (uint32_t)lh);
	zwlr_virtual_pointer_v1_frame(self->pointer);
	int rc = wayland_sync(self, timeout_ms);
	if (rc == 0)
		atomic_store(&last_pointer, (uint64_t)1 << 63 | (uint64_t)(uint32_t)x << 31
				| (uint64_t)((uint32_t)y & 0x7fffffff));
	return rc;
}

int wayland_pointer_last(int32_t* x, int32_t* y)
{
	uint64_t v = atomic_load(&last_pointer);
	if (!(v >> 63))
		return -ENODATA;
	/* x in bits 31..62, y in 0..30: layout coordinates are far below 2^30 */
	*x = (int32_t)(uint32_t)((v >> 31) & 0xffffffffu);
	*y = (int32_t)(v & 0x7fffffff);
	return 0;
}

static uint32_t button_code(int button)
{
	switch (button) {
	case 1: return BTN_LEFT;
	case 2: return BTN_MIDDLE;
	case 3: return BTN_RIGHT;
	case 8: return BTN_SIDE;
	case 9: return BTN_EXTRA;
	default: return 0;
	}
}

int wayland_pointer_button(struct wayland* self, int button, bool down, int timeout_ms)
{
	uint32_t code = button_code(button);
	if (!code)
		return -EINVAL;
	int r = ensure_devices(self);
	if (r < 0)
		return r;
	zwlr_virtual_pointer_v1_button(self->pointer, wl__time(self), code,
			down ? WL_POINTER_BUTTON_STATE_PRESSED : WL_POINTER_BUTTON_STATE_RELEASED);
	zwlr_virtual_pointer_v1_frame(self->pointer);
	return wayland_sync(self, timeout_ms);
}

int wayland_pointer_click(struct wayland* self, int32_t x, int32_t y, int button,
		int count, int timeout_ms)
{
	int64_t deadline = clock_ms() + timeout_ms;
	uint32_t code = button_code(button);
	if (!code || count < 1)
		return -EINVAL;
	int r = wayland_pointer_move(self, x, y, timeout_ms);
	if (r < 0)
		return r;
	for (int i = 0; i < count; i++) {
		zwlr_virtual_pointer_v1_button(self->pointer, wl__time(self), code,
				WL_POINTER_BUTTON_STATE_PRESSED);
		zwlr_virtual_pointer_v1_frame(self->pointer);
		zwlr_virtual_pointer_v1_button(self->pointer, wl__time(self), code,
				WL_POINTER_BUTTON_STATE_RELEASED);
		zwlr_virtual_pointer_v1_frame(self->pointer);
	}
	return wayland_sync(self, (int)(deadline - clock_ms()));
}

static void scroll_axis(struct wayland* self, uint32_t axis, int steps)
{
	zwlr_virtual_pointer_v1_axis_source(self->pointer, WL_POINTER_AXIS_SOURCE_WHEEL);
	zwlr_virtual_pointer_v1_axis_discrete(self->pointer, wl__time(self), axis,
			wl_fixed_from_int(15 * steps), steps);
	zwlr_virtual_pointer_v1_frame(self->pointer);
}

int wayland_pointer_scroll(struct wayland* self, int dx, int dy, int timeout_ms)
{
	int r = ensure_devices(self);
	if (r < 0)
		return r;
	/* one step per frame, as a wheel sends them */
	for (int i = 0; i < abs(dy); i++)
		scroll_axis(self, WL_POINTER_AXIS_VERTICAL_SCROLL, dy > 0 ? 1 : -1);
	for (int i = 0; i < abs(dx); i++)
		scroll_axis(self, WL_POINTER_AXIS_HORIZONTAL_SCROLL, dx > 0 ? 1 : -1);
	return wayland_sync(self, timeout_ms);
}

/* ---- text ---- */

/* Decode UTF-8 (strict: no overlongs, no surrogates); -EINVAL if invalid. */
static int utf8_decode(const char* s, uint32_t** out, size_t* n)
{
	size_t len = strlen(s);
	uint32_t* cps = malloc((len + 1) * sizeof(*cps));
	if (!cps)
		return -ENOMEM;
	size_t k = 0;
	const unsigned char* p = (const unsigned char*)s;
	while (*p) {
		uint32_t c = *p;
		int extra;
		uint32_t min;
		if (c < 0x80) {
			extra = 0;
			min = 0;
		} else if ((c & 0xe0) == 0xc0) {
			extra = 1;
			c &= 0x1f;
			min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			extra = 2;
			c &= 0x0f;
			min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			extra = 3;
			c &= 0x07;
			min = 0x10000;
		} else {
			goto invalid;
		}
		p++;
		for (int i = 0; i < extra; i++, p++) {
			if ((*p & 0xc0) != 0x80)
				goto invalid;
			c = c << 6 | (*p & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
			goto invalid;
		cps[k++] = c;
	}
	*out = cps;
	*n = k;
	return 0;
invalid:
	free(cps);
	return -EINVAL;
}

static int chord_keymap(struct wayland* self);

static void key_tap(struct wayland* self, uint32_t keycode)
{
	zwp_virtual_keyboard_v1_key(self->keyboard, wl__time(self), keycode - 8,
			WL_KEYBOARD_KEY_STATE_PRESSED);
	zwp_virtual_keyboard_v1_key(self->keyboard, wl__time(self), keycode - 8,
			WL_KEYBOARD_KEY_STATE_RELEASED);
}

int wayland_type(struct wayland* self, const char* utf8, int delay_ms, int timeout_ms)
{
	int64_t deadline = clock_ms() + timeout_ms;
	uint32_t* cps;
	size_t n;
	int r = utf8_decode(utf8, &cps, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (keysym_of(cps[i]) == XKB_KEY_NoSymbol) {
			free(cps);
			return -EINVAL;
		}
	}
	r = ensure_devices(self);
	if (r < 0)
		goto out;
	size_t start = 0;
	while (start < n) {
		/* the longest run from start with at most WAYLAND_KEYMAP_MAX
		 * distinct characters */
		uint32_t distinct[WAYLAND_KEYMAP_MAX];
		size_t nd = 0, end = start;
		for (; end < n; end++) {
			uint32_t c = cps[end] == '\r' ? '\n' : cps[end];
			size_t j = 0;
			while (j < nd && distinct[j] != c)
				j++;
			if (j == nd) {
				if (nd == WAYLAND_KEYMAP_MAX)
					break;
				distinct[nd++] = c;
			}
		}
		char* km = wayland_keymap_text(distinct, nd, false, &r);
		if (!km)
			goto out;
		r = keymap_upload(self, km);
		free(km);
		if (r < 0)
			goto out;
		self->keymap_id = 2;
		zwp_virtual_keyboard_v1_modifiers(self->keyboard, 0, 0, 0, 0);
		for (size_t i = start; i < end; i++) {
			uint32_t c = cps[i] == '\r' ? '\n' : cps[i];
			size_t j = 0;
			while (distinct[j] != c)
				j++;
			key_tap(self, FIRST_KEYCODE + (uint32_t)j);
			if (delay_ms > 0) {
				r = wl__flush(self, deadline);
				if (r < 0)
					goto out;
				clock_sleep_ms(delay_ms);
			}
		}
		/* the next keymap only once these keys are handled */
		r = wayland_sync(self, (int)(deadline - clock_ms()));
		if (r < 0)
			goto out;
		start = end;
	}
	if (wayland_keys_held(self))
		r = chord_keymap(self);	/* held modifiers apply again */
	if (r == 0)
		r = wayland_sync(self, (int)(deadline - clock_ms()));
out:
	free(cps);
	return r;
}

/* The keysym a chord names: an xkb name, a few common aliases, or one
 * character. */
static xkb_keysym_t chord_keysym(const char* name)
{
	static const struct {
		const char* alias;
		const char* name;
	} aliases[] = {
		{ "enter", "Return" }, { "return", "Return" }, { "esc", "Escape" },
		{ "escape", "Escape" }, { "del", "Delete" }, { "delete", "Delete" },
		{ "backspace", "BackSpace" }, { "tab", "Tab" }, { "space", "space" },
		{ "pgup", "Prior" }, { "pageup", "Prior" }, { "pgdn", "Next" },
		{ "pagedown", "Next" }, { "left", "Left" }, { "right", "Right" },
		{ "up", "Up" }, { "down", "Down" }, { "home", "Home" }, { "end", "End" },
		{ "insert", "Insert" },
	};
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strcasecmp(name, aliases[i].alias) == 0)
			return xkb_keysym_from_name(aliases[i].name, XKB_KEYSYM_NO_FLAGS);
	uint32_t* cps;
	size_t n;
	if (utf8_decode(name, &cps, &n) == 0) {
		xkb_keysym_t sym = n == 1 ? keysym_of(cps[0]) : XKB_KEY_NoSymbol;
		free(cps);
		if (sym != XKB_KEY_NoSymbol)
			return sym;
	}
	xkb_keysym_t sym = xkb_keysym_from_name(name, XKB_KEYSYM_NO_FLAGS);
	if (sym == XKB_KEY_NoSymbol)
		sym = xkb_keysym_from_name(name, XKB_KEYSYM_CASE_INSENSITIVE);
	return sym;
}

static const struct modkey* modkey_find(const char* name, size_t len)
{
	for (size_t i = 0; i < N_MODKEYS; i++) {
		const char* p = modkeys[i].names;
		while (*p) {
			size_t l = strcspn(p, "|");
			if (l == len && strncasecmp(p, name, len) == 0)
				return &modkeys[i];
			p += l;
			if (*p == '|')
				p++;
		}
	}
	return NULL;
}

/* ---- held keys ---- */

/* The modifier key a keysym is, or NULL. */
static const struct modkey* modkey_of_keysym(xkb_keysym_t sym)
{
	switch (sym) {
	case XKB_KEY_Shift_L: case XKB_KEY_Shift_R: return &modkeys[0];
	case XKB_KEY_Control_L: case XKB_KEY_Control_R: return &modkeys[1];
	case XKB_KEY_Alt_L: case XKB_KEY_Alt_R:
	case XKB_KEY_Meta_L: case XKB_KEY_Meta_R: return &modkeys[2];
	case XKB_KEY_Super_L: case XKB_KEY_Super_R:
	case XKB_KEY_Hyper_L: case XKB_KEY_Hyper_R: return &modkeys[3];
	case XKB_KEY_ISO_Level3_Shift: case XKB_KEY_Mode_switch: return &modkeys[4];
	default: return NULL;
	}
}

bool wayland_keys_held(const struct wayland* self)
{
	if (self->held_mods)
		return true;
	for (int i = 0; i < self->n_keys; i++)
		if (self->key_down[i])
			return true;
	return false;
}

static uint32_t held_mask(const struct wayland* self)
{
	uint32_t mask = 0;
	for (size_t i = 0; i < N_MODKEYS; i++)
		if (self->held_mods & 1u << i)
			mask |= modkeys[i].mask;
	return mask;
}

/* Make the keyboard hold the chord keymap of key_syms (upload it when it
 * holds another), with the held modifiers' state: a new keymap resets it. */
static int chord_keymap(struct wayland* self)
{
	if (self->keymap_id == 1 && self->keymap_keys == self->n_keys)
		return 0;
	int r;
	char* km = keymap_build(self->key_syms, (size_t)self->n_keys, true, &r);
	if (!km)
		return r;
	r = keymap_upload(self, km);
	free(km);
	if (r < 0)
		return r;
	self->keymap_id = 1;
	self->keymap_keys = self->n_keys;
	/* A client starts a fresh state with a new keymap (GTK does) while the
	 * compositor forwards modifiers only when they change: so change them
	 * (none, then the held ones) for clients to see what is held. */
	uint32_t mask = held_mask(self);
	zwp_virtual_keyboard_v1_modifiers(self->keyboard, 0, 0, 0, 0);
	if (mask)
		zwp_virtual_keyboard_v1_modifiers(self->keyboard, mask, 0, 0, 0);
	return 0;
}

/* The index of a non-modifier key in key_syms, or -1. */
static int key_index(const struct wayland* self, xkb_keysym_t sym)
{
	for (int i = 0; i < self->n_keys; i++)
		if (self->key_syms[i] == sym)
			return i;
	return -1;
}

/* Give every non-modifier key of syms a place in key_syms. A key keeps its
 * place (its keycode) while anything is held, so the list starts over only
 * when nothing is; keys there already need no new keymap (ctrl+a again).
 * -E2BIG when full. */
static int keys_add(struct wayland* self, const uint32_t* syms, size_t n)
{
	bool missing = false;
	for (size_t i = 0; i < n; i++)
		if (!modkey_of_keysym(syms[i]) && key_index(self, syms[i]) < 0)
			missing = true;
	if (!missing)
		return 0;
	if (!wayland_keys_held(self)) {
		self->n_keys = 0;
		self->keymap_keys = -1;	/* the keyboard's chord keymap is stale */
	}
	for (size_t i = 0; i < n; i++) {
		if (modkey_of_keysym(syms[i]) || key_index(self, syms[i]) >= 0)
			continue;
		if (self->n_keys == WAYLAND_HELD_MAX)
			return -E2BIG;
		self->key_down[self->n_keys] = false;
		self->key_syms[self->n_keys++] = syms[i];
	}
	return 0;
}

/* One key down or up; modifiers send their new state along (the virtual
 * keyboard does not derive it from its keys). */
static void key_send(struct wayland* self, xkb_keysym_t sym, bool down)
{
	const struct modkey* m = modkey_of_keysym(sym);
	uint32_t state = down ? WL_KEYBOARD_KEY_STATE_PRESSED : WL_KEYBOARD_KEY_STATE_RELEASED;
	if (m) {
		uint32_t bit = 1u << (m - modkeys);
		if (!down && !(self->held_mods & bit))
			return;
		zwp_virtual_keyboard_v1_key(self->keyboard, wl__time(self), m->keycode - 8, state);
		self->held_mods = down ? self->held_mods | bit : self->held_mods & ~bit;
		zwp_virtual_keyboard_v1_modifiers(self->keyboard, held_mask(self), 0, 0, 0);
		return;
	}
	int i = key_index(self, sym);
	if (i < 0 || self->key_down[i] == down)
		return;	/* a release of a key not down, or a press of one held */
	zwp_virtual_keyboard_v1_key(self->keyboard, wl__time(self),
			FIRST_KEYCODE + (uint32_t)i - 8, state);
	self->key_down[i] = down;
}

int wayland_keys(struct wayland* self, const uint32_t* keysyms, size_t n, bool down,
		int timeout_ms)
{
	for (size_t i = 0; i < n; i++)
		if (keysyms[i] == XKB_KEY_NoSymbol)
			return -EINVAL;
	int r = ensure_devices(self);
	if (r < 0)
		return r;
	if (down) {
		r = keys_add(self, keysyms, n);
		if (r < 0)
			return r;
	}
	r = chord_keymap(self);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		key_send(self, down ? keysyms[i] : keysyms[n - 1 - i], down);
	return wayland_sync(self, timeout_ms);
}

int wayland_keys_release_all(struct wayland* self, int timeout_ms)
{
	if (!wayland_keys_held(self))
		return 0;
	uint32_t syms[WAYLAND_HELD_MAX + N_MODKEYS];
	size_t n = 0;
	for (size_t i = 0; i < N_MODKEYS; i++)
		if (self->held_mods & 1u << i)
			syms[n++] = xkb_keysym_from_name(modkeys[i].keysym, XKB_KEYSYM_NO_FLAGS);
	for (int i = 0; i < self->n_keys; i++)
		if (self->key_down[i])
			syms[n++] = self->key_syms[i];
	return wayland_keys(self, syms, n, false, timeout_ms);
}

/* ---- named chords ---- */

int wayland_key_chord(struct wayland* self, const char* chord, int timeout_ms)
{
	uint32_t syms[N_MODKEYS + 1];
	size_t n = 0;
	const char* p = chord;
	const char* plus;
	/* "ctrl++" is ctrl and '+': a '+' right at the end is the key */
	while ((plus = strchr(p, '+')) && plus[1] != '\0') {
		const struct modkey* m = modkey_find(p, (size_t)(plus - p));
		if (!m || n == N_MODKEYS)
			return -EINVAL;
		syms[n++] = xkb_keysym_from_name(m->keysym, XKB_KEYSYM_NO_FLAGS);
		p = plus + 1;
	}
	if (!*p)
		return -EINVAL;
	syms[n] = chord_keysym(p);
	if (syms[n] == XKB_KEY_NoSymbol)
		return -EINVAL;
	int64_t deadline = clock_ms() + timeout_ms;
	int r = wayland_keys(self, syms, n + 1, true, timeout_ms);
	int e = wayland_keys(self, syms, n + 1, false, (int)(deadline - clock_ms()));
	return r < 0 ? r : e;
}
