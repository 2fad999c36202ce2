/* The control channel (docs/CONTROL.md) on the service thread: the lease,
 * its holder and rate bucket, and the control messages checked into ops for
 * the hands (desktop/hands.c). */
#include "server/live/live_private.h"
#include "base/clock.h"
#include "server/http/auth.h"
#include "server/http/http.h"
#include "server/live/live_ctl.h"
#include "desktop/desktop.h"
#include "base/events.h"
#include "base/log.h"
#include "base/metrics.h"
#include "server/http/netcheck.h"
#include "base/options.h"
#include "base/worker.h"
#include "tools/tools.h"

#include <libwebsockets.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- control: a person's pointer and keyboard (docs/CONTROL.md) ----
 *
 * The lease (service thread): live__holder is the client holding control,
 * live__lease its generation, bumped at every change. Input messages are
 * checked here (role, lease, bounds, key names, rate) and queued for the
 * hands thread, which runs them in order under the desktop lock with the one
 * input context. An op carries the lease it was sent under: once the lease
 * changed it is dropped, so input from a tab that lost control never runs. */

uint64_t live__holder;			/* service thread: client id, 0 none */
int64_t live__holder_active_ms;		/* service thread: last input */
atomic_uint_fast64_t live__lease;	/* generation of the lease */
atomic_bool live__gate_changed;

void live_post_ctrl(uint64_t client_id, struct live_buf* ctrl);

static struct live_buf* live_ctl_error_buf(const char* code, const char* message,
		const char* what)
{
	json_t* msg = json_pack("{s:s, s:s, s:s}", "type", "error", "code", code,
			"message", message);
	if (msg && what)
		json_object_set_new(msg, "for", json_string(what));
	return live_buf_json(msg);
}

/* The hands (desktop/hands.c) run the ops of the current lease only. */
static bool live_hands_current(uint64_t lease)
{
	return atomic_load(&live__lease) == lease;
}

/* An op failed on the hands thread: tell the client that sent it. */
static void live_hands_failed(uint64_t sender, int rc, const char* message)
{
	live_post_ctrl(sender, live_ctl_error_buf(tool_code_name(tool_code_for_errno(rc)),
			message, "input"));
}

const struct desktop_hands_owner live__hands_owner = {
	.current = live_hands_current,
	.failed = live_hands_failed,
	.max_text = LIVE_CTL_MAX_PASTE,
};

/* ---- the lease (service thread) ---- */

void live_gate_listener(void)
{
	atomic_store(&live__gate_changed, true);
	live_wake();
}

void live_ctl_broadcast(void)
{
	for (struct live_client* c = live__clients; c; c = c->next) {
		c->state_due = true;
		lws_callback_on_writable(c->wsi);
	}
}

struct live_buf* live_ctl_state(struct live_client* c)
{
	const struct options* opts = options_get();
	json_t* gate = tools_gate_state();
	json_t* msg = json_pack("{s:s, s:s, s:b, s:b, s:s, s:i, s:O, s:O}",
			"type", "control",
			"holder", !live__holder ? "none" : live__holder == c->id ? "you" : "other",
			"can_control", c->role == HTTP_ROLE_PERSON,
			"paused", json_is_true(json_object_get(gate, "paused")),
			"approve", json_string_value(json_object_get(gate, "approve")),
			"idle_timeout_s", opts ? opts->control_idle_timeout_s : 300,
			"help", json_object_get(gate, "help"),
			"approvals", json_object_get(gate, "approvals"));
	json_decref(gate);
	return live_buf_json(msg);
}

