#define _GNU_SOURCE
/* The tasks extension (io.modelcontextprotocol/tasks, SEP-2663) on MCP
 * 2026-07-28 (core.h, docs/MCP.md 12). A tools/call whose request declares
 * the extension runs with a task from the start, unseen: it is answered as
 * a plain call when it ends within MCP_TASK_AFTER_MS, and otherwise (or as
 * soon as it needs the client's input) the request gets a CreateTaskResult
 * and the call runs on, its state kept here. The client polls tasks/get,
 * answers input with tasks/update and stops it with tasks/cancel, from any
 * connection (a task outlives the one that made it), for TASK_TTL_MS, with
 * the token that made it only (a task id of another principal is unknown).
 * A principal keeps at most TASKS_PER_PRINCIPAL: the oldest ended task
 * makes room, and when all are running a new call stays a plain call.
 *
 * One mutex for the store and every task in it; a call's answer is sent
 * under it when the call becomes a task, so the call's own end (on its
 * worker) sees either "answered as a task" or "still a call", never both. */

#include "server/mcp/core.h"
#include "base/clock.h"
#include "base/log.h"
#include "tools/tools.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TASK_TTL_MS (60 * 60 * 1000)
#define TASK_POLL_MS 500
#define TASKS_PER_PRINCIPAL 32
#define ASK_TICK_MS 100

enum task_status { TASK_WORKING, TASK_INPUT, TASK_COMPLETED, TASK_FAILED, TASK_CANCELLED };

static const char* const status_names[] = {
	[TASK_WORKING] = "working",
	[TASK_INPUT] = "input_required",
	[TASK_COMPLETED] = "completed",
	[TASK_FAILED] = "failed",
	[TASK_CANCELLED] = "cancelled",
};

struct mcp_task {
	struct mcp_task* next;		/* the store, once published */
	char id[40];
	char principal[16];
	const char* tool;		/* the tool's name (static) */
	int refs;			/* the call's, the store's, the watcher's */
	enum task_status status;
	bool published;			/* answered with CreateTaskResult */
	bool settled;			/* answered as a plain call: never a task */
	bool cancel_asked;
	int64_t created_ms, updated_ms;	/* wall clock, for the ISO times */
	int64_t expires;		/* monotonic */
	json_t* result;			/* completed: the CallToolResult */
	json_t* error;			/* failed: the JSON-RPC error object */
	json_t* asked;			/* outstanding {key: request} */
	json_t* answers;		/* {key: result} not yet taken by the call */
	unsigned next_key;
	struct mcp_call* call;		/* while it runs */
};

static struct {
	pthread_mutex_t mutex;
	pthread_cond_t cond;		/* an answer came, or a task was cancelled */
	struct mcp_task* list;
	bool shutting_down;
} S = { .mutex = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static json_t* iso_time(int64_t ms)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	char buf[40];
	gmtime_r(&s, &tm);
	size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%03dZ", (int)(ms % 1000));
	return json_string(buf);
}

static bool terminal(const struct mcp_task* t)
{
	return t->status >= TASK_COMPLETED;
}

static void touch(struct mcp_task* t, enum task_status status)
{
	t->status = status;
	t->updated_ms = wall_ms();
}

/* mutex held */
static void unref_locked(struct mcp_task* t)
{
	if (--t->refs > 0)
		return;
	json_decref(t->result);
	json_decref(t->error);
	json_decref(t->asked);
	json_decref(t->answers);
	free(t);
}

static void unref(void* ud)
{
	pthread_mutex_lock(&S.mutex);
	unref_locked(ud);
	pthread_mutex_unlock(&S.mutex);
}

/* ---- the shapes ---- */

/* The Task fields every shape carries. */
static json_t* task_json(const struct mcp_task* t, const char* result_type)
{
	json_t* j = json_pack("{s:s, s:s, s:s, s:o, s:o, s:i, s:i}", "resultType", result_type,
			"taskId", t->id, "status", status_names[t->status],
			"createdAt", iso_time(t->created_ms), "lastUpdatedAt", iso_time(t->updated_ms),
			"ttlMs", TASK_TTL_MS, "pollIntervalMs", TASK_POLL_MS);
	char message[160];
	if (t->status == TASK_WORKING && t->call)
		snprintf(message, sizeof(message), "%s is running", t->tool);
	else if (t->status == TASK_INPUT)
		snprintf(message, sizeof(message), "%s waits for the client's answer to inputRequests",
				t->tool);
	else
		message[0] = '\0';
	if (j && message[0])
		json_object_set_new(j, "statusMessage", json_string(message));
	return j;
}

