/* MCP's session era (2025-03-26 to 2025-11-25): sessions and initialize,
 * the session's own methods, server -> client requests, the registry and its
 * reaper; independent of the transport (mcp_http.c, stdio.c). Calls go down into
 * the core: jsonrpc.c, methods.c, call.c. See core.h and docs/MCP.md. */

#include "server/mcp/mcp.h"
#include "base/clock.h"
#include "server/mcp/core.h"
#include "base/jsonmem.h"
#include "base/log.h"
#include "base/options.h"
#include "base/text.h"
#include "tools/tools.h"
#include "base/worker.h"
#include "base/base64.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef DESKD_VERSION
#define DESKD_VERSION "0.0.0"
#endif

#define IDLE_TIMEOUT_MS (30 * 60 * 1000)	/* --session-timeout; tests: DESKD_MCP_IDLE_TIMEOUT_MS */
#define NEW_TIMEOUT_MS (60 * 1000)		/* --new-session-timeout */
#define REQUEST_TIMEOUT_MS (5 * 60 * 1000)	/* server -> client requests */

static const char* const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26" };

bool mcp_version_supported(const char* version)
{
	for (size_t i = 0; version && i < sizeof(versions) / sizeof(versions[0]); i++)
		if (strcmp(versions[i], version) == 0)
			return true;
	return false;
}

/* ---- Sessions ---- */

/* A call of a session: the core's call (call.c) and its session. */
struct session_call {
	struct mcp_call call;		/* first */
	struct mcp_session* session;	/* reference */
};

struct mcp_outreq {
	struct mcp_outreq* next;
	json_int_t id;
	json_t* result;
	json_t* error;
	bool answered;
};

struct mcp_session {
	atomic_int refs;
	pthread_mutex_t mutex;
	pthread_cond_t cond;		/* outreq answers, session end */
	char id[40];
	char version[16];
	bool initialized;
	bool ended;
	bool inline_mode;
	bool can_sample, can_elicit;
	char client_name[64];		/* initialize's clientInfo.name, for events */
	const char* via;		/* "mcp", or "stdio" */
	int log_level;
	struct tool_session* tools;
	struct mcp_call* calls;
	struct mcp_outreq* outreqs;
	json_int_t next_outreq;
	json_t* subscriptions;
	int64_t last_active;
	int busy;
	bool used;			/* made a request besides initialize */
	int owner;			/* registry quota class; -1: pinned (stdio) */
	void* transport;
	void (*transport_end)(void* data);
	void (*transport_free)(void* data);
	bool (*transport_busy)(void* data);
};

void mcp_uuid(char out[40])
{
	unsigned char b[16];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_panic("getrandom failed: %s", strerror(errno));
		}
		got += (size_t)n;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
			b[10], b[11], b[12], b[13], b[14], b[15]);
}

struct mcp_session* mcp_session_new(void)
{
	mcp_jsonrpc_init();
	struct mcp_session* self = calloc(1, sizeof(*self));
	if (!self)
		return NULL;
	self->tools = tool_session_new();
	if (!self->tools)
		goto tools_failure;
	self->subscriptions = json_object();
	if (!self->subscriptions)
		goto subscriptions_failure;
	atomic_init(&self->refs, 1);
	pthread_mutex_init(&self->mutex, NULL);
	pthread_cond_init(&self->cond, NULL);
	mcp_uuid(self->id);
	self->last_active = clock_ms();
	self->next_outreq = 1;
	self->owner = -1;
	self->via = "mcp";
	return self;

subscriptions_failure:
	tool_session_destroy(self->tools);
tools_failure:
	free(self);
	return NULL;
}

void mcp_session_ref(struct mcp_session* self)
{
	atomic_fetch_add(&self->refs, 1);
}

