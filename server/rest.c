/* REST: every tool as JSON over HTTP, screenshots as image bytes,
 * recordings, activity events as SSE, health and metrics. Tool calls run on
 * worker threads (server/worker.h); the HTTP thread never blocks.
 *
 * One rule for bodies (DESIGN.md 4): every JSON body is an object. A tool
 * call answers the MCP tool result ({content, structuredContent}); a GET
 * listing answers what the matching MCP call returns: /api/v1/tools the
 * tools/list result, /api/v1/windows and /api/v1/recordings the
 * structuredContent of the windows and recordings tools; an error answers
 * {"error": {code, message}}. */
#include "server/rest.h"
#include "desktop/desktop.h"
#include "base/events.h"
#include "server/http/http.h"
#include "base/jsonmem.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/text.h"
#include "tools/tools.h"
#include "base/worker.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define TOOLS_PREFIX "/api/v1/tools/"
#define RECORDINGS_PREFIX "/api/v1/recordings/"

enum rest_reply {
	REPLY_RESULT,		/* the whole tool result JSON */
	REPLY_IMAGE,		/* result.image bytes */
	REPLY_STRUCTURED,	/* structuredContent only */
};

struct rest_call {
	struct rest_call* prev;
	struct rest_call* next;		/* in_flight, under calls_mutex */
	struct http_request* req;
	const struct tool_def* tool;
	json_t* args;
	bool read_only;
	enum rest_reply reply;
	atomic_bool cancelled;
};

/* Calls in progress, so that shutdown can cancel them (a REST client has no
 * session whose end would). */
static pthread_mutex_t calls_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct rest_call* in_flight;
static bool stopping;

/* Link a call in; false (not linked) once shutting down. */
static bool call_link(struct rest_call* call)
{
	pthread_mutex_lock(&calls_mutex);
	bool ok = !stopping;
	if (ok) {
		call->next = in_flight;
		if (in_flight)
			in_flight->prev = call;
		in_flight = call;
	}
	pthread_mutex_unlock(&calls_mutex);
	return ok;
}

static void call_unlink(struct rest_call* call)
{
	pthread_mutex_lock(&calls_mutex);
	if (call->prev)
		call->prev->next = call->next;
	else if (in_flight == call)
		in_flight = call->next;
	if (call->next)
		call->next->prev = call->prev;
	pthread_mutex_unlock(&calls_mutex);
}

void rest_shutdown(void)
{
	pthread_mutex_lock(&calls_mutex);
	stopping = true;
	for (struct rest_call* c = in_flight; c; c = c->next)
		atomic_store(&c->cancelled, true);
	pthread_mutex_unlock(&calls_mutex);
}

/* {"error":{"code","message",...}} from a failed result's structuredContent. */
static void respond_tool_error(struct http_request* req, const struct tool_result* res)
{
	json_t* error = res->structured ? json_deep_copy(res->structured) : json_object();
	if (!error) {
		http_respond_error(req, 500, "internal", "out of memory");
		return;
	}
	if (!json_is_string(json_object_get(error, "code")))
		json_object_set_new(error, "code", json_string(tool_code_name(res->code)));
	if (!json_is_string(json_object_get(error, "message"))) {
		json_t* first = json_array_get(res->content, 0);
		const char* text = json_string_value(json_object_get(first, "text"));
		json_object_set_new(error, "message", json_string(text ? text : tool_code_name(res->code)));
	}
	http_respond_json(req, tool_code_http_status(res->code),
			json_pack("{s:o}", "error", error), NULL);
}