/* tasks/get's DetailedTask: the Task and what its status carries. */
static json_t* detailed(const struct mcp_task* t)
{
	json_t* j = task_json(t, "complete");
	if (t->status == TASK_INPUT)
		json_object_set(j, "inputRequests", t->asked);
	else if (t->status == TASK_COMPLETED)
		json_object_set(j, "result", t->result);
	else if (t->status == TASK_FAILED)
		json_object_set(j, "error", t->error);
	return j;
}

/* ---- the store ---- */

/* Drop the ended tasks past their TTL; stop the running ones (they stay
 * until their call ends, then go at the next sweep). mutex held. */
static void sweep_locked(void)
{
	int64_t now = clock_ms();
	for (struct mcp_task** p = &S.list; *p; ) {
		struct mcp_task* t = *p;
		if (now < t->expires) {
			p = &t->next;
			continue;
		}
		if (!terminal(t)) {
			t->cancel_asked = true;
			if (t->call)
				mcp_call_cancel(t->call);
			p = &t->next;
			continue;
		}
		*p = t->next;
		unref_locked(t);
	}
}

/* Room for one more task of t's principal: the oldest ended one of it goes
 * when it has TASKS_PER_PRINCIPAL. 0, or -1 when all of them run. */
static int make_room_locked(const struct mcp_task* t)
{
	int n = 0;
	struct mcp_task** oldest = NULL;
	for (struct mcp_task** p = &S.list; *p; p = &(*p)->next) {
		if (strcmp((*p)->principal, t->principal) != 0)
			continue;
		n++;
		if (terminal(*p) && (!oldest || (*p)->created_ms <= (*oldest)->created_ms))
			oldest = p;
	}
	if (n < TASKS_PER_PRINCIPAL)
		return 0;
	if (!oldest)
		return -1;
	struct mcp_task* gone = *oldest;
	*oldest = gone->next;
	unref_locked(gone);
	return 0;
}

/* The call becomes a task: into the store, and its request answered with
 * the CreateTaskResult (under the mutex: see the top). 0, or -1 when it
 * must stay a call. */
static int publish_locked(struct mcp_task* t)
{
	if (t->published)
		return 0;
	/* A call whose client left (its stream closed) is not worth keeping. */
	if (t->settled || !t->call || atomic_load(&t->call->cancelled) || S.shutting_down)
		return -1;
	sweep_locked();
	if (make_room_locked(t) < 0) {
		log_info("mcp: %s stays a call: %d tasks of %s are running", t->tool,
				TASKS_PER_PRINCIPAL, t->principal);
		return -1;
	}
	t->published = true;
	t->refs++;	/* the store's */
	t->next = S.list;
	S.list = t;
	json_t* result = task_json(t, "task");
	mcp_call_answer(t->call, mcp_result_response(t->call->id, result));
	json_decref(result);
	log_debug("mcp: %s became task %s", t->tool, t->id);
	return 0;
}

/* A task of this principal by id (mutex held), or NULL. */
static struct mcp_task* find_locked(const char* id, const char* principal)
{
	for (struct mcp_task* t = S.list; t; t = t->next)
		if (strcmp(t->id, id) == 0 && strcmp(t->principal, principal ? principal : "") == 0)
			return t;
	return NULL;
}

/* ---- a call's task ---- */

struct mcp_task* mcp_task_new(struct mcp_call* c, const char* principal)
{
	struct mcp_task* t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	mcp_uuid(t->id);
	snprintf(t->principal, sizeof(t->principal), "%s", principal ? principal : "");
	t->tool = c->tool ? c->tool->name : "a request";
	t->refs = 1;	/* the call's */
	t->asked = json_object();
	t->answers = json_object();
	t->created_ms = t->updated_ms = wall_ms();
	t->expires = clock_ms() + TASK_TTL_MS;
	t->call = c;
	if (!t->asked || !t->answers) {
		json_decref(t->asked);
		json_decref(t->answers);
		free(t);
		return NULL;
	}
	return t;
}

static bool watch_settled(void* ud)
{
	struct mcp_task* t = ud;
	pthread_mutex_lock(&S.mutex);
	bool settled = t->settled || t->published || !t->call;
	pthread_mutex_unlock(&S.mutex);
	return settled;
}

static void watch_fire(void* ud)
{
	pthread_mutex_lock(&S.mutex);
	publish_locked(ud);
	pthread_mutex_unlock(&S.mutex);
}

void mcp_task_watch(struct mcp_task* t, int64_t started_ms)
{
	pthread_mutex_lock(&S.mutex);
	t->refs++;	/* the watcher's */
	pthread_mutex_unlock(&S.mutex);
	mcp_later(t, started_ms, MCP_TASK_AFTER_MS, watch_settled, watch_fire, unref);
}

