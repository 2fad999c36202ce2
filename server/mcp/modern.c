#define _GNU_SOURCE
/* MCP 2026-07-28, the stateless era (core.h, docs/MCP.md 10): every request
 * carries its protocol version and client capabilities in _meta; there is no
 * session, no initialize, no server -> client request. Tools that need the
 * user or the client's model answer with an input-required result and get
 * the answers on a retry (multi round-trip requests), with an
 * integrity-protected requestState (state.c). Change notifications flow on
 * subscriptions/listen streams. The transports route a message here when
 * mcp_is_modern() says so; the legacy era stays in mcp.c.
 *
 * Checks, in order (HTTP status in brackets): JSON-RPC shape (-32600 [400]);
 * _meta with protocolVersion and clientCapabilities (-32602 [400]); over HTTP
 * MCP-Protocol-Version, Mcp-Method and Mcp-Name against the body, Base64
 * sentinel decoded (-32020 [400]); the version (-32022 [400], with the
 * supported list); logLevel (-32602 [400]); the method (-32601 [404]). A
 * tools/call then checks its tool (-32602), the tool's x-mcp-header
 * parameters (-32020 [400]), inputResponses and requestState (-32602), and a
 * tool that needs an undeclared capability answers -32021 [400]. */

#include "server/mcp/mcp.h"
#include "server/mcp/core.h"
#include "base/base64.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/worker.h"
#include "tools/tools.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DESKD_VERSION
#define DESKD_VERSION "0.0.0"
#endif

#define TTL_STATIC_MS 3600000	/* lists that do not change while deskd runs */
#define TTL_READ_MS 3600000	/* resources are immutable once listed */

#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_LOG "io.modelcontextprotocol/logLevel"
#define META_CLIENT "io.modelcontextprotocol/clientInfo"
#define META_SERVER "io.modelcontextprotocol/serverInfo"
#define META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"

static const char* const legacy_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26",
	"2024-11-05" };
/* Newest first: the modern one, then the ones initialize negotiates. */
static const char* const supported_versions[] = { MCP_VERSION_MODERN, "2025-11-25",
	"2025-06-18", "2025-03-26" };

static const char instructions[] =
	"deskd controls a Linux/X11 desktop. Take a screenshot first; coordinates are in "
	"the pixel space of a screenshot of the same target (screen or window). This "
	"protocol has no session, so pass the screenshot's coordinate_space (e.g. "
	"\"1280x800/1280\") with later actions and zoom to say which screenshot you mean; "
	"without it they use the server's default max dimension. Prefer window targets "
	"and zoom for detail; after an action, use wait_for_change before the next "
	"screenshot. Recordings you start end with record_stop or their max_seconds. The "
	"prompt computer_use_guide explains more.";

bool mcp_version_legacy(const char* version)
{
	for (size_t i = 0; version && i < sizeof(legacy_versions) / sizeof(legacy_versions[0]); i++)
		if (strcmp(version, legacy_versions[i]) == 0)
			return true;
	return false;
}

/* RFC 9110 5.5: optional whitespace around a field value is not part of it. */
static const char* trim_ows(const char* v, size_t* len)
{
	while (*v == ' ' || *v == '\t')
		v++;
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	*len = n;
	return v;
}

bool mcp_is_modern(json_t* msg, const char* header_version)
{
	if (!json_is_object(msg))
		return false;
	json_t* meta = json_object_get(json_object_get(msg, "params"), "_meta");
	json_t* v = json_object_get(meta, MCP_META_VERSION);
	if (v)
		return !(json_is_string(v) && mcp_version_legacy(json_string_value(v)));
	return json_object_get(msg, "method") && mcp_header_modern(header_version);
}

bool mcp_header_modern(const char* header_version)
{
	if (!header_version)
		return false;
	size_t n;
	const char* h = trim_ows(header_version, &n);
	char buf[64];
	if (n == 0 || n >= sizeof(buf))
		return n != 0;
	memcpy(buf, h, n);
	buf[n] = '\0';
	return !mcp_version_legacy(buf);
}

/* ---- answers ---- */

static json_t* server_info(void)
{
	return json_pack("{s:s, s:s, s:s}", "name", "deskd", "title", "deskd",
			"version", DESKD_VERSION);
}

static void answer(struct mcp_sink* sink, int status, json_t* response)
{
	if (!response)
		response = mcp_error_response(NULL, RPC_INTERNAL, "Internal error: out of memory", NULL);
	if (status != 200 && sink->impl->status)
		sink->impl->status(sink, status);
	sink->impl->done(sink, response);
	json_decref(response);
}

static void answer_error(struct mcp_sink* sink, int status, json_t* id, int code,
		json_t* data, const char* fmt, ...) __attribute__((format(printf, 6, 7)));

static void answer_error(struct mcp_sink* sink, int status, json_t* id, int code,
		json_t* data, const char* fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	answer(sink, status, mcp_error_response(id, code, msg, data));
}

/* The HTTP status a stateless error travels with. */
static int error_status(int code)
{
	switch (code) {
	case RPC_METHOD_NOT_FOUND:
		return 404;
	case MCP_HEADER_MISMATCH:
	case MCP_MISSING_CAPABILITY:
	case MCP_UNSUPPORTED_VERSION:
	case RPC_INVALID_REQUEST:
	case RPC_PARSE_ERROR:
		return 400;
	default:
		return 200;
	}
}

/* A copy of result with resultType "complete", the caching hints (ttl_ms < 0:
 * none) and serverInfo in _meta. Steals result. */
