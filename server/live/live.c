/* The live view on /live (DESIGN.md section 7).
 *
 * Threads:
 * - the lws service thread (ws.c) runs every callback here: it owns the
 *   client list, the feed list and every lws call;
 * - one producer thread per active feed (a target plus its settings) with
 *   its own X connection (desktop_feed): it waits for damage, paces itself to
 *   the feed's fps, captures and encodes once, and publishes the frame as
 *   the feed's "latest" (refcounted) before waking the service thread with
 *   lws_cancel_service();
 * - the events callback (any thread) appends to a bounded ring of serialized
 *   events and wakes the service thread;
 * - a worker builds each client's hello (the window list needs X);
 * - the hands thread (desktop/hands.c) runs a person's input (the control
 *   channel, docs/CONTROL.md) under the desktop lock with the one input
 *   context; this file checks the messages and queues them.
 *
 * Backpressure: a client only ever holds a reference to the frame it is
 * sending; when it becomes writable it takes the feed's newest frame and
 * skips the ones in between. lws keeps at most the unsent rest of one
 * message per client. Events come from a shared ring (a slow client skips to
 * the oldest kept), so nothing grows per client. */

#include "server/live.h"
#include "server/live/live_private.h"
#include "base/clock.h"
#include "server/http/auth.h"
#include "server/http/http.h"
#include "server/live/live_ctl.h"
#include "desktop/desktop.h"
#include "base/events.h"
#include "base/log.h"
#include "base/metrics.h"
#include "server/http/netcheck.h"
#include "base/options.h"
#include "base/worker.h"
#include "capture/capture.h"
#include "tools/tools.h"

#include <libwebsockets.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- module state (shared by the files of server/live/) ---- */

pthread_mutex_t live__lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t live__cond = PTHREAD_COND_INITIALIZER;
struct lws_context* live__ctx;		/* under live__lock */
bool live__shutdown;			/* under live__lock */
struct live_outbox_item* live__outbox;	/* under live__lock */
struct live_buf* live__events[LIVE_EVENT_RING];	/* under live__lock */
uint64_t live__event_next = 1;		/* seq of the next event */
int live__producers;			/* running producer threads */
static int live__events_handle;

/* Service thread only. */
struct live_client* live__clients;
struct live_feed* live__feeds;
uint64_t live__next_client_id = 1;

struct live_counters live__stats;

/* Wake the service thread; any thread. */
void live_wake(void)
{
	pthread_mutex_lock(&live__lock);
	if (live__ctx)
		lws_cancel_service(live__ctx);
	pthread_mutex_unlock(&live__lock);
}

/* ---- events ---- */

static void live_on_event(void* ud, json_t* event)
{
	struct live_buf* buf = live_buf_json(json_incref(event));
	if (!buf)
		return;
	pthread_mutex_lock(&live__lock);
	size_t slot = live__event_next % LIVE_EVENT_RING;
	live_buf_unref(live__events[slot]);
	live__events[slot] = buf;
	live__event_next++;
	if (live__ctx)
		lws_cancel_service(live__ctx);
	pthread_mutex_unlock(&live__lock);
}

/* The next event after seq for a client, or NULL; *seq is advanced (skipping
 * events that fell out of the ring). */
struct live_buf* live_next_event(uint64_t* seq)
{
	struct live_buf* out = NULL;
	pthread_mutex_lock(&live__lock);
	uint64_t first = live__event_next > LIVE_EVENT_RING
			? live__event_next - LIVE_EVENT_RING : 1;
	uint64_t want = *seq + 1 < first ? first : *seq + 1;
	if (want < live__event_next) {
		out = live_buf_ref(live__events[want % LIVE_EVENT_RING]);
		*seq = want;
	}
	pthread_mutex_unlock(&live__lock);
	return out;
}

bool live_has_event(uint64_t seq)
{
	pthread_mutex_lock(&live__lock);
	bool more = seq + 1 < live__event_next;
	pthread_mutex_unlock(&live__lock);
	return more;
}