void mcp_session_unref(struct mcp_session* self)
{
	if (!self || atomic_fetch_sub(&self->refs, 1) != 1)
		return;
	if (self->transport_free)
		self->transport_free(self->transport);
	tool_session_destroy(self->tools);
	json_decref(self->subscriptions);
	pthread_cond_destroy(&self->cond);
	pthread_mutex_destroy(&self->mutex);
	free(self);
}

void mcp_session_set_via(struct mcp_session* self, const char* via)
{
	self->via = via;
}

const char* mcp_session_id(const struct mcp_session* self)
{
	return self->id;
}

const char* mcp_session_version(struct mcp_session* self)
{
	pthread_mutex_lock(&self->mutex);
	const char* v = self->version[0] ? self->version : NULL;
	pthread_mutex_unlock(&self->mutex);
	return v;
}

void mcp_session_set_inline(struct mcp_session* self, bool on)
{
	self->inline_mode = on;
}

void mcp_session_set_transport(struct mcp_session* self, void* data,
		void (*end_fn)(void* data), void (*free_fn)(void* data))
{
	self->transport = data;
	self->transport_end = end_fn;
	self->transport_free = free_fn;
}

void* mcp_session_transport(struct mcp_session* self)
{
	return self->transport;
}

void mcp_session_set_transport_busy(struct mcp_session* self, bool (*busy_fn)(void* data))
{
	self->transport_busy = busy_fn;
}

int64_t mcp_session_idle_ms(struct mcp_session* self)
{
	pthread_mutex_lock(&self->mutex);
	int64_t idle = self->busy ? 0 : clock_ms() - self->last_active;
	pthread_mutex_unlock(&self->mutex);
	/* An open stream is a client still there (outside the session lock:
	 * the transport takes its own). */
	if (idle && self->transport_busy && self->transport_busy(self->transport))
		idle = 0;
	return idle;
}

bool mcp_session_ended(struct mcp_session* self)
{
	pthread_mutex_lock(&self->mutex);
	bool ended = self->ended;
	pthread_mutex_unlock(&self->mutex);
	return ended;
}

void mcp_session_end(struct mcp_session* self)
{
	pthread_mutex_lock(&self->mutex);
	if (self->ended) {
		pthread_mutex_unlock(&self->mutex);
		return;
	}
	self->ended = true;
	for (struct mcp_call* c = self->calls; c; c = c->next)
		atomic_store(&c->cancelled, true);
	pthread_cond_broadcast(&self->cond);
	pthread_mutex_unlock(&self->mutex);
	if (self->transport_end)
		self->transport_end(self->transport);
	tool_session_end(self->tools);
	log_debug("mcp: session %s ended", self->id);
}

/* ---- Calls in progress: notifications, server -> client requests ---- */

static json_t* call_request(void* ud, const char* method, json_t* params, json_t** error)
{
	struct mcp_call* c = ud;
	struct mcp_session* s = ((struct session_call*)c)->session;
	*error = NULL;

	bool allowed = (strcmp(method, "sampling/createMessage") == 0 && s->can_sample)
			|| (strcmp(method, "elicitation/create") == 0 && s->can_elicit);
	if (!allowed) {
		*error = json_pack("{s:i, s:s}", "code", RPC_METHOD_NOT_FOUND,
				"message", "the client did not declare this capability");
		return NULL;
	}
	if (s->inline_mode) {
		*error = json_pack("{s:i, s:s}", "code", RPC_INTERNAL,
				"message", "no client to ask");
		return NULL;
	}

	struct mcp_outreq req = { 0 };
	pthread_mutex_lock(&s->mutex);
	req.id = s->next_outreq++;
	req.next = s->outreqs;
	s->outreqs = &req;
	pthread_mutex_unlock(&s->mutex);

	json_t* msg = json_pack("{s:s, s:I, s:s, s:O}", "jsonrpc", "2.0", "id",
			(json_int_t)req.id, "method", method, "params", params);
	if (msg)
		c->sink->impl->message(c->sink, msg);
	json_decref(msg);

	int64_t deadline = clock_ms() + REQUEST_TIMEOUT_MS;
	if (c->ctx.deadline_ms && c->ctx.deadline_ms < deadline)
		deadline = c->ctx.deadline_ms;
	pthread_mutex_lock(&s->mutex);
	while (!req.answered && !s->ended && !atomic_load(&c->cancelled)
			&& !(c->ctx.request_stop && atomic_load(c->ctx.request_stop))
			&& clock_ms() < deadline) {
		struct timespec ts = clock_realtime_in(100);
		pthread_cond_timedwait(&s->cond, &s->mutex, &ts);
	}
	for (struct mcp_outreq** p = &s->outreqs; *p; p = &(*p)->next) {
		if (*p == &req) {
			*p = req.next;
			break;
		}
	}
	pthread_mutex_unlock(&s->mutex);

	if (req.answered) {
		*error = req.error;
		return req.result;
	}
	*error = json_pack("{s:i, s:s}", "code", RPC_INTERNAL, "message",
			s->ended || atomic_load(&c->cancelled)
			? "cancelled" : "the client did not answer in time");
	return NULL;
}

