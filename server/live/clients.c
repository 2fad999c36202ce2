/* The live view's sockets (service thread): per-client queues, the writes in
 * their order and backpressure (a client holds only the frame it is sending),
 * watch/unwatch, receiving messages, joining and leaving. */
#include "server/live/live_private.h"
#include "base/clock.h"
#include "server/http/auth.h"
#include "server/http/http.h"
#include "desktop/desktop.h"
#include "base/events.h"
#include "base/log.h"
#include "base/metrics.h"
#include "server/http/netcheck.h"
#include "base/options.h"
#include "base/worker.h"
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

/* ---- clients (service thread) ---- */

void live_client_ctrl(struct live_client* c, struct live_buf* buf)
{
	if (!buf)
		return;
	if (c->n_ctrl == LIVE_MAX_CTRL) {	/* a client flooding us with bad messages */
		live_buf_unref(buf);
		return;
	}
	c->ctrl[c->n_ctrl++] = buf;
	lws_callback_on_writable(c->wsi);
}

static void live_client_error(struct live_client* c, const char* code, const char* message)
{
	live_client_ctrl(c, live_buf_json(json_pack("{s:s, s:s, s:s}", "type", "error",
			"code", code, "message", message)));
}

bool live_client_has_work(struct live_client* c)
{
	if (c->pending || c->ping_due || (c->hello && !c->hello_sent))
		return true;
	if (!c->hello_sent)
		return false;
	if (c->n_ctrl || c->state_due || live_has_event(c->event_seq))
		return true;
	struct live_feed* f = c->feed;
	return f && (atomic_load(&f->latest_seq) > c->frame_seq
			|| atomic_load(&f->latest_cursor_seq) > c->cursor_seq);
}

static int live_write(struct live_client* c, struct live_buf* buf,
		enum lws_write_protocol kind)
{
	int n = lws_write(c->wsi, buf->data + LWS_PRE, buf->len, kind);
	if (n < 0)
		return -1;
	atomic_fetch_add(&live__stats.bytes_sent, buf->len);
	metrics_add("deskd_live_bytes_sent_total", (double)buf->len, NULL);
	return 0;
}

struct live_buf* live_ctl_state(struct live_client* c);

/* One lws_write per WRITEABLE, in this order: the JPEG of a frame whose
 * header went out, a ping, the hello, control messages, events, then the
 * newest frame (or cursor position) of the watched feed. */
int live_client_writeable(struct live_client* c)
{
	int rc = 0;
	if (c->pending) {
		rc = live_write(c, c->pending->jpeg, LWS_WRITE_BINARY);
		if (log_enabled(LOG_TRACE)) {
			/* The frame's way through deskd, in ms of CLOCK_MONOTONIC
			 * (make bench's dashboard section reads these). */
			const struct live_frame* f = c->pending;
			log_trace("live: frame %llu to viewer %llu: woke %.3f captured %.3f "
					"encoded %.3f published %.3f header %.3f jpeg %.3f (%zu bytes)",
					(unsigned long long)f->seq, (unsigned long long)c->id,
					f->woke_ns / 1e6, f->captured_ns / 1e6, f->encoded_ns / 1e6,
					f->published_ns / 1e6, c->header_ns / 1e6, clock_ns() / 1e6,
					f->jpeg->len);
		}
		live_frame_unref(c->pending);
		c->pending = NULL;
		atomic_fetch_add(&live__stats.frames_sent, 1);
		metrics_inc("deskd_live_frames_sent_total", NULL);
	} else if (c->ping_due) {
		/* lws 4.1 reports no RECEIVE_PONG for an empty pong: carry a byte. */
		unsigned char buf[LWS_PRE + 4];
		buf[LWS_PRE] = 'p';
		c->ping_due = false;
		rc = lws_write(c->wsi, buf + LWS_PRE, 1, LWS_WRITE_PING) < 0 ? -1 : 0;
	} else if (!c->hello_sent) {
		if (!c->hello)
			return 0;
		rc = live_write(c, c->hello, LWS_WRITE_TEXT);
		c->hello_sent = true;
	} else if (c->state_due) {
		struct live_buf* state = live_ctl_state(c);
		c->state_due = false;
		rc = state ? live_write(c, state, LWS_WRITE_TEXT) : 0;
		live_buf_unref(state);
	} else if (c->n_ctrl) {
		struct live_buf* buf = c->ctrl[0];
		memmove(c->ctrl, c->ctrl + 1, (size_t)(c->n_ctrl - 1) * sizeof(c->ctrl[0]));
		c->n_ctrl--;
		rc = live_write(c, buf, LWS_WRITE_TEXT);
		live_buf_unref(buf);
	} else {
		struct live_buf* ev = live_next_event(&c->event_seq);
		if (ev) {
			rc = live_write(c, ev, LWS_WRITE_TEXT);
			live_buf_unref(ev);
			atomic_fetch_add(&live__stats.events_sent, 1);
		} else if (c->feed) {
			struct live_feed* f = c->feed;
			struct live_frame* frame = NULL;
			struct live_buf* cursor = NULL;
			pthread_mutex_lock(&f->lock);
			if (f->latest && f->latest->seq > c->frame_seq)
				frame = live_frame_ref(f->latest);
			else if (f->cursor && f->cursor_seq > c->cursor_seq) {
				cursor = live_buf_ref(f->cursor);
				c->cursor_seq = f->cursor_seq;
			}
			pthread_mutex_unlock(&f->lock);
			if (frame) {
				if (c->frame_seq && frame->seq > c->frame_seq + 1) {
					atomic_fetch_add(&live__stats.frames_skipped,
							frame->seq - c->frame_seq - 1);
					metrics_add("deskd_live_frames_skipped_total",
							(double)(frame->seq - c->frame_seq - 1), NULL);
				}
				c->frame_seq = frame->seq;
				if (frame->cursor_seq > c->cursor_seq)
					c->cursor_seq = frame->cursor_seq;
				rc = live_write(c, frame->header, LWS_WRITE_TEXT);
				c->header_ns = clock_ns();
				c->pending = frame;
			} else if (cursor) {
				rc = live_write(c, cursor, LWS_WRITE_TEXT);
				live_buf_unref(cursor);
				atomic_fetch_add(&live__stats.cursor_sent, 1);
			}
		}
	}
	if (rc == 0 && live_client_has_work(c))
		lws_callback_on_writable(c->wsi);
	return rc;
}

