#pragma once

/* HTTP on the one port: an acceptor thread peeks at each new connection and
 * hands WebSocket upgrades to libwebsockets (server/http/ws.h) and everything else
 * to libmicrohttpd. This header is the only HTTP API the rest of server/ uses:
 * routes, requests, responses and streams. Nothing here exposes MHD types.
 *
 * Every route but those marked HTTP_ROLE_NONE requires a bearer token; Host,
 * Origin, auth and the body size limit are checked before a handler runs. */

#include "server/http/auth.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct options;

enum http_route_flags {
	HTTP_ROUTE_PREFIX = 1 << 0,	/* path matches as a prefix */
	HTTP_ROUTE_JSONRPC = 1 << 1,	/* transport errors as JSON-RPC bodies (/mcp) */
	HTTP_ROUTE_LARGE_BODY = 1 << 2,	/* the full token's bodies may be up to
					 * --max-clipboard-body, not --max-body: the
					 * handler refuses (413) a large one that is not
					 * a clipboard_write (http_request_body_large) */
	HTTP_ROUTE_FILE_BODY = 1 << 3,	/* the full token's bodies may be up to
					 * --max-file-size (PUT /api/v1/files/...) */
};

struct http_request;

/** Handle a request. Runs on the HTTP thread: do not block. Respond exactly
 *  once, now or later from any thread (hand long work to worker_spawn()). */
typedef void (*http_handler_fn)(struct http_request* req, void* ud);

struct http_route {
	const char* method;	/* "GET", "POST", ...; NULL = any */
	const char* path;
	enum http_role min_role;
	unsigned flags;
	http_handler_fn handler;
	void* ud;
};

/** Register a route before http_start(); the first match wins. */
int http_add_route(const struct http_route* route);

/** Start serving on opts->listen; writes the real URL ("http://127.0.0.1:PORT")
 *  into url. Returns 0 or -errno. */
int http_start(const struct options* opts, char* url, size_t url_size);
/** Stop: closes streams, resumes and finishes suspended connections. */
void http_stop(void);

/* Request accessors; valid until the response is complete. */
const char* http_request_method(const struct http_request* req);
const char* http_request_path(const struct http_request* req);
/** Case-insensitive header lookup; NULL if absent. */
const char* http_request_header(const struct http_request* req, const char* name);
/* The path and the query are percent-decoded, except %00, which stays as
 * those three characters (a decoded NUL would cut the string short
 * silently): a handler for which that matters refuses "%00". */
/** Decoded query parameter; NULL if absent. */
const char* http_request_query(const struct http_request* req, const char* name);
/** The body (NUL-terminated for convenience); len may be NULL. */
const char* http_request_body(const struct http_request* req, size_t* len);
/** Is the body over --max-body (so only an HTTP_ROUTE_LARGE_BODY route took it)? */
bool http_request_body_large(const struct http_request* req);
enum http_role http_request_role(const struct http_request* req);
/** Has the client gone (closed or reset its connection) while its request
 *  waits for an answer? A non-blocking peek: any thread, cheap. */
bool http_request_peer_gone(struct http_request* req);

/** A string literal as the body and length arguments of http_respond() or
 *  http_stream_write(): the length comes from the literal, never by hand. */
#define HTTP_LITERAL(s) ("" s ""), (sizeof(s) - 1)

/** Respond with a complete body (copied). headers: NULL or a NULL-terminated
 *  list of name, value pairs. Any thread, exactly once. */
void http_respond(struct http_request* req, int status, const char* content_type,
		const void* body, size_t len, const char* const* headers);
/** Respond with JSON (body stolen). */
void http_respond_json(struct http_request* req, int status, json_t* body,
		const char* const* headers);
/** {"error":{"code":code,"message":message}} with the given status. */
void http_respond_error(struct http_request* req, int status, const char* code,
		const char* message);
/** Respond with an open file (e.g. a recording), sent with sendfile; takes
 *  ownership of fd. With status 200 a single "Range: bytes=" request gets 206
 *  (or 416). Any thread, exactly once. */
void http_respond_file(struct http_request* req, int status, const char* content_type,
		int fd, const char* const* headers);

/* Streams: a response whose body is written over time (SSE). The stream is
 * reference-counted: http_respond_stream returns one reference for the
 * caller; the connection holds its own. */
struct http_stream;
typedef void (*http_stream_close_fn)(void* ud);

/** Start a streamed response (e.g. text/event-stream). Any thread, instead of
 *  http_respond. At the request's role's stream limit it answers 429
 *  too_many_streams and returns NULL. on_close runs once, on an unspecified thread, when the client
 *  goes away or after http_stream_end(); it may be NULL. During shutdown it may
 *  run before this returns, so do not hold a lock on_close takes. Idle
 *  text/event-stream streams get ": keepalive" comments every 15 s. Returns
 *  NULL (after answering 500) when out of memory. */
struct http_stream* http_respond_stream(struct http_request* req, int status,
		const char* content_type, const char* const* headers,
		http_stream_close_fn on_close, void* ud);
/** Queue bytes; any thread. Returns 0, or -EPIPE once the client is gone. */
int http_stream_write(struct http_stream* self, const void* data, size_t len);
/** Finish the body; later writes fail with -EPIPE. */
void http_stream_end(struct http_stream* self);
bool http_stream_is_closed(const struct http_stream* self);
/** Keepalive comments on this stream every ms (at least 100; 0 = the
 *  server's default, 15 s). Besides keeping proxies open, a keepalive is
 *  how a closed connection is noticed, so a stream whose close means
 *  cancellation uses a short one. The ticker looks once a second (or every
 *  half default interval when that is shorter). */
void http_stream_set_keepalive(struct http_stream* self, int ms);
void http_stream_ref(struct http_stream* self);
void http_stream_unref(struct http_stream* self);

/* Long-lived connections per role: SSE streams (http_respond_stream takes
 * and gives back a slot itself) and /live sockets (server/live.c). Each
 * holds a connection while open, and every loopback client shares one
 * address, so together they stay below --max-connections-per-ip: the view
 * role gets 1/8 of it, the person's 1/8, the agent's 1/2 (with --no-auth,
 * where every caller is the person, 5/8), and a view token can never lock
 * the agent, the person or /healthz out. */
/** The role's limit (at least 2). */
int http_role_stream_limit(enum http_role role);
/** Has role room for one more (a check before an upgrade; take it after)? */
bool http_role_stream_room(enum http_role role);
/** Take a slot for role; false when it holds its limit already. */
bool http_role_stream_take(enum http_role role);
void http_role_stream_give(enum http_role role);

/** The server's own origin ("http://127.0.0.1:PORT"), valid after http_start. */
const char* http_own_origin(void);
/** The Origin policy every route uses (NULL origin passes): our own origins
 *  (127.0.0.1, localhost, [::1] and the listen address on our port), the
 *  page's own http(s)://<Host> when Host is allowed, and --allow-origin.
 *  Any thread, after http_start. */
bool http_origin_allowed(const char* origin, const char* host);
/** The Host policy (DNS rebinding; only enforced when listening on loopback). */
bool http_host_allowed(const char* host);
