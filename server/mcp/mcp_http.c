#define _GNU_SOURCE
/* MCP Streamable HTTP on /mcp (docs/MCP.md 1-4), over server/http/http.h only.
 *
 * Every POST that carries a request gets a response stream (struct hstream,
 * the core's sink): JSON for quick methods and for a tools/call that sends
 * nothing before its result; SSE once a call sends a notification or a
 * request (progress, logging, sampling, elicitation) or is still running
 * after MCP_STREAM_AFTER_MS (later.c), and for a batch with a call. SSE events are
 * numbered "<stream>:<seq>" and kept in memory, so a client that lost the
 * connection resumes with GET + Last-Event-ID. Stream 0 is the session's
 * standalone GET stream.
 *
 * Locking: write_mutex serializes everything written to a stream's
 * connection and guards its event list; mutex guards the rest of the state
 * and is the only lock the connection's close callback takes. Order:
 * write_mutex -> mutex; http_* calls are made holding write_mutex only. */

#include "server/mcp/mcp.h"
#include "server/mcp/core.h"
#include "server/http/http.h"
#include "base/clock.h"
#include "base/jsonmem.h"
#include "base/log.h"
#include "base/options.h"
#include "base/text.h"
#include "tools/tools.h"
#include "base/worker.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MCP_MAX_SESSIONS 512
#define SSE_RETRY_MS 500
#define STREAM_MAX_EVENTS 1024
#define STREAM_MAX_BYTES (8u << 20)
#define SESSION_MAX_STREAMS 32
#define REPLAY_SLIM_MIN (4u << 10)	/* a sent event this big keeps no images */
#define REPLAY_TOTAL_MAX (64u << 20)	/* all replay events of all sessions */

/* Bytes of replay events kept, all streams together (D7b). */
static atomic_size_t replay_bytes;

struct sse_event {
	uint64_t seq;
	char* text;
	size_t len;
};

struct attach;

struct hstream {
	struct mcp_sink sink;		/* first member: the core's view */
	atomic_int refs;
	pthread_mutex_t write_mutex;
	pthread_mutex_t mutex;
	unsigned no;			/* 0 = the GET stream */
	bool sse;
	/* A call's stream that answers JSON unless it needs to stream (a
	 * notification or a request before its result, or still running
	 * after MCP_STREAM_AFTER_MS: later.c), then becomes SSE. */
	bool deferred, priming;
	int64_t started;

	/* write_mutex */
	uint64_t seq;
	struct sse_event* events;
	size_t n_events, cap_events, bytes;

	/* mutex */
	struct attach* attach;
	bool ended;
	bool answered;			/* deferred: its answer went into responses (JSON) */
	int pending;			/* requests not done, plus the dispatch guard */

	/* JSON mode */
	struct http_request* req;
	json_t* responses;
	bool batch;
	char session_id[40];
};

struct attach {
	atomic_int refs;
	struct hstream* stream;
	struct http_stream* conn;
	bool closed;			/* stream->mutex */
};

struct hsess {
	pthread_mutex_t mutex;
	unsigned next_no;
	struct hstream* streams[SESSION_MAX_STREAMS];	/* oldest first */
	size_t n_streams;
	struct hstream* get_stream;
	bool priming;			/* negotiated >= 2025-11-25 */
	enum http_role role;		/* of the token that opened the session */
};

static const struct mcp_sink_impl hstream_impl;

static void stream_ref(struct hstream* s)
{
	atomic_fetch_add(&s->refs, 1);
}

static void stream_unref(struct hstream* s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->n_events; i++)
		free(s->events[i].text);
	atomic_fetch_sub(&replay_bytes, s->bytes);
	free(s->events);
	json_decref(s->responses);
	pthread_mutex_destroy(&s->mutex);
	pthread_mutex_destroy(&s->write_mutex);
	free(s);
}

static struct hstream* stream_new(bool sse, bool read_only, const char* session_id)
{
	struct hstream* s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->sink.impl = &hstream_impl;
	s->sink.read_only = read_only;
	atomic_init(&s->refs, 1);
	pthread_mutex_init(&s->write_mutex, NULL);
	pthread_mutex_init(&s->mutex, NULL);
	s->sse = sse;
	s->pending = 1;
	snprintf(s->session_id, sizeof(s->session_id), "%s", session_id);
	if (!sse) {
		s->responses = json_array();
		if (!s->responses) {
			stream_unref(s);
			return NULL;
		}
	}
	return s;
}

