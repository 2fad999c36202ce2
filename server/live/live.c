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

/* ---- refcounted message buffers (LWS_PRE headroom for lws_write) ---- */

static struct live_buf* live_buf_new(const void* payload, size_t len)
{
	struct live_buf* self = malloc(sizeof(*self) + LWS_PRE + len + 1);
	if (!self)
		return NULL;
	atomic_init(&self->refs, 1);
	self->len = len;
	if (payload)
		memcpy(self->data + LWS_PRE, payload, len);
	self->data[LWS_PRE + len] = 0;
	return self;
}

/* Serialize json (stolen) compactly. */
struct live_buf* live_buf_json(json_t* json)
{
	if (!json)
		return NULL;
	char* text = json_dumps(json, JSON_COMPACT);
	json_decref(json);
	if (!text)
		return NULL;
	struct live_buf* self = live_buf_new(text, strlen(text));
	free(text);
	return self;
}

struct live_buf* live_buf_ref(struct live_buf* self)
{
	if (self)
		atomic_fetch_add(&self->refs, 1);
	return self;
}

void live_buf_unref(struct live_buf* self)
{
	if (self && atomic_fetch_sub(&self->refs, 1) == 1)
		free(self);
}

/* ---- frames: a header text message and the JPEG that follows it ---- */


struct live_frame* live_frame_ref(struct live_frame* self)
{
	if (self)
		atomic_fetch_add(&self->refs, 1);
	return self;
}

void live_frame_unref(struct live_frame* self)
{
	if (self && atomic_fetch_sub(&self->refs, 1) == 1) {
		live_buf_unref(self->header);
		live_buf_unref(self->jpeg);
		free(self);
	}
}

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

/* ---- producer ---- */

static const char* live_target_name(uint32_t window)
{
	return window ? "window" : "screen";
}

void live_feed_unref(struct live_feed* self)
{
	if (!self || atomic_fetch_sub(&self->refs, 1) != 1)
		return;
	live_frame_unref(self->latest);
	live_buf_unref(self->cursor);
	live_buf_unref(self->error);
	live_buf_unref(self->notice);
	pthread_mutex_destroy(&self->lock);
	pthread_cond_destroy(&self->cond);
	free(self);
}

static void live_feed_fail(struct live_feed* self, const char* code, const char* message)
{
	json_t* msg = json_pack("{s:s, s:s, s:s, s:s}", "type", "error",
			"code", code, "message", message,
			"target", live_target_name(self->key.window));
	if (msg && self->key.window)
		json_object_set_new(msg, "window", json_integer(self->key.window));
	struct live_buf* buf = live_buf_json(msg);
	pthread_mutex_lock(&self->lock);
	live_buf_unref(self->error);
	self->error = buf;
	pthread_mutex_unlock(&self->lock);
	atomic_store(&self->failed, true);
	live_wake();
}

/* Tell the viewers something that does not end the feed (code NULL: the
 * condition is over; nothing is sent). Producer thread. */
static void live_feed_notice(struct live_feed* self, const char* code, const char* message)
{
	struct live_buf* buf = NULL;
	if (code) {
		json_t* msg = json_pack("{s:s, s:s, s:s, s:s}", "type", "error",
				"code", code, "message", message,
				"target", live_target_name(self->key.window));
		if (msg && self->key.window)
			json_object_set_new(msg, "window", json_integer(self->key.window));
		buf = live_buf_json(msg);
	}
	pthread_mutex_lock(&self->lock);
	live_buf_unref(self->notice);
	self->notice = buf;
	self->notice_seq++;
	pthread_mutex_unlock(&self->lock);
	live_wake();
}

static json_t* live_target_json(const struct live_feed* self, json_t* obj)
{
	json_object_set_new(obj, "target", json_string(live_target_name(self->key.window)));
	if (self->key.window)
		json_object_set_new(obj, "window", json_integer(self->key.window));
	return obj;
}

