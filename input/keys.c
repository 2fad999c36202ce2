/* Key names: OpenAI computer-use names, xdotool names and X keysym names, in
 * any case; chords; suggestions for unknown names; scroll notches. Pure: no
 * display needed. */
#include "input/input.h"
#include "base/text.h"

#include <X11/keysym.h>
#include <xkbcommon/xkbcommon.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct key_alias {
	const char* name;
	uint32_t keysym;
};

/* Names agents use that are not X keysym names (or are, but in another
 * case). Looked up case-insensitively before the keysym names. */
static const struct key_alias aliases[] = {
	{ "ctrl", XK_Control_L }, { "control", XK_Control_L },
	{ "lctrl", XK_Control_L }, { "rctrl", XK_Control_R },
	{ "alt", XK_Alt_L }, { "option", XK_Alt_L }, { "opt", XK_Alt_L },
	{ "lalt", XK_Alt_L }, { "ralt", XK_Alt_R }, { "altgr", XK_ISO_Level3_Shift },
	{ "shift", XK_Shift_L }, { "lshift", XK_Shift_L }, { "rshift", XK_Shift_R },
	{ "cmd", XK_Super_L }, { "command", XK_Super_L }, { "super", XK_Super_L },
	{ "win", XK_Super_L }, { "windows", XK_Super_L }, { "meta", XK_Super_L },
	{ "hyper", XK_Hyper_L },
	{ "enter", XK_Return }, { "return", XK_Return },
	{ "esc", XK_Escape }, { "escape", XK_Escape },
	{ "tab", XK_Tab }, { "space", XK_space },
	{ "backspace", XK_BackSpace }, { "bksp", XK_BackSpace },
	{ "delete", XK_Delete }, { "del", XK_Delete },
	{ "insert", XK_Insert }, { "ins", XK_Insert },
	{ "home", XK_Home }, { "end", XK_End },
	{ "pageup", XK_Page_Up }, { "pagedown", XK_Page_Down },
	{ "pgup", XK_Page_Up }, { "pgdn", XK_Page_Down },
	{ "page_up", XK_Page_Up }, { "page_down", XK_Page_Down },
	{ "arrowleft", XK_Left }, { "arrowright", XK_Right },
	{ "arrowup", XK_Up }, { "arrowdown", XK_Down },
	{ "left", XK_Left }, { "right", XK_Right }, { "up", XK_Up }, { "down", XK_Down },
	{ "capslock", XK_Caps_Lock }, { "numlock", XK_Num_Lock },
	{ "scrolllock", XK_Scroll_Lock },
	{ "printscreen", XK_Print }, { "print", XK_Print }, { "prtsc", XK_Print },
	{ "pause", XK_Pause }, { "break", XK_Break },
	{ "menu", XK_Menu }, { "contextmenu", XK_Menu }, { "apps", XK_Menu },
	{ "plus", XK_plus }, { "minus", XK_minus },
	{ "/", XK_slash }, { "\\", XK_backslash },
};

/* Canonical names offered as suggestions beside the aliases. */
static const char* const suggest_names[] = {
	"Return", "BackSpace", "Tab", "Escape", "Delete", "Insert", "Home", "End",
	"Page_Up", "Page_Down", "Left", "Right", "Up", "Down", "space",
	"Shift_L", "Shift_R", "Control_L", "Control_R", "Alt_L", "Alt_R",
	"Super_L", "Super_R", "Caps_Lock", "Num_Lock", "KP_Enter", "Menu",
	"Print", "Pause", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9",
	"F10", "F11", "F12", "F13", "F14", "F15", "F16", "F17", "F18", "F19",
	"F20", "F21", "F22", "F23", "F24",
};

#define N_ALIASES (sizeof(aliases) / sizeof(aliases[0]))
#define N_SUGGEST (sizeof(suggest_names) / sizeof(suggest_names[0]))