static void attach_unref(struct attach* a)
{
	if (atomic_fetch_sub(&a->refs, 1) != 1)
		return;
	if (a->conn)
		http_stream_unref(a->conn);
	stream_unref(a->stream);
	free(a);
}

/* The connection went away (or was ended): detach it. Any thread. */
static void attach_on_close(void* ud)
{
	struct attach* a = ud;
	struct hstream* s = a->stream;
	pthread_mutex_lock(&s->mutex);
	a->closed = true;
	bool was = s->attach == a;
	if (was)
		s->attach = NULL;
	pthread_mutex_unlock(&s->mutex);
	if (was)
		attach_unref(a);
	attach_unref(a);
}

/* The attached connection with a new reference, or NULL. */
static struct http_stream* stream_conn(struct hstream* s)
{
	pthread_mutex_lock(&s->mutex);
	struct http_stream* conn = s->attach ? s->attach->conn : NULL;
	if (conn)
		http_stream_ref(conn);
	pthread_mutex_unlock(&s->mutex);
	return conn;
}

/* The message without its image, audio and blob data (a text block says
 * what was there), or NULL when it has none. New reference. */
static json_t* replay_slim(json_t* msg)
{
	json_t* result = json_object_get(msg, "result");
	json_t* content = json_object_get(result, "content");
	size_t i;
	json_t* block;
	bool heavy = false;
	json_array_foreach(content, i, block) {
		heavy = heavy || json_is_string(json_object_get(block, "data"))
			|| json_is_string(json_object_get(json_object_get(block, "resource"), "blob"));
	}
	if (!heavy)
		return NULL;
	json_t* slim_content = json_array();
	json_array_foreach(content, i, block) {
		const char* type = json_string_value(json_object_get(block, "type"));
		if (json_is_string(json_object_get(block, "data"))
				|| json_is_string(json_object_get(json_object_get(block, "resource"),
						"blob"))) {
			char note[160];
			snprintf(note, sizeof(note), "(a %s block was here; resumed streams do not "
					"replay image data: call the tool again)", type ? type : "data");
			json_array_append_new(slim_content, json_pack("{s:s, s:s}", "type", "text",
					"text", note));
		} else {
			json_array_append(slim_content, block);
		}
	}
	json_t* slim_result = json_copy(result);
	json_t* slim = json_copy(msg);
	json_object_set_new(slim_result, "content", slim_content);
	json_object_set_new(slim, "result", slim_result);
	return slim;
}

/* Drop the oldest half of the stream's events (write_mutex held). */
static void stream_drop_oldest(struct hstream* s)
{
	size_t drop = s->n_events / 2 ? s->n_events / 2 : s->n_events;
	size_t freed = 0;
	for (size_t i = 0; i < drop; i++) {
		freed += s->events[i].len;
		free(s->events[i].text);
	}
	s->bytes -= freed;
	atomic_fetch_sub(&replay_bytes, freed);
	memmove(s->events, s->events + drop, (s->n_events - drop) * sizeof(*s->events));
	s->n_events -= drop;
}

/* Keep the event for replay (write_mutex held): whole while the client has
 * not been sent it; once sent (or past REPLAY_TOTAL_MAX), without image
 * data. Drops the oldest half when over the stream's limits. */
static void stream_keep(struct hstream* s, uint64_t seq, char* text, size_t len,
		json_t* msg, bool sent)
{
	if (len >= REPLAY_SLIM_MIN && (sent || atomic_load(&replay_bytes) + len > REPLAY_TOTAL_MAX)) {
		json_t* slim = replay_slim(msg);
		char* data = slim ? mcp_dump(slim) : NULL;
		json_decref(slim);
		char* slim_text = NULL;
		int n = data ? asprintf(&slim_text, "event: message\nid: %u:%" PRIu64
				"\ndata: %s\n\n", s->no, seq, data) : -1;
		free(data);
		if (n >= 0) {
			free(text);
			text = slim_text;
			len = (size_t)n;
		}
	}
	if (s->n_events >= STREAM_MAX_EVENTS || s->bytes + len > STREAM_MAX_BYTES)
		stream_drop_oldest(s);
	if (s->n_events == s->cap_events) {
		size_t cap = s->cap_events ? s->cap_events * 2 : 8;
		struct sse_event* p = realloc(s->events, cap * sizeof(*p));
		if (!p) {
			free(text);
			return;
		}
		s->events = p;
		s->cap_events = cap;
	}
	s->events[s->n_events++] = (struct sse_event){ seq, text, len };
	s->bytes += len;
	atomic_fetch_add(&replay_bytes, len);
}