static void live_feed_publish(struct live_feed* self, const struct desktop_feed_frame* fr)
{
	struct live_frame* frame = calloc(1, sizeof(*frame));
	if (!frame)
		return;
	atomic_init(&frame->refs, 1);
	pthread_mutex_lock(&self->lock);
	uint64_t seq = atomic_load(&self->latest_seq) + 1;
	self->cursor_seq++;
	uint64_t cursor_seq = self->cursor_seq;
	pthread_mutex_unlock(&self->lock);

	json_t* header = json_pack("{s:s, s:I, s:i, s:i, s:{s:i, s:i, s:b}, s:s}",
			"type", "frame", "seq", (json_int_t)seq,
			"width", fr->width, "height", fr->height,
			"cursor", "x", fr->cursor_x, "y", fr->cursor_y,
			"visible", fr->cursor_visible, "format", "jpeg");
	frame->seq = seq;
	frame->width = fr->width;
	frame->height = fr->height;
	frame->cursor_seq = cursor_seq;
	frame->header = live_buf_json(header ? live_target_json(self, header) : NULL);
	frame->jpeg = live_buf_new(fr->jpeg, fr->len);
	if (!frame->header || !frame->jpeg) {
		live_frame_unref(frame);
		return;
	}
	pthread_mutex_lock(&self->lock);
	struct live_frame* old = self->latest;
	self->latest = frame;
	atomic_store(&self->latest_seq, seq);
	atomic_store(&self->latest_cursor_seq, cursor_seq);
	pthread_mutex_unlock(&self->lock);
	live_frame_unref(old);
	live_wake();
}

static void live_feed_cursor(struct live_feed* self, int x, int y, bool visible)
{
	json_t* msg = json_pack("{s:s, s:i, s:i, s:b}", "type", "cursor",
			"x", x, "y", y, "visible", visible);
	struct live_buf* buf = live_buf_json(msg ? live_target_json(self, msg) : NULL);
	if (!buf)
		return;
	pthread_mutex_lock(&self->lock);
	live_buf_unref(self->cursor);
	self->cursor = buf;
	self->cursor_seq++;
	atomic_store(&self->latest_cursor_seq, self->cursor_seq);
	pthread_mutex_unlock(&self->lock);
	live_wake();
}

/* Sleep until the monotonic deadline (ms) or until the feed stops. */
static bool live_feed_sleep_until(struct live_feed* self, int64_t deadline_ms)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t wait_ms = deadline_ms - clock_ms();
	struct timespec until = now;
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (wait_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&self->lock);
	while (!self->stop && wait_ms > 0
			&& pthread_cond_timedwait(&self->cond, &self->lock, &until) != ETIMEDOUT)
		;
	bool stop = self->stop;
	pthread_mutex_unlock(&self->lock);
	return !stop;
}

static bool live_feed_running(struct live_feed* self)
{
	pthread_mutex_lock(&self->lock);
	bool stop = self->stop;
	pthread_mutex_unlock(&self->lock);
	return !stop;
}

/* The display went away: wait until it is back and open the target again
 * (D12: viewers keep their watch and frames resume by themselves). NULL when
 * the feed stops, or with *rc and err when the target cannot be opened (its
 * window is gone). */
static struct desktop_feed* live_feed_reopen(struct live_feed* self, int* rc,
		char* err, size_t err_size)
{
	*rc = 0;
	while (live_feed_sleep_until(self, clock_ms() + 200)) {
		if (!desktop_available())
			continue;
		struct desktop_feed* src = desktop_feed_open(self->key.window,
				self->key.max_dimension, rc, err, err_size);
		if (src || *rc == -ENOENT)
			return src;
	}
	*rc = 0;
	return NULL;
}

