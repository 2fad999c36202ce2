/* The action tools: computer_use (a batch of actions, DESIGN.md 6.1) and one
 * split tool computer_<type> per action type. Both run the same executor:
 * validate every action first (nothing runs when one is malformed), then
 * run them in order on the input module, stopping at the first failure.
 *
 * Coordinates are in the screenshot space of the target (the screen, or a
 * window's client area when `window` is given), mapped to desktop pixels
 * exactly with desktop_target() + desktop_map(). Out of range
 * is an error, never clamped. */
#include "tools/tools.h"
#include "tools/actions.h"
#include "base/clock.h"
#include "desktop/desktop.h"
#include "base/log.h"
#include "base/text.h"
#include "base/real.h"
#include "input/input.h"
#include "capture/capture.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_ACTIONS 100
#define TYPE_MAX_MS 60000	/* one type action */
#define FOCUS_TIMEOUT_MS 1000
#define SETTLE_QUIET_MS 50
#define SETTLE_MAX_MS 1000
#define PASTE_TAKE_MS 5000	/* the target converts the selection within this */
#define PASTE_SETTLE_MS 30	/* then inserts it */
#define PASTE_PAINT_MS 500	/* and repaints with it within this, or we go on */
#define PASTE_SAVE_MS 2000	/* reading the previous clipboard */

/* ---- running ---- */

struct batch {
	struct tool_ctx* ctx;
	struct input* in;
	uint32_t window;
	bool focused;
	int max_dimension;	/* set by a screenshot in this batch; -1 none */
	bool has_space;		/* the batch's coordinate_space is a space token */
	int space_width, space_height, space_max;
	json_t* images;		/* image content blocks, in order */
	bool locked;		/* the call holds the desktop lock (TOOL_DESKTOP_LOCK) */
	bool acts;		/* the tool is not read-only: a person's take stops it */
};

/* The target in screenshot space. Which space, first match:
 * 1. the action's coordinate_space token,
 * 2. a screenshot earlier in this batch,
 * 3. the batch's coordinate_space token,
 * 4. the session's last max_dimension for the target (legacy MCP sessions),
 * 5. --max-image-dimension (REST, MCP 2026-07-28 without a token).
 * A token must still describe the target: if the target changed size since
 * the screenshot that named it, mapping would be inexact, so it is an error. */
static int batch_target(struct batch* b, const struct action* a,
		struct desktop_target* t, int* max_used, struct act_error* e)
{
	bool token = (a && a->has_space) || (b->max_dimension < 0 && b->has_space);
	int tw = 0, th = 0, max_dim;
	if (a && a->has_space) {
		tw = a->space_width, th = a->space_height, max_dim = a->space_max;
	} else if (b->max_dimension >= 0) {
		max_dim = b->max_dimension;
	} else if (b->has_space) {
		tw = b->space_width, th = b->space_height, max_dim = b->space_max;
	} else {
		max_dim = tool_session_max_dimension(b->ctx->session, b->window);
	}
	if (max_used)
		*max_used = max_dim;
	char err[256] = "";
	int rc = desktop_target(b->window, max_dim, t, err, sizeof(err));
	if (rc < 0)
		return action_fail(e, tool_code_for_errno(rc), "%s", err[0] ? err : "cannot resolve the target");
	if (token && (t->image_width != tw || t->image_height != th)) {
		char want[32], now[32];
		action_space_format(want, sizeof(want), tw, th, max_dim);
		action_space_format(now, sizeof(now), t->image_width, t->image_height, max_dim);
		char what[32] = "the screen";
		if (b->window)
			snprintf(what, sizeof(what), "window %u", b->window);
		return action_fail(e, TOOL_OUT_OF_BOUNDS, "coordinate_space %s is stale: %s changed "
				"size and its screenshots are %s now; take a new screenshot", want, what, now);
	}
	return 0;
}

/* Screenshot-space (or desktop) point -> desktop pixel, or out_of_bounds. */
static int map_point(struct batch* b, const struct action* a, int x, int y,
		int* dx, int* dy, struct act_error* e)
{
	int sw, sh;
	if (input_screen_size(b->in, &sw, &sh) < 0)
		return action_fail(e, TOOL_DISPLAY_UNAVAILABLE, "the X display is gone");
	if (a->desktop_space) {
		if (x < 0 || y < 0 || x >= sw || y >= sh)
			return action_fail(e, TOOL_OUT_OF_BOUNDS,
					"(%d, %d) is outside the desktop (0..%d, 0..%d)", x, y,
					sw - 1, sh - 1);
		*dx = x;
		*dy = y;
		return 0;
	}
	struct desktop_target t;
	int max_dim;
	if (batch_target(b, a, &t, &max_dim, e) < 0)
		return -1;
	int iw = t.image_width, ih = t.image_height;
	if (x < 0 || y < 0 || x >= iw || y >= ih) {
		/* Name the space in force and how to change it: a caller that
		 * thinks in desktop pixels (a REST script on a 1920x1080 screen)
		 * must see why 1500 is out of range. */
		char what[64], space[400];
		if (t.window)
			snprintf(what, sizeof(what), LOG_WINDOW, LOG_WINDOW_ID(t.window));
		else
			snprintf(what, sizeof(what), "the screen");
		const char* of = t.window ? "window" : "desktop";
		if (iw != t.width || ih != t.height)
			snprintf(space, sizeof(space),
					"coordinates are screenshot pixels: the %dx%d %s scaled by max_dimension %d. "
					"For desktop pixels pass \"coordinate_space\": \"desktop\"; for native size "
					"use max_dimension 0 (a screenshot's, or deskd --max-image-dimension 0)",
					t.width, t.height, of, max_dim);
		else
			snprintf(space, sizeof(space),
					"screenshot pixels are desktop pixels here (max_dimension %d does not scale the %dx%d %s)",
					max_dim, t.width, t.height, of);
		return action_fail(e, TOOL_OUT_OF_BOUNDS,
				"(%d, %d) is outside the %dx%d screenshot of %s (x 0..%d, y 0..%d); %s",
				x, y, iw, ih, what, iw - 1, ih - 1, space);
	}
	*dx = t.x + desktop_map(x, t.width, iw);
	*dy = t.y + desktop_map(y, t.height, ih);
	if (*dx < 0 || *dy < 0 || *dx >= sw || *dy >= sh)
		return action_fail(e, TOOL_OUT_OF_BOUNDS,
				"(%d, %d) of " LOG_WINDOW " is at desktop (%d, %d), off the screen",
				x, y, LOG_WINDOW_ID(t.window), *dx, *dy);
	return 0;
}