static void stream_emit(struct hstream* s, json_t* msg)
{
	char* data = mcp_dump(msg);
	if (!data)
		return;
	pthread_mutex_lock(&s->write_mutex);
	uint64_t seq = ++s->seq;
	char* text = NULL;
	int len = asprintf(&text, "event: message\nid: %u:%" PRIu64 "\ndata: %s\n\n",
			s->no, seq, data);
	free(data);
	if (len < 0) {
		pthread_mutex_unlock(&s->write_mutex);
		return;
	}
	struct http_stream* conn = stream_conn(s);
	bool sent = false;
	if (conn) {
		sent = http_stream_write(conn, text, (size_t)len) == 0;
		http_stream_unref(conn);
	}
	stream_keep(s, seq, text, (size_t)len, msg, sent);
	pthread_mutex_unlock(&s->write_mutex);
}

/* End the stream's connection (the stream stays resumable). */
static void stream_end_conn(struct hstream* s, bool mark_ended)
{
	pthread_mutex_lock(&s->write_mutex);
	pthread_mutex_lock(&s->mutex);
	if (mark_ended)
		s->ended = true;
	struct attach* a = s->attach;
	s->attach = NULL;
	pthread_mutex_unlock(&s->mutex);
	if (a) {
		http_stream_end(a->conn);
		attach_unref(a);
	}
	pthread_mutex_unlock(&s->write_mutex);
}


/* Attach a new SSE connection for req to s: prime it, replay events after
 * `after` (or none if after < 0), end it at once if s already ended. */
static int stream_attach(struct hstream* s, struct http_request* req, int64_t after,
		bool priming)
{
	struct attach* a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	atomic_init(&a->refs, 2);
	stream_ref(s);
	a->stream = s;
	/* server/http/http.c adds Cache-Control and X-Accel-Buffering, and keepalives. */
	const char* headers[] = { "Mcp-Session-Id", s->session_id, NULL };
	struct http_stream* conn = http_respond_stream(req, 200, "text/event-stream",
			headers, attach_on_close, a);
	if (!conn) {
		stream_unref(s);
		free(a);
		return -EPIPE;
	}

	pthread_mutex_lock(&s->write_mutex);
	pthread_mutex_lock(&s->mutex);
	a->conn = conn;
	if (a->closed) {
		pthread_mutex_unlock(&s->mutex);
		pthread_mutex_unlock(&s->write_mutex);
		attach_unref(a);
		return 0;
	}
	struct attach* old = s->attach;
	s->attach = a;
	bool ended = s->ended;
	pthread_mutex_unlock(&s->mutex);
	if (old) {
		http_stream_end(old->conn);
		attach_unref(old);
	}
	if (priming) {
		char prime[96];
		int n = snprintf(prime, sizeof(prime), "id: %u:%" PRIu64 "\nretry: %d\ndata: \n\n",
				s->no, after >= 0 ? (uint64_t)after : s->seq, SSE_RETRY_MS);
		http_stream_write(conn, prime, (size_t)n);
	}
	if (after >= 0)
		for (size_t i = 0; i < s->n_events; i++)
			if (s->events[i].seq > (uint64_t)after)
				http_stream_write(conn, s->events[i].text, s->events[i].len);
	if (ended)
		http_stream_end(conn);
	pthread_mutex_unlock(&s->write_mutex);
	return 0;
}

/* ---- The sink ---- */

static void stream_finish(struct hstream* s)
{
	if (s->sse) {
		stream_end_conn(s, true);
		return;
	}
	pthread_mutex_lock(&s->mutex);
	s->ended = true;	/* the session's stream list drops it first */
	pthread_mutex_unlock(&s->mutex);
	const char* headers[] = { "Mcp-Session-Id", s->session_id, NULL };
	json_t* body;
	if (s->batch)
		body = json_incref(s->responses);
	else
		body = json_incref(json_array_get(s->responses, 0));
	if (!body || (s->batch && json_array_size(body) == 0)) {
		json_decref(body);
		http_respond(s->req, 202, NULL, NULL, 0, headers);
	} else {
		http_respond_json(s->req, 200, body, headers);
	}
	s->req = NULL;
}

static void stream_release(struct hstream* s)
{
	pthread_mutex_lock(&s->mutex);
	bool last = --s->pending == 0;
	pthread_mutex_unlock(&s->mutex);
	if (last)
		stream_finish(s);
}

/* A deferred stream becomes SSE (once; not after its answer): the
 * request's connection turns into the stream, primed at the events' seq
 * so that an event emitted meanwhile is replayed onto it. */
