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
#include "base/clock.h"
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
#define EVENTS_PREFIX "/api/v1/events/"
#define FILES_PREFIX "/api/v1/files/"

enum rest_reply {
	REPLY_RESULT,		/* the whole tool result JSON */
	REPLY_IMAGE,		/* result.image bytes */
	REPLY_STRUCTURED,	/* structuredContent only */
	REPLY_TEXT,		/* the first text block, as text/plain (or the image) */
};

struct rest_call {
	struct rest_call* prev;
	struct rest_call* next;		/* in_flight, under calls_mutex */
	struct http_request* req;
	const struct tool_def* tool;
	json_t* args;
	bool read_only;
	enum rest_reply reply;
	char client[64];		/* X-Deskd-Client, for the events' actor */
	bool dashboard;			/* X-Deskd-Client: dashboard */
	bool person;			/* ... with the person's token */
	const void* raw_data;		/* PUT /api/v1/files: the body (the request's) */
	size_t raw_len;
	atomic_bool cancelled;
};

/* Calls in progress, so that shutdown can cancel them (a REST client has no
 * session whose end would), and so that a call whose client hung up is
 * cancelled: never started, or its approval withdrawn (R4). */
static pthread_mutex_t calls_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t calls_cond = PTHREAD_COND_INITIALIZER;
static struct rest_call* in_flight;
static bool stopping;
static pthread_once_t watcher_once = PTHREAD_ONCE_INIT;
static pthread_t watcher;
static bool watcher_started;

/* How often the watcher looks at the waiting calls' connections. */
#define REST_PEER_CHECK_MS 100

/* While calls are in flight: a call whose client closed its connection is
 * cancelled (a call is linked only until it answers, so its request is
 * valid here). */
static void* watcher_main(void* ud)
{
	(void)ud;
	pthread_mutex_lock(&calls_mutex);
	while (!stopping) {
		if (!in_flight) {
			pthread_cond_wait(&calls_cond, &calls_mutex);
			continue;
		}
		for (struct rest_call* c = in_flight; c; c = c->next)
			if (!atomic_load(&c->cancelled) && http_request_peer_gone(c->req)) {
				atomic_store(&c->cancelled, true);
				log_debug("rest %s: the client hung up; cancelled", c->tool->name);
			}
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += REST_PEER_CHECK_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&calls_cond, &calls_mutex, &until);
	}
	pthread_mutex_unlock(&calls_mutex);
	return NULL;
}

static void watcher_start(void)
{
	watcher_started = pthread_create(&watcher, NULL, watcher_main, NULL) == 0;
	if (!watcher_started)
		log_warn("cannot start the REST peer watcher: a call whose client hung up still runs");
}