static int input_error(int rc, const char* what, struct act_error* e)
{
	switch (rc) {
	case -ECONNRESET:
		return action_fail(e, TOOL_DISPLAY_UNAVAILABLE, "%s: the X connection was lost", what);
	case -ENOENT:
		return action_fail(e, TOOL_UNKNOWN_KEY, "%s: a key is not on the keyboard map and cannot be held", what);
	case -ENOSPC:
		return action_fail(e, TOOL_NO_SPARE_KEYS, "%s: a character is not on the keyboard map and "
				"the display has no free spare keycode (an empty keycode) to bind it to; "
				"type only characters of the layout, or free empty keycodes", what);
	default:
		return action_fail(e, TOOL_INTERNAL, "%s failed: %s", what, strerror(-rc));
	}
}

static int focus_target(struct batch* b, struct act_error* e)
{
	if (!b->window || b->focused)
		return 0;
	int rc = input_focus_window(b->in, b->window, FOCUS_TIMEOUT_MS);
	if (rc == -ENOENT)
		return action_fail(e, TOOL_WINDOW_NOT_FOUND, LOG_WINDOW " does not exist (any more); list windows with the windows tool", LOG_WINDOW_ID(b->window));
	if (rc == -ETIMEDOUT)
		return action_fail(e, TOOL_TIMEOUT, LOG_WINDOW " did not take the focus within %d ms", LOG_WINDOW_ID(b->window), FOCUS_TIMEOUT_MS);
	if (rc < 0)
		return input_error(rc, "focusing the window", e);
	b->focused = true;
	return 0;
}

/* May the batch go on? Fails e (human_in_control, paused) when a person
 * took the desktop or paused the agent since the call was admitted. */
static int batch_still_admitted(struct batch* b, struct act_error* e)
{
	enum tool_code code;
	const char* why;
	if (b->acts && tools_gate_interrupted(b->ctx, &code, &why))
		return action_fail(e, code, "%s", why);
	return 0;
}

/* Sleep ms, waking for cancellation, a person taking the desktop or a
 * pause; bounded by the call's deadline. let_go: the batch's desktop lock
 * is let go while sleeping, so a person's input (or another call) runs at
 * once, not after the wait (not while keys are held down). */
static int sleep_bounded(struct batch* b, int ms, bool let_go, struct act_error* e)
{
	int64_t end = clock_ms() + ms;
	if (b->ctx->deadline_ms && end > b->ctx->deadline_ms)
		return action_fail(e, TOOL_TIMEOUT, "waiting %d ms would pass the call's deadline", ms);
	for (;;) {
		if (b->ctx->cancelled && atomic_load(b->ctx->cancelled))
			return action_fail(e, TOOL_TIMEOUT, "cancelled by the client");
		if (batch_still_admitted(b, e) < 0)
			return -1;
		int64_t left = end - clock_ms();
		if (left <= 0)
			return 0;
		int step = left > 20 ? 20 : (int)left;
		if (!let_go)
			clock_sleep_ms(step);
		else if (desktop_lock_pause(step) && b->window)
			b->focused = false;	/* another action ran: the focus may have moved */
	}
}

/* Call the capture tools (screenshot, zoom) with this batch's target. */
static int capture_call(struct batch* b, const char* tool, json_t* args,
		json_t* res, struct act_error* e)
{
	const struct tool_def* def = tools_find(tool);
	if (!def || !def->handler) {
		json_decref(args);
		return action_fail(e, TOOL_INTERNAL, "the %s tool is not available in this build", tool);
	}
	if (b->window)
		json_object_set_new(args, "window", json_integer(b->window));
	/* A screenshot in this batch fixed the space (REST has no session to
	 * remember it); zoom's max_dimension only sizes its output. */
	if (strcmp(tool, "screenshot") == 0 && !json_object_get(args, "max_dimension")
			&& (b->max_dimension >= 0 || b->has_space))
		json_object_set_new(args, "max_dimension", json_integer(
				b->max_dimension >= 0 ? b->max_dimension : b->space_max));
	/* zoom's region is in the batch's space when it names one. */
	if (strcmp(tool, "zoom") == 0 && !json_object_get(args, "coordinate_space")) {
		char space[32];
		struct desktop_target t;
		char terr[128];
		if (b->max_dimension >= 0 && desktop_target(b->window, b->max_dimension, &t,
				terr, sizeof(terr)) == 0)
			action_space_format(space, sizeof(space), t.image_width, t.image_height,
					b->max_dimension);
		else if (b->has_space)
			action_space_format(space, sizeof(space), b->space_width,
					b->space_height, b->space_max);
		else
			space[0] = '\0';
		if (space[0])
			json_object_set_new(args, "coordinate_space", json_string(space));
	}
	struct tool_result sub;
	tool_result_init(&sub);
	int rc = def->handler(b->ctx, args, &sub);
	json_decref(args);
	if (rc < 0 && !sub.is_error) {
		tool_result_deinit(&sub);
		return action_fail(e, TOOL_INTERNAL, "%s failed: %s", tool, strerror(-rc));
	}
	if (sub.is_error) {
		const char* m = json_string_value(json_object_get(sub.structured, "message"));
		action_fail(e, sub.code, "%s", m ? m : tool);
		tool_result_deinit(&sub);
		return -1;
	}
	size_t i;
	json_t* block;
	json_array_foreach(sub.content, i, block) {
		const char* btype = json_string_value(json_object_get(block, "type"));
		if (btype && strcmp(btype, "image") == 0) {
			json_array_append(b->images, block);
			json_object_set_new(res, "image_index",
					json_integer((json_int_t)json_array_size(b->images) - 1));
		}
	}
	if (sub.structured)
		json_object_set(res, "image", sub.structured);
	tool_result_deinit(&sub);
	return 0;
}

static json_t* chord_names(const struct input_chord* c)
{
	json_t* arr = json_array();
	for (int i = 0; i < c->n; i++) {
		char name[64];
		input_keysym_name(c->keysyms[i], name, sizeof(name));
		json_array_append_new(arr, json_string(name));
	}
	return arr;
}