static void stream_upgrade(struct hstream* s)
{
	pthread_mutex_lock(&s->write_mutex);
	pthread_mutex_lock(&s->mutex);
	struct http_request* req = NULL;
	if (s->deferred && !s->sse && !s->answered && s->req) {
		req = s->req;
		s->req = NULL;
		s->sse = true;
	}
	uint64_t at = s->seq;
	pthread_mutex_unlock(&s->mutex);
	pthread_mutex_unlock(&s->write_mutex);
	if (req)
		stream_attach(s, req, (int64_t)at, s->priming);	/* -EPIPE: the client left */
}

static bool hs_settled(void* sink)
{
	struct hstream* s = sink;
	pthread_mutex_lock(&s->mutex);
	bool settled = s->sse || s->answered;
	pthread_mutex_unlock(&s->mutex);
	return settled;
}

static void hs_open(void* sink)
{
	stream_upgrade(sink);
}

static void hs_later_unref(void* sink)
{
	mcp_sink_unref(sink);
}

static int hs_message(struct mcp_sink* sink, json_t* msg)
{
	struct hstream* s = (struct hstream*)sink;
	if (s->deferred)
		stream_upgrade(s);
	if (!s->sse)
		return -EPIPE;	/* JSON responses carry no notifications */
	stream_emit(s, msg);
	return 0;
}

static void hs_done(struct mcp_sink* sink, json_t* response)
{
	struct hstream* s = (struct hstream*)sink;
	pthread_mutex_lock(&s->mutex);
	bool sse = s->sse;
	if (!sse) {
		if (response)
			json_array_append(s->responses, response);
		s->answered = true;
	}
	pthread_mutex_unlock(&s->mutex);
	if (sse && response)
		stream_emit(s, response);
	stream_release(s);
}

static void hs_close_stream(struct mcp_sink* sink)
{
	struct hstream* s = (struct hstream*)sink;
	if (s->deferred)
		stream_upgrade(s);	/* a stream to close and resume */
	if (s->sse)
		stream_end_conn(s, false);
}

static void hs_ref(struct mcp_sink* sink)
{
	stream_ref((struct hstream*)sink);
}

static void hs_unref(struct mcp_sink* sink)
{
	stream_unref((struct hstream*)sink);
}

static const struct mcp_sink_impl hstream_impl = {
	.message = hs_message,
	.done = hs_done,
	.close_stream = hs_close_stream,
	.ref = hs_ref,
	.unref = hs_unref,
};

/* ---- Per-session transport data ---- */

static struct hsess* hsess_new(void)
{
	struct hsess* h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	pthread_mutex_init(&h->mutex, NULL);
	h->next_no = 1;
	return h;
}

static void hsess_end(void* data)
{
	struct hsess* h = data;
	struct hstream* all[SESSION_MAX_STREAMS + 1];
	size_t n = 0;
	pthread_mutex_lock(&h->mutex);
	for (size_t i = 0; i < h->n_streams; i++) {
		stream_ref(h->streams[i]);
		all[n++] = h->streams[i];
	}
	if (h->get_stream) {
		stream_ref(h->get_stream);
		all[n++] = h->get_stream;
	}
	pthread_mutex_unlock(&h->mutex);
	for (size_t i = 0; i < n; i++) {
		stream_end_conn(all[i], true);
		stream_unref(all[i]);
	}
}

static void hsess_free(void* data)
{
	struct hsess* h = data;
	for (size_t i = 0; i < h->n_streams; i++)
		stream_unref(h->streams[i]);
	stream_unref(h->get_stream);
	pthread_mutex_destroy(&h->mutex);
	free(h);
}

/* Is a client connected to one of the session's streams? */
static bool hsess_busy(void* data)
{
	struct hsess* h = data;
	bool busy = false;
	pthread_mutex_lock(&h->mutex);
	for (size_t i = 0; i <= h->n_streams && !busy; i++) {
		struct hstream* st = i < h->n_streams ? h->streams[i] : h->get_stream;
		if (!st)
			continue;
		pthread_mutex_lock(&st->mutex);
		busy = st->attach != NULL;
		pthread_mutex_unlock(&st->mutex);
	}
	pthread_mutex_unlock(&h->mutex);
	return busy;
}