static void* live_producer(void* arg)
{
	struct live_feed* self = arg;
	int orc = 0;
	char err[256] = "";
	struct desktop_feed* src = desktop_feed_open(self->key.window,
			self->key.max_dimension, &orc, err, sizeof(err));
	if (!src) {
		log_debug("live: cannot watch %s %u: %s", live_target_name(self->key.window),
				self->key.window, err);
		live_feed_fail(self, tool_code_name(tool_code_for_errno(orc)),
				err[0] ? err : "cannot capture the target");
		goto out;
	}
	int64_t period_ms = 1000 / self->key.fps;
	int64_t next_ms = 0;
	int last_cx = -1, last_cy = -1;
	bool first = true;
	int poll_ms = period_ms > LIVE_IDLE_POLL_MS ? (int)period_ms : LIVE_IDLE_POLL_MS;

	while (live_feed_running(self)) {
		int rc = first ? 1 : desktop_feed_wait(src, poll_ms);
		if (rc == -ENOENT) {
			live_feed_fail(self, tool_code_name(TOOL_WINDOW_NOT_FOUND),
					"the window is gone");
			break;
		}
		if (rc < 0) {
			live_feed_notice(self, tool_code_name(TOOL_DISPLAY_UNAVAILABLE),
					"the display is not reachable; frames resume when it is back");
			desktop_feed_close(src);
			src = live_feed_reopen(self, &orc, err, sizeof(err));
			if (!src) {
				if (orc)
					live_feed_fail(self, tool_code_name(tool_code_for_errno(orc)), err);
				goto out;
			}
			live_feed_notice(self, NULL, NULL);
			first = true;
			continue;
		}
		if (rc == 0) {
			int x, y;
			bool visible;
			if (desktop_feed_cursor(src, &x, &y, &visible) == 0
					&& (x != last_cx || y != last_cy)) {
				last_cx = x;
				last_cy = y;
				live_feed_cursor(self, x, y, visible);
			}
			continue;
		}
		/* At most fps frames a second, on an absolute schedule. */
		if (!first && clock_ms() < next_ms && !live_feed_sleep_until(self, next_ms))
			break;
		int64_t t = clock_ms();
		next_ms = next_ms + period_ms > t ? next_ms + period_ms : t + period_ms;
		first = false;

		struct desktop_feed_frame fr;
		rc = desktop_feed_grab(src, self->key.quality, &fr);
		atomic_fetch_add(&live__stats.captures, 1);
		metrics_inc("deskd_live_captures_total", NULL);
		if (rc == -ENOENT) {
			live_feed_fail(self, tool_code_name(TOOL_WINDOW_NOT_FOUND), "the window is gone");
			break;
		}
		if (rc < 0) {
			log_debug("live: capture failed: %s", strerror(-rc));
			if (!live_feed_sleep_until(self, clock_ms() + 200))
				break;
			continue;
		}
		atomic_fetch_add(&live__stats.encodes, 1);
		metrics_inc("deskd_live_encodes_total", NULL);
		last_cx = fr.cursor_x;
		last_cy = fr.cursor_y;
		live_feed_publish(self, &fr);
	}
	desktop_feed_close(src);
out:
	live_feed_unref(self);
	pthread_mutex_lock(&live__lock);
	live__producers--;
	pthread_cond_broadcast(&live__cond);
	pthread_mutex_unlock(&live__lock);
	return NULL;
}

/* ---- feed list (service thread) ---- */

struct live_feed* live_feed_get(const struct live_feed_key* key)
{
	for (struct live_feed* f = live__feeds; f; f = f->next)
		if (memcmp(&f->key, key, sizeof(*key)) == 0 && !atomic_load(&f->failed)) {
			f->n_clients++;
			return f;
		}

	if (atomic_load(&live__stats.feeds) >= LIVE_MAX_FEEDS)
		return NULL;	/* each feed is a thread and an X connection */
	struct live_feed* self = calloc(1, sizeof(*self));
	if (!self)
		return NULL;
	self->key = *key;
	atomic_init(&self->refs, 2);	/* the list's and the producer's */
	pthread_mutex_init(&self->lock, NULL);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&self->cond, &attr);
	pthread_condattr_destroy(&attr);

	pthread_attr_t tattr;
	pthread_t thread;
	pthread_attr_init(&tattr);
	pthread_attr_setdetachstate(&tattr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&live__lock);
	live__producers++;
	pthread_mutex_unlock(&live__lock);
	int rc = pthread_create(&thread, &tattr, live_producer, self);
	pthread_attr_destroy(&tattr);
	if (rc != 0) {
		pthread_mutex_lock(&live__lock);
		live__producers--;
		pthread_mutex_unlock(&live__lock);
		atomic_store(&self->refs, 1);
		live_feed_unref(self);
		return NULL;
	}
	self->n_clients = 1;
	self->next = live__feeds;
	live__feeds = self;
	metrics_set("deskd_live_feeds",
			(double)(atomic_fetch_add(&live__stats.feeds, 1) + 1), NULL);
	log_debug("live: feed %s %u at %d fps, quality %d, max %d started",
			live_target_name(key->window), key->window, key->fps,
			key->quality, key->max_dimension);
	return self;
}

void live_feed_stop(struct live_feed* self)
{
	pthread_mutex_lock(&self->lock);
	self->stop = true;
	pthread_cond_broadcast(&self->cond);
	pthread_mutex_unlock(&self->lock);
}