static struct live_client* live_client_by_id(uint64_t id)
{
	for (struct live_client* c = live__clients; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

/* Change the holder (0: none). note: the hand-back note for the agent. */
void live_ctl_set_holder(struct live_client* to, const char* why, const char* note)
{
	uint64_t old = live__holder;
	uint64_t id = to ? to->id : 0;
	if (old == id)
		return;
	if (old) {	/* whatever the old holder still pressed comes up */
		struct desktop_hands_op op = { .kind = DESKTOP_HANDS_RELEASE_ALL };
		desktop_hands_push(&op);
	}
	atomic_fetch_add(&live__lease, 1);
	live__holder = id;
	live__holder_active_ms = clock_ms();
	for (struct live_client* c = live__clients; c; c = c->next)
		c->n_keys = 0, c->mods = 0;
	if (to)
		lws_set_timer_usecs(to->wsi, LIVE_CTL_PING_US);
	tools_gate_set_held(id != 0, note);
	if (id && !old)
		events_control("take_control", "dashboard", "ok", NULL);
	else if (id)
		events_control("take_control", "dashboard", "taken_over", NULL);
	else
		events_control("hand_back", "dashboard", why,
				note && *note ? json_pack("{s:b}", "with_note", 1) : NULL);
	metrics_set("deskd_control_held", id ? 1 : 0, NULL);
	live_ctl_broadcast();
}

/* Control is the person's alone: the agent's token watches, so an agent
 * can never take over, pause, hand back or approve its own calls. */
static const char* live_ctl_forbidden_why(const struct live_client* c)
{
	return c->role == HTTP_ROLE_AGENT
		? "the agent's token may watch but not control: take, pause, approve and the "
		  "rest are the person's (the dashboard URL carries the person's token)"
		: "the view token may watch but not control the desktop";
}

/* A person's input message (the role was checked): may this client send
 * it now? The lease and the rate. */
static bool live_ctl_may_input(struct live_client* c, const char* type)
{
	if (live__holder != c->id) {
		live_client_ctrl(c, live_ctl_error_buf("not_in_control",
				"take control first ({\"type\":\"take\"}); input was dropped", type));
		return false;
	}
	int64_t now = clock_ms();
	c->bucket += (double)(now - c->bucket_ms) * LIVE_CTL_RATE / 1000.0;
	if (c->bucket > LIVE_CTL_BUCKET)
		c->bucket = LIVE_CTL_BUCKET;
	c->bucket_ms = now;
	if (c->bucket < 1) {
		metrics_inc("deskd_control_dropped_total", NULL);
		if (now - c->rate_error_ms >= 1000) {
			c->rate_error_ms = now;
			live_client_ctrl(c, live_ctl_error_buf("rate_limited",
					"too many input messages; some were dropped", type));
		}
		return false;
	}
	c->bucket -= 1;
	live__holder_active_ms = now;
	return true;
}

/* The frame space of the client's watch; false (error sent) if none. */
/* A pointer message (move, button, wheel) in the watched frame's pixels:
 * checked into op, or answered with an error. */
static bool live_ctl_point(struct live_client* c, json_t* msg, enum live_ctl_kind kind,
		const char* type, struct desktop_hands_op* op)
{
	struct live_feed* f = c->feed;
	int w = 0, h = 0;
	if (f) {
		pthread_mutex_lock(&f->lock);
		if (f->latest) {
			w = f->latest->width;
			h = f->latest->height;
		}
		pthread_mutex_unlock(&f->lock);
	}
	if (!f || w <= 0) {
		live_client_ctrl(c, live_ctl_error_buf("not_watching",
				"watch the screen or a window first: coordinates are in its frame's pixels",
				type));
		return false;
	}
	struct live_ctl_pointer p;
	char err[200];
	enum tool_code code = live_ctl_parse_pointer(kind, msg, w, h, &p, err, sizeof(err));
	if (code != TOOL_OK) {
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(code), err, type));
		return false;
	}
	op->x = p.x;
	op->y = p.y;
	op->button = p.button;
	op->down = p.down;
	op->notches_x = p.notches_x;
	op->notches_y = p.notches_y;
	op->window = f->key.window;
	op->max_dimension = f->key.max_dimension;
	return true;
}

static void live_ctl_push(struct live_client* c, struct desktop_hands_op* op, const char* type)
{
	op->sender = c->id;
	op->lease = atomic_load(&live__lease);
	op->received_ns = c->rx_ns;
	if (!desktop_hands_push(op)) {
		metrics_inc("deskd_control_dropped_total", NULL);
		live_client_ctrl(c, live_ctl_error_buf("rate_limited",
				"the desktop is behind on input; this one was dropped", type));
	}
}

/* KeyboardEvent.key names that are not X keysym names. */
static const char* live_browser_key(const char* key, const char* code)
{
	static const struct { const char* key; const char* left; const char* right; } map[] = {
		{ "Enter", "Return", NULL }, { "Backspace", "BackSpace", NULL },
		{ "ArrowLeft", "Left", NULL }, { "ArrowRight", "Right", NULL },
		{ "ArrowUp", "Up", NULL }, { "ArrowDown", "Down", NULL },
		{ "PageUp", "Prior", NULL }, { "PageDown", "Next", NULL },
		{ "Control", "Control_L", "Control_R" }, { "Shift", "Shift_L", "Shift_R" },
		{ "Alt", "Alt_L", "Alt_R" }, { "Meta", "Super_L", "Super_R" },
		{ "OS", "Super_L", "Super_R" }, { "AltGraph", "ISO_Level3_Shift", NULL },
		{ "CapsLock", "Caps_Lock", NULL }, { "ContextMenu", "Menu", NULL },
		{ "NumLock", "Num_Lock", NULL }, { "ScrollLock", "Scroll_Lock", NULL },
		{ "PrintScreen", "Print", NULL }, { " ", "space", NULL },
	};
	bool right = code && strstr(code, "Right") && !strstr(code, "Arrow");
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(key, map[i].key) == 0)
			return right && map[i].right ? map[i].right : map[i].left;
	return key;
}