static void hsess_add_stream(struct hsess* h, struct hstream* s)
{
	pthread_mutex_lock(&h->mutex);
	s->no = h->next_no++;
	if (h->n_streams == SESSION_MAX_STREAMS) {
		size_t victim = 0;
		for (size_t i = 0; i < h->n_streams; i++) {
			pthread_mutex_lock(&h->streams[i]->mutex);
			bool ended = h->streams[i]->ended;
			pthread_mutex_unlock(&h->streams[i]->mutex);
			if (ended) {
				victim = i;
				break;
			}
		}
		stream_unref(h->streams[victim]);
		memmove(h->streams + victim, h->streams + victim + 1,
				(h->n_streams - victim - 1) * sizeof(*h->streams));
		h->n_streams--;
	}
	stream_ref(s);
	h->streams[h->n_streams++] = s;
	pthread_mutex_unlock(&h->mutex);
}

static struct hstream* hsess_find_stream(struct hsess* h, unsigned no)
{
	struct hstream* found = NULL;
	pthread_mutex_lock(&h->mutex);
	if (no == 0) {
		found = h->get_stream;
	} else {
		for (size_t i = 0; i < h->n_streams; i++)
			if (h->streams[i]->no == no)
				found = h->streams[i];
	}
	if (found) {
		/* a call still answering JSON handed out no event to resume after */
		pthread_mutex_lock(&found->mutex);
		bool streams = found->sse;
		pthread_mutex_unlock(&found->mutex);
		if (streams)
			stream_ref(found);
		else
			found = NULL;
	}
	pthread_mutex_unlock(&h->mutex);
	return found;
}

/* ---- Requests ---- */

static void rpc_error(struct http_request* req, int status, int code, const char* message,
		const char* const* headers)
{
	/* The message may quote a header: repair it rather than fail. */
	json_t* body = json_pack("{s:s, s:{s:i, s:o}, s:n}", "jsonrpc", "2.0",
			"error", "code", code, "message", text_json_string(message), "id");
	http_respond_json(req, status, body, headers);
}

static bool header_has(const char* value, const char* token)
{
	return value && strcasestr(value, token) != NULL;
}

/* Check the session and version headers; on failure respond and return NULL.
 * Returns a new reference. */
static struct mcp_session* request_session(struct http_request* req)
{
	const char* sid = http_request_header(req, "Mcp-Session-Id");
	if (!sid || !*sid) {
		rpc_error(req, 400, -32000, "Bad Request: Mcp-Session-Id header is required", NULL);
		return NULL;
	}
	struct mcp_session* s = mcp_registry_find(sid);
	if (!s || !mcp_session_transport(s) || mcp_session_ended(s)) {
		if (s)
			mcp_session_unref(s);
		rpc_error(req, 404, -32001, "Session not found", NULL);
		return NULL;
	}
	/* Session ids show in activity events, which the view token may watch:
	 * a session answers only to a token at least as strong as its opener's. */
	struct hsess* h = mcp_session_transport(s);
	if (http_request_role(req) < h->role) {
		mcp_session_unref(s);
		rpc_error(req, 403, -32000, "Forbidden: the session belongs to another token", NULL);
		return NULL;
	}
	const char* version = http_request_header(req, "MCP-Protocol-Version");
	if (version && !mcp_version_supported(version)) {
		char msg[256];
		snprintf(msg, sizeof(msg), "Bad Request: Unsupported protocol version: %.*s "
				"(supported versions: 2025-11-25, 2025-06-18, 2025-03-26)",
				text_cut(version, 40), version);
		rpc_error(req, 400, -32000, msg, NULL);
		mcp_session_unref(s);
		return NULL;
	}
	return s;
}

/* initialize: captured synchronously, then the session is registered. */
struct capture_sink {
	struct mcp_sink sink;
	json_t* response;
};

static void capture_done(struct mcp_sink* sink, json_t* response)
{
	struct capture_sink* c = (struct capture_sink*)sink;
	json_decref(c->response);
	c->response = json_incref(response);
}

static int capture_message(struct mcp_sink* sink, json_t* msg)
{
	return 0;
}

static const struct mcp_sink_impl capture_impl = {
	.message = capture_message,
	.done = capture_done,
};

static void end_session_job(void* ud);

/* Register a new session within --max-sessions and the token's quota
 * (--max-view-sessions for the view token), ending an idle one to make
 * room (mcp_registry_admit). */
static int session_admit(struct mcp_session* s, enum http_role role)
{
	const struct options* opts = options_get();
	int total = opts && opts->max_sessions > 0 ? opts->max_sessions : MCP_MAX_SESSIONS;
	int quota = role == HTTP_ROLE_VIEW && opts && opts->max_view_sessions > 0
		? opts->max_view_sessions : total;
	struct mcp_session* evicted = NULL;
	int rc = mcp_registry_admit(s, (int)role, quota, total, &evicted);
	if (evicted && worker_spawn(end_session_job, evicted) < 0)
		end_session_job(evicted);
	return rc;
}