static json_t* complete(json_t* result, int ttl_ms, const char* scope)
{
	json_t* out = json_copy(result);
	json_decref(result);
	if (!out)
		return NULL;
	json_object_set_new(out, "resultType", json_string("complete"));
	if (ttl_ms >= 0) {
		json_object_set_new(out, "ttlMs", json_integer(ttl_ms));
		json_object_set_new(out, "cacheScope", json_string(scope));
	}
	json_t* meta = json_object_get(out, "_meta");
	meta = json_is_object(meta) ? json_copy(meta) : json_object();
	json_object_set_new(meta, META_SERVER, server_info());
	json_object_set_new(out, "_meta", meta);
	return out;
}

/* ---- per-request metadata ---- */

struct meta {
	const char* version;
	json_t* caps;
	int log_level;			/* -1: the request asked for no logs */
	json_t* progress_token;		/* borrowed */
	const char* client_name;	/* _meta clientInfo.name, borrowed; or NULL */
	bool can_sample, can_elicit, can_list_roots;
};

/* Decode a header value that may use the =?base64?...?= sentinel (SEP-2243);
 * *out malloc'd. Returns 0, or -1 with why set. */
static int header_value(const char* raw, char** out, size_t* out_len, const char** why)
{
	size_t n;
	const char* v = trim_ows(raw, &n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f || c >= 0x80) {
			*why = "contains characters that are not allowed in a header value";
			return -1;
		}
	}
	const char* pre = "=?base64?", *suf = "?=";
	if (n >= strlen(pre) + strlen(suf) && strncmp(v, pre, strlen(pre)) == 0
			&& strncmp(v + n - strlen(suf), suf, strlen(suf)) == 0) {
		*out = base64_decode(v + strlen(pre), n - strlen(pre) - strlen(suf), out_len);
		if (!*out) {
			*why = "is not valid Base64 inside =?base64?...?=";
			return -1;
		}
		return 0;
	}
	*out = strndup(v, n);
	*out_len = n;
	return *out ? 0 : -1;
}

/* Does the header (sentinel decoded) carry exactly this string? */
static int header_matches(const char* raw, const char* want, size_t want_len,
		const char** why)
{
	char* v;
	size_t len;
	if (header_value(raw, &v, &len, why) < 0)
		return -1;
	int same = len == want_len && memcmp(v, want, len) == 0;
	free(v);
	if (!same)
		*why = "does not match the request body";
	return same ? 0 : -1;
}

static const char* header(const struct mcp_request_env* env, const char* name)
{
	return env->header ? env->header(env->header_ud, name) : NULL;
}

/* The standard headers against the body (HTTP only). 0, or -1 after
 * answering -32020. */
static int check_headers(const struct mcp_request_env* env, json_t* id, const char* method,
		json_t* params, const char* version, struct mcp_sink* sink)
{
	if (!env->header)
		return 0;
	const char* why = NULL;
	const char* h = header(env, "MCP-Protocol-Version");
	if (!h) {
		answer_error(sink, 400, id, MCP_HEADER_MISMATCH, NULL,
				"Header mismatch: the MCP-Protocol-Version header is required");
		return -1;
	}
	if (header_matches(h, version, strlen(version), &why) < 0) {
		answer_error(sink, 400, id, MCP_HEADER_MISMATCH, NULL, "Header mismatch: "
				"MCP-Protocol-Version header '%.60s' %s (_meta protocolVersion '%.60s')",
				h, why, version);
		return -1;
	}
	h = header(env, "Mcp-Method");
	if (!h) {
		answer_error(sink, 400, id, MCP_HEADER_MISMATCH, NULL,
				"Header mismatch: the Mcp-Method header is required");
		return -1;
	}
	if (header_matches(h, method, strlen(method), &why) < 0) {
		answer_error(sink, 400, id, MCP_HEADER_MISMATCH, NULL,
				"Header mismatch: Mcp-Method header '%.80s' %s (method '%.80s')",
				h, why, method);
		return -1;
	}
	const char* key = strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0
			? "name" : strcmp(method, "resources/read") == 0 ? "uri"
			: strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0
			|| strcmp(method, "tasks/cancel") == 0 ? "taskId" : NULL;
	json_t* src = key ? json_object_get(params, key) : NULL;
	if (json_is_string(src)) {
		h = header(env, "Mcp-Name");
		if (!h) {
			answer_error(sink, 400, id, MCP_HEADER_MISMATCH, NULL, "Header mismatch: "
					"the Mcp-Name header is required for %s (params.%s)", method, key);
			return -1;
		}
		if (header_matches(h, json_string_value(src), json_string_length(src), &why) < 0) {
			answer_error(sink, 400, id, MCP_HEADER_MISMATCH, NULL, "Header mismatch: "
					"Mcp-Name header '%.80s' %s (params.%s '%.80s')", h, why, key,
					json_string_value(src));
			return -1;
		}
	}
	return 0;
}

/* x-mcp-header parameters of a tool (SEP-2243), along chains of properties
 * only: each annotated value present in args must come as a matching
 * Mcp-Param-{name} header. Returns 0, or -1 with msg set. */
