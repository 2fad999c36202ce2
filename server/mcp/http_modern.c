#define _GNU_SOURCE
/* MCP 2026-07-28 over Streamable HTTP (docs/MCP.md 10): one POST, one
 * request, one response; no session, no GET stream, no event ids, nothing
 * to resume. mcp_http.c routes a POST here when mcp_is_modern() says so.
 *
 * The response starts undecided (the connection stays suspended): a request
 * that finishes without a notification gets a plain JSON body, with the
 * HTTP status the core asks for (400 for -32020..-32022 and bad _meta, 404
 * for an unknown method). The first notification (progress, a log message,
 * a listen acknowledgment) turns it into an SSE stream; so does a call still
 * running after MCP_STREAM_AFTER_MS (later.c), because closing that stream
 * is how a client cancels (a suspended connection never notices its client
 * leaving). Call
 * streams get a keepalive every second, so a close is seen within about
 * two. */

#include "server/mcp/mcp.h"
#include "server/mcp/core.h"
#include "server/http/http.h"
#include "server/http/auth.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALL_KEEPALIVE_MS 1000

struct mreq {
	struct mcp_sink sink;		/* first member: the core's view */
	atomic_int refs;
	pthread_mutex_t write_mutex;	/* req, conn, sse, answered, status */
	pthread_mutex_t mutex;		/* closed, cancel: the close callback's lock */
	struct http_request* req;	/* until answered or streaming */
	struct http_stream* conn;	/* once streaming */
	int status;
	bool sse, answered;
	bool closed;
	atomic_bool* cancel;
	int64_t started;
};

static const struct mcp_sink_impl mreq_impl;


static void mreq_ref(struct mreq* m)
{
	atomic_fetch_add(&m->refs, 1);
}

