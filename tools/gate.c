/* The gate: people in the loop (docs/CONTROL.md). While a person holds the
 * desktop from the dashboard, acting calls (and, unless
 * --control-allows-observe, calls that show the screen) are refused at once:
 * a queued click would land later on whatever is under it then, and a
 * screenshot could show a password being typed. Pause refuses acting calls;
 * --approve makes them wait for a person's answer. Help requests
 * (request_human_help) wait here for the hand-back.
 *
 * One mutex guards it all; waiters sleep on one condition variable (a
 * monotonic clock) and look at their own record when woken. The listener
 * (the live view) is called after every change, outside the lock. */
#include "tools/gate.h"
#include "tools/tools.h"
#include "base/clock.h"
#include "base/events.h"
#include "base/log.h"
#include "base/options.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GATE_MAX_NOTE 2000
#define GATE_MAX_REASON 1000
#define GATE_MAX_PENDING 32		/* help requests or approvals at once */
#define GATE_PROGRESS_MS 5000

struct gate_help {
	struct gate_help* next;
	uint64_t id;
	char* reason;
	double since;
	int timeout_s;
	enum gate_help_outcome outcome;
	bool done;
	char* note;
};

struct gate_approval {
	struct gate_approval* next;
	uint64_t id;
	char tool[64];
	json_t* args;
	double since;
	int timeout_s;
	int answer;		/* 0 pending, 1 approved, -1 denied */
	const char* by;		/* "dashboard" or "client" */
	atomic_bool stop;	/* stops a pending elicitation wait */
};

static pthread_mutex_t gate__lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate__cond;
static pthread_once_t gate__once = PTHREAD_ONCE_INIT;
static bool gate__held, gate__paused;
static bool gate__note_pending;		/* a hand-back no caller was told of yet */
static char* gate__note;		/* the last hand-back's note (NULL: none) */
/* The actors (tool_ctx: source and MCP session or client name) refused
 * because a person held the desktop: each gets the hand-back note once on
 * its next call, whoever called first after the hand-back. */
#define GATE_MAX_OWED 64
#define GATE_ACTOR_LEN 96
static char gate__owed[GATE_MAX_OWED][GATE_ACTOR_LEN];
static int gate__n_owed;
static struct gate_help* gate__help;
static struct gate_approval* gate__approvals;
static uint64_t gate__next_id = 1;
static void (*gate__listener)(void);

static void gate_init_once(void)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&gate__cond, &attr);
	pthread_condattr_destroy(&attr);
}

static void gate_lock(void)
{
	pthread_once(&gate__once, gate_init_once);
	pthread_mutex_lock(&gate__lock);
}