static int check_param_headers(const struct mcp_request_env* env, json_t* schema,
		json_t* args, char* msg, size_t size, int depth)
{
	json_t* props = json_object_get(schema, "properties");
	const char* name;
	json_t* def;
	if (!env->header || depth > 8 || !json_is_object(props))
		return 0;
	json_object_foreach(props, name, def) {
		json_t* value = json_object_get(args, name);
		const char* hname = json_string_value(json_object_get(def, "x-mcp-header"));
		if (json_is_object(json_object_get(def, "properties")) && json_is_object(value)
				&& check_param_headers(env, def, value, msg, size, depth + 1) < 0)
			return -1;
		if (!hname || !value || json_is_null(value))
			continue;
		char full[160];
		snprintf(full, sizeof(full), "Mcp-Param-%s", hname);
		const char* raw = header(env, full);
		if (!raw) {
			snprintf(msg, size, "Header mismatch: the %s header is required when "
					"arguments.%s is given", full, name);
			return -1;
		}
		char* v;
		size_t len;
		const char* why = NULL;
		if (header_value(raw, &v, &len, &why) < 0) {
			snprintf(msg, size, "Header mismatch: %s %s", full, why ? why : "is invalid");
			return -1;
		}
		bool same = false;
		if (json_is_string(value)) {
			same = len == json_string_length(value)
					&& memcmp(v, json_string_value(value), len) == 0;
		} else if (json_is_boolean(value)) {
			same = strcmp(v, json_is_true(value) ? "true" : "false") == 0;
		} else if (json_is_number(value)) {
			char* end;
			double d = strtod(v, &end);
			same = len && *end == '\0' && isfinite(d) && d == json_number_value(value);
		}
		free(v);
		if (!same) {
			snprintf(msg, size, "Header mismatch: %s does not match arguments.%s",
					full, name);
			return -1;
		}
	}
	return 0;
}

/* Validate the request's _meta, headers and version; fill m. 0, or -1 after
 * answering. */
static int check_request(json_t* msg, const struct mcp_request_env* env, struct meta* m,
		struct mcp_sink* sink)
{
	json_t* id = json_object_get(msg, "id");
	const char* method = json_string_value(json_object_get(msg, "method"));
	json_t* params = json_object_get(msg, "params");
	json_t* meta = json_object_get(params, "_meta");
	json_t* version = json_object_get(meta, MCP_META_VERSION);
	json_t* caps = json_object_get(meta, META_CAPS);
	if (!json_is_object(meta)) {
		answer_error(sink, 400, id, RPC_INVALID_PARAMS, NULL, "Invalid params: params._meta "
				"with %s and %s is required (protocol %s)", MCP_META_VERSION, META_CAPS,
				MCP_VERSION_MODERN);
		return -1;
	}
	if (!json_is_string(version) || !json_string_length(version)) {
		answer_error(sink, 400, id, RPC_INVALID_PARAMS, NULL,
				"Invalid params: _meta[\"%s\"] (a string) is required", MCP_META_VERSION);
		return -1;
	}
	if (!json_is_object(caps)) {
		answer_error(sink, 400, id, RPC_INVALID_PARAMS, NULL,
				"Invalid params: _meta[\"%s\"] (an object) is required", META_CAPS);
		return -1;
	}
	m->version = json_string_value(version);
	if (check_headers(env, id, method, params, m->version, sink) < 0)
		return -1;
	if (strcmp(m->version, MCP_VERSION_MODERN) != 0) {
		json_t* list = json_array();
		for (size_t i = 0; i < sizeof(supported_versions) / sizeof(supported_versions[0]); i++)
			json_array_append_new(list, json_string(supported_versions[i]));
		answer_error(sink, 400, id, MCP_UNSUPPORTED_VERSION,
				json_pack("{s:o, s:s}", "supported", list, "requested", m->version),
				"Unsupported protocol version: %.60s (supported: %s per request, or "
				"2025-11-25, 2025-06-18, 2025-03-26 with initialize)", m->version,
				MCP_VERSION_MODERN);
		return -1;
	}
	m->caps = caps;
	m->can_sample = json_is_object(json_object_get(caps, "sampling"));
	m->can_elicit = json_is_object(json_object_get(caps, "elicitation"));
	m->can_list_roots = json_is_object(json_object_get(caps, "roots"));
	json_t* level = json_object_get(meta, META_LOG);
	m->log_level = -1;
	if (level) {
		m->log_level = mcp_log_level_index(json_string_value(level));
		if (m->log_level < 0) {
			answer_error(sink, 400, id, RPC_INVALID_PARAMS, NULL, "Invalid params: "
					"_meta[\"%s\"] must be one of debug, info, notice, warning, error, "
					"critical, alert, emergency", META_LOG);
			return -1;
		}
	}
	m->client_name = json_string_value(json_object_get(json_object_get(meta, META_CLIENT),
			"name"));
	json_t* token = json_object_get(meta, "progressToken");
	m->progress_token = json_is_string(token) || json_is_integer(token) ? token : NULL;
	return 0;
}

/* ---- calls in progress and listen streams ---- */

/* A modern call: the core's call (call.c) and what the request said. */
struct mcall {
	struct mcp_call call;		/* first */
	char principal[16];
	bool stdio;
	int log_level;
	json_t* input_state;
	struct meta meta;
};

struct listener {
	struct listener* next;
	struct mcp_sink* sink;		/* reference */
	json_t* id;
	bool stdio, acked;
	bool tools, prompts, resources;
	json_t* uris;			/* resourceSubscriptions */
	atomic_bool closed;		/* the client went away */
};

static pthread_mutex_t reg_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct mcp_call* calls;
static struct listener* listeners;
static bool shutting_down;

/* Logs only when the request's _meta asked for a level, at or above it. */
static int modern_call_log_level(struct mcp_call* c)
{
	return ((struct mcall*)c)->log_level;
}