/* ---- auth ---- */

/* The token from ?token=, an Authorization header (non-browser clients) or
 * a "bearer.<token>" subprotocol, like the acceptor's gate. */
static const char* live_find_token(struct lws* wsi, char* buf, size_t size)
{
	const char* token = lws_get_urlarg_by_name(wsi, "token=", buf, (int)size);
	if (token && *token)
		return token;
	if (lws_hdr_copy(wsi, buf, (int)size, WSI_TOKEN_HTTP_AUTHORIZATION) > 7
			&& strncasecmp(buf, "Bearer ", 7) == 0)
		return buf + 7;
	if (lws_hdr_copy(wsi, buf, (int)size, WSI_TOKEN_PROTOCOL) <= 0)
		return NULL;
	char* save = NULL;
	for (char* p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		while (*p == ' ' || *p == '\t')
			p++;
		size_t n = strlen(p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			p[--n] = 0;
		if (strncmp(p, "bearer.", 7) == 0 && p[7])
			return p + 7;
	}
	return NULL;
}

/* Decide a new connection; returns the role, or HTTP_ROLE_NONE to refuse. */
static enum http_role live_authorize(struct lws* wsi, int* status)
{
	char uri[256] = "", buf[1024];
	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0
			|| strcmp(uri, "/live") != 0) {
		log_debug("live: refused an upgrade for %s (only /live)", uri);
		*status = 404;
		return HTTP_ROLE_NONE;
	}
	/* Host and Origin were checked by the acceptor's WebSocket gate
	 * (server/http/http.c) with the same policy as every HTTP route, before the socket
	 * reached lws; the token is checked again here to learn the role. */
	const char* token = live_find_token(wsi, buf, sizeof(buf));
	enum http_role role = auth_check_token(token);
	/* The dashboard percent-encodes what a subprotocol cannot carry. */
	char decoded[600];
	if (role == HTTP_ROLE_NONE && token && strchr(token, '%')
			&& netcheck_pct_decode(token, decoded, sizeof(decoded)) > 0)
		role = auth_check_token(decoded);
	memset(decoded, 0, sizeof(decoded));
	memset(buf, 0, sizeof(buf));
	if (role == HTTP_ROLE_NONE) {
		log_info("live: refused a viewer without a valid token");
		*status = 401;
	}
	return role;
}

/* ---- the service-thread side ---- */

static void live_drain(void)
{
	if (atomic_exchange(&live__gate_changed, false))
		live_ctl_broadcast();
	pthread_mutex_lock(&live__lock);
	struct live_outbox_item* items = live__outbox;
	live__outbox = NULL;
	pthread_mutex_unlock(&live__lock);
	while (items) {
		struct live_outbox_item* item = items;
		items = item->next;
		struct live_client* c = live__clients;
		while (c && c->id != item->client_id)
			c = c->next;
		if (c && item->hello && !c->hello) {
			c->hello = item->hello;
			item->hello = NULL;
		}
		if (c && item->ctrl) {
			live_client_ctrl(c, item->ctrl);
			item->ctrl = NULL;
		}
		live_buf_unref(item->hello);
		live_buf_unref(item->ctrl);
		free(item);
	}

	/* Notices that do not end a feed (the display is gone for now). */
	for (struct live_client* c = live__clients; c; c = c->next) {
		struct live_feed* f = c->feed;
		if (!f)
			continue;
		pthread_mutex_lock(&f->lock);
		struct live_buf* notice = c->notice_seq != f->notice_seq
				? live_buf_ref(f->notice) : NULL;
		c->notice_seq = f->notice_seq;
		pthread_mutex_unlock(&f->lock);
		live_client_ctrl(c, notice);
	}

	/* Feeds whose producer gave up: tell their viewers, then detach them. */
	for (struct live_client* c = live__clients; c; c = c->next) {
		struct live_feed* f = c->feed;
		if (f && atomic_load(&f->failed)) {
			pthread_mutex_lock(&f->lock);
			struct live_buf* error = live_buf_ref(f->error);
			pthread_mutex_unlock(&f->lock);
			live_client_unwatch(c);
			live_client_ctrl(c, error);
		}
	}
	for (struct live_client* c = live__clients; c; c = c->next)
		if (live_client_has_work(c))
			lws_callback_on_writable(c->wsi);
}