/* Run one validated action; fill res with its fields. */
/* type: desktop_hands_type's loop (the one a person's typing runs too),
 * with the agent's hooks: between chunks the desktop lock goes to waiting
 * actions, cancellation, a person's take or a pause and the call's deadline
 * are honoured, progress is reported, the focus comes back after others
 * ran, and the whole action is bounded by TYPE_MAX_MS (D5). */
struct typing {
	struct batch* b;
	struct act_error* e;
	int64_t start;
	bool reported;	/* e already says what went wrong */
};

static void typing_progress(void* ud, const struct desktop_typing* t)
{
	struct typing* ty = ud;
	struct tool_ctx* ctx = ty->b->ctx;
	if (ctx->progress)
		ctx->progress(ctx->notify_ud, (double)t->typed, (double)t->total, "typing");
}

static bool typing_stop(void* ud, const struct desktop_typing* t)
{
	struct typing* ty = ud;
	struct tool_ctx* ctx = ty->b->ctx;
	if (ctx->cancelled && atomic_load(ctx->cancelled)) {
		action_fail(ty->e, TOOL_TIMEOUT, "cancelled after %zu of %zu characters",
				t->typed, t->total);
		return ty->reported = true;
	}
	enum tool_code code;
	const char* why;
	if (tools_gate_interrupted(ctx, &code, &why)) {
		action_fail(ty->e, code, "typed %zu of %zu characters: %s", t->typed, t->total, why);
		return ty->reported = true;
	}
	int64_t now = clock_ms();
	if (now - ty->start > TYPE_MAX_MS || (ctx->deadline_ms && now > ctx->deadline_ms)) {
		action_fail(ty->e, TOOL_TIMEOUT,
				"typed %zu of %zu characters in %lld ms, the limit; send the rest in another call",
				t->typed, t->total, (long long)(now - ty->start));
		return ty->reported = true;
	}
	return false;
}

static int typing_others_ran(void* ud)
{
	struct typing* ty = ud;
	struct batch* b = ty->b;
	if (!b->window)
		return 0;
	b->focused = false;	/* another action ran: the focus may have moved */
	if (focus_target(b, ty->e) < 0) {
		ty->reported = true;
		return -1;
	}
	return 0;
}

static int paste_text(struct batch* b, const struct action* a, json_t* res,
		struct act_error* e);

/* type where keys cannot carry the text (a client that takes only BMP
 * characters as keys; GNOME's keyboard, which has only its layout's): the
 * whole text by paste (paste_text: the clipboard saved and put back; its
 * result says "method": "paste", and "client" names the client when one
 * was the reason), in one paste. Runs of keys and pastes in turn were
 * exact too, but a second paste within a moment of the first was once not
 * taken by AWT within 5 s (PITFALLS 27e). */
static int type_by_paste(struct batch* b, const struct action* a, const char* client,
		const char* because, json_t* res, struct act_error* e)
{
	struct action run = *a;
	run.paste = true;
	run.has_chord = false;
	if (paste_text(b, &run, res, e) < 0) {
		char why[sizeof(e->message)];
		snprintf(why, sizeof(why), "%s", e->message);
		return action_fail(e, e->code, "type: %s, and that failed: %s", because, why);
	}
	if (client)
		json_object_set_new(res, "client", json_string(client));
	return 0;
}

static bool has_non_ascii(const char* s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return true;
	return false;
}

static bool has_astral(const char* s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0xF0)	/* a 4-byte sequence's lead */
			return true;
	return false;
}

/* U+FEFF (EF BB BF) anywhere in s; *first: at its start. */
static bool has_bom(const char* s, size_t len, bool* first)
{
	*first = len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0;
	for (size_t i = 0; i + 3 <= len; i++)
		if (memcmp(s + i, "\xEF\xBB\xBF", 3) == 0)
			return true;
	return false;
}

static int type_text(struct batch* b, const struct action* a, json_t* res,
		struct act_error* e)
{
	/* Java's AWT keeps only the low 16 bits of a keysym above U+FFFF
	 * (input.h, PITFALLS.md): there such text goes by paste. */
	unsigned needs = input_focus_needs(b->in);
	if (has_astral(a->text, a->text_len) && (needs & INPUT_CLIENT_BMP_KEYS))
		return type_by_paste(b, a, "java", "text with characters above U+FFFF goes by paste "
				"to java, which takes them wrong as keys", res, e);
	/* Qt 5 drops U+FEFF as a key, and at a text's start by paste too. */
	bool bom_first;
	if ((needs & INPUT_CLIENT_NO_BOM_KEYS) && has_bom(a->text, a->text_len, &bom_first)) {
		if (bom_first)
			return action_fail(e, TOOL_BAD_ARGUMENTS, "type: the focused app (Qt 5) drops "
					"U+FEFF at the start of a text, typed or pasted (it reads the "
					"text as UTF-8 and skips a byte-order mark); nothing was typed. "
					"Send U+FEFF after another character, or U+2060 (word joiner)");
		return type_by_paste(b, a, "qt", "text with U+FEFF goes by paste to Qt 5, which "
				"drops it as a key", res, e);
	}
	/* GNOME: Mutter types only its layout's keysyms (a US layout here). */
	if (has_non_ascii(a->text, a->text_len) && (needs & INPUT_CLIENT_LAYOUT_KEYS))
		return type_by_paste(b, a, NULL, "text with characters off the keyboard layout goes "
				"by paste on GNOME, whose keyboard takes only the layout's keys", res, e);
	struct typing ty = { .b = b, .e = e, .start = clock_ms() };
	struct desktop_typing t = { .yield = true, .stop = typing_stop,
		.others_ran = typing_others_ran, .progress = typing_progress, .ud = &ty };
	int rc = desktop_hands_type(b->in, a->text, a->text_len, &t);
	json_object_set_new(res, "chars", json_integer((json_int_t)t.typed));
	if (t.remapped)
		json_object_set_new(res, "remapped", json_integer((json_int_t)t.remapped));
	if (t.paced)
		json_object_set_new(res, "paced", json_integer((json_int_t)t.paced));
	if (ty.reported)
		return -1;
	if (rc == -ENOSPC && t.unbound)
		return action_fail(e, TOOL_NO_SPARE_KEYS, "type: U+%04X is not on the keyboard map and "
				"the display has no free spare keycode (an empty keycode) to bind it to; "
				"type only characters of the layout, or free empty keycodes",
				(unsigned)t.unbound);
	if (t.drain_timeout)
		return action_fail(e, TOOL_TIMEOUT,
				"typed %zu of %zu characters; no spare keycode was free again within %d ms",
				t.typed, t.total, DESKTOP_TYPE_DRAIN_MAX_MS);
	return rc < 0 ? input_error(rc, "type", e) : 0;
}