/* Link a call in; false (not linked) once shutting down. */
static bool call_link(struct rest_call* call)
{
	pthread_once(&watcher_once, watcher_start);
	pthread_mutex_lock(&calls_mutex);
	bool ok = !stopping;
	if (ok) {
		call->next = in_flight;
		if (in_flight)
			in_flight->prev = call;
		in_flight = call;
		pthread_cond_signal(&calls_cond);
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
	pthread_cond_broadcast(&calls_cond);
	pthread_mutex_unlock(&calls_mutex);
	if (watcher_started) {
		pthread_join(watcher, NULL);
		watcher_started = false;
	}
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

/* The text of the result's first text block, as it is. */
static void respond_text(struct http_request* req, const struct tool_result* res)
{
	json_t* text = json_object_get(json_array_get(res->content, 0), "text");
	const char* headers[] = { "Cache-Control", "no-store", NULL };
	if (!json_is_string(text)) {
		http_respond_error(req, 500, "internal", "the tool gave no text");
		return;
	}
	http_respond(req, 200, "text/plain; charset=utf-8", json_string_value(text),
			json_string_length(text), headers);
}

static void call_worker(void* ud)
{
	struct rest_call* call = ud;
	/* The dashboard's reads are its own refreshes (metrics only); any call
	 * with the person's token is the person's: never refused for their own
	 * hold, never asked for approval, never told the agent's note. */
	struct tool_ctx ctx = {
		.source = "rest",
		.client_name = call->client[0] ? call->client : NULL,
		.by_person = call->person,
		.background = call->dashboard,
		.read_only = call->read_only,
		.cancelled = &call->cancelled,
		.raw_data = call->raw_data,
		.raw_len = call->raw_len,
	};
	struct tool_result res;
	tools_call(call->tool, &ctx, call->args, &res);
	/* Before answering: the watcher looks at linked calls' requests only,
	 * and the answer may end this one. */
	call_unlink(call);
	if (res.is_error) {
		respond_tool_error(call->req, &res);
	} else if (call->reply == REPLY_IMAGE || (call->reply == REPLY_TEXT && res.image)) {
		respond_image(call->req, &res);
	} else if (call->reply == REPLY_TEXT) {
		respond_text(call->req, &res);
	} else if (call->reply == REPLY_STRUCTURED && res.structured) {
		http_respond_json(call->req, 200, json_incref(res.structured), NULL);
	} else {
		json_t* body = tool_result_to_json(&res);
		http_respond_json(call->req, 200, body, NULL);
	}
	tool_result_deinit(&res);
	json_decref(call->args);
	free(call);
}

/* The caller's name from X-Deskd-Client (printable ASCII, cut), "" without
 * one; *dashboard when it is the dashboard. */
static void client_of(struct http_request* req, char* out, size_t size, bool* dashboard)
{
	const char* h = http_request_header(req, "X-Deskd-Client");
	size_t n = 0;
	for (; h && h[n] && n + 1 < size; n++)
		out[n] = (unsigned char)h[n] >= ' ' && (unsigned char)h[n] < 127 ? h[n] : '?';
	out[n] = '\0';
	*dashboard = strcmp(out, "dashboard") == 0;
}

/* Who a REST request that is not a tool call acts for, in the timeline
 * (client holds its name). */
static struct events_actor actor_of(struct http_request* req, char* client, size_t size)
{
	bool dashboard;
	client_of(req, client, size, &dashboard);
	return (struct events_actor){
		.kind = dashboard && http_request_role(req) == HTTP_ROLE_PERSON
			? EVENTS_ACTOR_PERSON : EVENTS_ACTOR_AGENT,
		.name = client[0] ? client : NULL, .via = "rest",
	};
}

/* Run a tool on a worker and answer from there. Steals args. raw: the
 * body handed to the tool as tool_ctx.raw_data (NULL: none). */
static void run_tool_raw(struct http_request* req, const char* name, json_t* args,
		enum rest_reply reply, const void* raw, size_t raw_len)
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
	call->read_only = http_request_role(req) < HTTP_ROLE_AGENT;
	call->reply = reply;
	client_of(req, call->client, sizeof(call->client), &call->dashboard);
	/* Only the person's token acts as a person; anyone may name itself
	 * "dashboard". */
	call->person = call->dashboard && http_request_role(req) == HTTP_ROLE_PERSON;
	call->raw_data = raw;
	call->raw_len = raw_len;
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

static void run_tool(struct http_request* req, const char* name, json_t* args,
		enum rest_reply reply)
{
	run_tool_raw(req, name, args, reply, NULL, 0);
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
				"--max-body; only clipboard_write and file_upload take more)");
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

/* GET /api/v1/clipboard?selection=&format=: the text as text/plain, or
 * with format=image the PNG; the bytes as they are, no JSON. */
static void on_clipboard_get(struct http_request* req, void* ud)
{
	(void)ud;
	json_t* args = json_object();
	if (!args) {
		http_respond_error(req, 500, "internal", "out of memory");
		return;
	}
	query_string(req, args, "selection", "selection");
	query_string(req, args, "format", "format");
	run_tool(req, "clipboard_read", args, REPLY_TEXT);
}

/* PUT /api/v1/clipboard?selection=: the body as the clipboard's text
 * (UTF-8, exact); clipboard_write's structuredContent back. An image goes
 * as image_base64 over POST /api/v1/tools/clipboard_write. */
static void on_clipboard_put(struct http_request* req, void* ud)
{
	(void)ud;
	size_t len;
	const char* body = http_request_body(req, &len);
	const char* type = http_request_header(req, "Content-Type");
	if (type && strncasecmp(type, "image/", 6) == 0) {
		http_respond_error(req, 415, "bad_arguments", "PUT /api/v1/clipboard takes text; "
				"an image goes as image_base64 to POST /api/v1/tools/clipboard_write");
		return;
	}
	json_t* args = json_object();
	if (!args) {
		http_respond_error(req, 500, "internal", "out of memory");
		return;
	}
	query_string(req, args, "selection", "selection");
	run_tool_raw(req, "clipboard_write", args, REPLY_STRUCTURED, body ? body : "", len);
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

/* DELETE /api/v1/recordings/{id}: the agent's (or the person's) token deletes a finished
 * recording's file (only one the registry published; desktop/recordings.c
 * holds the safe-output rules) and it leaves the list. */
static void on_recording_delete(struct http_request* req, void* ud)
{
	(void)ud;
	const char* id = http_request_path(req) + strlen(RECORDINGS_PREFIX);
	if (!safe_id(id)) {
		http_respond_error(req, 404, "no_recording", "no recording with this id "
				"(GET /api/v1/recordings lists them)");
		return;
	}
	char err[PATH_MAX + 200];
	int rc = desktop_recording_delete(id, err, sizeof(err));
	char client[64];
	struct events_actor actor = actor_of(req, client, sizeof(client));
	if (rc == 0) {
		events_emit(&actor, "recording_delete", "deleted a recording",
				json_pack("{s:s}", "recording", id));
		http_respond_json(req, 200, json_pack("{s:s, s:b}", "id", id, "deleted", 1), NULL);
		return;
	}
	int status = rc == -ENOENT ? 404 : rc == -EBUSY ? 409 : rc == -ELOOP || rc == -EPERM
			? 403 : 500;
	const char* code = rc == -ENOENT ? "no_recording" : rc == -EBUSY ? "recording_active"
			: rc == -ELOOP || rc == -EPERM ? "bad_path" : "internal";
	http_respond_error(req, status, code, err);
}

/* GET /api/v1/events/{id}/thumbnail: the JPEG kept for a screenshot event. */
static void on_event_thumbnail(struct http_request* req, void* ud)
{
	(void)ud;
	const char* rest = http_request_path(req) + strlen(EVENTS_PREFIX);
	char* end;
	errno = 0;
	unsigned long long id = strtoull(rest, &end, 10);
	void* data = NULL;
	size_t len = 0;
	if (errno || end == rest || !isdigit((unsigned char)*rest) || strcmp(end, "/thumbnail") != 0
			|| events_thumbnail_get(id, &data, &len) < 0) {
		http_respond_error(req, 404, "not_found", "no thumbnail for this event (only the "
				"latest agent screenshots keep one)");
		return;
	}
	static const char* const headers[] = { "Cache-Control", "private, max-age=3600", NULL };
	http_respond(req, 200, "image/jpeg", data, len, headers);
	free(data);
}

/* ---- /api/v1/files/<path>: raw bytes in and out of --files-root ---------- */

/* The path after the prefix; NULL after answering 400 when it held %00. */
static const char* files_path(struct http_request* req)
{
	const char* p = http_request_path(req);
	const char* rel = strncmp(p, FILES_PREFIX, strlen(FILES_PREFIX)) == 0
		? p + strlen(FILES_PREFIX) : "";
	if (strstr(rel, "%00")) {
		http_respond_error(req, 400, "bad_path", "the path has a NUL character (%00)");
		return NULL;
	}
	/* Decoded bytes that are not UTF-8 (%ff) cannot go into the tool's
	 * JSON arguments: the name rule's answer, here. */
	size_t at;
	uint32_t cp;
	if (text_name_check(rel, strlen(rel), &at, &cp) == TEXT_NAME_INVALID_UTF8) {
		char why[64], message[160];
		snprintf(message, sizeof(message), "the path has %s at byte %zu; file names are "
				"UTF-8", text_name_problem_describe(TEXT_NAME_INVALID_UTF8, cp, why,
				sizeof(why)), at);
		http_respond_error(req, 400, "bad_path", message);
		return NULL;
	}
	return rel;
}

/* PUT /api/v1/files/<path>: the body is the new file, as file_upload. */
static void on_file_put(struct http_request* req, void* ud)
{
	(void)ud;
	const char* rel = files_path(req);
	if (!rel)
		return;
	size_t len = 0;
	const char* body = http_request_body(req, &len);
	run_tool_raw(req, "file_upload", json_pack("{s:s}", "path", rel), REPLY_STRUCTURED,
			body && len ? body : "", len);
}

/* A name for Content-Disposition: the last component, quoted-string safe. */
static void attachment_name(const char* rel, char* out, size_t size)
{
	const char* base = strrchr(rel, '/');
	base = base ? base + 1 : rel;
	size_t o = 0;
	for (const char* c = base; *c && o + 1 < size; c++)
		out[o++] = isalnum((unsigned char)*c) || strchr("._-+", *c) ? *c : '_';
	out[o] = '\0';
	if (!o)
		snprintf(out, size, "download");
}

/* GET /api/v1/files/<path>: the file's bytes; GET /api/v1/files/ or
 * <dir>/: file_list's structuredContent. The bytes never get a type a
 * browser would render (octet-stream, nosniff, attachment). */
static void on_file_get(struct http_request* req, void* ud)
{
	(void)ud;
	const char* rel = files_path(req);
	if (!rel)
		return;
	size_t n = strlen(rel);
	if (n == 0 || rel[n - 1] == '/') {
		json_t* args = n ? json_pack("{s:s}", "path", rel) : json_object();
		run_tool(req, "file_list", args, REPLY_STRUCTURED);
		return;
	}
	json_t* args = json_pack("{s:s}", "path", rel);
	char client[64];
	struct events_actor actor = actor_of(req, client, sizeof(client));
	uint64_t event = events_tool_start(&actor, "file_download", args);
	json_decref(args);
	int64_t t0 = clock_ms();
	char err[PATH_MAX + 256] = "";
	int fd = -1;
	long long size = 0;
	enum tool_code code = tools_file_open(rel, &fd, &size, err, sizeof(err));
	events_tool_end(event, &actor, "file_download", tool_code_name(code),
			(double)(clock_ms() - t0), code == TOOL_OK ? NULL : err,
			code == TOOL_OK ? json_pack("{s:I}", "bytes", (json_int_t)size) : NULL);
	if (code != TOOL_OK) {
		http_respond_error(req, tool_code_http_status(code), tool_code_name(code), err);
		return;
	}
	char name[128], disposition[200];
	attachment_name(rel, name, sizeof(name));
	snprintf(disposition, sizeof(disposition), "attachment; filename=\"%s\"", name);
	const char* headers[] = { "Content-Disposition", disposition,
		"X-Content-Type-Options", "nosniff", "Cache-Control", "no-store",
		"Content-Security-Policy", "default-src 'none'; sandbox", NULL };
	http_respond_file(req, 200, "application/octet-stream", fd, headers);
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
	char* text = jsonmem_dumps(event, JSON_COMPACT | JSON_REAL_PRECISION(15));
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
	/* ?format=json: the history as one JSON object, for scripts. */
	const char* format = http_request_query(req, "format");
	if (format && strcmp(format, "json") == 0) {
		http_respond_json(req, 200, json_pack("{s:o}", "events", events_history()), NULL);
		return;
	}
	if (format && strcmp(format, "sse") != 0) {
		http_respond_error(req, 400, "bad_arguments", "format must be sse or json");
		return;
	}
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

/* GET /healthz: no token; 503 while the display is gone; the backend in
 * X-Deskd-Backend (x11, wayland). */
static void on_healthz(struct http_request* req, void* ud)
{
	(void)ud;
	/* Which display backend runs, for probes that tell X11 from Wayland. */
	const char* const headers[] = { "Cache-Control", "no-store",
		"X-Deskd-Backend", desktop_backend(), NULL };
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
		{ "GET", "/metrics", HTTP_ROLE_AGENT, 0, on_metrics, NULL },
		{ "GET", "/api/v1/tools", HTTP_ROLE_VIEW, 0, on_tools, NULL },
		{ "POST", TOOLS_PREFIX, HTTP_ROLE_VIEW, HTTP_ROUTE_PREFIX | HTTP_ROUTE_LARGE_BODY,
			on_tool_call, NULL },
		{ "GET", "/api/v1/screenshot", HTTP_ROLE_VIEW, 0, on_screenshot, NULL },
		{ "GET", "/api/v1/windows", HTTP_ROLE_VIEW, 0, on_windows, NULL },
		/* The clipboard's bytes as they are (clipboard_read refuses a view
		 * token itself, as over POST /api/v1/tools). */
		{ "GET", "/api/v1/clipboard", HTTP_ROLE_VIEW, 0, on_clipboard_get, NULL },
		{ "PUT", "/api/v1/clipboard", HTTP_ROLE_AGENT, HTTP_ROUTE_LARGE_BODY,
			on_clipboard_put, NULL },
		{ "GET", "/api/v1/recordings", HTTP_ROLE_VIEW, 0, on_recordings, NULL },
		{ "GET", RECORDINGS_PREFIX, HTTP_ROLE_VIEW, HTTP_ROUTE_PREFIX, on_recording, NULL },
		{ "DELETE", RECORDINGS_PREFIX, HTTP_ROLE_AGENT, HTTP_ROUTE_PREFIX,
			on_recording_delete, NULL },
		{ "GET", "/api/v1/events", HTTP_ROLE_VIEW, 0, on_events, NULL },
		{ "GET", EVENTS_PREFIX, HTTP_ROLE_VIEW, HTTP_ROUTE_PREFIX, on_event_thumbnail, NULL },
		/* Files: the agent's and the person's tokens only (downloads and listings expose data,
		 * as clipboard_read does); a PUT body may be as large as a file. */
		{ "GET", "/api/v1/files", HTTP_ROLE_AGENT, 0, on_file_get, NULL },
		{ "GET", FILES_PREFIX, HTTP_ROLE_AGENT, HTTP_ROUTE_PREFIX, on_file_get, NULL },
		{ "PUT", FILES_PREFIX, HTTP_ROLE_AGENT, HTTP_ROUTE_PREFIX | HTTP_ROUTE_FILE_BODY,
			on_file_put, NULL },
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
