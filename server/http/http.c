/* HTTP on the one port: libmicrohttpd behind our own acceptor (listener.c).
 *
 * libmicrohttpd runs with MHD_USE_NO_LISTEN_SOCKET and gets connections from
 * the acceptor through MHD_add_connection(). Requests are answered on the
 * second access-handler call (an answer on the first turns keep-alive off).
 * A handler that does not answer at once leaves the connection suspended
 * until http_respond() (any thread) stores the response and resumes it.
 * Streams (SSE) use a content reader that suspends the connection when it has
 * nothing to send; writers resume it. Requests and streams are reference
 * counted because the connection, the worker answering it and the producer
 * writing to it each end on their own thread. http_stop() answers or closes
 * everything still suspended before MHD_stop_daemon(). */
#define _GNU_SOURCE	/* strcasecmp, strndup */
#include "server/http/http.h"
#include "base/clock.h"
#include "server/http/auth.h"
#include "server/http/listener.h"
#include "base/jsonmem.h"
#include "base/log.h"
#include "base/metrics.h"
#include "server/http/netcheck.h"
#include "base/options.h"
#include "base/text.h"
#include "server/http/ws.h"

#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HTTP_MAX_ROUTES 64
#define HTTP_KEEPALIVE_MS 15000		/* SSE comment when a stream was idle this long;
					 * DESKD_SSE_KEEPALIVE_MS overrides (tests) */
#define HTTP_STREAM_MAX_BUFFERED (64u << 20)	/* a reader this far behind is dropped */
#define HTTP_STREAMS_MAX_BUFFERED (256l << 20)	/* all streams together; past it,
						 * DESKD_STREAMS_MAX_BUFFERED overrides (tests) */
#define HTTP_STREAM_LAG_MIN (1u << 20)		/* readers this far behind are dropped */
#define HTTP_CONNECTION_TIMEOUT_S 120
#define HTTP_CORS_HEADERS "Authorization, Content-Type, Accept, Mcp-Session-Id, " \
	"Mcp-Protocol-Version, Last-Event-ID"
#define HTTP_CORS_EXPOSE "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, " \
	"Content-Disposition, X-Deskd-Width, X-Deskd-Height, X-Deskd-Physical-Width, " \
	"X-Deskd-Physical-Height, X-Deskd-Scale-Factor, X-Deskd-Window"
#define HTTP_DISCARD_MAX (16u << 20)	/* then a refused upload is cut off */
#define HTTP_BIG_BUFFER (256u << 10)	/* freeing one this big: trim the heap soon */

struct kv {
	char* name;
	char* value;
};

struct kvlist {
	struct kv* items;
	size_t n, cap;
};

struct http_request {
	pthread_mutex_t mutex;
	int refs;			/* the connection's, plus one while a handler owes an answer */
	struct MHD_Connection* conn;	/* NULL once MHD is done with it */
	const struct http_route* route;	/* the matching route, or NULL */
	const struct http_route* format_route;	/* same path, any method: error format */
	char* method;
	char* path;
	struct kvlist headers;
	struct kvlist query;
	char* body;
	size_t body_len, body_cap;
	long max_body;			/* this request's limit (check_request) */
	size_t announced;		/* Content-Length, when given and allowed */
	size_t discarded;		/* body bytes dropped after a refusal */
	enum http_role role;

	int verdict;			/* transport error status, or 0 */
	const char* verdict_code;
	const char* verdict_message;
	bool verdict_close;
	bool preflight;			/* a CORS preflight from an allowed origin */
	const char* cors_origin;	/* allowed cross-origin Origin (headers copy) */
	char allow[64];			/* for 405 */

	bool called;			/* the handler ran */
	bool handler_answered;		/* http_respond*() was called */
	bool suspended;
	bool answered;
	struct MHD_Response* response;	/* stored until queued */
	int status;
	const char* route_label;
	struct timespec start;
	struct http_request* prev;
	struct http_request* next;
};

struct http_stream {
	pthread_mutex_t mutex;
	int refs;
	struct MHD_Connection* conn;	/* set when queued; NULL once done */
	char* buf;
	size_t off, len, cap;
	bool ended, closed, suspended, sse, queued;
	http_stream_close_fn on_close;
	void* ud;
	int64_t last_write_ms;
	int keepalive_ms;		/* 0 = H.keepalive_ms */
	enum http_role role;		/* whose slot it holds */
	struct http_stream* prev;
	struct http_stream* next;
};

static struct {
	pthread_mutex_t mutex;		/* routes are fixed after start; this guards the lists */
	struct http_route routes[HTTP_MAX_ROUTES];
	size_t n_routes;
	struct MHD_Daemon* daemon;
	struct netcheck_policy policy;
	char origin[128];
	long max_body;
	long max_large_body;		/* HTTP_ROUTE_LARGE_BODY, agent or person */
	long max_file_body;		/* HTTP_ROUTE_FILE_BODY, agent or person */
	bool running, stopping;
	struct http_request* requests;
	struct http_stream* streams;
	int keepalive_ms;
	size_t streams_max_buffered;
	int n_streams;			/* open (not yet closed by MHD) */
	int max_per_ip;			/* --max-connections-per-ip: the role limits */
	int role_streams[HTTP_ROLE_PERSON + 1];	/* streams and /live sockets open */
	pthread_t ticker;
	pthread_cond_t ticker_cond;
	bool ticker_running;
} H = { .mutex = PTHREAD_MUTEX_INITIALIZER, .ticker_cond = PTHREAD_COND_INITIALIZER };

/* Bytes queued in all streams: many readers that never read (each within
 * its own limit) must not add up to all the memory there is. */
static atomic_size_t http__buffered;

/* ---- routes ---- */

int http_add_route(const struct http_route* route)
{
	if (!route || !route->path || !route->handler)
		return -EINVAL;
	if (H.running)
		return -EBUSY;
	if (H.n_routes >= HTTP_MAX_ROUTES)
		return -ENOSPC;
	H.routes[H.n_routes++] = *route;
	return 0;
}

static bool path_matches(const struct http_route* r, const char* path)
{
	if (r->flags & HTTP_ROUTE_PREFIX)
		return strncmp(path, r->path, strlen(r->path)) == 0;
	return strcmp(path, r->path) == 0;
}

/* The first route matching path and method. Sets *path_known when some route
 * matches the path (for 405) and lists their methods in allow. */
static const struct http_route* find_route(const char* method, const char* path,
		bool* path_known, const struct http_route** any, char* allow, size_t allow_size)
{
	*path_known = false;
	*any = NULL;
	allow[0] = '\0';
	for (size_t i = 0; i < H.n_routes; i++) {
		const struct http_route* r = &H.routes[i];
		if (!path_matches(r, path))
			continue;
		if (!r->method || strcmp(r->method, method) == 0
				|| (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0))
			return r;
		if (!*path_known)
			*any = r;
		*path_known = true;
		size_t n = strlen(allow);
		snprintf(allow + n, allow_size - n, "%s%s", n ? ", " : "", r->method);
	}
	return NULL;
}