void live_client_unwatch(struct live_client* c)
{
	live_feed_put(c->feed);
	c->feed = NULL;
	c->frame_seq = 0;
	c->cursor_seq = 0;
}

static int live_json_int(json_t* obj, const char* name, int def, int min, int max,
		int* out, char* err, size_t err_size)
{
	json_t* v = json_object_get(obj, name);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		snprintf(err, err_size, "%s must be an integer from %d to %d", name, min, max);
		return -EINVAL;
	}
	*out = (int)json_integer_value(v);
	return 0;
}

/* Window ids: a number, or a string in decimal or 0x hex. */
static int live_json_window(json_t* v, uint32_t* out)
{
	if (json_is_integer(v) && json_integer_value(v) > 0
			&& json_integer_value(v) <= UINT32_MAX) {
		*out = (uint32_t)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		char* end;
		errno = 0;
		unsigned long long id = strtoull(json_string_value(v), &end, 0);
		if (!errno && *end == 0 && id > 0 && id <= UINT32_MAX) {
			*out = (uint32_t)id;
			return 0;
		}
	}
	return -EINVAL;
}

static void live_client_watch(struct live_client* c, json_t* msg)
{
	char err[160];
	struct live_feed_key key = { 0 };
	const char* target = json_string_value(json_object_get(msg, "target"));
	if (!target)
		target = json_object_get(msg, "window") ? "window" : "screen";
	if (strcmp(target, "window") == 0) {
		if (live_json_window(json_object_get(msg, "window"), &key.window) < 0) {
			live_client_error(c, tool_code_name(TOOL_BAD_ARGUMENTS),
					"watch a window with \"window\": <id from the window list>");
			return;
		}
	} else if (strcmp(target, "screen") != 0) {
		live_client_error(c, tool_code_name(TOOL_BAD_ARGUMENTS), "target must be \"screen\" or \"window\"");
		return;
	}
	const struct options* opts = options_get();
	int def_max = opts ? opts->max_image_dimension : 1280;
	if (live_json_int(msg, "fps", LIVE_DEFAULT_FPS, 1, LIVE_MAX_FPS, &key.fps,
			err, sizeof(err)) < 0
			|| live_json_int(msg, "quality", LIVE_DEFAULT_QUALITY, 1, 100,
				&key.quality, err, sizeof(err)) < 0
			|| live_json_int(msg, "max_dimension", def_max, 0, 16384,
				&key.max_dimension, err, sizeof(err)) < 0) {
		live_client_error(c, tool_code_name(TOOL_BAD_ARGUMENTS), err);
		return;
	}
	if (c->feed && memcmp(&c->feed->key, &key, sizeof(key)) == 0
			&& !atomic_load(&c->feed->failed))
		return;	/* already watching exactly this */
	live_client_unwatch(c);
	c->feed = live_feed_get(&key);
	c->notice_seq = 0;	/* the feed's current notice, if any, is news to it */
	if (!c->feed)
		live_client_error(c, "busy", "too many different live views at once; "
				"watch with the same fps, quality and max_dimension as others to share one");
	else
		lws_callback_on_writable(c->wsi);
}