static void handle_initialize(struct http_request* req, json_t* msg)
{
	const char* sid = http_request_header(req, "Mcp-Session-Id");
	struct mcp_session* existing = sid ? mcp_registry_find(sid) : NULL;
	if (existing) {
		mcp_session_unref(existing);
		rpc_error(req, 400, -32600, "Invalid Request: the session is already initialized",
				NULL);
		return;
	}
	struct mcp_session* s = mcp_session_new();
	struct hsess* h = s ? hsess_new() : NULL;
	if (!h) {
		mcp_session_unref(s);
		rpc_error(req, 500, -32603, "Internal error: out of memory", NULL);
		return;
	}
	h->role = http_request_role(req);
	mcp_session_set_transport(s, h, hsess_end, hsess_free);
	mcp_session_set_transport_busy(s, hsess_busy);
	struct capture_sink cap = { { &capture_impl, false }, NULL };
	mcp_session_handle(s, msg, &cap.sink);
	json_t* result = json_object_get(cap.response, "result");
	const char* headers[] = { "Mcp-Session-Id", mcp_session_id(s), NULL };
	if (result && session_admit(s, h->role) < 0) {
		rpc_error(req, 503, -32000, "Service Unavailable: too many MCP sessions in use "
				"(none idle to end); end unused ones with DELETE /mcp", NULL);
	} else if (result) {
		const char* v = mcp_session_version(s);
		h->priming = v && strcmp(v, "2025-11-25") >= 0;
		http_respond_json(req, 200, cap.response, headers);
	} else {
		http_respond_json(req, 200, cap.response ? cap.response
				: mcp_error_response(NULL, -32603, "Internal error", NULL), NULL);
	}
	mcp_session_unref(s);
}

/* A tools/call of a tool that takes large arguments (clipboard_write)? */
static bool large_call(json_t* msg)
{
	const char* method = json_string_value(json_object_get(msg, "method"));
	json_t* params = json_object_get(msg, "params");
	const char* name = json_string_value(json_object_get(params, "name"));
	const struct tool_def* tool = name ? tools_find(name) : NULL;
	return method && strcmp(method, "tools/call") == 0 && tool
		&& (tools_flags(tool) & TOOL_LARGE_ARGS);
}

#define LOAD_ANSWERED (-2)	/* in jerr->line: load_body answered */

/* The body as JSON within the parse budget (base/jsonmem.h); over
 * --max-body only for a clipboard_write (--max-clipboard-body). NULL with
 * jerr set: a parse error to answer, or jerr->line LOAD_ANSWERED. */
static json_t* load_body(struct http_request* req, const char* body, size_t len,
		json_error_t* jerr)
{
	enum jsonmem_status st;
	json_t* msg = jsonmem_load(body, len, 0, jerr, &st);
	if (!msg && st != JSONMEM_INVALID) {
		char text[400];
		snprintf(text, sizeof(text), "%s: %s", st == JSONMEM_BUSY
				? "Service Unavailable" : "Payload Too Large", jerr->text);
		rpc_error(req, st == JSONMEM_BUSY ? 503 : 413, -32000, text, NULL);
		jerr->line = LOAD_ANSWERED;
	} else if (msg && http_request_body_large(req) && !large_call(msg)) {
		json_decref(msg);
		msg = NULL;
		rpc_error(req, 413, -32000, "Payload Too Large: bodies over --max-body are only "
				"for a tools/call of clipboard_write", NULL);
		jerr->line = LOAD_ANSWERED;
	}
	return msg;
}

/* The era of a POST (docs/MCP.md 10): modern when the body's _meta names a
 * modern protocol version, or, outside a legacy session, when the
 * MCP-Protocol-Version header does. Batches, initialize without modern
 * _meta, and everything of a session stay legacy, exactly as before. */
static bool wants_modern(struct http_request* req, json_t* msg)
{
	if (!json_is_object(msg))
		return false;
	const char* sid = http_request_header(req, "Mcp-Session-Id");
	return mcp_is_modern(msg, sid && *sid ? NULL
			: http_request_header(req, "MCP-Protocol-Version"));
}

/* GET and DELETE have no place in the modern era: 405 for a request that
 * names a modern version and no session. */