static void modern_call_unlink(struct mcp_call* c)
{
	pthread_mutex_lock(&reg_mutex);
	for (struct mcp_call** p = &calls; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	pthread_mutex_unlock(&reg_mutex);
}

static void modern_call_release(struct mcp_call* c)
{
	mcp_task_detach(c->task);
	json_decref(((struct mcall*)c)->input_state);
	free(c);
}

static json_t* tool_response(struct mcp_call* c, struct tool_result* res, int* status);
static json_t* read_response(struct mcp_call* c, json_t* result, struct mcp_rpc_error* err,
		int* status);

static const struct mcp_call_ops modern_call_ops = {
	.log_level = modern_call_log_level,
	.tool_response = tool_response,
	.method_response = read_response,
	.unlink = modern_call_unlink,
	.release = modern_call_release,
};

static struct mcall* modern_call_new(json_t* id, json_t* params,
		const struct mcp_request_env* env, const struct meta* m, struct mcp_sink* sink)
{
	struct mcall* mc = calloc(1, sizeof(*mc));
	if (!mc)
		return NULL;
	struct mcp_call* c = &mc->call;
	mcp_call_init(c, &modern_call_ops, sink, id, params);
	mc->meta = *m;
	mc->log_level = m->log_level;
	mc->stdio = strcmp(env->transport, "stdio") == 0;
	snprintf(mc->principal, sizeof(mc->principal), "%s", env->principal ? env->principal : "");
	pthread_mutex_lock(&reg_mutex);
	c->next = calls;
	calls = c;
	if (shutting_down)
		mcp_call_cancel(c);
	pthread_mutex_unlock(&reg_mutex);
	if (sink->impl->watch)
		sink->impl->watch(sink, &c->cancelled);
	return mc;
}

/* ---- input requests (multi round-trip) ---- */

/* inputResponses must be an object of result objects. */
static int check_input_responses(json_t* params, json_t* id, struct mcp_sink* sink)
{
	json_t* r = json_object_get(params, "inputResponses");
	if (!r)
		return 0;
	const char* key;
	json_t* v;
	bool ok = json_is_object(r);
	json_object_foreach(r, key, v)
		ok = ok && json_is_object(v);
	if (!ok) {
		answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL, "Invalid params: "
				"inputResponses must be an object mapping each inputRequests key to the "
				"client's result object");
		return -1;
	}
	return 0;
}

/* Verify and consume params.requestState for this request. 0 (*state set,
 * or NULL without one), or -1 after answering. */
static int open_state(json_t* params, const char* method, const char* target, json_t* args,
		const char* principal, json_t* id, struct mcp_sink* sink, json_t** state)
{
	*state = NULL;
	json_t* token = json_object_get(params, "requestState");
	if (!token)
		return 0;
	char why[200];
	if (!json_is_string(token) || !(*state = mcp_state_open(json_string_value(token), method,
			target, args, principal, why, sizeof(why)))) {
		answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL, "Invalid params: %s",
				json_is_string(token) ? why : "requestState must be a string");
		return -1;
	}
	if (json_is_null(*state)) {
		json_decref(*state);
		*state = NULL;
	}
	return 0;
}

/* The capability each kind of input request needs. */
static const char* input_capability(const char* method)
{
	if (!method)
		return NULL;
	if (strcmp(method, "elicitation/create") == 0)
		return "elicitation";
	if (strcmp(method, "sampling/createMessage") == 0)
		return "sampling";
	if (strcmp(method, "roots/list") == 0)
		return "roots";
	return NULL;
}

/* The response for an input-required outcome: the requests (borrowed) are
 * checked against the client's capabilities, the state sealed. */
static json_t* input_required(json_t* id, const struct meta* m, json_t* requests,
		json_t* state, const char* method, const char* target, json_t* args,
		const char* principal, int* status)
{
	json_t* missing = json_object();
	const char* key;
	json_t* r;
	bool well_formed = json_is_object(requests);
	json_object_foreach(requests, key, r) {
		const char* cap = input_capability(json_string_value(json_object_get(r, "method")));
		if (!cap || !json_is_object(r)) {
			well_formed = false;
			continue;
		}
		if (!json_is_object(json_object_get(m->caps, cap)))
			json_object_set_new(missing, cap, json_object());
	}
	*status = 200;
	if (!well_formed || (json_object_size(requests) == 0 && !state)) {
		json_decref(missing);
		return mcp_error_response(id, RPC_INTERNAL, "Internal error: malformed input request",
				NULL);
	}
	if (json_object_size(missing)) {
		*status = 400;
		return mcp_error_response(id, MCP_MISSING_CAPABILITY, "Missing required client "
				"capability: this request needs input the client did not declare it can give",
				json_pack("{s:o}", "requiredCapabilities", missing));
	}
	json_decref(missing);
	json_t* result = json_pack("{s:s}", "resultType", "input_required");
	if (json_object_size(requests))
		json_object_set(result, "inputRequests", requests);
	if (state) {
		char* token = mcp_state_seal(state, method, target, args, principal);
		if (!token) {
			json_decref(result);
			return mcp_error_response(id, RPC_INTERNAL, "Internal error: out of memory", NULL);
		}
		json_object_set_new(result, "requestState", json_string(token));
		free(token);
	}
	json_object_set_new(result, "_meta", json_pack("{s:o}", META_SERVER, server_info()));
	json_t* resp = mcp_result_response(id, result);
	json_decref(result);
	return resp;
}

/* ---- tasks (tasks.c) ---- */

static bool declares_tasks(const struct meta* m)
{
	return json_is_object(json_object_get(json_object_get(m->caps, "extensions"),
			MCP_TASKS_EXTENSION));
}

/* -32021 naming the extension: "<what> <why>". */
static json_t* missing_tasks(json_t* id, const char* what, const char* why)
{
	char message[400];
	snprintf(message, sizeof(message), "Missing required client capability: %.100s %s "
			"(declare _meta[\"%s\"].extensions[\"%s\"])", what, why, META_CAPS,
			MCP_TASKS_EXTENSION);
	return mcp_error_response(id, MCP_MISSING_CAPABILITY, message,
			json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions",
				MCP_TASKS_EXTENSION));
}

/* tasks/get, tasks/update, tasks/cancel: only for a request that declares
 * the extension, of the caller's own tasks. */