/* ---- requests ---- */

static int kv_add(struct kvlist* l, const char* name, const char* value)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct kv* items = realloc(l->items, cap * sizeof(*items));
		if (!items)
			return -ENOMEM;
		l->items = items;
		l->cap = cap;
	}
	char* n = strdup(name);
	char* v = strdup(value ? value : "");
	if (!n || !v) {
		free(n);
		free(v);
		return -ENOMEM;
	}
	l->items[l->n++] = (struct kv){ n, v };
	return 0;
}

static void kv_free(struct kvlist* l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->items[i].name);
		free(l->items[i].value);
	}
	free(l->items);
}

static enum MHD_Result collect_header(void* cls, enum MHD_ValueKind kind,
		const char* key, const char* value)
{
	struct http_request* req = cls;
	if (key)
		kv_add(kind == MHD_HEADER_KIND ? &req->headers : &req->query, key, value);
	return MHD_YES;
}

static void request_unref(struct http_request* req)
{
	pthread_mutex_lock(&req->mutex);
	int refs = --req->refs;
	pthread_mutex_unlock(&req->mutex);
	if (refs > 0)
		return;
	if (req->response)
		MHD_destroy_response(req->response);
	kv_free(&req->headers);
	kv_free(&req->query);
	free(req->method);
	free(req->path);
	free(req->body);
	if (req->body_cap >= HTTP_BIG_BUFFER)
		jsonmem_note_freed(req->body_cap);
	pthread_mutex_destroy(&req->mutex);
	free(req);
}

const char* http_request_method(const struct http_request* req)
{
	return req->method;
}

const char* http_request_path(const struct http_request* req)
{
	return req->path;
}

const char* http_request_header(const struct http_request* req, const char* name)
{
	for (size_t i = 0; i < req->headers.n; i++)
		if (strcasecmp(req->headers.items[i].name, name) == 0)
			return req->headers.items[i].value;
	return NULL;
}

const char* http_request_query(const struct http_request* req, const char* name)
{
	for (size_t i = 0; i < req->query.n; i++)
		if (strcmp(req->query.items[i].name, name) == 0)
			return req->query.items[i].value;
	return NULL;
}

const char* http_request_body(const struct http_request* req, size_t* len)
{
	if (len)
		*len = req->body_len;
	return req->body ? req->body : "";
}

bool http_request_body_large(const struct http_request* req)
{
	return (long)req->body_len > H.max_body;
}

enum http_role http_request_role(const struct http_request* req)
{
	return req->role;
}

/* Has the client closed or reset the connection? A peek: 0 bytes is its
 * close, an error other than "nothing yet" a reset; bytes (a pipelined
 * request) mean it is still there. */
static bool connection_peer_gone(struct MHD_Connection* conn)
{
	const union MHD_ConnectionInfo* info = MHD_get_connection_info(conn,
			MHD_CONNECTION_INFO_CONNECTION_FD);
	char byte;
	ssize_t n = info ? recv(info->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) : 1;
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

bool http_request_peer_gone(struct http_request* req)
{
	pthread_mutex_lock(&req->mutex);
	bool gone = !req->conn || (!req->answered && connection_peer_gone(req->conn));
	pthread_mutex_unlock(&req->mutex);
	return gone;
}

const char* http_own_origin(void)
{
	return H.origin;
}

bool http_origin_allowed(const char* origin, const char* host)
{
	return netcheck_origin_allowed(&H.policy, origin && *origin ? origin : NULL, host);
}

bool http_host_allowed(const char* host)
{
	return netcheck_host_allowed(&H.policy, host && *host ? host : NULL);
}

/* ---- responses ---- */

static void add_headers(struct MHD_Response* r, const char* const* headers)
{
	for (size_t i = 0; headers && headers[i] && headers[i + 1]; i += 2)
		MHD_add_response_header(r, headers[i], headers[i + 1]);
}

static double elapsed_s(const struct timespec* start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* The method as a metrics label. A client's own word would let anyone,
 * without a token, mint series until the table is full. */
static const char* method_label(const char* method)
{
	static const char* const known[] = { "GET", "HEAD", "POST", "PUT", "DELETE",
		"OPTIONS", "PATCH" };
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(method, known[i]) == 0)
			return known[i];
	return "other";
}

/* Hand the stored response to MHD; MHD thread, req->mutex held. */
static enum MHD_Result queue_stored(struct http_request* req, struct MHD_Connection* conn)
{
	struct MHD_Response* r = req->response;
	req->response = NULL;
	if (req->cors_origin) {
		/* A page on an --allow-origin origin may read the answer. */
		MHD_add_response_header(r, "Access-Control-Allow-Origin", req->cors_origin);
		MHD_add_response_header(r, "Access-Control-Expose-Headers", HTTP_CORS_EXPOSE);
		MHD_add_response_header(r, "Vary", "Origin");
	}
	enum MHD_Result rc = MHD_queue_response(conn, (unsigned)req->status, r);
	MHD_destroy_response(r);
	char status[8];
	snprintf(status, sizeof(status), "%d", req->status);
	metrics_inc("deskd_http_requests_total", "route", req->route_label,
			"method", method_label(req->method), "status", status, NULL);
	metrics_observe("deskd_http_request_duration_seconds", elapsed_s(&req->start),
			"route", req->route_label, NULL);
	return rc;
}

/* Store a response for req and wake its connection. Takes r. Returns false
 * when req was already answered (r is destroyed then). */
static bool store_response(struct http_request* req, int status, struct MHD_Response* r)
{
	pthread_mutex_lock(&req->mutex);
	if (req->answered || !req->conn) {
		pthread_mutex_unlock(&req->mutex);
		MHD_destroy_response(r);
		return false;
	}
	req->answered = true;
	req->response = r;
	req->status = status;
	if (req->suspended) {
		req->suspended = false;
		MHD_resume_connection(req->conn);
	}
	pthread_mutex_unlock(&req->mutex);
	return true;
}

/* The handler's answer: store it, then drop the reference the handler held. */
static void answer(struct http_request* req, int status, struct MHD_Response* r)
{
	pthread_mutex_lock(&req->mutex);
	bool twice = req->handler_answered;
	req->handler_answered = true;
	pthread_mutex_unlock(&req->mutex);
	if (twice) {
		log_error("%s %s answered twice; the second answer is dropped", req->method,
				req->path);
		if (r)
			MHD_destroy_response(r);
		return;
	}
	if (!r) {
		log_error("out of memory building a response for %s", req->path);
		r = MHD_create_response_from_buffer(0, (void*)"", MHD_RESPMEM_PERSISTENT);
		status = 500;
	}
	if (r)
		store_response(req, status, r);
	request_unref(req);
}

void http_respond(struct http_request* req, int status, const char* content_type,
		const void* body, size_t len, const char* const* headers)
{
	struct MHD_Response* r = MHD_create_response_from_buffer(len, (void*)body,
			MHD_RESPMEM_MUST_COPY);
	if (r) {
		if (content_type)
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
		add_headers(r, headers);
	}
	answer(req, status, r);
}

void http_respond_json(struct http_request* req, int status, json_t* body,
		const char* const* headers)
{
	char* text = body ? jsonmem_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text) {
		http_respond(req, 500, "application/json", HTTP_LITERAL(
				"{\"error\":{\"code\":\"internal\",\"message\":\"cannot encode JSON\"}}"),
				NULL);
		return;
	}
	/* A final newline: curl --fail-with-body prints the body of an error,
	 * and its own "curl: (22) ..." line then starts on a line of its own. */
	size_t len = strlen(text);
	char* nl = realloc(text, len + 2);
	if (nl) {
		text = nl;
		text[len++] = '\n';
		text[len] = '\0';
	}
	if (len >= HTTP_BIG_BUFFER)
		jsonmem_note_freed(len);	/* soon: MHD frees it once sent */
	struct MHD_Response* r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r)
		free(text);
	else {
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		add_headers(r, headers);
	}
	answer(req, status, r);
}