static bool modern_get_or_delete(struct http_request* req)
{
	const char* sid = http_request_header(req, "Mcp-Session-Id");
	const char* v = http_request_header(req, "MCP-Protocol-Version");
	bool modern = !(sid && *sid) && mcp_header_modern(v);
	if (modern) {
		const char* headers[] = { "Allow", "POST", NULL };
		rpc_error(req, 405, -32000, "Method Not Allowed: protocol " MCP_VERSION_MODERN
				" has no GET stream or sessions; POST each request (subscriptions/listen "
				"for change notifications)", headers);
	}
	return modern;
}

static void handle_post(struct http_request* req)
{
	const char* accept = http_request_header(req, "Accept");
	if (accept && !header_has(accept, "*/*")
			&& !(header_has(accept, "application/json")
				&& header_has(accept, "text/event-stream"))) {
		rpc_error(req, 406, -32000, "Not Acceptable: Client must accept both "
				"application/json and text/event-stream", NULL);
		return;
	}
	const char* ctype = http_request_header(req, "Content-Type");
	if (!ctype || strncasecmp(ctype, "application/json", 16) != 0) {
		rpc_error(req, 415, -32000, "Unsupported Media Type: Content-Type must be "
				"application/json", NULL);
		return;
	}
	size_t len = 0;
	const char* body = http_request_body(req, &len);
	json_error_t jerr;
	json_t* msg = load_body(req, body ? body : "", len, &jerr);
	if (!msg) {
		if (jerr.line != LOAD_ANSWERED)
			http_respond_json(req, 400, mcp_parse_error(&jerr), NULL);
		return;
	}

	/* MCP 2026-07-28: served statelessly (http_modern.c). */
	if (wants_modern(req, msg)) {
		mcp_http_modern(req, msg);
		goto out;
	}

	bool batch = json_is_array(msg);
	size_t n = batch ? json_array_size(msg) : 1;
	size_t n_requests = 0;
	bool has_call = false, has_init = false, wants_progress = false;
	for (size_t i = 0; i < n; i++) {
		json_t* m = batch ? json_array_get(msg, i) : msg;
		enum mcp_msg_kind kind = mcp_message_kind(m);
		if (kind == MCP_MSG_INVALID && !batch) {
			rpc_error(req, 400, -32600, "Invalid Request: not a JSON-RPC 2.0 message", NULL);
			goto out;
		}
		if (kind == MCP_MSG_REQUEST || kind == MCP_MSG_INVALID)
			n_requests++;
		const char* method = json_string_value(json_object_get(m, "method"));
		if (method && strcmp(method, "tools/call") == 0)
			has_call = true;
		/* a client that asks for progress gets its stream from the start */
		if (method && strcmp(method, "tools/call") == 0 && json_object_get(json_object_get(
				json_object_get(m, "params"), "_meta"), "progressToken"))
			wants_progress = true;
		if (method && strcmp(method, "initialize") == 0)
			has_init = true;
	}
	if (batch && (n == 0 || has_init)) {
		rpc_error(req, 400, -32600, n == 0 ? "Invalid Request: empty batch"
				: "Invalid Request: initialize must not be part of a batch", NULL);
		goto out;
	}
	if (has_init && mcp_message_kind(msg) == MCP_MSG_REQUEST) {
		handle_initialize(req, msg);
		goto out;
	}

	struct mcp_session* s = request_session(req);
	if (!s)
		goto out;
	const char* version = mcp_session_version(s);
	if (batch && !(version && strcmp(version, MCP_VERSION_LEGACY) == 0)) {
		rpc_error(req, 400, -32600, "Invalid Request: batches are only allowed in "
				"protocol 2025-03-26", NULL);
		goto session_out;
	}
	struct hsess* h = mcp_session_transport(s);
	bool read_only = http_request_role(req) == HTTP_ROLE_VIEW;

	if (n_requests == 0) {
		struct capture_sink cap = { { &capture_impl, read_only }, NULL };
		for (size_t i = 0; i < n; i++)
			mcp_session_handle(s, batch ? json_array_get(msg, i) : msg, &cap.sink);
		json_decref(cap.response);
		const char* headers[] = { "Mcp-Session-Id", mcp_session_id(s), NULL };
		http_respond(req, 202, NULL, NULL, 0, headers);
		goto session_out;
	}

	/* One call: JSON unless it turns out to need a stream. A call with a
	 * progress token, and a batch with a call (2025-03-26), stream from
	 * the start. */
	bool defer = has_call && !batch && !wants_progress;
	struct hstream* st = stream_new(has_call && !defer, read_only, mcp_session_id(s));
	if (!st) {
		rpc_error(req, 500, -32603, "Internal error: out of memory", NULL);
		goto session_out;
	}
	st->batch = batch;
	if (defer) {
		st->deferred = true;
		st->priming = h->priming;
		st->started = clock_ms();
		st->req = req;
		hsess_add_stream(h, st);	/* resumable once it streams */
	} else if (st->sse) {
		hsess_add_stream(h, st);
		if (stream_attach(st, req, -1, h->priming) < 0) {
			stream_unref(st);
			goto session_out;
		}
	} else {
		st->req = req;
	}
	pthread_mutex_lock(&st->mutex);
	st->pending += (int)n_requests;
	pthread_mutex_unlock(&st->mutex);
	for (size_t i = 0; i < n; i++)
		mcp_session_handle(s, batch ? json_array_get(msg, i) : msg, &st->sink);
	if (defer && !hs_settled(&st->sink)) {
		mcp_sink_ref(&st->sink);	/* the watcher's */
		mcp_later(&st->sink, st->started, MCP_STREAM_AFTER_MS, hs_settled, hs_open,
				hs_later_unref);
	}
	stream_release(st);	/* the dispatch guard */
	stream_unref(st);
session_out:
	mcp_session_unref(s);
out:
	json_decref(msg);
}