static void live_client_message(struct live_client* c, const char* text, size_t len)
{
	json_error_t jerr;
	json_t* msg = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	const char* type = json_string_value(json_object_get(msg, "type"));
	if (!msg || !json_is_object(msg) || !type)
		live_client_error(c, "bad_message",
				"messages are JSON objects with a \"type\" (watch, unwatch)");
	else if (strcmp(type, "watch") == 0)
		live_client_watch(c, msg);
	else if (strcmp(type, "unwatch") == 0)
		live_client_unwatch(c);
	else if (live_ctl_message(c, type, msg))
		;	/* control: docs/CONTROL.md */
	else if (strcmp(type, "ping") != 0)
		live_client_error(c, "bad_message", "unknown message type; use watch, unwatch or "
				"the control messages of docs/CONTROL.md");
	json_decref(msg);
}

int live_client_receive(struct live_client* c, const void* in, size_t len)
{
	if (!c->rx_len)
		c->rx_ns = clock_ns();
	c->last_rx_ms = clock_ms();
	if (lws_frame_is_binary(c->wsi)) {
		/* Nothing binary is expected; ignore it (but still bounded). */
		if (lws_is_final_fragment(c->wsi) && !lws_remaining_packet_payload(c->wsi))
			c->rx_len = 0;
		return 0;
	}
	if (c->rx_len + len > LIVE_MAX_MESSAGE) {
		lws_close_reason(c->wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
				(unsigned char*)"message too large", 17);
		return -1;
	}
	if (c->rx_len + len + 1 > c->rx_cap) {
		size_t cap = c->rx_cap ? c->rx_cap : 1024;
		while (cap < c->rx_len + len + 1)
			cap *= 2;
		char* rx = realloc(c->rx, cap);
		if (!rx)
			return -1;
		c->rx = rx;
		c->rx_cap = cap;
	}
	memcpy(c->rx + c->rx_len, in, len);
	c->rx_len += len;
	if (!lws_is_final_fragment(c->wsi) || lws_remaining_packet_payload(c->wsi))
		return 0;
	live_client_message(c, c->rx, c->rx_len);
	c->rx_len = 0;
	if (c->rx_cap > 4096) {	/* don't keep a big buffer around */
		free(c->rx);
		c->rx = NULL;
		c->rx_cap = 0;
	}
	return 0;
}

void live_client_closed(struct live_client* c)
{
	if (c->has_slot) {
		http_role_stream_give(c->role);
		c->has_slot = false;
	}
	if (!c->established)
		return;
	c->established = false;
	live_client_unwatch(c);
	live_frame_unref(c->pending);
	c->pending = NULL;
	live_buf_unref(c->hello);
	c->hello = NULL;
	for (int i = 0; i < c->n_ctrl; i++)
		live_buf_unref(c->ctrl[i]);
	c->n_ctrl = 0;
	free(c->rx);
	c->rx = NULL;
	if (c->prev)
		c->prev->next = c->next;
	else
		live__clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	/* Off the list first: the others are told, this one is gone. */
	if (live__holder == c->id) {
		log_info("live: the tab holding control closed; control is released");
		live_ctl_set_holder(NULL, "tab_closed", NULL);
	}
	metrics_set("deskd_live_viewers",
			(double)(atomic_fetch_sub(&live__stats.clients, 1) - 1), NULL);
	log_debug("live: viewer %llu left", (unsigned long long)c->id);
}

void live_client_established(struct lws* wsi, struct live_client* c)
{
	enum http_role role = c->role;
	memset(c, 0, sizeof(*c));
	c->wsi = wsi;
	c->id = live__next_client_id++;
	c->role = role;
	c->established = true;
	c->last_rx_ms = clock_ms();
	c->state_due = true;
	/* Replay the recent history: start just before the oldest kept event. */
	pthread_mutex_lock(&live__lock);
	c->event_seq = live__event_next > LIVE_EVENT_RING
			? live__event_next - LIVE_EVENT_RING - 1 : 0;
	pthread_mutex_unlock(&live__lock);
	c->next = live__clients;
	if (live__clients)
		live__clients->prev = c;
	live__clients = c;
	metrics_set("deskd_live_viewers",
			(double)(atomic_fetch_add(&live__stats.clients, 1) + 1), NULL);
	metrics_inc("deskd_live_connections_total", NULL);
	atomic_fetch_add(&live__stats.clients_total, 1);

	struct live_hello_job* job = malloc(sizeof(*job));
	if (job) {
		job->client_id = c->id;
		job->role = role;
		if (worker_spawn(live_hello_worker, job) == 0)
			job = NULL;
	}
	if (job) {	/* no worker: a hello without the window list */
		free(job);
		c->hello = live_hello(role, false);
	}
	lws_set_timer_usecs(wsi, LIVE_PING_US);
	log_debug("live: viewer %llu joined (%s)", (unsigned long long)c->id,
			auth_role_name(role));
}