void http_respond_error(struct http_request* req, int status, const char* code,
		const char* message)
{
	/* The message may quote the client (a path, a header): repair it. */
	http_respond_json(req, status, json_pack("{s:{s:s,s:o}}", "error", "code", code,
			"message", text_json_string(message ? message : code)), NULL);
}

/* Parse a single "bytes=" range against size; returns 0 (whole file), 1 (a
 * range in *start and *len), or -1 (unsatisfiable). Multiple ranges: whole file. */
static int parse_range(const char* range, uint64_t size, uint64_t* start, uint64_t* len)
{
	if (!range || strncmp(range, "bytes=", 6) != 0 || strchr(range, ','))
		return 0;
	const char* p = range + 6;
	char* end;
	if (*p == '-') {
		unsigned long long suffix = strtoull(p + 1, &end, 10);
		if (end == p + 1 || *end || suffix == 0)
			return -1;
		if (size == 0)
			return -1;
		*len = suffix < size ? suffix : size;
		*start = size - *len;
		return 1;
	}
	unsigned long long a = strtoull(p, &end, 10);
	if (end == p || *end != '-')
		return 0;
	p = end + 1;
	unsigned long long b = size ? size - 1 : 0;
	if (*p) {
		b = strtoull(p, &end, 10);
		if (end == p || *end)
			return 0;
	}
	if (a >= size || b < a)
		return -1;
	if (b >= size)
		b = size - 1;
	*start = a;
	*len = b - a + 1;
	return 1;
}

void http_respond_file(struct http_request* req, int status, const char* content_type,
		int fd, const char* const* headers)
{
	off_t size = lseek(fd, 0, SEEK_END);
	struct MHD_Response* r = NULL;
	char content_range[96] = "";
	if (size < 0) {
		close(fd);
		answer(req, 500, NULL);
		return;
	}
	uint64_t start = 0, len = (uint64_t)size;
	int ranged = status == 200 ? parse_range(http_request_header(req, "Range"),
			(uint64_t)size, &start, &len) : 0;
	if (ranged < 0) {
		close(fd);
		snprintf(content_range, sizeof(content_range), "bytes */%lld", (long long)size);
		r = MHD_create_response_from_buffer(0, (void*)"", MHD_RESPMEM_PERSISTENT);
		if (r)
			MHD_add_response_header(r, "Content-Range", content_range);
		answer(req, 416, r);
		return;
	}
	if (ranged > 0) {
		status = 206;
		snprintf(content_range, sizeof(content_range), "bytes %llu-%llu/%lld",
				(unsigned long long)start, (unsigned long long)(start + len - 1),
				(long long)size);
	}
	r = MHD_create_response_from_fd_at_offset64(len, fd, start);	/* takes fd */
	if (!r)
		close(fd);
	else {
		if (content_type)
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
		MHD_add_response_header(r, "Accept-Ranges", "bytes");
		if (content_range[0])
			MHD_add_response_header(r, "Content-Range", content_range);
		add_headers(r, headers);
	}
	answer(req, status, r);
}

/* A transport error body: JSON-RPC for /mcp, {"error":...} elsewhere. */
static struct MHD_Response* error_response(const struct http_route* route, int status,
		const char* code, const char* message, bool close_conn)
{
	json_t* body;
	if (route && (route->flags & HTTP_ROUTE_JSONRPC)) {
		const char* short_msg = status == 401 ? "Unauthorized"
			: status == 403 ? "Forbidden"
			: status == 413 ? "Payload Too Large"
			: status == 404 ? "Not Found"
			: status == 405 ? "Method Not Allowed" : "Bad Request";
		body = json_pack("{s:s,s:{s:i,s:s},s:n}", "jsonrpc", "2.0", "error",
				"code", -32000, "message", short_msg, "id");
	} else {
		body = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message);
	}
	char* text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text)
		return NULL;
	struct MHD_Response* r = MHD_create_response_from_buffer(strlen(text), text,
			MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return NULL;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (status == 401)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	if (close_conn)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	return r;
}

static enum MHD_Result queue_verdict(struct http_request* req, struct MHD_Connection* conn)
{
	struct MHD_Response* r = error_response(req->format_route, req->verdict, req->verdict_code,
			req->verdict_message, req->verdict_close);
	if (!r)
		return MHD_NO;
	if (req->verdict == 405 && req->allow[0])
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, req->allow);
	pthread_mutex_lock(&req->mutex);
	req->answered = true;
	req->response = r;
	req->status = req->verdict;
	enum MHD_Result rc = queue_stored(req, conn);
	pthread_mutex_unlock(&req->mutex);
	return rc;
}