static int live_callback(struct lws* wsi, enum lws_callback_reasons reason,
		void* user, void* in, size_t len)
{
	struct live_client* c = user;
	switch (reason) {
	case LWS_CALLBACK_PROTOCOL_INIT:
		pthread_mutex_lock(&live__lock);
		live__ctx = lws_get_context(wsi);
		pthread_mutex_unlock(&live__lock);
		return 0;
	case LWS_CALLBACK_PROTOCOL_DESTROY:
		pthread_mutex_lock(&live__lock);
		live__ctx = NULL;
		pthread_mutex_unlock(&live__lock);
		return 0;
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
		int status = 0;
		enum http_role role = live_authorize(wsi, &status);
		if (role == HTTP_ROLE_NONE) {
			atomic_fetch_add(&live__stats.refused, 1);
			/* A real status instead of a dropped connection, so clients
			 * can tell a bad token (401) from a refused origin (403). */
			lws_return_http_status(wsi, (unsigned)status,
					status == 401 ? "missing or wrong token"
					: "the live view is at /live");
			return -1;
		}
		/* Its role's sockets and streams are limited (http.h): a full
		 * role is refused with a status here, before the upgrade; the
		 * slot is taken once established (given back when closed). */
		if (!http_role_stream_room(role)) {
			atomic_fetch_add(&live__stats.refused, 1);
			lws_return_http_status(wsi, 429, "too many live sockets and streams for "
					"this token; close one first");
			return -1;
		}
		if (c)
			c->role = role;
		return 0;
	}
	case LWS_CALLBACK_ESTABLISHED:
		if (!c)
			return -1;
		if (c->role == HTTP_ROLE_NONE) {
			int status;
			c->role = live_authorize(wsi, &status);
		}
		if (c->role == HTTP_ROLE_NONE)
			return -1;
		if (!c->has_slot) {
			if (!http_role_stream_take(c->role))
				return -1;
			c->has_slot = true;
		}
		live_client_established(wsi, c);
		return 0;
	case LWS_CALLBACK_CLOSED:
		if (c)
			live_client_closed(c);
		return 0;
	case LWS_CALLBACK_RECEIVE:
		return c && c->established ? live_client_receive(c, in, len) : -1;
	case LWS_CALLBACK_RECEIVE_PONG:
		if (c)
			c->last_rx_ms = clock_ms();
		log_trace("live: pong from viewer %llu", c ? (unsigned long long)c->id : 0ULL);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return c && c->established ? live_client_writeable(c) : 0;
	case LWS_CALLBACK_TIMER:
		if (!c || !c->established)
			return 0;
		if (clock_ms() - c->last_rx_ms > LIVE_DEAD_MS) {
			log_debug("live: viewer %llu stopped answering; closing",
					(unsigned long long)c->id);
			return -1;
		}
		if (!live_ctl_timer(c))
			return -1;
		c->ping_due = true;
		lws_callback_on_writable(wsi);
		lws_set_timer_usecs(wsi, live__holder == c->id ? LIVE_CTL_PING_US : LIVE_PING_US);
		return 0;
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		live_drain();
		return 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

static const struct lws_protocols live__protocols[] = {
	{
		.name = LIVE_PROTOCOL,
		.callback = live_callback,
		.per_session_data_size = sizeof(struct live_client),
		.rx_buffer_size = 4096,
	},
	{ 0 },
};

const struct lws_protocols* live_protocols(void)
{
	return live__protocols;
}

int live_init(void)
{
	pthread_mutex_lock(&live__lock);
	live__shutdown = false;
	pthread_mutex_unlock(&live__lock);
	int handle = events_subscribe(live_on_event, NULL, 1);
	if (handle < 0) {
		log_error("live: cannot subscribe to activity events: %s", strerror(-handle));
		return handle;
	}
	live__events_handle = handle;
	if (desktop_hands_start(&live__hands_owner) < 0) {
		log_error("live: cannot start the control input thread");
		events_unsubscribe(handle);
		live__events_handle = 0;
		return -EAGAIN;
	}
	tools_gate_listen(live_gate_listener);
	metrics_help("deskd_control_held", "1 while a person holds the desktop from the dashboard.");
	metrics_help("deskd_control_dropped_total", "Control input messages dropped (rate limit, full queue).");
	metrics_help("deskd_live_captures_total", "Live view captures (one per frame per feed, shared by its viewers).");
	metrics_help("deskd_live_encodes_total", "Live view JPEG encodes (one per frame per feed).");
	metrics_help("deskd_live_frames_sent_total", "Live view frames sent, summed over viewers.");
	metrics_help("deskd_live_frames_skipped_total", "Frames a slow viewer skipped to get the newest one.");
	metrics_help("deskd_live_bytes_sent_total", "Bytes of live view messages sent.");
	metrics_help("deskd_live_viewers", "Live view connections open now.");
	metrics_help("deskd_live_feeds", "Targets being captured for the live view now.");
	metrics_help("deskd_live_connections_total", "Live view connections accepted.");
	return 0;
}

void live_deinit(void)
{
	if (live__events_handle > 0)
		events_unsubscribe(live__events_handle);
	live__events_handle = 0;
	tools_gate_listen(NULL);
	desktop_hands_stop();
	live__holder = 0;

	/* The service thread is gone (ws_stop ran): stop what is left. */
	for (struct live_feed* f = live__feeds; f;) {
		struct live_feed* next = f->next;
		live_feed_stop(f);
		live_feed_unref(f);
		f = next;
	}
	live__feeds = NULL;
	live__clients = NULL;

	pthread_mutex_lock(&live__lock);
	live__shutdown = true;
	live__ctx = NULL;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 3;
	while (live__producers > 0
			&& pthread_cond_timedwait(&live__cond, &live__lock, &until) != ETIMEDOUT)
		;
	if (live__producers > 0)
		log_warn("live: %d capture threads did not stop in time", live__producers);
	struct live_outbox_item* items = live__outbox;
	live__outbox = NULL;
	for (size_t i = 0; i < LIVE_EVENT_RING; i++) {
		live_buf_unref(live__events[i]);
		live__events[i] = NULL;
	}
	live__event_next = 1;
	pthread_mutex_unlock(&live__lock);
	while (items) {
		struct live_outbox_item* next = items->next;
		live_buf_unref(items->hello);
		live_buf_unref(items->ctrl);
		free(items);
		items = next;
	}
}

json_t* live_stats(void)
{
	return json_pack("{s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			"clients", atomic_load(&live__stats.clients),
			"feeds", atomic_load(&live__stats.feeds),
			"clients_total", (json_int_t)atomic_load(&live__stats.clients_total),
			"refused", (json_int_t)atomic_load(&live__stats.refused),
			"captures", (json_int_t)atomic_load(&live__stats.captures),
			"encodes", (json_int_t)atomic_load(&live__stats.encodes),
			"frames_sent", (json_int_t)atomic_load(&live__stats.frames_sent),
			"frames_skipped", (json_int_t)atomic_load(&live__stats.frames_skipped),
			"cursor_sent", (json_int_t)atomic_load(&live__stats.cursor_sent),
			"events_sent", (json_int_t)atomic_load(&live__stats.events_sent),
			"bytes_sent", (json_int_t)atomic_load(&live__stats.bytes_sent));
}