/* ---- paste ---- */

/* WM_CLASS instances or classes of terminals: they paste with shift+Insert
 * (ctrl+v is a control character there), most of them from PRIMARY. */
static bool is_terminal(const struct capture_window_info* w)
{
	static const char* const names[] = { "xterm", "uxterm", "urxvt", "rxvt", "st",
		"st-256color", "kitty", "alacritty", "gnome-terminal", "gnome-terminal-server",
		"konsole", "xfce4-terminal", "terminator", "tilix", "lxterminal", "mate-terminal",
		"sakura", "terminology", "qterminal", "eterm", "aterm", "wezterm", "foot",
		"roxterm", "guake", "tilda", "yakuake", "cool-retro-term", "terminal", NULL };
	if (strncasecmp(w->instance, "urxvt", 5) == 0)
		return true;	/* urxvt, urxvtd clients, urxvt-256color */
	for (int i = 0; names[i]; i++)
		if (strcasecmp(w->instance, names[i]) == 0 || strcasecmp(w->app, names[i]) == 0)
			return true;
	return false;
}

/* The window that will get the chord: the batch's target, else the focused
 * one. false when none is known. */
static bool paste_target(struct batch* b, struct capture_window_info* out)
{
	struct capture_window_info* list = NULL;
	size_t n = 0;
	bool found = false;
	if (desktop_windows(&list, &n) == 0) {
		for (size_t i = 0; i < n && !found; i++) {
			if (b->window ? list[i].id == b->window : list[i].focused) {
				*out = list[i];
				found = true;
			}
		}
	}
	free(list);
	return found;
}

/* What a selection held before the paste, to put back after it. */
struct saved_selection {
	enum { SAVED_NONE, SAVED_TEXT, SAVED_IMAGE, SAVED_UNREADABLE } kind;
	void* data;
	size_t len;
};

static void save_selection(enum desktop_selection sel, struct saved_selection* out)
{
	char err[256];
	*out = (struct saved_selection){ SAVED_NONE, NULL, 0 };
	int rc = desktop_clipboard_read(sel, false, &out->data, &out->len, PASTE_SAVE_MS,
			err, sizeof(err));
	if (rc == 0) {
		out->kind = SAVED_TEXT;
		return;
	}
	if (rc == -ENOENT)
		return;	/* nothing owned it */
	if (rc == -ENODATA && desktop_clipboard_read(sel, true, &out->data, &out->len,
			PASTE_SAVE_MS, err, sizeof(err)) == 0) {
		out->kind = SAVED_IMAGE;
		return;
	}
	out->kind = SAVED_UNREADABLE;
	log_debug("paste: cannot keep the previous %s content: %s",
			sel == DESKTOP_PRIMARY ? "PRIMARY" : "CLIPBOARD", err);
}

/* Put back what was there: its content, or no owner at all. */
static const char* restore_selection(enum desktop_selection sel, struct saved_selection* s)
{
	char err[256];
	int rc = 0;
	const char* what = "none";
	switch (s->kind) {
	case SAVED_NONE:
		rc = desktop_clipboard_release(sel, err, sizeof(err));
		what = "empty";
		break;
	case SAVED_TEXT:
	case SAVED_IMAGE:
		rc = desktop_clipboard_write(sel, s->data, s->len, s->kind == SAVED_IMAGE,
				err, sizeof(err));
		what = s->kind == SAVED_IMAGE ? "image" : "text";
		break;
	case SAVED_UNREADABLE:
		what = "unreadable";	/* other formats only, or an owner that did not answer */
		break;
	}
	free(s->data);
	s->data = NULL;
	if (rc < 0) {
		log_warn("paste: cannot restore the previous clipboard: %s", err);
		return "failed";
	}
	return what;
}

/* The paste's target repainting after the chord: an app inserts a paste
 * after it read it, asynchronously, and keys sent at once could overtake
 * it (Chromium on GNOME took an Escape before the text it had read, under
 * load). The change counter before the chord; after the delivery, wait for
 * a change past it (bounded), then the settle. */
struct paint_watch {
	struct desktop_capture* dc;
	uint32_t window;
	uint64_t before;
};

static void paint_watch_start(struct paint_watch* w, uint32_t window)
{
	char err[128];
	*w = (struct paint_watch){ .dc = desktop_capture_get(err, sizeof(err)), .window = window };
	if (w->dc && capture_changes(desktop_capture_backend(w->dc), window, &w->before) < 0) {
		desktop_capture_put(w->dc);
		w->dc = NULL;
	}
}

static void paint_watch_end(struct paint_watch* w, bool delivered)
{
	uint64_t now;
	if (w->dc && delivered)
		capture_wait_changes(desktop_capture_backend(w->dc), w->window, w->before,
				PASTE_PAINT_MS, &now);
	desktop_capture_put(w->dc);
	if (delivered)
		clock_sleep_ms(PASTE_SETTLE_MS);
}

/* paste (and type with method paste): the text goes on the CLIPBOARD (and
 * PRIMARY for a terminal, which pastes that with shift+Insert), the chord
 * goes to the target, the target converts the selection (deskd sees its
 * data delivered whole), a short settle, then the previous content is put
 * back. Exact for any text, and the fast path for long text. */
static int paste_text(struct batch* b, const struct action* a, json_t* res,
		struct act_error* e)
{
	struct capture_window_info target;
	bool known = paste_target(b, &target);
	bool terminal = known && is_terminal(&target);
	struct input_chord chord = a->chord;
	if (!a->has_chord) {
		char err[128];
		input_chord_parse(&chord, terminal ? "shift+Insert" : "ctrl+v", err, sizeof(err));
	}
	/* The chord's selection is the terminal's PRIMARY or the CLIPBOARD: a
	 * terminal gets both, and so does a chord given by the caller. */
	bool primary_too = terminal || a->has_chord;
	struct saved_selection saved[2] = { 0 };
	save_selection(DESKTOP_CLIPBOARD, &saved[DESKTOP_CLIPBOARD]);
	if (primary_too)
		save_selection(DESKTOP_PRIMARY, &saved[DESKTOP_PRIMARY]);