static void deliver_response(struct mcp_session* s, json_t* msg)
{
	json_t* id = json_object_get(msg, "id");
	if (!json_is_integer(id))
		return;
	pthread_mutex_lock(&s->mutex);
	for (struct mcp_outreq* r = s->outreqs; r; r = r->next) {
		if (r->id == json_integer_value(id) && !r->answered) {
			r->answered = true;
			r->result = json_incref(json_object_get(msg, "result"));
			r->error = json_incref(json_object_get(msg, "error"));
			pthread_cond_broadcast(&s->cond);
			break;
		}
	}
	pthread_mutex_unlock(&s->mutex);
}

/* The session's log level, which logging/setLevel may change mid-call. */
static int session_call_log_level(struct mcp_call* c)
{
	struct mcp_session* s = ((struct session_call*)c)->session;
	pthread_mutex_lock(&s->mutex);
	int min = s->log_level;
	pthread_mutex_unlock(&s->mutex);
	return min;
}

static void session_call_unlink(struct mcp_call* c)
{
	struct mcp_session* s = ((struct session_call*)c)->session;
	pthread_mutex_lock(&s->mutex);
	for (struct mcp_call** p = &s->calls; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	s->busy--;
	s->last_active = clock_ms();
	pthread_mutex_unlock(&s->mutex);
}

static void session_call_release(struct mcp_call* c)
{
	mcp_session_unref(((struct session_call*)c)->session);
	free(c);
}

static const struct mcp_call_ops session_call_ops = {
	.log_level = session_call_log_level,
	.unlink = session_call_unlink,
	.release = session_call_release,
};

static struct mcp_call* session_call_new(struct mcp_session* s, struct mcp_sink* sink,
		json_t* id, json_t* params)
{
	struct session_call* sc = calloc(1, sizeof(*sc));
	if (!sc)
		return NULL;
	struct mcp_call* c = &sc->call;
	mcp_session_ref(s);
	sc->session = s;
	mcp_call_init(c, &session_call_ops, sink, id, params);
	pthread_mutex_lock(&s->mutex);
	c->next = s->calls;
	s->calls = c;
	s->busy++;
	if (s->ended)
		mcp_call_cancel(c);
	pthread_mutex_unlock(&s->mutex);
	return c;
}

/* ---- The session era's own methods ---- */

static json_t* m_initialize(struct mcp_session* s, json_t* params, struct mcp_rpc_error* err)
{
	const char* asked = json_string_value(json_object_get(params, "protocolVersion"));
	if (!json_is_object(params) || !asked)
		return mcp_fail(err, RPC_INVALID_PARAMS, "initialize needs params.protocolVersion");
	const char* version = mcp_version_supported(asked) ? asked : MCP_VERSION_LATEST;
	json_t* caps = json_object_get(params, "capabilities");

	pthread_mutex_lock(&s->mutex);
	if (s->initialized) {
		pthread_mutex_unlock(&s->mutex);
		return mcp_fail(err, RPC_INVALID_REQUEST, "the session is already initialized");
	}
	s->initialized = true;
	snprintf(s->version, sizeof(s->version), "%s", version);
	s->can_sample = json_is_object(json_object_get(caps, "sampling"));
	s->can_elicit = json_is_object(json_object_get(caps, "elicitation"));
	json_t* info = json_object_get(params, "clientInfo");
	const char* client = json_string_value(json_object_get(info, "name"));
	if (client)
		snprintf(s->client_name, sizeof(s->client_name), "%.*s",
				text_cut(client, sizeof(s->client_name) - 1), client);
	pthread_mutex_unlock(&s->mutex);

	log_info("mcp: session %s: %s %s, protocol %s", s->id,
			json_string_value(json_object_get(info, "name")) ? json_string_value(json_object_get(info, "name")) : "client",
			json_string_value(json_object_get(info, "version")) ? json_string_value(json_object_get(info, "version")) : "",
			version);
	return json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{s:b}, s:{}, s:{}},"
			" s:{s:s, s:s, s:s}, s:s}",
			"protocolVersion", version,
			"capabilities",
			"tools", "listChanged", 1,
			"resources", "subscribe", 1, "listChanged", 1,
			"prompts", "listChanged", 1,
			"logging", "completions",
			"serverInfo", "name", "deskd", "title", "deskd", "version", DESKD_VERSION,
			"instructions",
			"deskd controls a Linux/X11 desktop. Take a screenshot first; "
			"coordinates are in the pixel space of the latest screenshot of the same "
			"target (screen or window). Prefer window targets and zoom for detail; "
			"after an action, use wait_for_change before the next screenshot. "
			"The prompt computer_use_guide explains more.");
}