static void live_ctl_key(struct live_client* c, json_t* msg)
{
	const char* key = json_string_value(json_object_get(msg, "key"));
	const char* code = json_string_value(json_object_get(msg, "code"));
	json_t* jdown = json_object_get(msg, "down");
	if (!key || !*key || strlen(key) > 64 || !json_is_boolean(jdown)) {
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(TOOL_BAD_ARGUMENTS),
				"key needs \"key\" (KeyboardEvent.key) and \"down\" (boolean)", "key"));
		return;
	}
	bool down = json_is_true(jdown);
	char id[32];
	snprintf(id, sizeof(id), "%.31s", code && *code ? code : key);
	if (strcmp(key, "Dead") == 0 || strcmp(key, "Process") == 0
			|| strcmp(key, "Unidentified") == 0)
		return;	/* composition: its text comes as a "text" message */

	/* A key pressed as a keysym comes up as that keysym, whatever the
	 * modifiers are now. */
	if (!down) {
		for (int i = 0; i < c->n_keys; i++) {
			if (strcmp(c->keys[i].code, id) != 0)
				continue;
			struct desktop_hands_op op = { .kind = DESKTOP_HANDS_KEY, .keysym = c->keys[i].keysym };
			c->keys[i] = c->keys[--c->n_keys];
			unsigned mod = strcmp(key, "Control") == 0 ? LIVE_MOD_CTRL
					: strcmp(key, "Alt") == 0 ? LIVE_MOD_ALT
					: strcmp(key, "Meta") == 0 || strcmp(key, "OS") == 0 ? LIVE_MOD_META : 0;
			c->mods &= ~mod;
			live_ctl_push(c, &op, "key");
			return;
		}
		return;	/* typed as text on its way down, or never pressed */
	}
	/* A character with no Control/Alt/Meta: the agent's typing path, so any
	 * character arrives as itself whatever the keymap. */
	if (desktop_text_one_char(key) && strcmp(key, " ") != 0 && !c->mods) {
		struct desktop_hands_op op = { .kind = DESKTOP_HANDS_TEXT, .text = strdup(key), .len = strlen(key) };
		if (op.text)
			live_ctl_push(c, &op, "key");
		return;
	}
	uint32_t keysym;
	char near[120];
	if (desktop_key_lookup(live_browser_key(key, code), &keysym, near, sizeof(near)) < 0) {
		char m[200];
		snprintf(m, sizeof(m), "unknown key '%.40s'%s%s", key, near[0] ? "; closest: " : "", near);
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(TOOL_UNKNOWN_KEY), m, "key"));
		return;
	}
	for (int i = 0; i < c->n_keys; i++)
		if (strcmp(c->keys[i].code, id) == 0)
			return;	/* the browser's auto-repeat: the key is down already */
	if (c->n_keys == LIVE_CTL_MAX_KEYS) {
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(TOOL_BAD_ARGUMENTS),
				"too many keys held at once", "key"));
		return;
	}
	snprintf(c->keys[c->n_keys].code, sizeof(c->keys[0].code), "%s", id);
	c->keys[c->n_keys++].keysym = keysym;
	if (strcmp(key, "Control") == 0)
		c->mods |= LIVE_MOD_CTRL;
	else if (strcmp(key, "Alt") == 0)
		c->mods |= LIVE_MOD_ALT;
	else if (strcmp(key, "Meta") == 0 || strcmp(key, "OS") == 0)
		c->mods |= LIVE_MOD_META;
	struct desktop_hands_op op = { .kind = DESKTOP_HANDS_KEY, .keysym = keysym, .down = true };
	live_ctl_push(c, &op, "key");
}

static void live_ctl_text(struct live_client* c, json_t* msg, enum live_ctl_kind kind,
		const char* type)
{
	const char* text;
	size_t len;
	char err[160];
	enum tool_code code = live_ctl_parse_text(kind, msg, &text, &len, err, sizeof(err));
	if (code != TOOL_OK) {
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(code), err, type));
		return;
	}
	if (len == 0)
		return;
	struct desktop_hands_op op = { .kind = DESKTOP_HANDS_TEXT, .text = malloc(len + 1), .len = len };
	if (!op.text)
		return;
	memcpy(op.text, text, len + 1);
	live_ctl_push(c, &op, type);
}