	char err[256];
	int rc = desktop_clipboard_write(DESKTOP_CLIPBOARD, a->text, a->text_len, false,
			err, sizeof(err));
	if (rc == 0 && primary_too)
		rc = desktop_clipboard_write(DESKTOP_PRIMARY, a->text, a->text_len, false,
				err, sizeof(err));
	int failed = 0;
	int64_t t0 = clock_ms();
	if (rc < 0) {
		failed = action_fail(e, tool_code_for_errno(rc), "paste: cannot set the clipboard: %s", err);
	} else if (batch_still_admitted(b, e) < 0) {
		failed = -1;	/* the clipboard is restored below; nothing was pasted */
	} else {
		unsigned long before = desktop_clipboard_delivered();
		struct paint_watch paint;
		paint_watch_start(&paint, known ? target.id : 0);
		rc = input_key_chord(b->in, &chord);
		if (rc < 0) {
			failed = input_error(rc, "paste", e);
			paint_watch_end(&paint, false);
		} else {
			int budget = PASTE_TAKE_MS;
			if (b->ctx->deadline_ms && b->ctx->deadline_ms - clock_ms() < budget)
				budget = (int)(b->ctx->deadline_ms - clock_ms());
			rc = desktop_clipboard_wait_delivered(before, known ? target.id : 0,
					budget > 0 ? budget : 0, b->ctx->cancelled);
			if (rc == -ECANCELED)
				failed = action_fail(e, TOOL_TIMEOUT, "paste: cancelled by the client");
			else if (rc < 0)
				failed = action_fail(e, TOOL_TIMEOUT, "paste: the %s did not take the "
						"clipboard within %d ms after the chord (it may not accept a "
						"paste here, or wants another chord: pass chord)",
						known ? "target window" : "focused window", budget);
			paint_watch_end(&paint, rc == 0);
		}
	}
	json_object_set_new(res, "chord", chord_names(&chord));
	json_object_set_new(res, "bytes", json_integer((json_int_t)a->text_len));
	size_t chars = 0;
	for (size_t i = 0; i < a->text_len; i++)
		chars += ((unsigned char)a->text[i] & 0xc0) != 0x80;
	json_object_set_new(res, "chars", json_integer((json_int_t)chars));
	if (known && target.instance[0])
		json_object_set_new(res, "target_class", json_string(target.instance));
	json_object_set_new(res, "method", json_string("paste"));
	if (!failed)
		json_object_set_new(res, "taken_ms", json_integer(clock_ms() - t0));
	json_object_set_new(res, "restored", json_string(restore_selection(DESKTOP_CLIPBOARD,
			&saved[DESKTOP_CLIPBOARD])));
	if (primary_too)
		json_object_set_new(res, "restored_primary", json_string(restore_selection(
				DESKTOP_PRIMARY, &saved[DESKTOP_PRIMARY])));
	return failed;
}

/* Where an action points: its ref (clicked first for a type into it) or its
 * x, y mapped to the desktop, and a drag's path (*dpx, *dpy: malloc'd). */
static int action_points(struct batch* b, struct action* a, json_t* res, int* dx,
		int* dy, int** dpx, int** dpy, struct act_error* e)
{
	const struct act_name* k = a->kind;
	if (a->ref) {
		if (tools_ui_ref_point(a->ref, dx, dy, e) < 0)
			return -1;
		json_object_set_new(res, "ref", json_string(a->ref));
		json_object_set_new(res, "desktop_x", json_integer(*dx));
		json_object_set_new(res, "desktop_y", json_integer(*dy));
		if (k->act == ACT_TYPE) {
			/* Into that element: click it first. */
			int rc = input_move(b->in, *dx, *dy);
			if (rc == 0)
				rc = input_click(b->in, 1, 1, NULL);
			if (rc < 0) {
				e->code = tool_code_for_errno(rc);
				snprintf(e->message, sizeof(e->message), "clicking ref %s: %s", a->ref, strerror(-rc));
				return -1;
			}
		}
	} else if (a->has_xy) {
		if (map_point(b, a, a->x, a->y, dx, dy, e) < 0)
			return -1;
		json_object_set_new(res, "x", json_integer(a->x));
		json_object_set_new(res, "y", json_integer(a->y));
		json_object_set_new(res, "desktop_x", json_integer(*dx));
		json_object_set_new(res, "desktop_y", json_integer(*dy));
	}
	if (k->act == ACT_DRAG) {
		int* xs = calloc(a->n_path, sizeof(int));
		int* ys = calloc(a->n_path, sizeof(int));
		if (!xs || !ys) {
			free(xs);
			free(ys);
			return action_fail(e, TOOL_INTERNAL, "out of memory");
		}
		for (size_t i = 0; i < a->n_path; i++) {
			if (map_point(b, a, a->px[i], a->py[i], &xs[i], &ys[i], e) < 0) {
				char msg[512];
				snprintf(msg, sizeof(msg), "%.*s", text_cut(e->message, 400),
						e->message);
				snprintf(e->message, sizeof(e->message), "path[%zu]: %s", i, msg);
				free(xs);
				free(ys);
				return -1;
			}
		}
		*dpx = xs;
		*dpy = ys;
	}
	return 0;
}

static int run_action(struct batch* b, struct action* a, json_t* res,
		struct act_error* e)
{
	const struct act_name* k = a->kind;
	int dx = 0, dy = 0, rc = 0;
	bool pointer = k->act == ACT_CLICK || k->act == ACT_DOUBLE_CLICK
			|| k->act == ACT_TRIPLE_CLICK || k->act == ACT_MOVE
			|| k->act == ACT_DRAG || k->act == ACT_SCROLL
			|| k->act == ACT_MOUSE_DOWN || k->act == ACT_MOUSE_UP;
	bool acts = pointer || k->act == ACT_TYPE || k->act == ACT_KEYPRESS
			|| k->act == ACT_HOLD_KEY || k->act == ACT_PASTE;