static void serve_task_method(const char* method, json_t* id, json_t* params,
		const struct meta* m, const struct mcp_request_env* env, struct mcp_sink* sink)
{
	if (!declares_tasks(m)) {
		answer(sink, 400, missing_tasks(id, method, "is part of the tasks extension"));
		return;
	}
	const char* task_id = json_string_value(json_object_get(params, "taskId"));
	json_t* responses = json_object_get(params, "inputResponses");
	bool update = strcmp(method, "tasks/update") == 0;
	if (!task_id || (update && !json_is_object(responses))) {
		answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL, "Invalid params: %s needs "
				"params.taskId (a string)%s", method,
				update ? " and params.inputResponses (an object)" : "");
		return;
	}
	int code = RPC_INTERNAL;
	char msg[300] = "Internal error";
	json_t* result = strcmp(method, "tasks/get") == 0
			? mcp_task_get(task_id, env->principal, &code, msg, sizeof(msg))
			: update ? mcp_task_update(task_id, env->principal, responses, &code, msg,
				sizeof(msg))
			: mcp_task_cancel(task_id, env->principal, &code, msg, sizeof(msg));
	if (!result) {
		answer_error(sink, error_status(code), id, code, NULL, "%s", msg);
		return;
	}
	answer(sink, 200, mcp_result_response(id, result));
	json_decref(result);
}

/* ---- tools/call ---- */

static json_t* tool_response(struct mcp_call* c, struct tool_result* res, int* status)
{
	struct mcall* mc = (struct mcall*)c;
	if (c->task && mcp_task_take_result(c->task, res))
		return NULL;	/* a task: its request was answered, tasks/get has it */
	if (res->missing_capabilities) {
		*status = 400;
		return mcp_error_response(c->id, MCP_MISSING_CAPABILITY, "Missing required client "
				"capability: the client did not declare what this tool needs",
				json_pack("{s:O}", "requiredCapabilities", res->missing_capabilities));
	}
	if (res->input_requests)
		return input_required(c->id, &mc->meta, res->input_requests, res->input_state,
				"tools/call", c->tool->name, c->args, mc->principal, status);
	json_t* result = complete(tool_result_to_json(res), -1, NULL);
	json_t* resp = result ? mcp_result_response(c->id, result) : NULL;
	json_decref(result);
	return resp;
}

static void modern_start_tool_call(json_t* id, json_t* params, const struct meta* m,
		const struct mcp_request_env* env, struct mcp_sink* sink)
{
	const struct tool_def* tool;
	json_t* args;
	enum mcp_tool_check check = mcp_call_check_tool(params, &tool, &args);
	const char* name = json_string_value(json_object_get(params, "name"));
	if (check == MCP_TOOL_NO_NAME) {
		answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL,
				"Invalid params: tools/call needs params.name");
		return;
	}
	if (check == MCP_TOOL_UNKNOWN) {
		answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL, "Unknown tool: %.200s", name);
		return;
	}
	if (check == MCP_TOOL_BAD_ARGUMENTS) {
		answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL,
				"Invalid params: params.arguments must be an object");
		return;
	}
	bool takes_tasks = declares_tasks(m);
	if ((tool->flags & TOOL_TASK) && !takes_tasks) {
		answer(sink, 400, missing_tasks(id, tool->name, "runs only as a task"));
		return;
	}
	json_t* schema = tools_input_schema(tool);
	char msg[400];
	if (schema && check_param_headers(env, schema, args, msg, sizeof(msg), 0) < 0) {
		answer_error(sink, 400, id, MCP_HEADER_MISMATCH, NULL, "%s", msg);
		return;
	}
	if (check_input_responses(params, id, sink) < 0)
		return;
	json_t* state;
	if (open_state(params, "tools/call", name, args, env->principal, id, sink, &state) < 0)
		return;
	struct mcall* mc = modern_call_new(id, params, env, m, sink);
	if (!mc) {
		json_decref(state);
		answer_error(sink, 500, id, RPC_INTERNAL, NULL, "Internal error: out of memory");
		return;
	}
	struct mcp_call* c = &mc->call;
	c->tool = tool;
	c->args = args;
	mc->input_state = state;
	c->ctx = mcp_call_ctx(c);
	c->ctx.via = env->transport && strcmp(env->transport, "stdio") == 0 ? "stdio" : NULL;
	c->ctx.client_name = m->client_name;
	c->ctx.read_only = env->read_only;
	c->ctx.client_can_sample = m->can_sample;
	c->ctx.client_can_elicit = m->can_elicit;
	c->ctx.client_can_list_roots = m->can_list_roots;
	c->ctx.stateless = true;
	c->ctx.input_responses = json_object_get(params, "inputResponses");
	c->ctx.input_state = state;
	/* A request that takes tasks: the call may become one (tasks.c). */
	struct mcp_task* task = takes_tasks ? mcp_task_new(c, env->principal) : NULL;
	if (task) {
		mcp_task_attach(c, task);
		mcp_task_watch(task, clock_ms());
	}
	mcp_call_start(c, false, 503);
}

/* ---- resources/read on a worker (files up to 32 MB) ---- */

static json_t* read_response(struct mcp_call* c, json_t* result, struct mcp_rpc_error* err,
		int* status)
{
	if (result) {
		json_decref(err->data);
		json_t* r = complete(result, TTL_READ_MS, "private");
		json_t* resp = mcp_result_response(c->id, r);
		json_decref(r);
		return resp;
	}
	/* 2026-07-28: an unknown resource is -32602 (-32002 is retired). */
	int code = err->code == RPC_RESOURCE_NOT_FOUND ? RPC_INVALID_PARAMS : err->code;
	return mcp_error_response(c->id, code, err->message, err->data);
}