static void handle_get(struct http_request* req)
{
	const char* accept = http_request_header(req, "Accept");
	if (accept && !header_has(accept, "text/event-stream") && !header_has(accept, "*/*")) {
		rpc_error(req, 406, -32000, "Not Acceptable: Client must accept text/event-stream",
				NULL);
		return;
	}
	struct mcp_session* s = request_session(req);
	if (!s)
		return;
	struct hsess* h = mcp_session_transport(s);
	const char* last = http_request_header(req, "Last-Event-ID");
	unsigned no;
	uint64_t seq;
	char tail;
	if (last && sscanf(last, "%u:%" SCNu64 "%c", &no, &seq, &tail) == 2) {
		struct hstream* st = hsess_find_stream(h, no);
		if (st) {
			stream_attach(st, req, (int64_t)seq, false);
			stream_unref(st);
			mcp_session_unref(s);
			return;
		}
	}

	pthread_mutex_lock(&h->mutex);
	struct hstream* st = h->get_stream;
	bool busy = false;
	if (st) {
		pthread_mutex_lock(&st->mutex);
		busy = st->attach != NULL;
		pthread_mutex_unlock(&st->mutex);
	} else {
		st = h->get_stream = stream_new(true, false, mcp_session_id(s));
	}
	if (st)
		stream_ref(st);
	pthread_mutex_unlock(&h->mutex);
	if (!st) {
		rpc_error(req, 500, -32603, "Internal error: out of memory", NULL);
	} else if (busy) {
		rpc_error(req, 409, -32000, "Conflict: only one GET stream is allowed per session",
				NULL);
	} else {
		stream_attach(st, req, -1, h->priming);
	}
	stream_unref(st);
	mcp_session_unref(s);
}

static void end_session_job(void* ud)
{
	struct mcp_session* s = ud;
	mcp_session_end(s);
	mcp_session_unref(s);
}

static void handle_delete(struct http_request* req)
{
	struct mcp_session* s = request_session(req);
	if (!s)
		return;
	struct mcp_session* removed = mcp_registry_remove(mcp_session_id(s));
	mcp_session_unref(s);
	if (removed) {
		log_info("mcp: session %s deleted by the client", mcp_session_id(removed));
		if (worker_spawn(end_session_job, removed) < 0)
			end_session_job(removed);
	}
	http_respond(req, 204, NULL, NULL, 0, NULL);
}

static void mcp_route(struct http_request* req, void* ud)
{
	const char* method = http_request_method(req);
	if (strcmp(method, "POST") == 0) {
		handle_post(req);
	} else if (strcmp(method, "GET") == 0) {
		if (!modern_get_or_delete(req))
			handle_get(req);
	} else if (strcmp(method, "DELETE") == 0) {
		if (!modern_get_or_delete(req))
			handle_delete(req);
	} else {
		const char* headers[] = { "Allow", "GET, POST, DELETE", NULL };
		rpc_error(req, 405, -32000, "Method not allowed", headers);
	}
}

int mcp_http_register(void)
{
	static const struct http_route route = {
		.method = NULL,
		.path = "/mcp",
		.min_role = HTTP_ROLE_VIEW,
		.flags = HTTP_ROUTE_JSONRPC | HTTP_ROUTE_LARGE_BODY,
		.handler = mcp_route,
	};
	int rc = http_add_route(&route);
	if (rc < 0)
		return rc;
	return mcp_registry_start();
}