/* 204 for a CORS preflight from an allowed origin. */
static enum MHD_Result queue_preflight(struct http_request* req, struct MHD_Connection* conn)
{
	struct MHD_Response* r = MHD_create_response_from_buffer(0, (void*)"",
			MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
	MHD_add_response_header(r, "Access-Control-Allow-Headers", HTTP_CORS_HEADERS);
	MHD_add_response_header(r, "Access-Control-Max-Age", "600");
	pthread_mutex_lock(&req->mutex);
	req->answered = true;
	req->response = r;
	req->status = 204;
	enum MHD_Result rc = queue_stored(req, conn);
	pthread_mutex_unlock(&req->mutex);
	return rc;
}

static void set_verdict(struct http_request* req, int status, const char* code,
		const char* message)
{
	if (req->verdict)
		return;
	req->verdict = status;
	req->verdict_code = code;
	req->verdict_message = message;
}

/* Host -> Origin -> auth -> route, on the first handler call. The route is
 * looked up first only to pick the error body's format (JSON-RPC on /mcp). */
static void check_request(struct http_request* req)
{
	bool path_known;
	const struct http_route* any;
	req->route = find_route(req->method, req->path, &path_known, &any, req->allow,
			sizeof(req->allow));
	const struct http_route* r = req->route ? req->route : any;
	req->route_label = r ? r->path : "other";
	req->format_route = r;

	const char* upgrade = http_request_header(req, "Upgrade");
	if (upgrade && netcheck_has_token(upgrade, "websocket")) {
		/* Routing is per connection: an upgrade on a reused HTTP
		 * connection cannot be handed to libwebsockets any more. */
		set_verdict(req, 400, "bad_request",
				"WebSocket upgrade on a reused connection; open a new connection");
		req->verdict_close = true;
		return;
	}
	const char* host = http_request_header(req, "Host");
	if (!netcheck_host_allowed(&H.policy, host)) {
		set_verdict(req, 403, "forbidden", "Host not allowed (DNS rebinding protection)");
		return;
	}
	const char* origin = http_request_header(req, "Origin");
	if (!netcheck_origin_allowed(&H.policy, origin, host)) {
		set_verdict(req, 403, "forbidden",
				"Origin not allowed; add it with --allow-origin");
		return;
	}
	if (origin)
		req->cors_origin = origin;
	if (origin && strcmp(req->method, "OPTIONS") == 0
			&& http_request_header(req, "Access-Control-Request-Method")) {
		req->preflight = true;	/* carries no token by design */
		return;
	}

	char token[600];
	const char* authz = http_request_header(req, "Authorization");
	req->role = auth_check_token(netcheck_bearer(authz, token, sizeof(token)) >= 0
			? token : NULL);
	if (!auth_token())
		req->role = HTTP_ROLE_PERSON;	/* --no-auth */

	if (!r) {
		set_verdict(req, 404, "not_found", "no such route");
		return;
	}
	if (req->role < r->min_role) {
		if (req->role == HTTP_ROLE_NONE)
			set_verdict(req, 401, "unauthorized",
					"missing or invalid token: send Authorization: Bearer <token>");
		else
			set_verdict(req, 403, "forbidden", "this token may not use this route (the view token only watches)");
		return;
	}
	if (!req->route) {
		set_verdict(req, 405, "method_not_allowed", "method not allowed on this route");
		return;
	}
	/* Only routes that take a clipboard_write accept more, from the full
	 * token; their handler refuses a large body that is anything else. */
	req->max_body = (r->flags & HTTP_ROUTE_LARGE_BODY) && req->role >= HTTP_ROLE_AGENT
		&& H.max_large_body > H.max_body ? H.max_large_body : H.max_body;
	if ((r->flags & HTTP_ROUTE_FILE_BODY) && req->role >= HTTP_ROLE_AGENT)
		req->max_body = H.max_file_body;
	const char* cl = http_request_header(req, "Content-Length");
	long long announced = cl ? strtoll(cl, NULL, 10) : 0;
	if (announced > req->max_body) {
		set_verdict(req, 413, "payload_too_large", r->flags & HTTP_ROUTE_FILE_BODY
				&& req->role >= HTTP_ROLE_AGENT
				? "the file is over --max-file-size"
				: req->max_body > H.max_body
				? "request body too large (over --max-clipboard-body)"
				: "request body too large (over --max-body)");
		req->verdict_close = true;
	} else if (announced > 0) {
		req->announced = (size_t)announced;
	}
}

/* The acceptor's name for the connection (on_connection stored it). */
static listener_token connection_token(struct MHD_Connection* conn)
{
	const union MHD_ConnectionInfo* info = MHD_get_connection_info(conn,
			MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return info ? (listener_token)info->socket_context : 0;
}

static struct http_request* request_new(struct MHD_Connection* conn, const char* url,
		const char* method)
{
	struct http_request* req = calloc(1, sizeof(*req));
	if (!req)
		return NULL;
	pthread_mutex_init(&req->mutex, NULL);
	req->refs = 1;
	req->conn = conn;
	req->route_label = "other";
	req->max_body = H.max_body;
	clock_gettime(CLOCK_MONOTONIC, &req->start);
	req->method = strdup(method);
	req->path = strdup(url);
	if (!req->method || !req->path) {
		request_unref(req);
		return NULL;
	}
	MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, req);
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_header, req);
	return req;
}

static int body_append(struct http_request* req, const char* data, size_t len)
{
	if ((long)(req->body_len + len) > req->max_body)
		return -E2BIG;
	if (req->body_len + len + 1 > req->body_cap) {
		/* Grow as the bytes come (never ahead of them), but not past
		 * the announced length: no doubling to twice a large body. */
		size_t cap = req->body_cap ? req->body_cap : 4096;
		while (cap < req->body_len + len + 1)
			cap *= 2;
		if (req->announced >= req->body_len + len && cap > req->announced + 1)
			cap = req->announced + 1;
		char* b = realloc(req->body, cap);
		if (!b)
			return -ENOMEM;
		req->body = b;
		req->body_cap = cap;
	}
	memcpy(req->body + req->body_len, data, len);
	req->body_len += len;
	req->body[req->body_len] = '\0';
	return 0;
}