static void gate_unlock_changed(bool changed)
{
	void (*fn)(void) = gate__listener;
	if (changed)
		pthread_cond_broadcast(&gate__cond);
	pthread_mutex_unlock(&gate__lock);
	if (changed && fn)
		fn();
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait on the condition until the monotonic ms deadline, at most step_ms. */
static void gate_wait(int64_t until_ms, int step_ms)
{
	int64_t now = clock_ms();
	int64_t wait = until_ms - now;
	if (wait > step_ms)
		wait = step_ms;
	if (wait <= 0)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += wait / 1000;
	ts.tv_nsec += (wait % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&gate__cond, &gate__lock, &ts);
}

static char* copy_cut(const char* s, size_t max)
{
	if (!s || !*s)
		return NULL;
	size_t n = strnlen(s, max);
	/* never cut a UTF-8 character in half */
	while (n < strlen(s) && n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	char* out = malloc(n + 1);
	if (out) {
		memcpy(out, s, n);
		out[n] = 0;
	}
	return out;
}

/* Who a call is for the note: "rest:", "mcp:<session>", "mcp:<client name>". */
static void actor_key(const struct tool_ctx* ctx, char* key, size_t size)
{
	const char* who = ctx->session_id && *ctx->session_id ? ctx->session_id
			: ctx->client_name ? ctx->client_name : "";
	snprintf(key, size, "%s:%s", ctx->source ? ctx->source : "", who);
}

/* Under the lock: remember that this actor was refused during a hold. */
static void owed_add(const struct tool_ctx* ctx)
{
	char key[GATE_ACTOR_LEN];
	if (!ctx || ctx->by_person || ctx->background)
		return;
	actor_key(ctx, key, sizeof(key));
	for (int i = 0; i < gate__n_owed; i++)
		if (strcmp(gate__owed[i], key) == 0)
			return;
	if (gate__n_owed == GATE_MAX_OWED) {	/* the oldest makes room */
		memmove(gate__owed[0], gate__owed[1], sizeof(gate__owed[0]) * (GATE_MAX_OWED - 1));
		gate__n_owed--;
	}
	snprintf(gate__owed[gate__n_owed++], GATE_ACTOR_LEN, "%s", key);
}

/* Under the lock: was this actor owed the note? It is not any more. */
static bool owed_take(const struct tool_ctx* ctx)
{
	char key[GATE_ACTOR_LEN];
	actor_key(ctx, key, sizeof(key));
	for (int i = 0; i < gate__n_owed; i++) {
		if (strcmp(gate__owed[i], key) != 0)
			continue;
		memmove(gate__owed[i], gate__owed[i + 1], sizeof(gate__owed[0]) * (size_t)(gate__n_owed - i - 1));
		gate__n_owed--;
		return true;
	}
	return false;
}

void tools_gate_listen(void (*fn)(void))
{
	gate_lock();
	gate__listener = fn;
	pthread_mutex_unlock(&gate__lock);
}

void tools_gate_set_held(bool held, const char* note)
{
	gate_lock();
	bool changed = gate__held != held;
	gate__held = held;
	if (!held && changed) {
		free(gate__note);
		gate__note = copy_cut(note, GATE_MAX_NOTE);
		gate__note_pending = true;
		for (struct gate_help* h = gate__help; h; h = h->next) {
			if (h->done)
				continue;
			h->done = true;
			h->outcome = GATE_HELP_HANDED_BACK;
			h->note = copy_cut(note, GATE_MAX_NOTE);
		}
	}
	gate_unlock_changed(changed);
}

void tools_gate_set_paused(bool paused)
{
	gate_lock();
	bool changed = gate__paused != paused;
	gate__paused = paused;
	gate_unlock_changed(changed);
}

bool tools_gate_held(void)
{
	gate_lock();
	bool held = gate__held;
	pthread_mutex_unlock(&gate__lock);
	return held;
}

int tools_gate_dismiss(uint64_t id, const char* note)
{
	int rc = -ENOENT;
	gate_lock();
	for (struct gate_help* h = gate__help; h; h = h->next) {
		if (h->id == id && !h->done) {
			h->done = true;
			h->outcome = GATE_HELP_DISMISSED;
			h->note = copy_cut(note, GATE_MAX_NOTE);
			rc = 0;
		}
	}
	gate_unlock_changed(rc == 0);
	return rc;
}

int tools_gate_answer(uint64_t id, bool approve)
{
	int rc = -ENOENT;
	gate_lock();
	for (struct gate_approval* a = gate__approvals; a; a = a->next) {
		if (a->id == id && a->answer == 0) {
			a->answer = approve ? 1 : -1;
			a->by = "dashboard";
			atomic_store(&a->stop, true);
			rc = 0;
		}
	}
	gate_unlock_changed(rc == 0);
	return rc;
}

static const char* approve_name(void)
{
	const struct options* opts = options_get();
	switch (opts ? opts->approve : OPTIONS_APPROVE_NONE) {
	case OPTIONS_APPROVE_DESTRUCTIVE: return "destructive";
	case OPTIONS_APPROVE_ALL: return "all";
	default: return "none";
	}
}

json_t* tools_gate_state(void)
{
	json_t* help = json_array();
	json_t* approvals = json_array();
	gate_lock();
	for (struct gate_help* h = gate__help; h; h = h->next)
		if (!h->done)
			json_array_append_new(help, json_pack("{s:I, s:s, s:f, s:i}",
					"id", (json_int_t)h->id, "reason", h->reason ? h->reason : "",
					"since", h->since, "timeout_s", h->timeout_s));
	for (struct gate_approval* a = gate__approvals; a; a = a->next)
		if (a->answer == 0)
			json_array_append_new(approvals, json_pack("{s:I, s:s, s:O, s:f, s:i}",
					"id", (json_int_t)a->id, "tool", a->tool, "args", a->args,
					"since", a->since, "timeout_s", a->timeout_s));
	json_t* out = json_pack("{s:b, s:b, s:s, s:o, s:o}", "held", gate__held,
			"paused", gate__paused, "approve", approve_name(),
			"help", help, "approvals", approvals);
	pthread_mutex_unlock(&gate__lock);
	return out;
}

/* ---- what a call does ---- */

static bool gate_acts(const struct tool_def* tool)
{
	return !(tool->flags & TOOL_READ_ONLY);
}

static bool gate_observes(const struct tool_def* tool)
{
	/* The accessibility tools (ui_*) read the screen's text. */
	return (tool->flags & TOOL_OBSERVES) || strncmp(tool->name, "ui_", 3) == 0;
}

static bool allows_observe(void)
{
	const struct options* opts = options_get();
	return opts && opts->control_allows_observe;
}

static void refuse_held(const struct tool_def* tool, const struct tool_ctx* ctx,
		struct tool_result* out)
{
	gate_lock();
	owed_add(ctx);
	pthread_mutex_unlock(&gate__lock);
	tool_result_error(out, TOOL_HUMAN_IN_CONTROL,
			json_pack("{s:s}", "wait_with", "request_human_help"),
			"a person has taken control of the desktop in the dashboard; %s was not run and "
			"nothing was queued. To wait until they hand it back, call request_human_help "
			"{\"reason\": \"...\"}; then take a new screenshot before acting", tool->name);
}

static bool needs_approval(const struct tool_def* tool)
{
	const struct options* opts = options_get();
	if (!opts || !gate_acts(tool))
		return false;
	return opts->approve == OPTIONS_APPROVE_ALL
			|| (opts->approve == OPTIONS_APPROVE_DESTRUCTIVE
				&& (tool->flags & TOOL_DESTRUCTIVE));
}

/* The elicitation/create params that ask the client's user to approve. */
static json_t* approval_question(const char* tool, json_t* args)
{
	char message[600];
	char* text = json_dumps(args, JSON_COMPACT);
	snprintf(message, sizeof(message), "deskd: allow %s %.400s?", tool, text ? text : "{}");
	free(text);
	return json_pack("{s:s, s:{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}}",
			"message", message, "requestedSchema", "type", "object",
			"properties", "approve", "type", "boolean", "title", "Approve",
			"description", "Allow this action", "required", "approve");
}

/* An elicitation answer: 1 approved, -1 denied (decline, cancel, or accept
 * with false), 0 no answer. */
static int approval_answer(json_t* result)
{
	const char* action = json_string_value(json_object_get(result, "action"));
	json_t* approve = json_object_get(json_object_get(result, "content"), "approve");
	if (!action)
		return 0;
	return strcmp(action, "accept") == 0 && json_is_true(approve) ? 1 : -1;
}

/* Ask the MCP client too (elicitation), on this thread: the dashboard's
 * answer sets a->stop, which ends the wait for the client's. */
static void ask_client(struct tool_ctx* ctx, struct gate_approval* a, int64_t until_ms)
{
	json_t* params = approval_question(a->tool, a->args);
	const atomic_bool* old_stop = ctx->request_stop;
	int64_t old_deadline = ctx->deadline_ms;
	ctx->request_stop = &a->stop;
	if (!ctx->deadline_ms || ctx->deadline_ms > until_ms)
		ctx->deadline_ms = until_ms;
	json_t* error = NULL;
	json_t* result = ctx->request(ctx->notify_ud, "elicitation/create", params, &error);
	ctx->request_stop = old_stop;
	ctx->deadline_ms = old_deadline;
	json_decref(params);
	json_decref(error);
	if (!result)
		return;	/* no answer from the client: the dashboard may still answer */
	int answer = approval_answer(result);
	json_decref(result);
	gate_lock();
	bool changed = false;
	if (a->answer == 0 && answer != 0) {
		a->answer = answer;
		a->by = "client";
		changed = true;
	}
	gate_unlock_changed(changed);
}

/* MCP 2026-07-28 has no server -> client request inside a call: a client
 * that declared elicitation gets the question as an input-required result
 * and calls again with the answer (the transport seals the state to this
 * request). A task can ask while it waits (ctx->request): there the person
 * is asked too, as on a session. Returns true to run the call. */
#define GATE_APPROVAL_STATE "deskd-approval"
#define GATE_APPROVAL_KEY "deskd_approve"
static bool gate_approval_stateless(const struct tool_def* tool, struct tool_ctx* ctx,
		json_t* args, struct tool_result* out)
{
	const char* kind = json_string_value(json_object_get(ctx->input_state, "kind"));
	json_t* reply = json_object_get(ctx->input_responses, GATE_APPROVAL_KEY);
	if (!kind || strcmp(kind, GATE_APPROVAL_STATE) != 0 || !json_is_object(reply)) {
		tool_result_input_required(out, json_pack("{s:{s:s, s:o}}", GATE_APPROVAL_KEY,
				"method", "elicitation/create", "params", approval_question(tool->name, args)),
				json_pack("{s:s}", "kind", GATE_APPROVAL_STATE));
		events_control("approval", ctx->source, "asked",
				json_pack("{s:s, s:s, s:I}", "for", tool->name, "of", "client",
					"call", (json_int_t)ctx->event_id));
		return false;
	}
	int answer = approval_answer(reply);
	events_control("approval", "client", answer > 0 ? "approved" : "denied",
			json_pack("{s:s, s:I}", "for", tool->name, "call", (json_int_t)ctx->event_id));
	if (answer > 0)
		return true;
	tool_result_error(out, TOOL_APPROVAL_DENIED, json_pack("{s:s}", "by", "client"),
			"the client's user denied %s; nothing was done", tool->name);
	return false;
}

static bool gate_approval(const struct tool_def* tool, struct tool_ctx* ctx,
		json_t* args, struct tool_result* out)
{
	if (ctx->stateless && ctx->client_can_elicit && !ctx->request)
		return gate_approval_stateless(tool, ctx, args, out);
	const struct options* opts = options_get();
	int timeout_s = opts && opts->approve_timeout_s > 0 ? opts->approve_timeout_s : 50;
	struct gate_approval* a = calloc(1, sizeof(*a));
	if (!a) {
		tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory");
		return false;
	}
	snprintf(a->tool, sizeof(a->tool), "%s", tool->name);
	a->args = json_deep_copy(args);
	if (!a->args)
		a->args = json_object();
	a->since = now_seconds();
	a->timeout_s = timeout_s;
	atomic_init(&a->stop, false);

	gate_lock();
	size_t n = 0;
	for (struct gate_approval* p = gate__approvals; p; p = p->next)
		n++;
	if (n >= GATE_MAX_PENDING) {
		pthread_mutex_unlock(&gate__lock);
		json_decref(a->args);
		free(a);
		tool_result_error(out, TOOL_APPROVAL_DENIED, NULL,
				"too many actions are waiting for approval; %s was not run", tool->name);
		return false;
	}
	a->id = gate__next_id++;
	a->next = gate__approvals;
	gate__approvals = a;
	gate_unlock_changed(true);
	/* "call" ties the approval's events to the call's (one dashboard row). */
	events_control("approval", ctx->source, "pending",
			json_pack("{s:I, s:s, s:O, s:I}", "approval", (json_int_t)a->id,
				"for", tool->name, "args", a->args, "call", (json_int_t)ctx->event_id));

	int64_t until = clock_ms() + (int64_t)timeout_s * 1000;
	if (ctx->request && ctx->client_can_elicit)
		ask_client(ctx, a, until);

	bool cancelled = false;
	int64_t next_progress = clock_ms() + GATE_PROGRESS_MS;
	gate_lock();
	while (a->answer == 0 && clock_ms() < until) {
		if ((ctx->cancelled && atomic_load(ctx->cancelled))
				|| (ctx->deadline_ms && clock_ms() > ctx->deadline_ms)) {
			cancelled = true;
			break;
		}
		if (ctx->progress && clock_ms() >= next_progress) {
			/* progress must grow: the seconds waited */
			double waited = (double)(clock_ms() - (until - (int64_t)timeout_s * 1000)) / 1000.0;
			pthread_mutex_unlock(&gate__lock);
			ctx->progress(ctx->notify_ud, waited, (double)timeout_s,
					"waiting for a person to approve");
			gate_lock();
			next_progress = clock_ms() + GATE_PROGRESS_MS;
		}
		gate_wait(until, 200);
	}
	int answer = a->answer;
	const char* by = a->by;
	for (struct gate_approval** p = &gate__approvals; *p; p = &(*p)->next)
		if (*p == a) {
			*p = a->next;
			break;
		}
	gate_unlock_changed(true);
	json_decref(a->args);
	uint64_t id = a->id;
	free(a);

	const char* status = answer > 0 ? "approved" : answer < 0 ? "denied"
			: cancelled ? "cancelled" : "timeout";
	events_control("approval", by ? by : "deskd", status,
			json_pack("{s:I, s:s, s:I}", "approval", (json_int_t)id, "for", tool->name,
				"call", (json_int_t)ctx->event_id));
	if (answer > 0)
		return true;
	if (cancelled)
		tool_result_error(out, TOOL_TIMEOUT, NULL,
				"cancelled while waiting for approval; %s was not run", tool->name);
	else if (answer < 0)
		tool_result_error(out, TOOL_APPROVAL_DENIED, json_pack("{s:s}", "by", by),
				"a person denied %s; nothing was done", tool->name);
	else
		tool_result_error(out, TOOL_APPROVAL_DENIED, json_pack("{s:s}", "by", "timeout"),
				"no one approved %s within %d s (--approve-timeout); nothing was done",
				tool->name, timeout_s);
	return false;
}

bool tools_gate_admit(const struct tool_def* tool, struct tool_ctx* ctx,
		json_t* args, struct tool_result* out)
{
	bool acts = gate_acts(tool);
	bool observes = !acts && gate_observes(tool) && !allows_observe();
	/* The gate guards the person's desktop against the agent; the person's
	 * own calls (the dashboard's clipboard, Record) pass it. */
	if ((!acts && !observes) || ctx->by_person)
		return true;
	gate_lock();
	bool held = gate__held, paused = gate__paused;
	pthread_mutex_unlock(&gate__lock);
	if (held) {
		refuse_held(tool, ctx, out);
		return false;
	}
	if (paused && acts) {
		tool_result_error(out, TOOL_PAUSED, NULL,
				"a person paused the agent from the dashboard; %s was not run and nothing "
				"was queued. Try again later (status shows when it is resumed)", tool->name);
		return false;
	}
	if (needs_approval(tool)) {
		if (!gate_approval(tool, ctx, args, out))
			return false;
		/* A person may have taken the desktop or paused meanwhile. */
		gate_lock();
		held = gate__held, paused = gate__paused;
		pthread_mutex_unlock(&gate__lock);
		if (held) {
			refuse_held(tool, ctx, out);
			return false;
		}
		if (paused) {
			tool_result_error(out, TOOL_PAUSED, NULL,
					"approved, but a person paused the agent meanwhile; %s was not run",
					tool->name);
			return false;
		}
	}
	return true;
}

bool tools_gate_recheck(const struct tool_def* tool, const struct tool_ctx* ctx,
		struct tool_result* out)
{
	if ((!gate_acts(tool) && (!gate_observes(tool) || allows_observe())) || ctx->by_person)
		return true;
	if (!tools_gate_held())
		return true;
	refuse_held(tool, ctx, out);
	return false;
}

bool tools_gate_interrupted(const struct tool_ctx* ctx, enum tool_code* code,
		const char** why)
{
	if (ctx->by_person)
		return false;
	gate_lock();
	bool held = gate__held, paused = gate__paused;
	if (held)
		owed_add(ctx);
	pthread_mutex_unlock(&gate__lock);
	if (held) {
		*code = TOOL_HUMAN_IN_CONTROL;
		*why = "a person took control of the desktop in the dashboard while this call "
				"ran; it stopped here and nothing more is queued (wait with "
				"request_human_help, then take a new screenshot)";
	} else if (paused) {
		*code = TOOL_PAUSED;
		*why = "a person paused the agent from the dashboard while this call ran; it "
				"stopped here and nothing more is queued";
	}
	return held || paused;
}

void tools_gate_finish(const struct tool_def* tool, const struct tool_ctx* ctx,
		struct tool_result* out)
{
	/* The person's own calls (the dashboard's, reads included) need no note
	 * from themselves, and must not use up the agent's. */
	if (out->is_error || ctx->by_person || ctx->background
			|| (!gate_acts(tool) && !gate_observes(tool)))
		return;
	gate_lock();
	bool pending = false;
	if (!gate__held) {
		bool owed = owed_take(ctx);	/* both: one caller is told once */
		pending = gate__note_pending || owed;
		gate__note_pending = false;
	}
	char* note = pending && gate__note ? strdup(gate__note) : NULL;
	pthread_mutex_unlock(&gate__lock);
	if (!pending)
		return;
	const char* message = "a person had control of the desktop since your last look and "
			"handed it back; the screen may have changed: take a new screenshot before "
			"relying on what you saw";
	char text[GATE_MAX_NOTE + 400];
	snprintf(text, sizeof(text), "Note: %s.%s%s", message, note ? " The person's note: " : "",
			note ? note : "");
	tool_result_text(out, text);
	if (!out->structured)
		out->structured = json_object();
	json_t* hc = json_pack("{s:s}", "message", message);
	if (note)
		json_object_set_new(hc, "note", json_string(note));
	json_object_set_new(out->structured, "human_control", hc);
	free(note);
}

/* ---- help requests ---- */

enum gate_help_outcome gate_help_wait(struct tool_ctx* ctx, const char* reason,
		int timeout_s, char** note, uint64_t* id)
{
	*note = NULL;
	struct gate_help* h = calloc(1, sizeof(*h));
	if (!h)
		return GATE_HELP_CANCELLED;
	h->reason = copy_cut(reason, GATE_MAX_REASON);
	h->since = now_seconds();
	h->timeout_s = timeout_s;
	gate_lock();
	h->id = gate__next_id++;
	h->next = gate__help;
	gate__help = h;
	*id = h->id;
	gate_unlock_changed(true);

	int64_t start = clock_ms();
	int64_t until = start + (int64_t)timeout_s * 1000;
	int64_t next_progress = start + GATE_PROGRESS_MS;
	bool cancelled = false;
	gate_lock();
	while (!h->done && clock_ms() < until) {
		if ((ctx->cancelled && atomic_load(ctx->cancelled))
				|| (ctx->deadline_ms && clock_ms() > ctx->deadline_ms)) {
			cancelled = true;
			break;
		}
		if (ctx->progress && clock_ms() >= next_progress) {
			double waited = (double)(clock_ms() - start) / 1000.0;
			pthread_mutex_unlock(&gate__lock);
			char msg[96];
			snprintf(msg, sizeof(msg), "waiting for a person in the dashboard (%.0f s of %d s)",
					waited, timeout_s);
			ctx->progress(ctx->notify_ud, waited, (double)timeout_s, msg);
			gate_lock();
			next_progress = clock_ms() + GATE_PROGRESS_MS;
		}
		gate_wait(until, 200);
	}
	enum gate_help_outcome outcome = h->done ? h->outcome
			: cancelled ? GATE_HELP_CANCELLED : GATE_HELP_TIMEOUT;
	*note = h->note;
	h->note = NULL;
	for (struct gate_help** p = &gate__help; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			break;
		}
	/* The hand-back note reaches the agent here; the next call need not repeat it. */
	if (outcome == GATE_HELP_HANDED_BACK) {
		gate__note_pending = false;
		owed_take(ctx);
	}
	gate_unlock_changed(true);
	free(h->reason);
	free(h);
	return outcome;
}