static void mreq_unref(struct mreq* m)
{
	if (atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	if (m->conn)
		http_stream_unref(m->conn);
	pthread_mutex_destroy(&m->mutex);
	pthread_mutex_destroy(&m->write_mutex);
	free(m);
}

/* The client went away (or the stream ended): that is cancellation. */
static void on_close(void* ud)
{
	struct mreq* m = ud;
	pthread_mutex_lock(&m->mutex);
	m->closed = true;
	if (m->cancel)
		atomic_store(m->cancel, true);
	pthread_mutex_unlock(&m->mutex);
	mreq_unref(m);
}

/* Turn the response into an SSE stream (write_mutex held). */
static int open_sse(struct mreq* m)
{
	if (m->sse)
		return 0;
	if (m->answered || !m->req)
		return -EPIPE;
	mreq_ref(m);	/* on_close's */
	struct http_stream* conn = http_respond_stream(m->req, 200, "text/event-stream", NULL,
			on_close, m);
	m->req = NULL;
	if (!conn) {
		m->answered = true;	/* answered 500 */
		mreq_unref(m);
		return -ENOMEM;
	}
	m->conn = conn;
	m->sse = true;
	http_stream_set_keepalive(conn, CALL_KEEPALIVE_MS);
	return 0;
}

static void emit(struct mreq* m, json_t* msg)
{
	char* data = mcp_dump(msg);
	if (!data)
		return;
	char* text = NULL;
	int len = asprintf(&text, "event: message\ndata: %s\n\n", data);
	free(data);
	if (len > 0)
		http_stream_write(m->conn, text, (size_t)len);
	free(text);
}

static int mr_message(struct mcp_sink* sink, json_t* msg)
{
	struct mreq* m = (struct mreq*)sink;
	pthread_mutex_lock(&m->write_mutex);
	bool first = !m->sse;
	int rc = m->answered ? -EPIPE : open_sse(m);
	/* A listen stream lives long and its close cancels nothing: the
	 * server's usual keepalive is enough. */
	const char* method = json_string_value(json_object_get(msg, "method"));
	if (rc == 0 && first && method
			&& strcmp(method, "notifications/subscriptions/acknowledged") == 0)
		http_stream_set_keepalive(m->conn, 0);
	if (rc == 0)
		emit(m, msg);
	pthread_mutex_unlock(&m->write_mutex);
	return rc;
}

static void mr_done(struct mcp_sink* sink, json_t* response)
{
	struct mreq* m = (struct mreq*)sink;
	pthread_mutex_lock(&m->write_mutex);
	if (!m->answered) {
		m->answered = true;
		/* Answered: closing the connection now cancels nothing (a call
		 * answered early, a task, goes on running). */
		pthread_mutex_lock(&m->mutex);
		m->cancel = NULL;
		pthread_mutex_unlock(&m->mutex);
		if (m->sse) {
			if (response)
				emit(m, response);
			http_stream_end(m->conn);
		} else if (m->req) {
			if (response)
				http_respond_json(m->req, m->status ? m->status : 200,
						json_incref(response), NULL);
			else	/* cancelled before anything was sent: shutdown */
				http_respond_json(m->req, 503, mcp_error_response(NULL, -32603,
						"Service Unavailable: the request was cancelled", NULL), NULL);
			m->req = NULL;
		}
	}
	pthread_mutex_unlock(&m->write_mutex);
}

static void mr_status(struct mcp_sink* sink, int status)
{
	struct mreq* m = (struct mreq*)sink;
	pthread_mutex_lock(&m->write_mutex);
	m->status = status;
	pthread_mutex_unlock(&m->write_mutex);
}

static void mr_watch(struct mcp_sink* sink, atomic_bool* cancelled)
{
	struct mreq* m = (struct mreq*)sink;
	pthread_mutex_lock(&m->mutex);
	m->cancel = cancelled;
	if (m->closed)
		atomic_store(cancelled, true);
	pthread_mutex_unlock(&m->mutex);
}

static void mr_ref(struct mcp_sink* sink)
{
	mreq_ref((struct mreq*)sink);
}

static void mr_unref(struct mcp_sink* sink)
{
	struct mreq* m = (struct mreq*)sink;
	/* The core lets go once done: the flag it watched goes with it. */
	pthread_mutex_lock(&m->mutex);
	if (m->answered)
		m->cancel = NULL;
	pthread_mutex_unlock(&m->mutex);
	mreq_unref(m);
}

static const struct mcp_sink_impl mreq_impl = {
	.message = mr_message,
	.done = mr_done,
	.ref = mr_ref,
	.unref = mr_unref,
	.status = mr_status,
	.watch = mr_watch,
};

/* ---- long calls get their stream (later.c) ---- */

static bool mr_settled(void* sink)
{
	struct mreq* m = sink;
	pthread_mutex_lock(&m->write_mutex);
	bool settled = m->answered || m->sse;
	pthread_mutex_unlock(&m->write_mutex);
	return settled;
}

static void mr_open(void* sink)
{
	struct mreq* m = sink;
	pthread_mutex_lock(&m->write_mutex);
	if (!m->answered)
		open_sse(m);
	pthread_mutex_unlock(&m->write_mutex);
}

static void mr_later_unref(void* sink)
{
	mreq_unref(sink);
}

/* ---- the POST ---- */

static const char* header_of(void* ud, const char* name)
{
	return http_request_header(ud, name);
}

void mcp_http_modern(struct http_request* req, json_t* msg)
{
	struct mreq* m = calloc(1, sizeof(*m));
	if (!m) {
		http_respond_json(req, 500, mcp_error_response(json_object_get(msg, "id"), -32603,
				"Internal error: out of memory", NULL), NULL);
		return;
	}
	m->sink.impl = &mreq_impl;
	enum http_role role = http_request_role(req);
	m->sink.read_only = role == HTTP_ROLE_VIEW;
	atomic_init(&m->refs, 1);
	pthread_mutex_init(&m->write_mutex, NULL);
	pthread_mutex_init(&m->mutex, NULL);
	m->req = req;
	m->started = clock_ms();
	struct mcp_request_env env = {
		.transport = "http",
		.principal = auth_role_name(role),
		.read_only = m->sink.read_only,
		.header = header_of,
		.header_ud = req,
	};
	/* The body is checked before anything runs, so headers are read here,
	 * on the HTTP thread, while req is surely alive. */
	if (mcp_modern_handle(msg, &env, &m->sink) == 0) {
		/* A notification: nothing to answer but the 202. */
		http_respond(req, 202, NULL, NULL, 0, NULL);
		m->answered = true;
		m->req = NULL;
	} else {
		pthread_mutex_lock(&m->write_mutex);
		bool open = !m->answered && !m->sse;
		pthread_mutex_unlock(&m->write_mutex);
		if (open) {
			mreq_ref(m);	/* the watcher's */
			mcp_later(m, m->started, MCP_STREAM_AFTER_MS, mr_settled, mr_open,
					mr_later_unref);
		}
	}
	mreq_unref(m);
}