int input_key_lookup(const char* name, uint32_t* keysym)
{
	size_t len = name ? strlen(name) : 0;
	if (len == 0)
		return -ENOENT;

	/* One character: its own keysym ("a", "A", "/", "é"). */
	size_t pos = 0;
	uint32_t cp;
	if (input_utf8_next(name, len, &pos, &cp) == 0 && pos == len
			&& cp >= 0x20 && cp != 0x7F) {
		xkb_keysym_t sym = xkb_utf32_to_keysym(cp);
		if (sym != XKB_KEY_NoSymbol) {
			*keysym = sym;
			return 0;
		}
	}
	for (size_t i = 0; i < N_ALIASES; i++) {
		if (strcasecmp(aliases[i].name, name) == 0) {
			*keysym = aliases[i].keysym;
			return 0;
		}
	}
	/* X keysym names, exact (what XStringToKeysym accepts), then in any
	 * case. libxkbcommon's table is pure and thread-safe, unlike Xlib's
	 * lazily built keysym database. */
	xkb_keysym_t sym = xkb_keysym_from_name(name, XKB_KEYSYM_NO_FLAGS);
	if (sym == XKB_KEY_NoSymbol)
		sym = xkb_keysym_from_name(name, XKB_KEYSYM_CASE_INSENSITIVE);
	if (sym == XKB_KEY_NoSymbol || sym == XKB_KEY_VoidSymbol || sym > 0x1FFFFFFF)
		return -ENOENT;
	*keysym = (uint32_t)sym;
	return 0;
}

bool input_keysym_is_modifier(uint32_t keysym)
{
	switch (keysym) {
	case XK_Shift_L: case XK_Shift_R:
	case XK_Control_L: case XK_Control_R:
	case XK_Alt_L: case XK_Alt_R:
	case XK_Meta_L: case XK_Meta_R:
	case XK_Super_L: case XK_Super_R:
	case XK_Hyper_L: case XK_Hyper_R:
	case XK_ISO_Level3_Shift: case XK_Mode_switch:
		return true;
	default:
		return false;
	}
}

/* Levenshtein distance, case-folded, on at most 63 bytes of each. */
static int edit_distance(const char* a, const char* b)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	if (la > 63)
		la = 63;
	if (lb > 63)
		lb = 63;
	int prev[64], cur[64];
	for (int j = 0; j <= lb; j++)
		prev[j] = j;
	for (int i = 1; i <= la; i++) {
		cur[0] = i;
		for (int j = 1; j <= lb; j++) {
			int cost = tolower((unsigned char)a[i - 1])
					!= tolower((unsigned char)b[j - 1]);
			int best = prev[j - 1] + cost;
			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			cur[j] = best;
		}
		memcpy(prev, cur, sizeof(int) * (size_t)(lb + 1));
	}
	return prev[lb];
}