/* ---- prompts/get, with input for the prompts that ask ---- */

static void prompts_get(json_t* id, json_t* params, const struct meta* m,
		const struct mcp_request_env* env, struct mcp_sink* sink)
{
	const char* name = json_string_value(json_object_get(params, "name"));
	const struct mcp_prompt* p = mcp_prompt_find(name);
	if (!p || !p->get_input) {
		int code = RPC_INTERNAL;
		char msg[512] = "internal error";
		json_t* data = NULL;
		json_t* result = mcp_method_call("prompts/get", params, &code, msg, sizeof(msg), &data);
		if (result) {
			json_t* r = complete(result, -1, NULL);
			answer(sink, 200, mcp_result_response(id, r));
			json_decref(r);
		} else {
			answer(sink, error_status(code), mcp_error_response(id, code, msg, data));
		}
		return;
	}
	json_t* args = json_object_get(params, "arguments");
	if (json_is_null(args))
		args = NULL;
	const char* key;
	json_t* v;
	json_object_foreach(args, key, v) {
		if (!json_is_string(v)) {
			answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL,
					"argument %s must be a string", key);
			return;
		}
	}
	if (args && !json_is_object(args)) {
		answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL,
				"arguments must be an object of strings");
		return;
	}
	for (const struct mcp_prompt_arg* a = p->args; a && a->name; a++)
		if (a->required && !json_object_get(args, a->name)) {
			answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL,
					"prompt %s needs argument %s", p->name, a->name);
			return;
		}
	if (check_input_responses(params, id, sink) < 0)
		return;
	json_t* state;
	if (open_state(params, "prompts/get", name, args, env->principal, id, sink, &state) < 0)
		return;
	struct mcp_input in = {
		.responses = json_object_get(params, "inputResponses"),
		.state = state,
		.can_elicit = m->can_elicit,
		.can_sample = m->can_sample,
		.can_list_roots = m->can_list_roots,
	};
	json_t* empty = args ? NULL : json_object();
	json_t* messages = p->get_input(args ? args : empty, &in);
	json_decref(empty);
	json_decref(state);
	if (in.requests || (!messages && in.new_state)) {
		json_decref(messages);
		int status;
		json_t* resp = input_required(id, m, in.requests, in.new_state, "prompts/get",
				name, args, env->principal, &status);
		json_decref(in.requests);
		json_decref(in.new_state);
		answer(sink, status, resp);
		return;
	}
	json_decref(in.new_state);
	if (!messages) {
		answer_error(sink, 200, id, RPC_INTERNAL, NULL, "cannot build prompt %s", p->name);
		return;
	}
	json_t* result = complete(json_pack("{s:s, s:o}", "description", p->description,
			"messages", messages), -1, NULL);
	answer(sink, 200, mcp_result_response(id, result));
	json_decref(result);
}

/* ---- subscriptions/listen ---- */

static json_t* subscription_meta(json_t* id)
{
	return json_pack("{s:O}", META_SUBSCRIPTION, id);
}

static void listener_free(struct listener* l, json_t* final)
{
	l->sink->impl->done(l->sink, final);
	mcp_sink_unref(l->sink);
	json_decref(l->id);
	json_decref(l->uris);
	free(l);
}

/* Take the listeners whose client went away out of the list (reg_mutex
 * held); they are freed by the caller after unlocking. */
static struct listener* take_closed(void)
{
	struct listener* out = NULL;
	for (struct listener** p = &listeners; *p; ) {
		struct listener* l = *p;
		if (atomic_load(&l->closed)) {
			*p = l->next;
			l->next = out;
			out = l;
		} else {
			p = &l->next;
		}
	}
	return out;
}

static void free_list(struct listener* l)
{
	while (l) {
		struct listener* next = l->next;
		listener_free(l, NULL);
		l = next;
	}
}

static void subscriptions_listen(json_t* id, json_t* params, const struct mcp_request_env* env,
		struct mcp_sink* sink)
{
	json_t* filter = json_object_get(params, "notifications");
	if (!json_is_object(filter)) {
		answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL, "Invalid params: "
				"subscriptions/listen needs params.notifications, e.g. "
				"{\"toolsListChanged\": true}");
		return;
	}
	json_t* uris = json_object_get(filter, "resourceSubscriptions");
	bool uris_ok = !uris || json_is_array(uris);
	size_t i;
	json_t* u;
	json_array_foreach(uris, i, u)
		uris_ok = uris_ok && json_is_string(u);
	if (!uris_ok) {
		answer_error(sink, 200, id, RPC_INVALID_PARAMS, NULL, "Invalid params: "
				"resourceSubscriptions must be an array of resource URIs");
		return;
	}
	struct listener* l = calloc(1, sizeof(*l));
	if (!l) {
		answer_error(sink, 500, id, RPC_INTERNAL, NULL, "Internal error: out of memory");
		return;
	}
	mcp_sink_ref(sink);
	l->sink = sink;
	l->id = json_incref(id);
	l->stdio = strcmp(env->transport, "stdio") == 0;
	l->tools = json_is_true(json_object_get(filter, "toolsListChanged"));
	l->prompts = json_is_true(json_object_get(filter, "promptsListChanged"));
	l->resources = json_is_true(json_object_get(filter, "resourcesListChanged"));
	l->uris = uris && json_array_size(uris) ? json_deep_copy(uris) : NULL;
	atomic_init(&l->closed, false);
	if (sink->impl->watch)
		sink->impl->watch(sink, &l->closed);
	/* What deskd honors: every list, and updates of the URIs asked for
	 * (its resources never change once listed, so none come). */
	json_t* honored = json_object();
	if (l->tools)
		json_object_set_new(honored, "toolsListChanged", json_true());
	if (l->prompts)
		json_object_set_new(honored, "promptsListChanged", json_true());
	if (l->resources)
		json_object_set_new(honored, "resourcesListChanged", json_true());
	if (l->uris)
		json_object_set(honored, "resourceSubscriptions", l->uris);

	pthread_mutex_lock(&reg_mutex);
	struct listener* closed = take_closed();
	bool down = shutting_down;
	if (!down) {
		l->next = listeners;
		listeners = l;
	}
	pthread_mutex_unlock(&reg_mutex);
	free_list(closed);
	if (down) {
		json_decref(honored);
		listener_free(l, NULL);
		return;
	}
	/* The acknowledgment is the first message of the subscription; list
	 * changes wait for it (acked). */
	mcp_send_notification(sink, "notifications/subscriptions/acknowledged",
			json_pack("{s:o, s:o}", "_meta", subscription_meta(id), "notifications", honored));
	pthread_mutex_lock(&reg_mutex);
	l->acked = true;
	pthread_mutex_unlock(&reg_mutex);
	log_debug("mcp: a %s client listens for changes", env->transport);
}