static enum MHD_Result on_access(void* cls, struct MHD_Connection* conn, const char* url,
		const char* method, const char* version, const char* upload_data,
		size_t* upload_data_size, void** con_cls)
{
	(void)cls;
	(void)version;
	struct http_request* req = *con_cls;

	if (!req) {
		/* First call: headers only. Answering now would turn keep-alive
		 * off (PITFALLS 6), so only check, and answer on the next call;
		 * except a body we will not read, which closes the connection. */
		listener_http_reading(connection_token(conn), 0);	/* the body is due */
		req = request_new(conn, url, method);
		if (!req)
			return MHD_NO;
		pthread_mutex_lock(&H.mutex);
		req->next = H.requests;
		if (H.requests)
			H.requests->prev = req;
		H.requests = req;
		bool stopping = H.stopping;
		pthread_mutex_unlock(&H.mutex);
		*con_cls = req;
		check_request(req);
		if (stopping)
			set_verdict(req, 503, "unavailable", "shutting down");
		if (req->verdict && req->verdict_close)
			return queue_verdict(req, conn);
		return MHD_YES;
	}

	if (*upload_data_size > 0) {
		/* MHD accepts a response only before the body or after all of
		 * it: a refused body is read and dropped (up to a bound). */
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		listener_http_reading(connection_token(conn), n);
		if (req->verdict) {
			req->discarded += n;
			return req->discarded > HTTP_DISCARD_MAX ? MHD_NO : MHD_YES;
		}
		int rc = body_append(req, upload_data, n);
		if (rc == -E2BIG) {
			set_verdict(req, 413, "payload_too_large", "request body too large");
			if (req->body_cap >= HTTP_BIG_BUFFER)
				jsonmem_note_freed(req->body_cap);
			req->verdict_close = true;
			free(req->body);
			req->body = NULL;
			req->body_len = req->body_cap = 0;
			return MHD_YES;
		}
		return rc < 0 ? MHD_NO : MHD_YES;
	}

	/* The whole request is in: it is being answered. */
	listener_http_busy(connection_token(conn), true);
	if (req->verdict && !req->answered)
		return queue_verdict(req, conn);
	if (req->preflight && !req->answered)
		return queue_preflight(req, conn);

	pthread_mutex_lock(&req->mutex);
	if (req->response) {
		enum MHD_Result rc = queue_stored(req, conn);
		pthread_mutex_unlock(&req->mutex);
		return rc;
	}
	if (req->called || req->answered) {
		/* Resumed without a response: cannot happen; do not hang. */
		pthread_mutex_unlock(&req->mutex);
		return MHD_NO;
	}
	req->called = true;
	req->refs++;	/* the handler's: released by http_respond*() */
	pthread_mutex_unlock(&req->mutex);

	req->route->handler(req, req->route->ud);

	pthread_mutex_lock(&req->mutex);
	enum MHD_Result rc = MHD_YES;
	if (req->response) {
		rc = queue_stored(req, conn);
	} else if (!req->answered) {
		req->suspended = true;
		MHD_suspend_connection(conn);
	}
	pthread_mutex_unlock(&req->mutex);
	return rc;
}

static void on_completed(void* cls, struct MHD_Connection* conn, void** con_cls,
		enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	listener_http_busy(connection_token(conn), false);	/* the next head is due */
	struct http_request* req = *con_cls;
	if (!req)
		return;
	*con_cls = NULL;
	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		log_debug("%s %s: connection ended early (%d)", req->method, req->path, (int)toe);
	pthread_mutex_lock(&H.mutex);
	if (req->prev)
		req->prev->next = req->next;
	else if (H.requests == req)
		H.requests = req->next;
	if (req->next)
		req->next->prev = req->prev;
	req->prev = req->next = NULL;
	pthread_mutex_unlock(&H.mutex);
	pthread_mutex_lock(&req->mutex);
	req->conn = NULL;
	req->suspended = false;
	pthread_mutex_unlock(&req->mutex);
	request_unref(req);
}

/* ---- streams ---- */

void http_stream_ref(struct http_stream* self)
{
	pthread_mutex_lock(&self->mutex);
	self->refs++;
	pthread_mutex_unlock(&self->mutex);
}

void http_stream_unref(struct http_stream* self)
{
	if (!self)
		return;
	/* Under the list lock too, so a stream found in the list is alive. */
	pthread_mutex_lock(&H.mutex);
	pthread_mutex_lock(&self->mutex);
	int refs = --self->refs;
	pthread_mutex_unlock(&self->mutex);
	if (refs == 0) {
		if (self->prev)
			self->prev->next = self->next;
		else if (H.streams == self)
			H.streams = self->next;
		if (self->next)
			self->next->prev = self->prev;
	}
	pthread_mutex_unlock(&H.mutex);
	if (refs > 0)
		return;
	atomic_fetch_sub(&http__buffered, self->len - self->off);
	free(self->buf);
	pthread_mutex_destroy(&self->mutex);
	free(self);
}

/* Take references to every live stream (list lock held by the caller).
 * Returns a malloc'd array the caller unrefs and frees. */
static struct http_stream** streams_snapshot(size_t* n)
{
	size_t count = 0;
	for (struct http_stream* s = H.streams; s; s = s->next)
		count++;
	*n = 0;
	struct http_stream** all = malloc((count ? count : 1) * sizeof(*all));
	if (!all)
		return NULL;
	for (struct http_stream* s = H.streams; s; s = s->next) {
		pthread_mutex_lock(&s->mutex);
		s->refs++;
		pthread_mutex_unlock(&s->mutex);
		all[(*n)++] = s;
	}
	return all;
}

/* Wake the connection if the reader parked it; stream mutex held. */
static void stream_wake(struct http_stream* self)
{
	if (self->suspended && self->conn) {
		self->suspended = false;
		MHD_resume_connection(self->conn);
	}
}