static void respond_image(struct http_request* req, const struct tool_result* res)
{
	if (!res->image || !res->image_len) {
		http_respond_error(req, 500, "internal", "the screenshot tool returned no image");
		return;
	}
	/* Metadata for scripts that map coordinates, as headers. */
	static const char* const keys[][2] = {
		{ "width", "X-Deskd-Width" }, { "height", "X-Deskd-Height" },
		{ "physical_width", "X-Deskd-Physical-Width" },
		{ "physical_height", "X-Deskd-Physical-Height" },
		{ "scale_factor", "X-Deskd-Scale-Factor" }, { "window", "X-Deskd-Window" },
	};
	char values[6][32];
	const char* headers[2 * 6 + 3];
	size_t h = 0;
	for (size_t i = 0; i < 6; i++) {
		json_t* v = json_object_get(res->structured, keys[i][0]);
		if (json_is_integer(v))
			snprintf(values[i], sizeof(values[i]), "%lld", (long long)json_integer_value(v));
		else if (json_is_real(v))
			snprintf(values[i], sizeof(values[i]), "%g", json_real_value(v));
		else
			continue;
		headers[h++] = keys[i][1];
		headers[h++] = values[i];
	}
	headers[h++] = "Cache-Control";
	headers[h++] = "no-store";
	headers[h] = NULL;
	http_respond(req, 200, res->image_mime ? res->image_mime : "application/octet-stream",
			res->image, res->image_len, headers);
}

static void call_worker(void* ud)
{
	struct rest_call* call = ud;
	struct tool_ctx ctx = {
		.source = "rest",
		.read_only = call->read_only,
		.cancelled = &call->cancelled,
	};
	struct tool_result res;
	tools_call(call->tool, &ctx, call->args, &res);
	if (res.is_error) {
		respond_tool_error(call->req, &res);
	} else if (call->reply == REPLY_IMAGE) {
		respond_image(call->req, &res);
	} else if (call->reply == REPLY_STRUCTURED && res.structured) {
		http_respond_json(call->req, 200, json_incref(res.structured), NULL);
	} else {
		json_t* body = tool_result_to_json(&res);
		http_respond_json(call->req, 200, body, NULL);
	}
	tool_result_deinit(&res);
	json_decref(call->args);
	call_unlink(call);
	free(call);
}

/* Run a tool on a worker and answer from there. Steals args. */
static void run_tool(struct http_request* req, const char* name, json_t* args,
		enum rest_reply reply)
{
	const struct tool_def* tool = tools_find(name);
	if (!tool) {
		json_decref(args);
		char msg[300];
		snprintf(msg, sizeof(msg), "no tool named '%.*s' (GET /api/v1/tools lists them)",
				text_cut(name, 200), name);
		http_respond_error(req, 404, "unknown_tool", msg);
		return;
	}
	struct rest_call* call = calloc(1, sizeof(*call));
	if (!call) {
		json_decref(args);
		http_respond_error(req, 500, "internal", "out of memory");
		return;
	}
	call->req = req;
	call->tool = tool;
	call->args = args;
	call->read_only = http_request_role(req) != HTTP_ROLE_FULL;
	call->reply = reply;
	atomic_init(&call->cancelled, false);
	if (!call_link(call)) {
		json_decref(args);
		free(call);
		http_respond_error(req, 503, "unavailable", "shutting down");
		return;
	}
	int rc = worker_spawn(call_worker, call);
	if (rc < 0) {
		call_unlink(call);
		json_decref(args);
		free(call);
		http_respond_error(req, 503, "busy", rc == -EAGAIN
				? "too many tool calls at once; retry shortly"
				: "cannot start a worker thread");
	}
}

/* GET /api/v1/tools */
static void on_tools(struct http_request* req, void* ud)
{
	(void)ud;
	json_t* list = json_array();
	/* Every tool REST can call: the listed ones and the groups' members. */
	for (size_t i = 0; list && i < tools_callable_count(); i++)
		json_array_append_new(list, tools_describe(tools_callable_at(i)));
	http_respond_json(req, 200, json_pack("{s:o}", "tools", list), NULL);
}

static bool tool_takes_large_body(const char* name)
{
	const struct tool_def* tool = tools_find(name);
	return tool && (tools_flags(tool) & TOOL_LARGE_ARGS);
}