bool mcp_task_take_result(struct mcp_task* t, struct tool_result* res)
{
	pthread_mutex_lock(&S.mutex);
	bool published = t->published;
	if (!published) {
		t->settled = true;
	} else if (t->cancel_asked) {
		touch(t, TASK_CANCELLED);
	} else if (res->missing_capabilities) {
		t->error = json_pack("{s:i, s:s, s:{s:O}}", "code", MCP_MISSING_CAPABILITY,
				"message", "Missing required client capability: the client did not "
				"declare what this tool needs", "data", "requiredCapabilities",
				res->missing_capabilities);
		touch(t, TASK_FAILED);
	} else if (res->input_requests) {
		/* Input by retry exists only before a task (a task asks while
		 * it waits): a tool that does it later is deskd's bug. */
		t->error = json_pack("{s:i, s:s}", "code", RPC_INTERNAL, "message", "Internal "
				"error: the tool asked for input by retry after the call became a task");
		touch(t, TASK_FAILED);
	} else {
		/* The CallToolResult as the call would have been answered
		 * (2026-07-28 results carry resultType). */
		t->result = tool_result_to_json(res);
		if (t->result)
			json_object_set_new(t->result, "resultType", json_string("complete"));
		touch(t, t->result ? TASK_COMPLETED : TASK_FAILED);
		if (!t->result)
			t->error = json_pack("{s:i, s:s}", "code", RPC_INTERNAL,
					"message", "Internal error: out of memory");
	}
	t->call = NULL;
	pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.mutex);
	return published;
}

void mcp_task_detach(struct mcp_task* t)
{
	if (!t)
		return;
	pthread_mutex_lock(&S.mutex);
	if (t->call && t->published && !terminal(t)) {
		/* ended without a result (it could not start) */
		t->error = json_pack("{s:i, s:s}", "code", RPC_INTERNAL,
				"message", "Internal error: the call ended without a result");
		touch(t, TASK_FAILED);
	}
	t->call = NULL;
	if (!t->published)
		t->settled = true;
	unref_locked(t);	/* the call's */
	pthread_mutex_unlock(&S.mutex);
}

/* ---- asking the client while the task waits ---- */

/* The capability each kind of request needs, by the call's context. */
static bool client_can(const struct tool_ctx* ctx, const char* method)
{
	static const struct { const char* method; size_t offset; } needs[] = {
		{ "elicitation/create", offsetof(struct tool_ctx, client_can_elicit) },
		{ "sampling/createMessage", offsetof(struct tool_ctx, client_can_sample) },
		{ "roots/list", offsetof(struct tool_ctx, client_can_list_roots) },
	};
	for (size_t i = 0; method && i < sizeof(needs) / sizeof(needs[0]); i++)
		if (strcmp(needs[i].method, method) == 0)
			return *(const bool*)((const char*)ctx + needs[i].offset);
	return false;
}

/* A failed ask as a JSON-RPC error: "<who> <what>". */
static json_t* ask_error(const char* who, const char* what)
{
	char message[300];
	snprintf(message, sizeof(message), "%s %s", who, what);
	return json_pack("{s:i, s:s}", "code", RPC_INTERNAL, "message", message);
}

/* ctx.request_all in a task: the call becomes a task (if it is not one
 * yet), the requests show in tasks/get under keys unique to the task, and
 * the call waits for tasks/update to answer them all. */
static json_t* task_request_all(void* ud, json_t* requests, json_t** error)
{
	struct mcp_call* c = ud;
	struct mcp_task* t = c->task;
	struct tool_ctx* ctx = &c->ctx;
	*error = NULL;
	const char* key;
	json_t* r;
	json_object_foreach(requests, key, r) {
		const char* method = json_string_value(json_object_get(r, "method"));
		if (!client_can(ctx, method)) {
			*error = ask_error(method ? method : "a request without a method",
					"needs a capability the client did not declare");
			return NULL;
		}
	}
	json_t* keys = json_object();	/* task key -> the tool's key */
	json_t* answers = NULL;
	pthread_mutex_lock(&S.mutex);
	if (publish_locked(t) < 0) {
		pthread_mutex_unlock(&S.mutex);
		json_decref(keys);
		*error = ask_error(t->tool, "cannot ask the client: it could not become a task");
		return NULL;
	}
	json_object_foreach(requests, key, r) {
		char task_key[96];
		snprintf(task_key, sizeof(task_key), "%u-%.80s", ++t->next_key, key);
		json_object_set(t->asked, task_key, r);
		json_object_set_new(keys, task_key, json_string(key));
	}
	touch(t, TASK_INPUT);
	const char* why = NULL;
	for (;;) {
		bool all = true;
		json_t* k;
		json_object_foreach(keys, key, k)
			all = all && json_object_get(t->answers, key);
		if (all)
			break;
		if (atomic_load(&c->cancelled) || t->cancel_asked || S.shutting_down)
			why = "was cancelled while it waited for the client";
		else if (ctx->request_stop && atomic_load(ctx->request_stop))
			why = "no longer needs the client's answer";
		else if (ctx->deadline_ms && clock_ms() >= ctx->deadline_ms)
			why = "waited for the client's answer until its deadline";
		if (why)
			break;
		struct timespec ts = clock_realtime_in(ASK_TICK_MS);
		pthread_cond_timedwait(&S.cond, &S.mutex, &ts);
	}
	if (!why)
		answers = json_object();
	json_t* k;
	json_object_foreach(keys, key, k) {
		if (answers)
			json_object_set(answers, json_string_value(k), json_object_get(t->answers, key));
		json_object_del(t->answers, key);
		json_object_del(t->asked, key);
	}
	if (t->status == TASK_INPUT && json_object_size(t->asked) == 0)
		touch(t, TASK_WORKING);
	pthread_mutex_unlock(&S.mutex);
	json_decref(keys);
	if (why)
		*error = ask_error(t->tool, why);
	return answers;
}