int input_key_suggest(const char* name, char* out, size_t size, int n)
{
	enum { MAX_PICK = 8 };
	const char* pick[MAX_PICK];
	int dist[MAX_PICK];
	int count = 0;
	if (n > MAX_PICK)
		n = MAX_PICK;
	if (size)
		out[0] = '\0';
	for (size_t k = 0; k < N_ALIASES + N_SUGGEST; k++) {
		const char* cand = k < N_ALIASES ? aliases[k].name
				: suggest_names[k - N_ALIASES];
		if (strlen(cand) == 1)
			continue;
		bool dup = false;
		for (int i = 0; i < count; i++)
			if (strcasecmp(pick[i], cand) == 0)
				dup = true;
		if (dup)
			continue;
		int d = edit_distance(name, cand);
		/* A prefix match ("page" for "pageup") counts as close. */
		size_t ln = strlen(name);
		if (ln >= 2 && strncasecmp(name, cand, ln) == 0 && d > 1)
			d = 1;
		int at = count;
		while (at > 0 && dist[at - 1] > d)
			at--;
		if (at >= n)
			continue;
		int last = count < n ? count : n - 1;
		for (int i = last; i > at; i--) {
			pick[i] = pick[i - 1];
			dist[i] = dist[i - 1];
		}
		pick[at] = cand;
		dist[at] = d;
		if (count < n)
			count++;
	}
	size_t used = 0;
	for (int i = 0; i < count && used < size; i++) {
		int w = snprintf(out + used, size - used, "%s%s", i ? ", " : "", pick[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return count;
}

int input_chord_add(struct input_chord* self, const char* name, char* err,
		size_t err_size)
{
	uint32_t sym;
	if (input_key_lookup(name, &sym) < 0) {
		char near[256];
		input_key_suggest(name, near, sizeof(near), 5);
		/* Quote at most 100 bytes of the name, so the hint fits. */
		snprintf(err, err_size, "unknown key '%.*s'; closest valid names: %s"
				" (or any X keysym name such as F5, KP_Enter, XF86AudioMute, or a single character)",
				text_cut(name, 100), name, near);
		return -ENOENT;
	}
	if (self->n >= INPUT_MAX_CHORD) {
		snprintf(err, err_size, "too many keys in one chord (at most %d)",
				INPUT_MAX_CHORD);
		return -E2BIG;
	}
	self->keysyms[self->n++] = sym;
	return 0;
}

void input_chord_normalize(struct input_chord* self)
{
	bool mods = false;
	for (int i = 0; i < self->n; i++)
		if (input_keysym_is_modifier(self->keysyms[i]))
			mods = true;
	if (!mods)
		return;
	for (int i = 0; i < self->n; i++)
		if (self->keysyms[i] >= XK_A && self->keysyms[i] <= XK_Z)
			self->keysyms[i] += XK_a - XK_A;
}

int input_chord_parse(struct input_chord* self, const char* text, char* err,
		size_t err_size)
{
	self->n = 0;
	size_t len = strlen(text), i = 0;
	char name[128];
	while (i < len && text[i] == ' ')
		i++;
	if (i == len) {
		snprintf(err, err_size, "empty key chord; give names like \"ctrl+c\"");
		return -EINVAL;
	}
	for (;;) {
		size_t start = i, end;
		if (text[i] == '+') {
			end = ++i;	/* the key is "+" itself */
		} else {
			while (i < len && text[i] != '+')
				i++;
			end = i;
		}
		while (start < end && text[start] == ' ')
			start++;
		while (end > start && text[end - 1] == ' ')
			end--;
		if (end == start || end - start >= sizeof(name)) {
			snprintf(err, err_size, "bad key chord \"%.*s\": %s", text_cut(text, 100),
					text, end == start ? "empty key name" : "key name too long");
			return -EINVAL;
		}
		memcpy(name, text + start, end - start);
		name[end - start] = '\0';
		int rc = input_chord_add(self, name, err, err_size);
		if (rc < 0)
			return rc;
		while (i < len && text[i] == ' ')
			i++;
		if (i == len)
			break;
		if (text[i] != '+') {
			snprintf(err, err_size, "bad key chord \"%.*s\"", text_cut(text, 100), text);
			return -EINVAL;
		}
		i++;
		while (i < len && text[i] == ' ')
			i++;
		if (i == len) {
			snprintf(err, err_size, "bad key chord \"%.*s\": ends with '+' (write ctrl+plus or ctrl++ for the plus key)",
					text_cut(text, 100), text);
			return -EINVAL;
		}
	}
	input_chord_normalize(self);
	return 0;
}

int input_pixels_to_notches(double pixels)
{
	if (pixels == 0 || isnan(pixels))
		return 0;
	double a = fabs(pixels) / INPUT_PIXELS_PER_NOTCH;
	long n = a > INPUT_MAX_NOTCHES * 10.0 ? INPUT_MAX_NOTCHES * 10 : lround(a);
	if (n < 1)
		n = 1;
	return pixels < 0 ? -(int)n : (int)n;
}

int input_keysym_name(uint32_t keysym, char* out, size_t size)
{
	int n = xkb_keysym_get_name(keysym, out, size);
	if (n < 0) {
		snprintf(out, size, "0x%x", keysym);
		return -ENOENT;
	}
	return 0;
}