void mcp_modern_list_changed(const char* kind)
{
	char method[64];
	snprintf(method, sizeof(method), "notifications/%s/list_changed", kind);
	pthread_mutex_lock(&reg_mutex);
	struct listener* closed = take_closed();
	for (struct listener* l = listeners; l; l = l->next) {
		bool wants = strcmp(kind, "tools") == 0 ? l->tools
				: strcmp(kind, "prompts") == 0 ? l->prompts
				: strcmp(kind, "resources") == 0 ? l->resources : false;
		if (wants && l->acked)
			mcp_send_notification(l->sink, method, json_pack("{s:o}", "_meta",
					subscription_meta(l->id)));
	}
	pthread_mutex_unlock(&reg_mutex);
	free_list(closed);
}

void mcp_modern_cancel(json_t* request_id)
{
	if (!request_id)
		return;
	struct listener* gone = NULL;
	pthread_mutex_lock(&reg_mutex);
	for (struct mcp_call* c = calls; c; c = c->next)
		if (((struct mcall*)c)->stdio && json_equal(c->id, request_id))
			mcp_call_cancel(c);
	for (struct listener** p = &listeners; *p; p = &(*p)->next) {
		if ((*p)->stdio && json_equal((*p)->id, request_id)) {
			gone = *p;
			*p = gone->next;
			break;
		}
	}
	pthread_mutex_unlock(&reg_mutex);
	if (gone)
		listener_free(gone, NULL);
}

int mcp_modern_listeners(void)
{
	int n = 0;
	pthread_mutex_lock(&reg_mutex);
	for (struct listener* l = listeners; l; l = l->next)
		n += !atomic_load(&l->closed);
	pthread_mutex_unlock(&reg_mutex);
	return n;
}

/* Tear every listen stream down. The two spec pages disagree on how a
 * server ends one: subscriptions.mdx says SHOULD answer the listen request
 * with a result, cancellation.mdx says MUST send notifications/cancelled
 * naming it. deskd does both, in that order: a client that follows either
 * page sees a clean end (docs/MCP.md 10). */
static void end_listeners(bool final)
{
	pthread_mutex_lock(&reg_mutex);
	if (final)
		shutting_down = true;
	struct listener* all = listeners;
	listeners = NULL;
	for (struct mcp_call* c = calls; final && c; c = c->next)
		mcp_call_cancel(c);
	pthread_mutex_unlock(&reg_mutex);
	while (all) {
		struct listener* next = all->next;
		if (!atomic_load(&all->closed)) {
			mcp_send_notification(all->sink, "notifications/cancelled",
					json_pack("{s:O, s:s, s:o}", "requestId", all->id,
						"reason", "deskd is shutting down", "_meta",
						subscription_meta(all->id)));
			json_t* result = json_pack("{s:s, s:o}", "resultType", "complete",
					"_meta", subscription_meta(all->id));
			json_t* resp = mcp_result_response(all->id, result);
			json_decref(result);
			listener_free(all, resp);
			json_decref(resp);
		} else {
			listener_free(all, NULL);
		}
		all = next;
	}
}

void mcp_modern_shutdown(void)
{
	end_listeners(true);
}

void mcp_modern_reset(void)
{
	end_listeners(false);
}

/* ---- server/discover and the lists ---- */

static json_t* capabilities(void)
{
	return json_pack("{s:{s:b}, s:{s:b, s:b}, s:{s:b}, s:{}, s:{}, s:{s:{}}}",
			"tools", "listChanged", 1,
			"resources", "subscribe", 1, "listChanged", 1,
			"prompts", "listChanged", 1,
			"logging", "completions",
			"extensions", MCP_TASKS_EXTENSION);
}

static json_t* discover(void)
{
	json_t* list = json_array();
	for (size_t i = 0; i < sizeof(supported_versions) / sizeof(supported_versions[0]); i++)
		json_array_append_new(list, json_string(supported_versions[i]));
	return complete(json_pack("{s:o, s:o, s:s}", "supportedVersions", list,
			"capabilities", capabilities(), "instructions", instructions),
			TTL_STATIC_MS, "public");
}

/* A list method by way of the legacy implementation, with caching hints. */
static void list_method(const char* method, json_t* id, json_t* params, int ttl,
		const char* scope, struct mcp_sink* sink)
{
	int code = RPC_INTERNAL;
	char msg[512] = "internal error";
	json_t* data = NULL;
	json_t* result = mcp_method_call(method, params, &code, msg, sizeof(msg), &data);
	if (!result) {
		answer(sink, error_status(code), mcp_error_response(id, code, msg, data));
		return;
	}
	json_t* r = complete(result, ttl, scope);
	answer(sink, 200, mcp_result_response(id, r));
	json_decref(r);
}