static json_t* task_request(void* ud, const char* method, json_t* params, json_t** error)
{
	json_t* requests = json_pack("{s:{s:s, s:O}}", "ask", "method", method, "params",
			params ? params : json_null());
	json_t* answers = task_request_all(ud, requests, error);
	json_decref(requests);
	json_t* result = json_incref(json_object_get(answers, "ask"));
	json_decref(answers);
	return result;
}

void mcp_task_attach(struct mcp_call* c, struct mcp_task* t)
{
	c->task = t;
	c->ctx.request = task_request;
	c->ctx.request_all = task_request_all;
}

/* ---- tasks/get, tasks/update, tasks/cancel ---- */

static json_t* unknown(const char* id, int* code, char* msg, size_t size)
{
	*code = RPC_INVALID_PARAMS;
	snprintf(msg, size, "Invalid params: no task %.60s (unknown, expired, or another "
			"token's)", id);
	return NULL;
}

json_t* mcp_task_get(const char* id, const char* principal, int* code, char* msg, size_t size)
{
	pthread_mutex_lock(&S.mutex);
	sweep_locked();
	struct mcp_task* t = find_locked(id, principal);
	json_t* r = t ? detailed(t) : unknown(id, code, msg, size);
	pthread_mutex_unlock(&S.mutex);
	return r;
}

json_t* mcp_task_update(const char* id, const char* principal, json_t* responses, int* code,
		char* msg, size_t size)
{
	pthread_mutex_lock(&S.mutex);
	struct mcp_task* t = find_locked(id, principal);
	if (!t) {
		pthread_mutex_unlock(&S.mutex);
		return unknown(id, code, msg, size);
	}
	/* Keys that are not outstanding (never asked, answered already) are
	 * ignored, as the extension says. */
	const char* key;
	json_t* v;
	json_object_foreach(responses, key, v) {
		if (!json_is_object(v) || !json_object_get(t->asked, key))
			continue;
		json_object_set(t->answers, key, v);
		json_object_del(t->asked, key);
		t->updated_ms = wall_ms();
	}
	pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.mutex);
	return json_pack("{s:s}", "resultType", "complete");
}

json_t* mcp_task_cancel(const char* id, const char* principal, int* code, char* msg,
		size_t size)
{
	pthread_mutex_lock(&S.mutex);
	struct mcp_task* t = find_locked(id, principal);
	if (!t) {
		pthread_mutex_unlock(&S.mutex);
		return unknown(id, code, msg, size);
	}
	if (!terminal(t)) {
		t->cancel_asked = true;
		if (t->call)
			mcp_call_cancel(t->call);
		pthread_cond_broadcast(&S.cond);
	}
	pthread_mutex_unlock(&S.mutex);
	return json_pack("{s:s}", "resultType", "complete");
}

int mcp_tasks_count(void)
{
	int n = 0;
	pthread_mutex_lock(&S.mutex);
	for (struct mcp_task* t = S.list; t; t = t->next)
		n++;
	pthread_mutex_unlock(&S.mutex);
	return n;
}

void mcp_tasks_shutdown(void)
{
	pthread_mutex_lock(&S.mutex);
	S.shutting_down = true;
	while (S.list) {
		struct mcp_task* t = S.list;
		S.list = t->next;
		t->cancel_asked = true;
		if (t->call)
			mcp_call_cancel(t->call);
		unref_locked(t);
	}
	pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.mutex);
}