/* POST /api/v1/tools/{name} */
static void on_tool_call(struct http_request* req, void* ud)
{
	(void)ud;
	const char* name = http_request_path(req) + strlen(TOOLS_PREFIX);
	if (!*name || strchr(name, '/')) {
		http_respond_error(req, 404, "unknown_tool", "POST /api/v1/tools/{name}");
		return;
	}
	size_t len;
	const char* body = http_request_body(req, &len);
	if (http_request_body_large(req) && !tool_takes_large_body(name)) {
		http_respond_error(req, 413, "payload_too_large", "request body too large (over "
				"--max-body; only clipboard_write takes more)");
		return;
	}
	size_t skip = 0;
	while (skip < len && isspace((unsigned char)body[skip]))
		skip++;
	json_t* args;
	if (skip == len) {
		args = json_object();
	} else {
		json_error_t err;
		enum jsonmem_status st;
		args = jsonmem_load(body, len, JSON_REJECT_DUPLICATES, &err, &st);
		if (!args && st != JSONMEM_INVALID) {
			http_respond_error(req, st == JSONMEM_BUSY ? 503 : 413,
					st == JSONMEM_BUSY ? "busy" : "payload_too_large", err.text);
			return;
		}
		if (!args) {
			char msg[300];
			snprintf(msg, sizeof(msg), "the body is not JSON: %.*s (line %d)",
					text_cut(err.text, 200), err.text, err.line);
			http_respond_error(req, 400, "bad_arguments", msg);
			return;
		}
		if (!json_is_object(args)) {
			json_decref(args);
			http_respond_error(req, 400, "bad_arguments",
					"the body must be a JSON object of arguments");
			return;
		}
	}
	run_tool(req, name, args, REPLY_RESULT);
}

/* Query parameter parsers: 0, or -EINVAL after answering 400. */
static int query_int(struct http_request* req, json_t* args, const char* param,
		const char* arg)
{
	const char* s = http_request_query(req, param);
	if (!s)
		return 0;
	char* end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || end == s || *end) {
		char msg[160];
		snprintf(msg, sizeof(msg), "query parameter '%s' must be an integer", param);
		http_respond_error(req, 400, "bad_arguments", msg);
		return -EINVAL;
	}
	json_object_set_new(args, arg, json_integer(v));
	return 0;
}