static json_t* m_ping(struct mcp_session* s, json_t* params, struct mcp_rpc_error* err)
{
	return json_object();
}

static json_t* m_set_level(struct mcp_session* s, json_t* params, struct mcp_rpc_error* err)
{
	const char* level = json_string_value(json_object_get(params, "level"));
	int li = mcp_log_level_index(level);
	if (li < 0)
		return mcp_fail(err, RPC_INVALID_PARAMS, "unknown log level; use one of debug, info, "
				"notice, warning, error, critical, alert, emergency");
	pthread_mutex_lock(&s->mutex);
	s->log_level = li;
	pthread_mutex_unlock(&s->mutex);
	return json_object();
}

static json_t* m_subscribe(struct mcp_session* s, json_t* params, struct mcp_rpc_error* err)
{
	const char* uri = json_string_value(json_object_get(params, "uri"));
	if (!uri)
		return mcp_fail(err, RPC_INVALID_PARAMS, "needs params.uri");
	pthread_mutex_lock(&s->mutex);
	json_object_set_new(s->subscriptions, uri, json_true());
	pthread_mutex_unlock(&s->mutex);
	return json_object();
}

static json_t* m_unsubscribe(struct mcp_session* s, json_t* params, struct mcp_rpc_error* err)
{
	const char* uri = json_string_value(json_object_get(params, "uri"));
	if (!uri)
		return mcp_fail(err, RPC_INVALID_PARAMS, "needs params.uri");
	pthread_mutex_lock(&s->mutex);
	json_object_del(s->subscriptions, uri);
	pthread_mutex_unlock(&s->mutex);
	return json_object();
}

static void session_start_tool_call(struct mcp_session* s, json_t* id, json_t* params,
		struct mcp_sink* sink);

/* What only a session serves; the rest is the core's (mcp_method_find). */
struct session_method {
	const char* name;
	json_t* (*fn)(struct mcp_session* s, json_t* params, struct mcp_rpc_error* err);
	/** Instead of fn: starts the request and answers it later. */
	void (*start)(struct mcp_session* s, json_t* id, json_t* params, struct mcp_sink* sink);
	bool any_time;		/* allowed before initialize */
};