	int *dpx = NULL, *dpy = NULL;
	if (action_points(b, a, res, &dx, &dy, &dpx, &dpy, e) < 0)
		return -1;
	if (acts && focus_target(b, e) < 0) {
		free(dpx);
		free(dpy);
		return -1;
	}
	if (a->mods.n)
		json_object_set_new(res, "keys", chord_names(&a->mods));

	switch (k->act) {
	case ACT_SCREENSHOT: {
		json_t* args = json_object();
		if (a->max_dimension >= 0)
			json_object_set_new(args, "max_dimension", json_integer(a->max_dimension));
		if (capture_call(b, "screenshot", args, res, e) < 0)
			return -1;
		if (a->max_dimension >= 0)
			b->max_dimension = a->max_dimension;
		return 0;
	}
	case ACT_ZOOM: {
		json_t* args = json_pack("{s:O}", "region", json_object_get(a->json, "region"));
		if (a->max_dimension >= 0)
			json_object_set_new(args, "max_dimension", json_integer(a->max_dimension));
		return capture_call(b, "zoom", args, res, e);
	}
	case ACT_CLICK:
	case ACT_DOUBLE_CLICK:
	case ACT_TRIPLE_CLICK: {
		int count = k->act == ACT_CLICK ? 1 : k->act == ACT_DOUBLE_CLICK ? 2 : 3;
		if (a->has_xy)
			rc = input_move(b->in, dx, dy);
		if (rc == 0)
			rc = input_click(b->in, a->button, count, &a->mods);
		json_object_set_new(res, "button", json_string(action_button_name(a->button)));
		if (count > 1)
			json_object_set_new(res, "clicks", json_integer(count));
		break;
	}
	case ACT_MOVE:
		if (a->mods.n)
			rc = input_modifiers(b->in, &a->mods, true);
		if (rc == 0)
			rc = input_move(b->in, dx, dy);
		if (a->mods.n) {
			int r2 = input_modifiers(b->in, &a->mods, false);
			if (rc == 0)
				rc = r2;
		}
		break;
	case ACT_DRAG: {
		rc = input_drag(b->in, dpx, dpy, a->n_path, a->button, &a->mods);
		json_object_set_new(res, "points", json_integer((json_int_t)a->n_path));
		json_object_set_new(res, "desktop_path", json_pack("[[i,i],[i,i]]",
				dpx[0], dpy[0], dpx[a->n_path - 1], dpy[a->n_path - 1]));
		break;
	}
	case ACT_MOUSE_DOWN:
	case ACT_MOUSE_UP:
		if (a->mods.n && k->act == ACT_MOUSE_DOWN)
			rc = input_modifiers(b->in, &a->mods, true);
		if (rc == 0 && a->has_xy)
			rc = input_move(b->in, dx, dy);
		if (rc == 0)
			rc = input_button(b->in, a->button, k->act == ACT_MOUSE_DOWN);
		if (a->mods.n && k->act == ACT_MOUSE_UP) {
			int r2 = input_modifiers(b->in, &a->mods, false);
			if (rc == 0)
				rc = r2;
		}
		json_object_set_new(res, "button", json_string(action_button_name(a->button)));
		break;
	case ACT_SCROLL:
		if (a->has_xy)
			rc = input_move(b->in, dx, dy);
		if (rc == 0)
			rc = input_scroll(b->in, a->notches_x, a->notches_y, &a->mods);
		json_object_set_new(res, "notches_x", json_integer(a->notches_x));
		json_object_set_new(res, "notches_y", json_integer(a->notches_y));
		json_object_set_new(res, "pixels_per_notch", json_integer(INPUT_PIXELS_PER_NOTCH));
		break;
	case ACT_TYPE:
	case ACT_PASTE:
		return a->paste ? paste_text(b, a, res, e) : type_text(b, a, res, e);
	case ACT_KEYPRESS:
		rc = input_key_chord(b->in, &a->chord);
		json_object_set_new(res, "keys", chord_names(&a->chord));
		break;
	case ACT_HOLD_KEY:
		rc = input_key_chord_state(b->in, &a->chord, true);
		if (rc == 0) {
			struct act_error se;
			int slept = sleep_bounded(b, a->ms, false, &se);
			rc = input_key_chord_state(b->in, &a->chord, false);
			if (slept < 0) {
				*e = se;
				return -1;
			}
		}
		json_object_set_new(res, "keys", chord_names(&a->chord));
		json_object_set_new(res, "duration", json_real(real_round(a->ms / 1000.0, REAL_TIME)));
		break;
	case ACT_WAIT:
		if (sleep_bounded(b, a->ms, b->locked, e) < 0)
			return -1;
		json_object_set_new(res, "ms", json_integer(a->ms));
		break;
	case ACT_CURSOR_POSITION: {
		int cx, cy;
		rc = input_cursor_position(b->in, &cx, &cy);
		if (rc < 0)
			break;
		json_object_set_new(res, "desktop_x", json_integer(cx));
		json_object_set_new(res, "desktop_y", json_integer(cy));
		struct desktop_target t;
		if (batch_target(b, a, &t, NULL, e) < 0)
			return -1;
		/* The screenshot pixel that shows the cursor. */
		int rx = cx - t.x, ry = cy - t.y;
		json_object_set_new(res, "x", json_integer(desktop_unmap(rx, t.width, t.image_width)));
		json_object_set_new(res, "y", json_integer(desktop_unmap(ry, t.height, t.image_height)));
		json_object_set_new(res, "inside", json_boolean(rx >= 0 && ry >= 0
				&& rx < t.width && ry < t.height));
		break;
	}
	}
	free(dpx);
	free(dpy);
	if (rc < 0)
		return input_error(rc, k->name, e);
	return 0;
}

/* Parse args' actions (an array) and run them. On success fills results;
 * on failure sets *failed and e. Returns 0 or -1. */