static int query_bool(struct http_request* req, json_t* args, const char* param,
		const char* arg)
{
	const char* s = http_request_query(req, param);
	if (!s)
		return 0;
	bool v;
	if (!*s || !strcasecmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes"))
		v = true;
	else if (!strcasecmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no"))
		v = false;
	else {
		char msg[160];
		snprintf(msg, sizeof(msg), "query parameter '%s' must be true or false", param);
		http_respond_error(req, 400, "bad_arguments", msg);
		return -EINVAL;
	}
	json_object_set_new(args, arg, json_boolean(v));
	return 0;
}

static int query_string(struct http_request* req, json_t* args, const char* param,
		const char* arg)
{
	const char* s = http_request_query(req, param);
	if (s)
		json_object_set_new(args, arg, json_string(s));
	return 0;
}

static int query_region(struct http_request* req, json_t* args)
{
	const char* s = http_request_query(req, "region");
	if (!s)
		return 0;
	long long v[4];
	const char* p = s;
	for (int i = 0; i < 4; i++) {
		char* end;
		errno = 0;
		v[i] = strtoll(p, &end, 10);
		if (errno || end == p || (i < 3 ? *end != ',' : *end != '\0')) {
			http_respond_error(req, 400, "bad_arguments",
					"query parameter 'region' must be x0,y0,x1,y1");
			return -EINVAL;
		}
		p = end + 1;
	}
	json_object_set_new(args, "region", json_pack("[IIII]", v[0], v[1], v[2], v[3]));
	return 0;
}

/* GET /api/v1/screenshot?window=&format=&max=&quality=&cursor=&region= */
static void on_screenshot(struct http_request* req, void* ud)
{
	(void)ud;
	json_t* args = json_object();
	if (!args) {
		http_respond_error(req, 500, "internal", "out of memory");
		return;
	}
	if (query_int(req, args, "window", "window") < 0
			|| query_string(req, args, "format", "format") < 0
			|| query_int(req, args, "max", "max_dimension") < 0
			|| query_int(req, args, "quality", "quality") < 0
			|| query_bool(req, args, "cursor", "cursor") < 0
			|| query_region(req, args) < 0) {
		json_decref(args);
		return;
	}
	run_tool(req, "screenshot", args, REPLY_IMAGE);
}

/* GET /api/v1/windows?app=&pid=&on_screen_only= */
static void on_windows(struct http_request* req, void* ud)
{
	(void)ud;
	json_t* args = json_object();
	if (!args) {
		http_respond_error(req, 500, "internal", "out of memory");
		return;
	}
	if (query_string(req, args, "app", "app") < 0
			|| query_int(req, args, "pid", "pid") < 0
			|| query_bool(req, args, "on_screen_only", "on_screen_only") < 0) {
		json_decref(args);
		return;
	}
	run_tool(req, "windows", args, REPLY_STRUCTURED);
}

/* GET /api/v1/recordings: the recordings tool's structuredContent, built
 * here so that the dashboard's polling is not an activity event. */
static void on_recordings(struct http_request* req, void* ud)
{
	(void)ud;
	json_t* list = tools_record_list();
	http_respond_json(req, 200, json_pack("{s:o}", "recordings", list ? list : json_array()), NULL);
}

static bool safe_id(const char* id)
{
	if (!*id || strlen(id) > 128)
		return false;
	for (const char* p = id; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return false;
	return strcmp(id, ".") != 0 && strcmp(id, "..") != 0;
}

/* GET /api/v1/recordings/{id}: the MP4. */
static void on_recording(struct http_request* req, void* ud)
{
	(void)ud;
	const char* id = http_request_path(req) + strlen(RECORDINGS_PREFIX);
	char path[PATH_MAX];
	if (!safe_id(id) || tools_record_path(id, path, sizeof(path)) < 0) {
		http_respond_error(req, 404, "no_recording", "no finished recording with this id");
		return;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		http_respond_error(req, 404, "no_recording", "the recording's file is gone");
		return;
	}
	char disposition[256];
	snprintf(disposition, sizeof(disposition), "attachment; filename=\"%s.mp4\"", id);
	const char* headers[] = { "Content-Disposition", disposition, NULL };
	http_respond_file(req, 200, "video/mp4", fd, headers);
}

/* GET /api/v1/events: activity as SSE, history first. */
struct events_sub {
	pthread_mutex_t mutex;
	int refs;
	int handle;
	bool closed;
	struct http_stream* stream;
};

static void sub_unref(struct events_sub* sub)
{
	pthread_mutex_lock(&sub->mutex);
	int refs = --sub->refs;
	pthread_mutex_unlock(&sub->mutex);
	if (refs > 0)
		return;
	http_stream_unref(sub->stream);
	pthread_mutex_destroy(&sub->mutex);
	free(sub);
}

/* Runs under the events lock: format and queue, nothing more. */
static void sub_event(void* ud, json_t* event)
{
	struct events_sub* sub = ud;
	char* text = json_dumps(event, JSON_COMPACT | JSON_REAL_PRECISION(15));
	if (!text)
		return;
	size_t len = strlen(text);
	char* msg = malloc(len + 16);
	if (msg) {
		memcpy(msg, "data: ", 6);
		memcpy(msg + 6, text, len);
		memcpy(msg + 6 + len, "\n\n", 2);
		http_stream_write(sub->stream, msg, len + 8);
		free(msg);
	}
	free(text);
}

static void sub_closed(void* ud)
{
	struct events_sub* sub = ud;
	pthread_mutex_lock(&sub->mutex);
	sub->closed = true;
	int handle = sub->handle;
	sub->handle = 0;
	pthread_mutex_unlock(&sub->mutex);
	if (handle > 0)
		events_unsubscribe(handle);
	sub_unref(sub);
}

static void on_events(struct http_request* req, void* ud)
{
	(void)ud;
	struct events_sub* sub = calloc(1, sizeof(*sub));
	if (!sub) {
		http_respond_error(req, 500, "internal", "out of memory");
		return;
	}
	pthread_mutex_init(&sub->mutex, NULL);
	sub->refs = 2;	/* ours and on_close's */
	static const char* const headers[] = { "Connection", "keep-alive", NULL };
	sub->stream = http_respond_stream(req, 200, "text/event-stream", headers,
			sub_closed, sub);
	if (!sub->stream) {
		pthread_mutex_destroy(&sub->mutex);
		free(sub);
		return;
	}
	http_stream_write(sub->stream, HTTP_LITERAL(": deskd activity events\n\n"));
	int handle = events_subscribe(sub_event, sub, 1);
	if (handle < 0) {
		http_stream_end(sub->stream);
	} else {
		pthread_mutex_lock(&sub->mutex);
		bool closed = sub->closed;
		if (!closed)
			sub->handle = handle;
		pthread_mutex_unlock(&sub->mutex);
		if (closed)
			events_unsubscribe(handle);
	}
	sub_unref(sub);
}

/* GET /healthz: no token; 503 while the display is gone. */
static void on_healthz(struct http_request* req, void* ud)
{
	(void)ud;
	static const char* const headers[] = { "Cache-Control", "no-store", NULL };
	if (desktop_available())
		http_respond(req, 200, "text/plain; charset=utf-8", HTTP_LITERAL("ok\n"), headers);
	else
		http_respond(req, 503, "text/plain; charset=utf-8",
				HTTP_LITERAL("display unavailable\n"), headers);
}

/* GET /metrics: Prometheus text. */
static void on_metrics(struct http_request* req, void* ud)
{
	(void)ud;
	metrics_set("deskd_display_available", desktop_available() ? 1 : 0, NULL);
	metrics_set("deskd_json_parse_bytes", (double)jsonmem_in_flight(), NULL);
	metrics_set("deskd_heap_trim_seconds_max", (double)jsonmem_trim_max_ns() / 1e9, NULL);
	size_t len = 0;
	char* text = metrics_render(&len);
	if (!text) {
		http_respond_error(req, 500, "internal", "out of memory");
		return;
	}
	http_respond(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL);
	free(text);
}

int rest_register(void)
{
	static const struct http_route routes[] = {
		{ "GET", "/healthz", HTTP_ROLE_NONE, 0, on_healthz, NULL },
		{ "GET", "/metrics", HTTP_ROLE_FULL, 0, on_metrics, NULL },
		{ "GET", "/api/v1/tools", HTTP_ROLE_VIEW, 0, on_tools, NULL },
		{ "POST", TOOLS_PREFIX, HTTP_ROLE_VIEW, HTTP_ROUTE_PREFIX | HTTP_ROUTE_LARGE_BODY,
			on_tool_call, NULL },
		{ "GET", "/api/v1/screenshot", HTTP_ROLE_VIEW, 0, on_screenshot, NULL },
		{ "GET", "/api/v1/windows", HTTP_ROLE_VIEW, 0, on_windows, NULL },
		{ "GET", "/api/v1/recordings", HTTP_ROLE_VIEW, 0, on_recordings, NULL },
		{ "GET", RECORDINGS_PREFIX, HTTP_ROLE_VIEW, HTTP_ROUTE_PREFIX, on_recording, NULL },
		{ "GET", "/api/v1/events", HTTP_ROLE_VIEW, 0, on_events, NULL },
	};
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		int rc = http_add_route(&routes[i]);
		if (rc < 0)
			return rc;
	}
	metrics_help("deskd_json_parse_bytes", "Memory held by request bodies being parsed "
			"(at most --max-json-memory).");
	metrics_help("deskd_heap_trim_seconds_max", "The longest malloc_trim so far (the heap "
			"is given back once a second after a spike, and every 10 s).");
	return metrics_init();
}