static const struct session_method session_methods[] = {
	{ "initialize", m_initialize, NULL, true },
	{ "ping", m_ping, NULL, true },
	{ "logging/setLevel", m_set_level, NULL, false },
	{ "resources/subscribe", m_subscribe, NULL, false },
	{ "resources/unsubscribe", m_unsubscribe, NULL, false },
	{ "tools/call", NULL, session_start_tool_call, false },
};

static const struct session_method* session_method(const char* name)
{
	for (size_t i = 0; i < sizeof(session_methods) / sizeof(session_methods[0]); i++)
		if (strcmp(session_methods[i].name, name) == 0)
			return &session_methods[i];
	return NULL;
}

static void session_start_tool_call(struct mcp_session* s, json_t* id, json_t* params,
		struct mcp_sink* sink)
{
	const struct tool_def* tool;
	json_t* args;
	enum mcp_tool_check check = mcp_call_check_tool(params, &tool, &args);
	const char* name = json_string_value(json_object_get(params, "name"));
	char msg[300];
	const char* refusal = NULL;
	if (check == MCP_TOOL_NO_NAME) {
		refusal = "tools/call needs params.name";
	} else if (check == MCP_TOOL_UNKNOWN) {
		snprintf(msg, sizeof(msg), "Unknown tool: %.*s", text_cut(name, 200), name);
		refusal = msg;
	} else if (check == MCP_TOOL_BAD_ARGUMENTS) {
		refusal = "params.arguments must be an object";
	}
	/* Only a known tool goes on: a call always has something to run. */
	if (!refusal && json_is_null(json_object_get(params, "arguments")))
		json_object_del(params, "arguments");
	struct mcp_call* c = refusal ? NULL : session_call_new(s, sink, id, params);
	if (!c) {
		json_t* resp = mcp_error_response(id, refusal ? RPC_INVALID_PARAMS : RPC_INTERNAL,
				refusal ? refusal : "out of memory", NULL);
		sink->impl->done(sink, resp);
		json_decref(resp);
		return;
	}
	c->tool = tool;
	c->args = args;
	c->ctx = mcp_call_ctx(c);
	c->ctx.via = s->via;
	c->ctx.session_id = s->id;
	c->ctx.client_name = s->client_name[0] ? s->client_name : NULL;
	c->ctx.session = s->tools;
	c->ctx.read_only = sink->read_only;
	c->ctx.request = call_request;
	c->ctx.client_can_sample = s->can_sample;
	c->ctx.client_can_elicit = s->can_elicit;
	mcp_call_start(c, s->inline_mode, 200);
}

static void start_job(struct mcp_session* s, const struct mcp_method* method, json_t* id,
		json_t* params, struct mcp_sink* sink)
{
	struct mcp_call* c = session_call_new(s, sink, id, params);
	if (!c) {
		json_t* resp = mcp_error_response(id, RPC_INTERNAL, "out of memory", NULL);
		sink->impl->done(sink, resp);
		json_decref(resp);
		return;
	}
	c->job = method;
	mcp_call_start(c, s->inline_mode, 200);
}

/* Activity: the idle clock restarts; a request other than initialize makes
 * the session used (the short expiry of never-used sessions ends). */
static void session_touch(struct mcp_session* s, enum mcp_msg_kind kind, json_t* msg)
{
	const char* method = json_string_value(json_object_get(msg, "method"));
	pthread_mutex_lock(&s->mutex);
	s->last_active = clock_ms();
	if (kind == MCP_MSG_REQUEST && method && strcmp(method, "initialize") != 0)
		s->used = true;
	pthread_mutex_unlock(&s->mutex);
}