static uint64_t live_ctl_id(json_t* msg)
{
	json_t* v = json_object_get(msg, "id");
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static const char* live_ctl_note(json_t* msg)
{
	const char* note = json_string_value(json_object_get(msg, "note"));
	return note && strlen(note) <= LIVE_CTL_MAX_NOTE ? note : NULL;
}

/* take: the lease is this tab's (force: also when another tab holds it). */
static void live_ctl_take(struct live_client* c, json_t* msg, const char* type)
{
	if (live__holder == c->id)
		return;
	if (live__holder && !json_is_true(json_object_get(msg, "force"))) {
		live_client_ctrl(c, live_ctl_error_buf("held_by_other",
				"another tab has control; send {\"type\":\"take\",\"force\":true} "
				"to take it over", type));
		return;
	}
	struct live_client* old = live_client_by_id(live__holder);
	if (old)
		live_client_ctrl(old, live_buf_json(json_pack("{s:s, s:s}", "type", "taken",
				"message", "another tab took control of the desktop")));
	c->bucket = LIVE_CTL_BUCKET;
	c->bucket_ms = clock_ms();
	live_ctl_set_holder(c, NULL, NULL);
}

static void live_ctl_pause(bool pause, const char* type)
{
	json_t* gate = tools_gate_state();
	bool paused = json_is_true(json_object_get(gate, "paused"));
	json_decref(gate);
	if (paused != pause) {
		tools_gate_set_paused(pause);
		events_control(type, "dashboard", "ok", NULL);
	}
}

/* Handles the control messages; false if type is none of them. */
bool live_ctl_message(struct live_client* c, const char* type, json_t* msg)
{
	enum live_ctl_kind kind;
	if (!live_ctl_kind_of(type, &kind))
		return false;
	if (!live_ctl_role_may(c->role, kind)) {
		live_client_ctrl(c, live_ctl_error_buf("forbidden", live_ctl_forbidden_why(c), type));
		return true;
	}
	if (live_ctl_is_input(kind) && !live_ctl_may_input(c, type))
		return true;
	struct desktop_hands_op op = { 0 };
	switch (kind) {
	case LIVE_CTL_TAKE:
		live_ctl_take(c, msg, type);
		break;
	case LIVE_CTL_RELEASE:
		if (live__holder != c->id)
			live_client_ctrl(c, live_ctl_error_buf("not_in_control",
					"this tab does not have control", type));
		else
			live_ctl_set_holder(NULL, "handed_back", live_ctl_note(msg));
		break;
	case LIVE_CTL_PAUSE:
	case LIVE_CTL_RESUME:
		live_ctl_pause(kind == LIVE_CTL_PAUSE, type);
		break;
	case LIVE_CTL_HELP_DISMISS:
		if (tools_gate_dismiss(live_ctl_id(msg), live_ctl_note(msg)) < 0)
			live_client_ctrl(c, live_ctl_error_buf("no_such_request",
					"no help request with this id is pending", type));
		break;
	case LIVE_CTL_APPROVE:
	case LIVE_CTL_DENY:
		if (tools_gate_answer(live_ctl_id(msg), kind == LIVE_CTL_APPROVE) < 0)
			live_client_ctrl(c, live_ctl_error_buf("no_such_request",
					"no approval with this id is pending", type));
		break;
	case LIVE_CTL_MOVE:
	case LIVE_CTL_BUTTON:
	case LIVE_CTL_WHEEL:
		op.kind = kind == LIVE_CTL_MOVE ? DESKTOP_HANDS_MOVE
			: kind == LIVE_CTL_BUTTON ? DESKTOP_HANDS_BUTTON : DESKTOP_HANDS_WHEEL;
		if (live_ctl_point(c, msg, kind, type, &op)
				&& (kind != LIVE_CTL_WHEEL || op.notches_x || op.notches_y))
			live_ctl_push(c, &op, type);
		break;
	case LIVE_CTL_KEY:
		live_ctl_key(c, msg);
		break;
	case LIVE_CTL_TEXT:
	case LIVE_CTL_PASTE:
		live_ctl_text(c, msg, kind, type);
		break;
	}
	return true;
}

/* The timer of a client (service thread): the holder's liveness and idle
 * limit; false to close the socket. */
bool live_ctl_timer(struct live_client* c)
{
	if (live__holder != c->id)
		return true;
	int64_t now = clock_ms();
	if (now - c->last_rx_ms > LIVE_CTL_DEAD_MS) {
		log_info("live: the tab holding control stopped answering; control is released");
		live_ctl_set_holder(NULL, "tab_gone", NULL);
		return false;
	}
	const struct options* opts = options_get();
	int idle_s = opts && opts->control_idle_timeout_s > 0 ? opts->control_idle_timeout_s : 300;
	int64_t last = live__holder_active_ms, done_ms;
	int pending = desktop_hands_pending(&done_ms);
	if (done_ms > last)
		last = done_ms;
	if (pending == 0 && now - last > (int64_t)idle_s * 1000) {
		live_ctl_set_holder(NULL, "idle", NULL);
		live_client_ctrl(c, live_buf_json(json_pack("{s:s, s:s, s:s}", "type", "released",
				"reason", "idle", "message", "control was released after the idle limit "
				"(--control-idle-timeout)")));
	}
	return true;
}