static int run_actions(struct batch* b, json_t* actions, bool desktop,
		json_t* results, size_t* failed, struct act_error* e)
{
	size_t n = json_array_size(actions);
	struct action* parsed = calloc(n ? n : 1, sizeof(*parsed));
	if (!parsed)
		return action_fail(e, TOOL_INTERNAL, "out of memory");
	int rc = 0;
	size_t i;
	for (i = 0; i < n; i++) {
		if (action_parse(json_array_get(actions, i), desktop, &parsed[i], e) < 0) {
			*failed = i;
			rc = -1;
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		if (b->ctx->cancelled && atomic_load(b->ctx->cancelled)) {
			action_fail(e, TOOL_TIMEOUT, "cancelled by the client before this action");
			*failed = i;
			rc = -1;
			break;
		}
		/* Admitted once for the whole batch; a person may take the
		 * desktop between any two of its actions. */
		if (batch_still_admitted(b, e) < 0) {
			*failed = i;
			rc = -1;
			break;
		}
		json_t* res = json_pack("{s:s, s:s}", "action", parsed[i].kind->name,
				"status", "ok");
		if (run_action(b, &parsed[i], res, e) < 0) {
			json_object_set_new(res, "status", json_string("error"));
			json_object_set_new(res, "code", json_string(tool_code_name(e->code)));
			json_object_set_new(res, "message", json_string(e->message));
			json_array_append_new(results, res);
			*failed = i;
			rc = -1;
			break;
		}
		json_array_append_new(results, res);
	}
out:
	for (size_t k = 0; k < n; k++)
		action_deinit(&parsed[k]);
	free(parsed);
	return rc;
}

static void append_images(struct tool_result* out, json_t* images)
{
	size_t i;
	json_t* block;
	json_array_foreach(images, i, block)
		json_array_append(out->content, block);
}

static bool batch_desktop_space(json_t* args)
{
	const char* s = json_string_value(json_object_get(args, "coordinate_space"));
	return s && strcmp(s, "desktop") == 0;
}

/* The batch's coordinate_space when it is a space token; false after
 * filling out when it is neither a token nor screenshot/desktop. */
static bool batch_space_token(json_t* args, struct batch* b, struct tool_result* out)
{
	const char* s = json_string_value(json_object_get(args, "coordinate_space"));
	if (!s || strcmp(s, "desktop") == 0 || strcmp(s, "screenshot") == 0)
		return true;
	if (action_space_parse(s, &b->space_width, &b->space_height, &b->space_max) < 0) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "coordinate_space must be "
				"\"screenshot\", \"desktop\" or the coordinate_space of a screenshot "
				"result (like \"1280x800/1280\"), not \"%.60s\"", s);
		return false;
	}
	b->has_space = true;
	return true;
}

static int computer_use(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	char err[256];
	json_t* actions = json_object_get(args, "actions");
	if (!json_is_array(actions) || json_array_size(actions) == 0) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"actions must be a non-empty array, like [{\"type\":\"click\",\"x\":10,\"y\":20}]");
		return 0;
	}
	if (json_array_size(actions) > MAX_ACTIONS) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"%zu actions; at most %d per call", json_array_size(actions), MAX_ACTIONS);
		return 0;
	}
	uint32_t window;
	if (!tool_arg_window(args, &window)) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "window must be a window id from the windows tool (or 0 for the screen)");
		return 0;
	}
	struct input* in = desktop_input_get(err, sizeof(err));
	if (!in) {
		tool_result_error(out, TOOL_DISPLAY_UNAVAILABLE, NULL, "input: %s", err);
		return 0;
	}
	struct batch b = {
		.ctx = ctx, .in = in, .window = window,
		.max_dimension = -1, .images = json_array(),
		.locked = true, .acts = true,	/* computer_use: TOOL_DESKTOP_LOCK, acting */
	};
	if (!batch_space_token(args, &b, out)) {
		json_decref(b.images);
		desktop_input_put(in);
		return 0;
	}
	json_t* results = json_array();
	size_t failed = 0;
	struct act_error e = { 0 };
	int rc = run_actions(&b, actions, batch_desktop_space(args), results, &failed, &e);
	if (rc == 0 && tool_arg_bool(args, "screenshot_after", false)) {
		desktop_settle(b.window, SETTLE_QUIET_MS, SETTLE_MAX_MS);
		json_t* res = json_pack("{s:s, s:s}", "action", "screenshot_after", "status", "ok");
		json_t* shot_args = json_object();
		if (capture_call(&b, "screenshot", shot_args, res, &e) < 0) {
			json_object_set_new(res, "status", json_string("error"));
			json_object_set_new(res, "message", json_string(e.message));
			failed = json_array_size(actions);
			rc = -1;
		}
		json_array_append_new(results, res);
	}
	if (rc < 0) {
		bool ran = json_array_size(results) > 0;
		json_t* extra = json_pack("{s:I, s:O}", "failed_index", (json_int_t)failed,
				"results", results);
		if (failed < json_array_size(actions))
			tool_result_error(out, e.code, extra, "actions[%zu]: %s%s", failed,
					e.message, ran || failed == 0 ? ""
					: " (nothing was run: every action is checked first)");
		else
			tool_result_error(out, e.code, extra, "screenshot_after: %s", e.message);
	} else {
		tool_result_ok(out, json_pack("{s:O}", "results", results));
	}
	append_images(out, b.images);
	json_decref(results);
	json_decref(b.images);
	desktop_input_put(in);
	return 0;
}

/* A split tool: its arguments are one action's fields (+ window). */
static int run_split(struct tool_ctx* ctx, json_t* args, struct tool_result* out,
		const char* type)
{
	char err[256];
	/* screenshot and zoom are the capture tools themselves. */
	if (strcmp(type, "screenshot") == 0 || strcmp(type, "zoom") == 0) {
		const struct tool_def* def = tools_find(type);
		if (!def || !def->handler) {
			tool_result_error(out, TOOL_INTERNAL, NULL, "the %s tool is not available", type);
			return 0;
		}
		return def->handler(ctx, args, out);
	}
	uint32_t window;
	if (!tool_arg_window(args, &window)) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "window must be a window id from the windows tool (or 0 for the screen)");
		return 0;
	}
	json_t* action = json_deep_copy(args);
	json_object_del(action, "window");
	json_object_set_new(action, "type", json_string(type));
	struct input* in = desktop_input_get(err, sizeof(err));
	if (!in) {
		json_decref(action);
		tool_result_error(out, TOOL_DISPLAY_UNAVAILABLE, NULL, "input: %s", err);
		return 0;
	}
	char name[64];
	snprintf(name, sizeof(name), "computer_%s", type);
	const struct tool_def* self = tools_find(name);
	struct batch b = { .ctx = ctx, .in = in, .window = window,
		.max_dimension = -1, .images = json_array(),
		.locked = self && (tools_flags(self) & TOOL_DESKTOP_LOCK),
		.acts = self && !(tools_flags(self) & TOOL_READ_ONLY) };
	json_t* actions = json_pack("[o]", action);
	json_t* results = json_array();
	size_t failed = 0;
	struct act_error e = { 0 };
	if (run_actions(&b, actions, false, results, &failed, &e) < 0) {
		tool_result_error(out, e.code, NULL, "%s", e.message);
	} else {
		json_t* res = json_array_get(results, 0);
		tool_result_ok(out, json_incref(res));
	}
	append_images(out, b.images);
	json_decref(results);
	json_decref(actions);
	json_decref(b.images);
	desktop_input_put(in);
	return 0;
}