void live_feed_put(struct live_feed* self)
{
	if (!self || --self->n_clients > 0)
		return;
	for (struct live_feed** p = &live__feeds; *p; p = &(*p)->next)
		if (*p == self) {
			*p = self->next;
			break;
		}
	metrics_set("deskd_live_feeds",
			(double)(atomic_fetch_sub(&live__stats.feeds, 1) - 1), NULL);
	live_feed_stop(self);
	live_feed_unref(self);
}

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

/* ---- control: a person's pointer and keyboard (docs/CONTROL.md) ----
 *
 * The lease (service thread): live__holder is the client holding control,
 * live__lease its generation, bumped at every change. Input messages are
 * checked here (role, lease, bounds, key names, rate) and queued for the
 * hands thread, which runs them in order under the desktop lock with the one
 * input context. An op carries the lease it was sent under: once the lease
 * changed it is dropped, so input from a tab that lost control never runs. */

uint64_t live__holder;			/* service thread: client id, 0 none */
int64_t live__holder_active_ms;		/* service thread: last input */
atomic_uint_fast64_t live__lease;	/* generation of the lease */
atomic_bool live__gate_changed;

void live_post_ctrl(uint64_t client_id, struct live_buf* ctrl);

static struct live_buf* live_ctl_error_buf(const char* code, const char* message,
		const char* what)
{
	json_t* msg = json_pack("{s:s, s:s, s:s}", "type", "error", "code", code,
			"message", message);
	if (msg && what)
		json_object_set_new(msg, "for", json_string(what));
	return live_buf_json(msg);
}

/* The hands (desktop/hands.c) run the ops of the current lease only. */
static bool live_hands_current(uint64_t lease)
{
	return atomic_load(&live__lease) == lease;
}

/* An op failed on the hands thread: tell the client that sent it. */
static void live_hands_failed(uint64_t sender, int rc, const char* message)
{
	live_post_ctrl(sender, live_ctl_error_buf(tool_code_name(tool_code_for_errno(rc)),
			message, "input"));
}

const struct desktop_hands_owner live__hands_owner = {
	.current = live_hands_current,
	.failed = live_hands_failed,
	.max_text = LIVE_CTL_MAX_PASTE,
};

/* ---- the lease (service thread) ---- */

void live_gate_listener(void)
{
	atomic_store(&live__gate_changed, true);
	live_wake();
}

void live_ctl_broadcast(void)
{
	for (struct live_client* c = live__clients; c; c = c->next) {
		c->state_due = true;
		lws_callback_on_writable(c->wsi);
	}
}

struct live_buf* live_ctl_state(struct live_client* c)
{
	const struct options* opts = options_get();
	json_t* gate = tools_gate_state();
	json_t* msg = json_pack("{s:s, s:s, s:b, s:b, s:s, s:i, s:O, s:O}",
			"type", "control",
			"holder", !live__holder ? "none" : live__holder == c->id ? "you" : "other",
			"can_control", c->role == HTTP_ROLE_PERSON,
			"paused", json_is_true(json_object_get(gate, "paused")),
			"approve", json_string_value(json_object_get(gate, "approve")),
			"idle_timeout_s", opts ? opts->control_idle_timeout_s : 300,
			"help", json_object_get(gate, "help"),
			"approvals", json_object_get(gate, "approvals"));
	json_decref(gate);
	return live_buf_json(msg);
}