static ssize_t stream_reader(void* cls, uint64_t pos, char* buf, size_t max)
{
	(void)pos;
	struct http_stream* self = cls;
	ssize_t rc;
	pthread_mutex_lock(&self->mutex);
	if (self->closed) {
		rc = MHD_CONTENT_READER_END_WITH_ERROR;
	} else if (self->len > self->off) {
		size_t n = self->len - self->off;
		if (n > max)
			n = max;
		memcpy(buf, self->buf + self->off, n);
		self->off += n;
		atomic_fetch_sub(&http__buffered, n);
		if (self->off == self->len)
			self->off = self->len = 0;
		rc = (ssize_t)n;
	} else if (self->ended) {
		rc = MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		/* Nothing to send: park the connection instead of letting MHD
		 * poll us in a busy loop (PITFALLS 7). A writer resumes it. */
		self->suspended = true;
		MHD_suspend_connection(self->conn);
		rc = 0;
	}
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

/* MHD is done with the response: the client went away or the body ended. */
static void stream_free(void* cls)
{
	struct http_stream* self = cls;
	pthread_mutex_lock(&self->mutex);
	self->closed = true;
	self->conn = NULL;
	self->suspended = false;
	http_stream_close_fn fn = self->on_close;
	self->on_close = NULL;
	pthread_mutex_unlock(&self->mutex);
	pthread_mutex_lock(&H.mutex);
	int open = --H.n_streams;
	pthread_mutex_unlock(&H.mutex);
	metrics_set("deskd_http_streams_open", open, NULL);
	http_role_stream_give(self->role);
	if (fn)
		fn(self->ud);
	http_stream_unref(self);
}

int http_role_stream_limit(enum http_role role)
{
	static const int eighths[] = {
		[HTTP_ROLE_NONE] = 0, [HTTP_ROLE_VIEW] = 1,
		[HTTP_ROLE_AGENT] = 4, [HTTP_ROLE_PERSON] = 1,
	};
	if ((unsigned)role >= sizeof(eighths) / sizeof(eighths[0]) || role == HTTP_ROLE_NONE)
		return 0;
	/* --no-auth: every caller is the person, so the person's share is the
	 * agent's and the person's together. */
	int share = !auth_token() && role == HTTP_ROLE_PERSON
		? eighths[HTTP_ROLE_AGENT] + eighths[HTTP_ROLE_PERSON] : eighths[role];
	int n = H.max_per_ip * share / 8;
	return n < 2 ? 2 : n;
}

bool http_role_stream_room(enum http_role role)
{
	if (role <= HTTP_ROLE_NONE || role > HTTP_ROLE_PERSON)
		return false;
	pthread_mutex_lock(&H.mutex);
	bool room = H.role_streams[role] < http_role_stream_limit(role);
	pthread_mutex_unlock(&H.mutex);
	return room;
}

bool http_role_stream_take(enum http_role role)
{
	if (role <= HTTP_ROLE_NONE || role > HTTP_ROLE_PERSON)
		return false;
	pthread_mutex_lock(&H.mutex);
	bool ok = H.role_streams[role] < http_role_stream_limit(role);
	if (ok)
		H.role_streams[role]++;
	int open = H.role_streams[role];
	pthread_mutex_unlock(&H.mutex);
	metrics_set("deskd_http_role_streams", open, "role", auth_role_name(role), NULL);
	if (!ok)
		log_info("the %s token holds %d streams and live sockets, its limit; refused another",
				auth_role_name(role), http_role_stream_limit(role));
	return ok;
}

void http_role_stream_give(enum http_role role)
{
	if (role <= HTTP_ROLE_NONE || role > HTTP_ROLE_PERSON)
		return;
	pthread_mutex_lock(&H.mutex);
	if (H.role_streams[role] > 0)
		H.role_streams[role]--;
	int open = H.role_streams[role];
	pthread_mutex_unlock(&H.mutex);
	metrics_set("deskd_http_role_streams", open, "role", auth_role_name(role), NULL);
}

struct http_stream* http_respond_stream(struct http_request* req, int status,
		const char* content_type, const char* const* headers,
		http_stream_close_fn on_close, void* ud)
{
	enum http_role role = http_request_role(req);
	if (!http_role_stream_take(role)) {
		char msg[200];
		snprintf(msg, sizeof(msg), "this token holds %d streams and live sockets at once, "
				"its limit; close one first", http_role_stream_limit(role));
		http_respond_error(req, 429, "too_many_streams", msg);
		return NULL;
	}
	struct http_stream* self = calloc(1, sizeof(*self));
	if (!self) {
		http_role_stream_give(role);
		goto stream_failure;
	}
	self->role = role;
	pthread_mutex_init(&self->mutex, NULL);
	self->refs = 2;		/* the caller's and the response's */
	self->on_close = on_close;
	self->ud = ud;
	self->sse = content_type && strncmp(content_type, "text/event-stream", 17) == 0;
	self->last_write_ms = clock_ms();
	struct MHD_Response* r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
			stream_reader, self, stream_free);
	if (!r) {
		http_role_stream_give(role);
		pthread_mutex_destroy(&self->mutex);
		free(self);
		goto stream_failure;
	}
	if (content_type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (self->sse) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, no-transform");
		MHD_add_response_header(r, "X-Accel-Buffering", "no");
	}
	add_headers(r, headers);

	pthread_mutex_lock(&H.mutex);
	self->next = H.streams;
	if (H.streams)
		H.streams->prev = self;
	H.streams = self;
	int open = ++H.n_streams;
	pthread_mutex_unlock(&H.mutex);
	metrics_set("deskd_http_streams_open", open, NULL);

	pthread_mutex_lock(&req->mutex);
	self->conn = req->conn;
	pthread_mutex_unlock(&req->mutex);
	/* If req was answered meanwhile (shutdown), destroying r runs
	 * stream_free: on_close fires and the response's reference goes. */
	store_response(req, status, r);
	request_unref(req);
	return self;

stream_failure:
	log_error("out of memory starting a stream for %s", req->path);
	http_respond(req, 500, "text/plain", HTTP_LITERAL("out of memory\n"), NULL);
	return NULL;
}

int http_stream_write(struct http_stream* self, const void* data, size_t len)
{
	if (!self)
		return -EPIPE;
	int rc = 0;
	pthread_mutex_lock(&self->mutex);
	if (self->closed || self->ended) {
		rc = -EPIPE;
		goto out;
	}
	size_t queued = self->len - self->off;
	if (queued + len > HTTP_STREAM_MAX_BUFFERED
			|| (atomic_load(&http__buffered) + len > H.streams_max_buffered
				&& queued + len > HTTP_STREAM_LAG_MIN)) {
		log_warn("a stream reader fell %zu bytes behind; closing it", queued);
		/* Drop what it never read now: its connection may linger. */
		atomic_fetch_sub(&http__buffered, queued);
		free(self->buf);
		self->buf = NULL;
		self->off = self->len = self->cap = 0;
		self->closed = true;
		stream_wake(self);
		rc = -EPIPE;
		goto out;
	}
	if (self->len + len > self->cap) {
		/* Compact first, then grow. */
		if (self->off) {
			memmove(self->buf, self->buf + self->off, self->len - self->off);
			self->len -= self->off;
			self->off = 0;
		}
		if (self->len + len > self->cap) {
			size_t cap = self->cap ? self->cap : 4096;
			while (cap < self->len + len)
				cap *= 2;
			char* b = realloc(self->buf, cap);
			if (!b) {
				rc = -ENOMEM;
				goto out;
			}
			self->buf = b;
			self->cap = cap;
		}
	}
	memcpy(self->buf + self->len, data, len);
	self->len += len;
	atomic_fetch_add(&http__buffered, len);
	self->last_write_ms = clock_ms();
	stream_wake(self);
out:
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

void http_stream_end(struct http_stream* self)
{
	if (!self)
		return;
	pthread_mutex_lock(&self->mutex);
	self->ended = true;
	stream_wake(self);
	pthread_mutex_unlock(&self->mutex);
}

void http_stream_set_keepalive(struct http_stream* self, int ms)
{
	pthread_mutex_lock(&self->mutex);
	self->keepalive_ms = ms <= 0 ? 0 : ms < 100 ? 100 : ms;
	pthread_mutex_unlock(&self->mutex);
}

bool http_stream_is_closed(const struct http_stream* self)
{
	struct http_stream* s = (struct http_stream*)self;
	pthread_mutex_lock(&s->mutex);
	bool closed = s->closed || s->ended;
	pthread_mutex_unlock(&s->mutex);
	return closed;
}

/* Keepalive comments on idle SSE streams: they also reveal dead clients,
 * which a suspended connection never notices (PITFALLS 8). */
static void* ticker_main(void* arg)
{
	(void)arg;
	pthread_mutex_lock(&H.mutex);
	while (H.ticker_running) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		long step = H.keepalive_ms < 1000 ? H.keepalive_ms / 2 : 1000;
		ts.tv_nsec += step * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&H.ticker_cond, &H.mutex, &ts);
		if (!H.ticker_running)
			break;
		size_t n;
		struct http_stream** all = streams_snapshot(&n);
		pthread_mutex_unlock(&H.mutex);
		int64_t now = clock_ms();
		for (size_t i = 0; all && i < n; i++) {
			struct http_stream* s = all[i];
			pthread_mutex_lock(&s->mutex);
			int every = s->keepalive_ms ? s->keepalive_ms : H.keepalive_ms;
			bool idle = s->sse && !s->closed && !s->ended
				&& now - s->last_write_ms >= every;
			/* A client that closed is noticed now, not at the next
			 * keepalive: a write now draws its reset, and libmicrohttpd
			 * closes the connection (and the role's slot is freed) at
			 * the next one, a tick later. */
			bool gone = !s->closed && !s->ended && s->conn
				&& connection_peer_gone(s->conn);
			pthread_mutex_unlock(&s->mutex);
			if (idle || gone)
				http_stream_write(s, HTTP_LITERAL(": keepalive\n\n"));
			http_stream_unref(s);
		}
		free(all);
		pthread_mutex_lock(&H.mutex);
	}
	pthread_mutex_unlock(&H.mutex);
	return NULL;
}