/* ---- dispatch ---- */

/* A request past the checks of check_request(). */
struct request {
	json_t* id;
	json_t* params;
	const char* method;
	const struct meta* meta;
	const struct mcp_request_env* env;
	struct mcp_sink* sink;
};

struct modern_method {
	const char* name;
	void (*serve)(const struct modern_method* self, const struct request* r);
	int ttl_ms;		/* the lists' caching hints (-1: none) */
	const char* scope;
};

static void serve_discover(const struct modern_method* self, const struct request* r)
{
	json_t* result = discover();
	answer(r->sink, 200, mcp_result_response(r->id, result));
	json_decref(result);
}

static void serve_tool_call(const struct modern_method* self, const struct request* r)
{
	modern_start_tool_call(r->id, r->params, r->meta, r->env, r->sink);
}

static void serve_list(const struct modern_method* self, const struct request* r)
{
	list_method(self->name, r->id, r->params, self->ttl_ms, self->scope, r->sink);
}

static void serve_prompt(const struct modern_method* self, const struct request* r)
{
	prompts_get(r->id, r->params, r->meta, r->env, r->sink);
}

static void serve_read(const struct modern_method* self, const struct request* r)
{
	if (!json_is_string(json_object_get(r->params, "uri"))) {
		answer_error(r->sink, 200, r->id, RPC_INVALID_PARAMS, NULL,
				"Invalid params: resources/read needs params.uri");
		return;
	}
	struct mcall* mc = modern_call_new(r->id, r->params, r->env, r->meta, r->sink);
	if (!mc) {
		answer_error(r->sink, 500, r->id, RPC_INTERNAL, NULL,
				"Internal error: out of memory");
		return;
	}
	mc->call.job = mcp_method_find("resources/read");
	if (worker_spawn(mcp_call_run, &mc->call) < 0)
		mcp_call_finish(&mc->call, 503, mcp_error_response(r->id, RPC_INTERNAL,
				"Server busy: too many requests in progress; retry shortly", NULL));
}

static void serve_listen(const struct modern_method* self, const struct request* r)
{
	subscriptions_listen(r->id, r->params, r->env, r->sink);
}

static void serve_task(const struct modern_method* self, const struct request* r)
{
	serve_task_method(self->name, r->id, r->params, r->meta, r->env, r->sink);
}

/* The methods of 2026-07-28. initialize, ping, logging/setLevel and
 * resources/(un)subscribe are not among them: -32601 with a 404. */
static const struct modern_method modern_methods[] = {
	{ "server/discover", serve_discover, -1, NULL },
	{ "tools/call", serve_tool_call, -1, NULL },
	{ "tools/list", serve_list, TTL_STATIC_MS, "public" },
	{ "prompts/list", serve_list, TTL_STATIC_MS, "public" },
	{ "resources/templates/list", serve_list, TTL_STATIC_MS, "public" },
	/* Recordings come and go: always stale; they are the user's own. */
	{ "resources/list", serve_list, 0, "private" },
	{ "completion/complete", serve_list, -1, NULL },
	{ "prompts/get", serve_prompt, -1, NULL },
	{ "resources/read", serve_read, -1, NULL },
	{ "subscriptions/listen", serve_listen, -1, NULL },
	/* The tasks extension; tasks/result and tasks/list are not in it. */
	{ "tasks/get", serve_task, -1, NULL },
	{ "tasks/update", serve_task, -1, NULL },
	{ "tasks/cancel", serve_task, -1, NULL },
};

static const struct modern_method* modern_method(const char* name)
{
	for (size_t i = 0; i < sizeof(modern_methods) / sizeof(modern_methods[0]); i++)
		if (strcmp(modern_methods[i].name, name) == 0)
			return &modern_methods[i];
	return NULL;
}

int mcp_modern_handle(json_t* msg, const struct mcp_request_env* env, struct mcp_sink* sink)
{
	enum mcp_msg_kind kind = mcp_message_kind(msg);
	const char* method = json_string_value(json_object_get(msg, "method"));
	if (kind == MCP_MSG_NOTIFICATION) {
		if (method && strcmp(method, "notifications/cancelled") == 0)
			mcp_modern_cancel(json_object_get(json_object_get(msg, "params"), "requestId"));
		return 0;
	}
	if (kind == MCP_MSG_RESPONSE)
		return 0;	/* the stateless era sends no requests to answer */
	json_t* id = json_object_get(msg, "id");
	if (kind != MCP_MSG_REQUEST) {
		answer_error(sink, 400, json_is_object(msg) ? id : NULL, RPC_INVALID_REQUEST, NULL,
				"Invalid Request: not a JSON-RPC 2.0 request");
		return 1;
	}
	struct meta m = { 0 };
	if (check_request(msg, env, &m, sink) < 0)
		return 1;
	const struct modern_method* mm = modern_method(method);
	if (!mm) {
		answer_error(sink, 404, id, RPC_METHOD_NOT_FOUND, NULL, "Method not found: %.200s%s",
				method, strcmp(method, "initialize") == 0 || strcmp(method, "ping") == 0
				|| strcmp(method, "logging/setLevel") == 0
				|| strncmp(method, "resources/", 10) == 0
				? " (not part of protocol " MCP_VERSION_MODERN "; a request without "
				"its _meta uses the legacy protocol)" : "");
		return 1;
	}
	struct request r = { id, json_object_get(msg, "params"), method, &m, env, sink };
	mm->serve(mm, &r);
	return 1;
}