#define SPLIT(t) \
	static int split_##t(struct tool_ctx* ctx, json_t* args, struct tool_result* out) \
	{ return run_split(ctx, args, out, #t); }
SPLIT(screenshot)
SPLIT(click)
SPLIT(double_click)
SPLIT(triple_click)
SPLIT(move)
SPLIT(drag)
SPLIT(mouse_down)
SPLIT(mouse_up)
SPLIT(scroll)
SPLIT(type)
SPLIT(keypress)
SPLIT(hold_key)
SPLIT(wait)
SPLIT(cursor_position)
SPLIT(zoom)
SPLIT(paste)

/* ---- The table ---- */

/* The schemas are data: tools/schemas/input.json, under each tool's name. */

#define KEY_NAMES "OpenAI (CTRL, ENTER, ARROWLEFT) or X keysym names (Return, F5), any case."

static const char batch_description[] =
	"Actions in order (all checked first; the first failure stops the rest), each "
	"{type, ...}:\n"
	"- screenshot {max_dimension?}; zoom {region:[x0,y0,x1,y1]} (full resolution)\n"
	"- click {x, y, button?, keys?}; double_click, triple_click, move {x, y, keys?}\n"
	"- drag {path:[{x,y},...]}; mouse_down, mouse_up {button?, x?, y?}\n"
	"- scroll {x, y, scroll_x?, scroll_y?}: pixels, + = right/down, 100 px = 1 notch\n"
	"- type {text, method?} (any Unicode, \\n = Enter); paste {text}: via the clipboard, fast; keypress {keys:[\"ctrl\",\"c\"]}; hold_key {keys, duration (s)}\n"
	"- wait {ms? (default 1000)}; cursor_position\n"
	"Keys: " KEY_NAMES " Anthropic names and fields work too (left_click, key {text:\"ctrl+c\"}, "
	"coordinate:[x,y]...).\n"
	"x, y are pixels of the latest screenshot of the target (the screen, or window, focused "
	"first; pass its coordinate_space). Returns {results} and an image per screenshot; on "
	"failure, failed_index.";

const struct tool_def tools_input[] = {
	{
		.name = "computer_use",
		.title = "Computer use (batch of actions)",
		.description = batch_description,
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_BATCH,
		.handler = computer_use,
	},
	{
		.name = "computer_screenshot",
		.title = "Screenshot",
		.description = "Capture the screen (or a window) as an image; later coordinates refer to its pixels. Same as the screenshot tool.",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_SPLIT | TOOL_OBSERVES,
		.handler = split_screenshot,
	},
	{
		.name = "computer_click",
		.title = "Click",
		.description = "Click a mouse button at (x, y) in screenshot pixels, optionally holding keys (e.g. keys [\"ctrl\"]).",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_click,
	},
	{
		.name = "computer_double_click",
		.title = "Double-click",
		.description = "Double-click the left button at (x, y) in screenshot pixels (at the pointer when omitted).",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_double_click,
	},
	{
		.name = "computer_triple_click",
		.title = "Triple-click",
		.description = "Triple-click the left button at (x, y) in screenshot pixels (selects a line or paragraph).",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_triple_click,
	},
	{
		.name = "computer_move",
		.title = "Move the pointer",
		.description = "Move the mouse pointer to (x, y) in screenshot pixels.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_move,
	},
	{
		.name = "computer_drag",
		.title = "Drag",
		.description = "Press the left button at the first point of path, move through every point, release at the last.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_drag,
	},
	{
		.name = "computer_mouse_down",
		.title = "Mouse button down",
		.description = "Press and hold a mouse button (at x, y when given); release it with computer_mouse_up.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_mouse_down,
	},
	{
		.name = "computer_mouse_up",
		.title = "Mouse button up",
		.description = "Release a mouse button (at x, y when given).",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_mouse_up,
	},
	{
		.name = "computer_scroll",
		.title = "Scroll",
		.description = "Scroll at (x, y): scroll_x/scroll_y in pixels (positive = right/down, 100 px per wheel notch), or scroll_direction + scroll_amount in notches. Reports the notches sent.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_scroll,
	},
	{
		.name = "computer_type",
		.title = "Type text",
		.description = "Type text into the focused window (or `window`): any Unicode, byte-exact; \\n is Enter, \\t is Tab.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_type,
	},
	{
		.name = "computer_paste",
		.title = "Paste text",
		.description = "Paste text into the focused window (or `window`) through the clipboard: exact, fast for long text; the clipboard is restored after.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_paste,
	},
	{
		.name = "computer_keypress",
		.title = "Press keys",
		.description = "Press a key chord, e.g. keys [\"ctrl\",\"c\"] or text \"ctrl+shift+t\"; keys go down in order and up in reverse.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_keypress,
	},
	{
		.name = "computer_hold_key",
		.title = "Hold keys",
		.description = "Hold a key chord down for duration seconds (at most 30), then release it.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_SPLIT,
		.handler = split_hold_key,
	},
	{
		.name = "computer_wait",
		.title = "Wait",
		.description = "Wait ms milliseconds (default 1000, at most 30000), or duration seconds.",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_SPLIT,
		.handler = split_wait,
	},
	{
		.name = "computer_cursor_position",
		.title = "Pointer position",
		.description = "Where the mouse pointer is: x, y in screenshot pixels of the target (and desktop_x, desktop_y).",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_SPLIT,
		.handler = split_cursor_position,
	},
	{
		.name = "computer_zoom",
		.title = "Zoom",
		.description = "A full-resolution crop of region [x0, y0, x1, y1] (screenshot pixels) of the screen or window. Same as the zoom tool.",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_SPLIT | TOOL_OBSERVES,
		.handler = split_zoom,
	},
	{ 0 },
};