static void handle_notification(struct mcp_session* s, json_t* msg)
{
	const char* method = json_string_value(json_object_get(msg, "method"));
	json_t* params = json_object_get(msg, "params");
	if (strcmp(method, "notifications/cancelled") == 0) {
		json_t* rid = json_object_get(params, "requestId");
		pthread_mutex_lock(&s->mutex);
		for (struct mcp_call* c = s->calls; c; c = c->next) {
			if (json_equal(c->id, rid)) {
				atomic_store(&c->cancelled, true);
				log_debug("mcp: session %s cancelled a request", s->id);
			}
		}
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->mutex);
	}
	/* notifications/initialized, roots/list_changed, progress: nothing to do. */
}

int mcp_session_handle(struct mcp_session* self, json_t* msg, struct mcp_sink* sink)
{
	enum mcp_msg_kind kind = mcp_message_kind(msg);
	session_touch(self, kind, msg);
	if (kind == MCP_MSG_NOTIFICATION) {
		handle_notification(self, msg);
		return 0;
	}
	if (kind == MCP_MSG_RESPONSE) {
		deliver_response(self, msg);
		return 0;
	}
	json_t* id = json_object_get(msg, "id");
	if (kind == MCP_MSG_INVALID) {
		json_t* resp = mcp_error_response(json_is_object(msg) ? id : NULL,
				RPC_INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message", NULL);
		sink->impl->done(sink, resp);
		json_decref(resp);
		return 1;
	}

	const char* name = json_string_value(json_object_get(msg, "method"));
	json_t* params = json_object_get(msg, "params");
	const struct session_method* sm = session_method(name);
	const struct mcp_method* cm = sm ? NULL : mcp_method_find(name);

	json_t* resp = NULL;
	if (!sm && !cm) {
		char text[300];
		snprintf(text, sizeof(text), "Method not found: %.*s", text_cut(name, 200), name);
		resp = mcp_error_response(id, RPC_METHOD_NOT_FOUND, text, NULL);
	} else if (!(sm && sm->any_time) && !mcp_session_version(self)) {
		resp = mcp_error_response(id, RPC_INVALID_REQUEST,
				"Invalid Request: send initialize first", NULL);
	} else if (sm && sm->start) {
		sm->start(self, id, params, sink);
		return 1;
	} else if (cm && cm->async && !self->inline_mode) {
		start_job(self, cm, id, params, sink);
		return 1;
	} else {
		struct mcp_rpc_error err = { RPC_INTERNAL, "internal error", NULL };
		json_t* empty = params ? NULL : json_object();
		json_t* result = sm ? sm->fn(self, params ? params : empty, &err)
				: cm->fn(params ? params : empty, &err);
		json_decref(empty);
		if (result) {
			resp = mcp_result_response(id, result);
			json_decref(result);
		} else {
			resp = mcp_error_response(id, err.code, err.message, err.data);
		}
	}
	if (!resp)
		resp = mcp_error_response(id, RPC_INTERNAL, "out of memory", NULL);
	sink->impl->done(sink, resp);
	json_decref(resp);
	return 1;
}

void mcp_session_handle_text(struct mcp_session* self, const char* text, size_t len,
		struct mcp_sink* sink)
{
	json_error_t jerr;
	enum jsonmem_status st;
	json_t* msg = jsonmem_load(text, len, 0, &jerr, &st);
	if (!msg) {
		json_t* resp = st == JSONMEM_INVALID ? mcp_parse_error(&jerr)
			: mcp_error_response(NULL, RPC_INVALID_REQUEST, jerr.text, NULL);
		sink->impl->done(sink, resp);
		json_decref(resp);
		return;
	}
	if (json_is_array(msg)) {
		const char* v = mcp_session_version(self);
		if (json_array_size(msg) == 0 || (v && strcmp(v, MCP_VERSION_LEGACY) != 0)) {
			json_t* resp = mcp_error_response(NULL, RPC_INVALID_REQUEST,
					json_array_size(msg) ? "Invalid Request: batches are only allowed "
					"in protocol 2025-03-26" : "Invalid Request: empty batch", NULL);
			sink->impl->done(sink, resp);
			json_decref(resp);
		} else {
			size_t i;
			json_t* m;
			json_array_foreach(msg, i, m)
				mcp_session_handle(self, m, sink);
		}
	} else {
		mcp_session_handle(self, msg, sink);
	}
	json_decref(msg);
}

/* ---- Registry and reaper ---- */

static pthread_mutex_t reg_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cond = PTHREAD_COND_INITIALIZER;
static struct mcp_session** reg;
static size_t reg_n, reg_cap;
static pthread_t reaper;
static bool reaper_running, reaper_stop;
static int64_t idle_timeout_ms = IDLE_TIMEOUT_MS;
static int64_t new_timeout_ms = NEW_TIMEOUT_MS;

int mcp_registry_add(struct mcp_session* session)
{
	pthread_mutex_lock(&reg_mutex);
	if (reg_n == reg_cap) {
		size_t cap = reg_cap ? reg_cap * 2 : 16;
		struct mcp_session** p = realloc(reg, cap * sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&reg_mutex);
			return -ENOMEM;
		}
		reg = p;
		reg_cap = cap;
	}
	mcp_session_ref(session);
	reg[reg_n++] = session;
	pthread_mutex_unlock(&reg_mutex);
	return 0;
}