static struct live_client* live_client_by_id(uint64_t id)
{
	for (struct live_client* c = live__clients; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

/* Change the holder (0: none). note: the hand-back note for the agent. */
void live_ctl_set_holder(struct live_client* to, const char* why, const char* note)
{
	uint64_t old = live__holder;
	uint64_t id = to ? to->id : 0;
	if (old == id)
		return;
	if (old) {	/* whatever the old holder still pressed comes up */
		struct desktop_hands_op op = { .kind = DESKTOP_HANDS_RELEASE_ALL };
		desktop_hands_push(&op);
	}
	atomic_fetch_add(&live__lease, 1);
	live__holder = id;
	live__holder_active_ms = clock_ms();
	for (struct live_client* c = live__clients; c; c = c->next)
		c->n_keys = 0, c->mods = 0;
	if (to)
		lws_set_timer_usecs(to->wsi, LIVE_CTL_PING_US);
	tools_gate_set_held(id != 0, note);
	if (id && !old)
		events_control("take_control", "dashboard", "ok", NULL);
	else if (id)
		events_control("take_control", "dashboard", "taken_over", NULL);
	else
		events_control("hand_back", "dashboard", why,
				note && *note ? json_pack("{s:b}", "with_note", 1) : NULL);
	metrics_set("deskd_control_held", id ? 1 : 0, NULL);
	live_ctl_broadcast();
}

/* Control is the person's alone: the agent's token watches, so an agent
 * can never take over, pause, hand back or approve its own calls. */
static const char* live_ctl_forbidden_why(const struct live_client* c)
{
	return c->role == HTTP_ROLE_AGENT
		? "the agent's token may watch but not control: take, pause, approve and the "
		  "rest are the person's (the dashboard URL carries the person's token)"
		: "the view token may watch but not control the desktop";
}

/* A person's input message (the role was checked): may this client send
 * it now? The lease and the rate. */
static bool live_ctl_may_input(struct live_client* c, const char* type)
{
	if (live__holder != c->id) {
		live_client_ctrl(c, live_ctl_error_buf("not_in_control",
				"take control first ({\"type\":\"take\"}); input was dropped", type));
		return false;
	}
	int64_t now = clock_ms();
	c->bucket += (double)(now - c->bucket_ms) * LIVE_CTL_RATE / 1000.0;
	if (c->bucket > LIVE_CTL_BUCKET)
		c->bucket = LIVE_CTL_BUCKET;
	c->bucket_ms = now;
	if (c->bucket < 1) {
		metrics_inc("deskd_control_dropped_total", NULL);
		if (now - c->rate_error_ms >= 1000) {
			c->rate_error_ms = now;
			live_client_ctrl(c, live_ctl_error_buf("rate_limited",
					"too many input messages; some were dropped", type));
		}
		return false;
	}
	c->bucket -= 1;
	live__holder_active_ms = now;
	return true;
}

/* The frame space of the client's watch; false (error sent) if none. */
/* A pointer message (move, button, wheel) in the watched frame's pixels:
 * checked into op, or answered with an error. */
static bool live_ctl_point(struct live_client* c, json_t* msg, enum live_ctl_kind kind,
		const char* type, struct desktop_hands_op* op)
{
	struct live_feed* f = c->feed;
	int w = 0, h = 0;
	if (f) {
		pthread_mutex_lock(&f->lock);
		if (f->latest) {
			w = f->latest->width;
			h = f->latest->height;
		}
		pthread_mutex_unlock(&f->lock);
	}
	if (!f || w <= 0) {
		live_client_ctrl(c, live_ctl_error_buf("not_watching",
				"watch the screen or a window first: coordinates are in its frame's pixels",
				type));
		return false;
	}
	struct live_ctl_pointer p;
	char err[200];
	enum tool_code code = live_ctl_parse_pointer(kind, msg, w, h, &p, err, sizeof(err));
	if (code != TOOL_OK) {
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(code), err, type));
		return false;
	}
	op->x = p.x;
	op->y = p.y;
	op->button = p.button;
	op->down = p.down;
	op->notches_x = p.notches_x;
	op->notches_y = p.notches_y;
	op->window = f->key.window;
	op->max_dimension = f->key.max_dimension;
	return true;
}

static void live_ctl_push(struct live_client* c, struct desktop_hands_op* op, const char* type)
{
	op->sender = c->id;
	op->lease = atomic_load(&live__lease);
	if (!desktop_hands_push(op)) {
		metrics_inc("deskd_control_dropped_total", NULL);
		live_client_ctrl(c, live_ctl_error_buf("rate_limited",
				"the desktop is behind on input; this one was dropped", type));
	}
}

/* KeyboardEvent.key names that are not X keysym names. */
static const char* live_browser_key(const char* key, const char* code)
{
	static const struct { const char* key; const char* left; const char* right; } map[] = {
		{ "Enter", "Return", NULL }, { "Backspace", "BackSpace", NULL },
		{ "ArrowLeft", "Left", NULL }, { "ArrowRight", "Right", NULL },
		{ "ArrowUp", "Up", NULL }, { "ArrowDown", "Down", NULL },
		{ "PageUp", "Prior", NULL }, { "PageDown", "Next", NULL },
		{ "Control", "Control_L", "Control_R" }, { "Shift", "Shift_L", "Shift_R" },
		{ "Alt", "Alt_L", "Alt_R" }, { "Meta", "Super_L", "Super_R" },
		{ "OS", "Super_L", "Super_R" }, { "AltGraph", "ISO_Level3_Shift", NULL },
		{ "CapsLock", "Caps_Lock", NULL }, { "ContextMenu", "Menu", NULL },
		{ "NumLock", "Num_Lock", NULL }, { "ScrollLock", "Scroll_Lock", NULL },
		{ "PrintScreen", "Print", NULL }, { " ", "space", NULL },
	};
	bool right = code && strstr(code, "Right") && !strstr(code, "Arrow");
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(key, map[i].key) == 0)
			return right && map[i].right ? map[i].right : map[i].left;
	return key;
}