/* ---- connections from the acceptor ---- */

static int on_http_connection(int fd, const struct sockaddr* addr, socklen_t len)
{
	if (MHD_add_connection(H.daemon, fd, addr, len) != MHD_YES) {
		log_warn("cannot take a connection: %s", strerror(errno));	/* MHD closed fd */
		return -1;
	}
	return 0;
}

/* The acceptor counts MHD's connections until they close (its limits keep
 * MHD below its own, which wedges MHD when reached). */
static void on_connection(void* cls, struct MHD_Connection* conn, void** socket_context,
		enum MHD_ConnectionNotificationCode code)
{
	(void)cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo* info = MHD_get_connection_info(conn,
				MHD_CONNECTION_INFO_CONNECTION_FD);
		listener_token token = info ? listener_http_started(info->connect_fd) : 0;
		*socket_context = (void*)token;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		/* Before MHD closes the fd: the acceptor never touches a reused one. */
		listener_release((listener_token)*socket_context);
		*socket_context = NULL;
	}
}

/* Answer a refused WebSocket handshake ourselves and close. */
static void refuse_websocket(int fd, const char* head, size_t len, int status,
		const char* reason)
{
	char discard[8192];
	while (len > 0) {
		ssize_t n = recv(fd, discard, len < sizeof(discard) ? len : sizeof(discard), 0);
		if (n <= 0)
			break;
		len -= (size_t)n;
	}
	(void)head;
	const char* code = status == 401 ? "unauthorized" : status == 403 ? "forbidden"
		: status == 404 ? "not_found" : "bad_request";
	const char* text = status == 401 ? "Unauthorized" : status == 403 ? "Forbidden"
		: status == 404 ? "Not Found" : "Bad Request";
	char body[256], resp[768];
	int blen = snprintf(body, sizeof(body), "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}",
			code, reason);
	int n = snprintf(resp, sizeof(resp),
			"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n%s"
			"Connection: close\r\nContent-Length: %d\r\n\r\n%s",
			status, text, status == 401 ? "WWW-Authenticate: Bearer\r\n" : "",
			blen, body);
	if (n > 0 && send(fd, resp, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("refusing a WebSocket: %s", strerror(errno));
	shutdown(fd, SHUT_WR);
	close(fd);
	char label[8];
	snprintf(label, sizeof(label), "%d", status);
	metrics_inc("deskd_http_requests_total", "route", "/live", "method", "GET",
			"status", label, NULL);
}

/* The WebSocket gate: path, Host, Origin and token, from the peeked head.
 * Browsers cannot send Authorization on a WebSocket, so the token may come
 * as ?token= or as a "bearer.<token>" subprotocol. */
static int on_ws_connection(int fd, const char* head, size_t len, listener_token conn)
{
	char path[1024], query[2048], host[256], origin[512], value[1024], token[600];
	if (netcheck_head_target(head, len, path, sizeof(path), query, sizeof(query)) < 0) {
		refuse_websocket(fd, head, len, 400, "bad request line");
		return -1;
	}
	if (strcmp(path, "/live") != 0) {
		refuse_websocket(fd, head, len, 404, "WebSocket is served on /live only");
		return -1;
	}
	bool has_host = netcheck_head_header(head, len, "Host", host, sizeof(host)) >= 0;
	if (!netcheck_host_allowed(&H.policy, has_host ? host : NULL)) {
		refuse_websocket(fd, head, len, 403, "Host not allowed");
		return -1;
	}
	bool has_origin = netcheck_head_header(head, len, "Origin", origin, sizeof(origin)) >= 0;
	if (!netcheck_origin_allowed(&H.policy, has_origin ? origin : NULL,
			has_host ? host : NULL)) {
		refuse_websocket(fd, head, len, 403, "Origin not allowed");
		return -1;
	}
	enum http_role role = HTTP_ROLE_NONE;
	if (netcheck_query_param(query, "token", token, sizeof(token)) > 0)
		role = auth_check_token(token);
	if (role == HTTP_ROLE_NONE && netcheck_head_header(head, len, "Authorization",
			value, sizeof(value)) >= 0 && netcheck_bearer(value, token, sizeof(token)) > 0)
		role = auth_check_token(token);
	if (role == HTTP_ROLE_NONE && netcheck_head_header(head, len,
			"Sec-WebSocket-Protocol", value, sizeof(value)) >= 0) {
		char* save = NULL;
		for (char* t = strtok_r(value, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
			if (strncmp(t, "bearer.", 7) != 0 || role != HTTP_ROLE_NONE)
				continue;
			role = auth_check_token(t + 7);
			/* The dashboard percent-encodes what a subprotocol cannot carry. */
			if (role == HTTP_ROLE_NONE && strchr(t + 7, '%')
					&& netcheck_pct_decode(t + 7, token, sizeof(token)) > 0)
				role = auth_check_token(token);
		}
	}
	if (!auth_token())
		role = HTTP_ROLE_PERSON;
	if (role == HTTP_ROLE_NONE) {
		refuse_websocket(fd, head, len, 401, "missing or invalid token");
		return -1;
	}
	metrics_inc("deskd_websocket_connections_total", NULL);
	if (ws_adopt(fd, conn) < 0) {
		log_warn("cannot hand a WebSocket to libwebsockets");
		return -1;
	}
	return 0;
}

/* ---- start and stop ---- */

static void mhd_log(void* cls, const char* fmt, va_list ap)
{
	(void)cls;
	if (!log_enabled(LOG_DEBUG))
		return;
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t n = strlen(buf);
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	log_debug("libmicrohttpd: %s", buf);
}

/* Tuning knobs from the environment (benchmarks and tests). */
static long env_long(const char* name, long def, long min, long max)
{
	const char* s = getenv(name);
	char* end;
	long v = s ? strtol(s, &end, 10) : def;
	return s && (end == s || *end || v < min || v > max) ? def : v;
}

static unsigned pool_size(void)
{
	/* One MHD thread per core (at most 4) measured best on 2 cores. */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long def = cpus < 1 ? 1 : cpus > 4 ? 4 : cpus;
	return (unsigned)env_long("DESKD_HTTP_THREADS", def, 1, 64);
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* MHD's percent-decoding of paths and query values, but "%00" stays: a
 * decoded NUL would end the C string and turn "a%00b" into "a" unseen. */
static size_t unescape(void* cls, struct MHD_Connection* conn, char* s)
{
	(void)cls;
	(void)conn;
	char* w = s;
	for (const char* r = s; *r;) {
		int hi, lo;
		if (r[0] == '%' && (hi = hex_digit(r[1])) >= 0 && (lo = hex_digit(r[2])) >= 0
				&& (hi || lo)) {
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

int http_start(const struct options* opts, char* url, size_t url_size)
{
	int rc;
	if (H.running)
		return -EBUSY;
	H.max_body = opts->max_body_bytes;
	H.max_large_body = opts->max_clipboard_body_bytes;
	H.max_file_body = opts->max_file_size > 0 ? opts->max_file_size : H.max_body;
	H.max_per_ip = opts->max_connections_per_ip;
	memset(H.role_streams, 0, sizeof(H.role_streams));
	metrics_help("deskd_http_role_streams", "Streams (SSE) and live sockets open, by the role "
			"of their token (each role's limit: docs/CONTROL.md, \"Roles\").");
	H.keepalive_ms = (int)env_long("DESKD_SSE_KEEPALIVE_MS", HTTP_KEEPALIVE_MS, 50, 3600000);
	H.streams_max_buffered = (size_t)env_long("DESKD_STREAMS_MAX_BUFFERED",
			HTTP_STREAMS_MAX_BUFFERED, 1l << 20, LONG_MAX);
	unsigned threads = pool_size();
	struct listener_limits limits = {
		.max_connections = opts->max_connections,
		.max_per_ip = opts->max_connections_per_ip,
		.header_timeout_ms = opts->header_timeout_ms,
	};
	/* MHD shares its limit among its threads by fd, unevenly: give each
	 * thread room for every connection the acceptor may hand over. */
	unsigned mhd_limit = threads * (unsigned)(listener_capacity(&limits) + 16);
	unsigned flags = MHD_USE_NO_LISTEN_SOCKET | MHD_USE_INTERNAL_POLLING_THREAD
		| MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	H.daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_access, NULL,
			MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
			MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
			MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_CONNECTION_TIMEOUT_S,
			MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
			MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
			threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads,
			MHD_OPTION_END);
	if (!H.daemon) {
		log_error("cannot start libmicrohttpd");
		return -EIO;
	}

	int port = opts->listen_port;
	rc = listener_start(opts->listen_host, &port, &limits, on_http_connection,
			on_ws_connection);
	if (rc < 0) {
		log_error("cannot listen on %s: %s", opts->listen, strerror(-rc));
		goto listen_failure;
	}
	H.policy = (struct netcheck_policy){
		.loopback = options_listen_is_loopback(opts),
		.listen_host = opts->listen_host,
		.port = port,
		.allow_origins = opts->allow_origin,
		.n_allow_origins = opts->n_allow_origin,
	};
	const char* host = opts->listen_host;
	if (strcmp(host, "0.0.0.0") == 0)
		host = "127.0.0.1";
	else if (strcmp(host, "::") == 0)
		host = "::1";
	bool v6 = strchr(host, ':') != NULL;
	snprintf(H.origin, sizeof(H.origin), "http://%s%s%s:%d", v6 ? "[" : "", host,
			v6 ? "]" : "", port);
	snprintf(url, url_size, "%s", H.origin);

	H.ticker_running = true;
	rc = -pthread_create(&H.ticker, NULL, ticker_main, NULL);
	if (rc < 0) {
		H.ticker_running = false;
		goto ticker_failure;
	}
	H.running = true;
	H.stopping = false;
	log_info("serving on %s", H.origin);
	return 0;

ticker_failure:
	listener_stop();
listen_failure:
	MHD_stop_daemon(H.daemon);
	H.daemon = NULL;
	return rc;
}

void http_stop(void)
{
	if (!H.running)
		return;
	listener_stop();

	pthread_mutex_lock(&H.mutex);
	H.stopping = true;
	H.ticker_running = false;
	pthread_cond_broadcast(&H.ticker_cond);
	pthread_mutex_unlock(&H.mutex);
	pthread_join(H.ticker, NULL);

	/* Answer what still waits for a handler, end every stream, and resume
	 * every suspended connection: MHD_stop_daemon() aborts on suspended
	 * ones (PITFALLS 10). New requests meanwhile get 503 at once. No MHD
	 * call runs under the list lock. */
	pthread_mutex_lock(&H.mutex);
	size_t n_req = 0, n_streams = 0;
	for (struct http_request* req = H.requests; req; req = req->next)
		n_req++;
	struct http_request** reqs = malloc((n_req ? n_req : 1) * sizeof(*reqs));
	n_req = 0;
	for (struct http_request* req = H.requests; reqs && req; req = req->next) {
		pthread_mutex_lock(&req->mutex);
		req->refs++;
		pthread_mutex_unlock(&req->mutex);
		reqs[n_req++] = req;
	}
	struct http_stream** streams = streams_snapshot(&n_streams);
	pthread_mutex_unlock(&H.mutex);

	for (size_t i = 0; i < n_req; i++) {
		struct http_request* req = reqs[i];
		pthread_mutex_lock(&req->mutex);
		/* Not only the suspended ones: a request whose handler runs now,
		 * or whose body is still coming, would suspend after this loop
		 * (and MHD_stop_daemon() abort); answered, it never does. */
		if (req->conn && !req->answered) {
			struct MHD_Response* r = error_response(req->format_route, 503,
					"unavailable", "shutting down", true);
			if (r) {
				req->answered = true;
				req->response = r;
				req->status = 503;
			}
		}
		if (req->suspended && req->conn) {
			req->suspended = false;
			MHD_resume_connection(req->conn);
		}
		pthread_mutex_unlock(&req->mutex);
		request_unref(req);
	}
	free(reqs);
	for (size_t i = 0; i < n_streams; i++) {
		struct http_stream* s = streams[i];
		pthread_mutex_lock(&s->mutex);
		s->closed = true;
		stream_wake(s);
		pthread_mutex_unlock(&s->mutex);
		http_stream_unref(s);
	}
	free(streams);

	MHD_stop_daemon(H.daemon);
	H.daemon = NULL;
	H.running = false;
	metrics_deinit();
}