/* The session to end to make room (reg_mutex held): an idle one (no call
 * in progress, no open stream) of owner (any owner but pinned ones when
 * owner < 0), never-used ones first, then the least recently active.
 * Its index, or -1. */
static ssize_t registry_victim(int owner)
{
	ssize_t best = -1;
	bool best_used = true;
	int64_t best_idle = 0;
	for (size_t i = 0; i < reg_n; i++) {
		struct mcp_session* s = reg[i];
		if (s->owner < 0 || (owner >= 0 && s->owner != owner))
			continue;
		int64_t idle = mcp_session_idle_ms(s);
		if (idle <= 0)
			continue;
		pthread_mutex_lock(&s->mutex);
		bool used = s->used;
		pthread_mutex_unlock(&s->mutex);
		if (best < 0 || (best_used && !used) || (used == best_used && idle > best_idle)) {
			best = (ssize_t)i;
			best_used = used;
			best_idle = idle;
		}
	}
	return best;
}

int mcp_registry_admit(struct mcp_session* session, int owner, int owner_max,
		int total_max, struct mcp_session** evicted)
{
	*evicted = NULL;
	pthread_mutex_lock(&reg_mutex);
	int mine = 0;
	for (size_t i = 0; i < reg_n; i++)
		mine += reg[i]->owner == owner;
	ssize_t victim = -1;
	if (mine >= owner_max)
		victim = registry_victim(owner);
	else if ((int)reg_n >= total_max)
		victim = registry_victim(-1);
	if ((mine >= owner_max || (int)reg_n >= total_max) && victim < 0) {
		pthread_mutex_unlock(&reg_mutex);
		return -EBUSY;
	}
	if (victim >= 0) {
		*evicted = reg[victim];
		reg[victim] = reg[--reg_n];
	}
	session->owner = owner;
	pthread_mutex_unlock(&reg_mutex);
	if (*evicted)
		log_info("mcp: session %s ended to make room for a new one (%s)",
				(*evicted)->id, mine >= owner_max ? "its token's quota"
				: "--max-sessions");
	int rc = mcp_registry_add(session);
	if (rc < 0)
		session->owner = -1;
	return rc;
}

struct mcp_session* mcp_registry_find(const char* id)
{
	struct mcp_session* found = NULL;
	pthread_mutex_lock(&reg_mutex);
	for (size_t i = 0; id && i < reg_n; i++) {
		if (strcmp(reg[i]->id, id) == 0) {
			found = reg[i];
			mcp_session_ref(found);
			break;
		}
	}
	pthread_mutex_unlock(&reg_mutex);
	return found;
}