static void live_ctl_key(struct live_client* c, json_t* msg)
{
	const char* key = json_string_value(json_object_get(msg, "key"));
	const char* code = json_string_value(json_object_get(msg, "code"));
	json_t* jdown = json_object_get(msg, "down");
	if (!key || !*key || strlen(key) > 64 || !json_is_boolean(jdown)) {
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(TOOL_BAD_ARGUMENTS),
				"key needs \"key\" (KeyboardEvent.key) and \"down\" (boolean)", "key"));
		return;
	}
	bool down = json_is_true(jdown);
	char id[32];
	snprintf(id, sizeof(id), "%.31s", code && *code ? code : key);
	if (strcmp(key, "Dead") == 0 || strcmp(key, "Process") == 0
			|| strcmp(key, "Unidentified") == 0)
		return;	/* composition: its text comes as a "text" message */

	/* A key pressed as a keysym comes up as that keysym, whatever the
	 * modifiers are now. */
	if (!down) {
		for (int i = 0; i < c->n_keys; i++) {
			if (strcmp(c->keys[i].code, id) != 0)
				continue;
			struct desktop_hands_op op = { .kind = DESKTOP_HANDS_KEY, .keysym = c->keys[i].keysym };
			c->keys[i] = c->keys[--c->n_keys];
			unsigned mod = strcmp(key, "Control") == 0 ? LIVE_MOD_CTRL
					: strcmp(key, "Alt") == 0 ? LIVE_MOD_ALT
					: strcmp(key, "Meta") == 0 || strcmp(key, "OS") == 0 ? LIVE_MOD_META : 0;
			c->mods &= ~mod;
			live_ctl_push(c, &op, "key");
			return;
		}
		return;	/* typed as text on its way down, or never pressed */
	}
	/* A character with no Control/Alt/Meta: the agent's typing path, so any
	 * character arrives as itself whatever the keymap. */
	if (desktop_text_one_char(key) && strcmp(key, " ") != 0 && !c->mods) {
		struct desktop_hands_op op = { .kind = DESKTOP_HANDS_TEXT, .text = strdup(key), .len = strlen(key) };
		if (op.text)
			live_ctl_push(c, &op, "key");
		return;
	}
	uint32_t keysym;
	char near[120];
	if (desktop_key_lookup(live_browser_key(key, code), &keysym, near, sizeof(near)) < 0) {
		char m[200];
		snprintf(m, sizeof(m), "unknown key '%.40s'%s%s", key, near[0] ? "; closest: " : "", near);
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(TOOL_UNKNOWN_KEY), m, "key"));
		return;
	}
	for (int i = 0; i < c->n_keys; i++)
		if (strcmp(c->keys[i].code, id) == 0)
			return;	/* the browser's auto-repeat: the key is down already */
	if (c->n_keys == LIVE_CTL_MAX_KEYS) {
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(TOOL_BAD_ARGUMENTS),
				"too many keys held at once", "key"));
		return;
	}
	snprintf(c->keys[c->n_keys].code, sizeof(c->keys[0].code), "%s", id);
	c->keys[c->n_keys++].keysym = keysym;
	if (strcmp(key, "Control") == 0)
		c->mods |= LIVE_MOD_CTRL;
	else if (strcmp(key, "Alt") == 0)
		c->mods |= LIVE_MOD_ALT;
	else if (strcmp(key, "Meta") == 0 || strcmp(key, "OS") == 0)
		c->mods |= LIVE_MOD_META;
	struct desktop_hands_op op = { .kind = DESKTOP_HANDS_KEY, .keysym = keysym, .down = true };
	live_ctl_push(c, &op, "key");
}