struct mcp_session* mcp_registry_remove(const char* id)
{
	struct mcp_session* found = NULL;
	pthread_mutex_lock(&reg_mutex);
	for (size_t i = 0; id && i < reg_n; i++) {
		if (strcmp(reg[i]->id, id) == 0) {
			found = reg[i];
			reg[i] = reg[--reg_n];
			break;
		}
	}
	pthread_mutex_unlock(&reg_mutex);
	return found;
}

int mcp_session_count(void)
{
	pthread_mutex_lock(&reg_mutex);
	int n = (int)reg_n;
	pthread_mutex_unlock(&reg_mutex);
	return n;
}

/* Idle past its expiry: --session-timeout, or --new-session-timeout for a
 * session that made no request since initialize. Pinned ones (stdio's)
 * never expire. */
static bool session_expired(struct mcp_session* s)
{
	if (s->owner < 0)
		return false;
	pthread_mutex_lock(&s->mutex);
	bool used = s->used;
	pthread_mutex_unlock(&s->mutex);
	int64_t limit = used ? idle_timeout_ms : new_timeout_ms;
	if (limit > idle_timeout_ms)
		limit = idle_timeout_ms;
	return mcp_session_idle_ms(s) > limit;
}

static void* reaper_main(void* arg)
{
	pthread_mutex_lock(&reg_mutex);
	while (!reaper_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&reg_cond, &reg_mutex, &ts);
		if (reaper_stop)
			break;
		struct mcp_session* expired[16];
		size_t n_expired = 0;
		for (size_t i = 0; i < reg_n && n_expired < 16; ) {
			if (session_expired(reg[i])) {
				expired[n_expired++] = reg[i];
				reg[i] = reg[--reg_n];
			} else {
				i++;
			}
		}
		pthread_mutex_unlock(&reg_mutex);
		for (size_t i = 0; i < n_expired; i++) {
			log_info("mcp: session %s expired after %lld s idle%s", expired[i]->id,
					(long long)((expired[i]->used ? idle_timeout_ms
						: new_timeout_ms) / 1000),
					expired[i]->used ? "" : " (no request since initialize)");
			mcp_session_end(expired[i]);
			mcp_session_unref(expired[i]);
		}
		pthread_mutex_lock(&reg_mutex);
	}
	pthread_mutex_unlock(&reg_mutex);
	return NULL;
}

int mcp_registry_start(void)
{
	pthread_mutex_lock(&reg_mutex);
	if (reaper_running) {
		pthread_mutex_unlock(&reg_mutex);
		return 0;
	}
	reaper_stop = false;
	const struct options* opts = options_get();
	if (opts && opts->session_timeout_s > 0)
		idle_timeout_ms = (int64_t)opts->session_timeout_s * 1000;
	if (opts && opts->new_session_timeout_s > 0)
		new_timeout_ms = (int64_t)opts->new_session_timeout_s * 1000;
	const char* knob = getenv("DESKD_MCP_IDLE_TIMEOUT_MS");
	if (knob && atoll(knob) > 0)
		idle_timeout_ms = atoll(knob);
	int rc = pthread_create(&reaper, NULL, reaper_main, NULL);
	reaper_running = rc == 0;
	pthread_mutex_unlock(&reg_mutex);
	return -rc;
}

void mcp_sessions_shutdown(void)
{
	pthread_mutex_lock(&reg_mutex);
	bool join = reaper_running;
	reaper_stop = true;
	reaper_running = false;
	pthread_cond_broadcast(&reg_cond);
	pthread_mutex_unlock(&reg_mutex);
	if (join)
		pthread_join(reaper, NULL);

	pthread_mutex_lock(&reg_mutex);
	struct mcp_session** all = reg;
	size_t n = reg_n;
	reg = NULL;
	reg_n = reg_cap = 0;
	pthread_mutex_unlock(&reg_mutex);
	for (size_t i = 0; i < n; i++) {
		mcp_session_end(all[i]);
		mcp_session_unref(all[i]);
	}
	free(all);
}