static void live_ctl_text(struct live_client* c, json_t* msg, enum live_ctl_kind kind,
		const char* type)
{
	const char* text;
	size_t len;
	char err[160];
	enum tool_code code = live_ctl_parse_text(kind, msg, &text, &len, err, sizeof(err));
	if (code != TOOL_OK) {
		live_client_ctrl(c, live_ctl_error_buf(tool_code_name(code), err, type));
		return;
	}
	if (len == 0)
		return;
	struct desktop_hands_op op = { .kind = DESKTOP_HANDS_TEXT, .text = malloc(len + 1), .len = len };
	if (!op.text)
		return;
	memcpy(op.text, text, len + 1);
	live_ctl_push(c, &op, type);
}

static uint64_t live_ctl_id(json_t* msg)
{
	json_t* v = json_object_get(msg, "id");
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static const char* live_ctl_note(json_t* msg)
{
	const char* note = json_string_value(json_object_get(msg, "note"));
	return note && strlen(note) <= LIVE_CTL_MAX_NOTE ? note : NULL;
}

/* take: the lease is this tab's (force: also when another tab holds it). */
static void live_ctl_take(struct live_client* c, json_t* msg, const char* type)
{
	if (live__holder == c->id)
		return;
	if (live__holder && !json_is_true(json_object_get(msg, "force"))) {
		live_client_ctrl(c, live_ctl_error_buf("held_by_other",
				"another tab has control; send {\"type\":\"take\",\"force\":true} "
				"to take it over", type));
		return;
	}
	struct live_client* old = live_client_by_id(live__holder);
	if (old)
		live_client_ctrl(old, live_buf_json(json_pack("{s:s, s:s}", "type", "taken",
				"message", "another tab took control of the desktop")));
	c->bucket = LIVE_CTL_BUCKET;
	c->bucket_ms = clock_ms();
	live_ctl_set_holder(c, NULL, NULL);
}

static void live_ctl_pause(bool pause, const char* type)
{
	json_t* gate = tools_gate_state();
	bool paused = json_is_true(json_object_get(gate, "paused"));
	json_decref(gate);
	if (paused != pause) {
		tools_gate_set_paused(pause);
		events_control(type, "dashboard", "ok", NULL);
	}
}

/* Handles the control messages; false if type is none of them. */
bool live_ctl_message(struct live_client* c, const char* type, json_t* msg)
{
	enum live_ctl_kind kind;
	if (!live_ctl_kind_of(type, &kind))
		return false;
	if (!live_ctl_role_may(c->role, kind)) {
		live_client_ctrl(c, live_ctl_error_buf("forbidden", live_ctl_forbidden_why(c), type));
		return true;
	}
	if (live_ctl_is_input(kind) && !live_ctl_may_input(c, type))
		return true;
	struct desktop_hands_op op = { 0 };
	switch (kind) {
	case LIVE_CTL_TAKE:
		live_ctl_take(c, msg, type);
		break;
	case LIVE_CTL_RELEASE:
		if (live__holder != c->id)
			live_client_ctrl(c, live_ctl_error_buf("not_in_control",
					"this tab does not have control", type));
		else
			live_ctl_set_holder(NULL, "handed_back", live_ctl_note(msg));
		break;
	case LIVE_CTL_PAUSE:
	case LIVE_CTL_RESUME:
		live_ctl_pause(kind == LIVE_CTL_PAUSE, type);
		break;
	case LIVE_CTL_HELP_DISMISS:
		if (tools_gate_dismiss(live_ctl_id(msg), live_ctl_note(msg)) < 0)
			live_client_ctrl(c, live_ctl_error_buf("no_such_request",
					"no help request with this id is pending", type));
		break;
	case LIVE_CTL_APPROVE:
	case LIVE_CTL_DENY:
		if (tools_gate_answer(live_ctl_id(msg), kind == LIVE_CTL_APPROVE) < 0)
			live_client_ctrl(c, live_ctl_error_buf("no_such_request",
					"no approval with this id is pending", type));
		break;
	case LIVE_CTL_MOVE:
	case LIVE_CTL_BUTTON:
	case LIVE_CTL_WHEEL:
		op.kind = kind == LIVE_CTL_MOVE ? DESKTOP_HANDS_MOVE
			: kind == LIVE_CTL_BUTTON ? DESKTOP_HANDS_BUTTON : DESKTOP_HANDS_WHEEL;
		if (live_ctl_point(c, msg, kind, type, &op)
				&& (kind != LIVE_CTL_WHEEL || op.notches_x || op.notches_y))
			live_ctl_push(c, &op, type);
		break;
	case LIVE_CTL_KEY:
		live_ctl_key(c, msg);
		break;
	case LIVE_CTL_TEXT:
	case LIVE_CTL_PASTE:
		live_ctl_text(c, msg, kind, type);
		break;
	}
	return true;
}

/* The timer of a client (service thread): the holder's liveness and idle
 * limit; false to close the socket. */
bool live_ctl_timer(struct live_client* c)
{
	if (live__holder != c->id)
		return true;
	int64_t now = clock_ms();
	if (now - c->last_rx_ms > LIVE_CTL_DEAD_MS) {
		log_info("live: the tab holding control stopped answering; control is released");
		live_ctl_set_holder(NULL, "tab_gone", NULL);
		return false;
	}
	const struct options* opts = options_get();
	int idle_s = opts && opts->control_idle_timeout_s > 0 ? opts->control_idle_timeout_s : 300;
	int64_t last = live__holder_active_ms, done_ms;
	int pending = desktop_hands_pending(&done_ms);
	if (done_ms > last)
		last = done_ms;
	if (pending == 0 && now - last > (int64_t)idle_s * 1000) {
		live_ctl_set_holder(NULL, "idle", NULL);
		live_client_ctrl(c, live_buf_json(json_pack("{s:s, s:s, s:s}", "type", "released",
				"reason", "idle", "message", "control was released after the idle limit "
				"(--control-idle-timeout)")));
	}
	return true;
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

/* ---- hello (built on a worker: the window list needs X) ---- */

/* The mapped windows as the windows tool shows them, or [] when the display
 * cannot be read. */
static json_t* live_windows(void)
{
	json_t* out = json_array();
	struct capture_window_info* list = NULL;
	size_t n = 0;
	if (out && desktop_windows(&list, &n) == 0)
		for (size_t i = 0; i < n; i++)
			json_array_append_new(out, tools_window_json(&list[i]));
	free(list);
	return out ? out : json_array();
}

struct live_buf* live_hello(enum http_role role, bool with_windows)
{
	int w = 0, h = 0;
	desktop_screen_size(&w, &h);
	const struct options* opts = options_get();
	json_t* windows = with_windows ? live_windows() : json_array();
	return live_buf_json(json_pack("{s:s, s:{s:i, s:i}, s:o, s:s, s:i, s:b}",
			"type", "hello", "screen", "width", w, "height", h,
			"windows", windows ? windows : json_array(),
			"role", auth_role_name(role),
			"max_image_dimension", opts ? opts->max_image_dimension : 1280,
			"display", desktop_available()));
}

static void live_post_hello(uint64_t client_id, struct live_buf* hello)
{
	struct live_outbox_item* item = calloc(1, sizeof(*item));
	pthread_mutex_lock(&live__lock);
	if (!item || !hello || live__shutdown) {
		pthread_mutex_unlock(&live__lock);
		free(item);
		live_buf_unref(hello);
		return;
	}
	item->client_id = client_id;
	item->hello = hello;
	item->next = live__outbox;
	live__outbox = item;
	if (live__ctx)
		lws_cancel_service(live__ctx);
	pthread_mutex_unlock(&live__lock);
}

void live_post_ctrl(uint64_t client_id, struct live_buf* ctrl)
{
	struct live_outbox_item* item = calloc(1, sizeof(*item));
	pthread_mutex_lock(&live__lock);
	if (!item || !ctrl || live__shutdown) {
		pthread_mutex_unlock(&live__lock);
		free(item);
		live_buf_unref(ctrl);
		return;
	}
	item->client_id = client_id;
	item->ctrl = ctrl;
	/* Appended, so a client's errors arrive in order. */
	struct live_outbox_item** tail = &live__outbox;
	while (*tail)
		tail = &(*tail)->next;
	*tail = item;
	if (live__ctx)
		lws_cancel_service(live__ctx);
	pthread_mutex_unlock(&live__lock);
}

void live_hello_worker(void* ud)
{
	struct live_hello_job* job = ud;
	live_post_hello(job->client_id, live_hello(job->role, true));
	free(job);
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
	 * (http.c) with the same policy as every HTTP route, before the socket
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
