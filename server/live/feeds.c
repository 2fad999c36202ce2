/* The live view's frames and feeds (server/live/live_private.h): refcounted
 * buffers, one producer thread per feed with its own X connection, and the
 * feed list (service thread). */
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

static void live_feed_publish(struct live_feed* self, const struct desktop_feed_frame* fr,
		int64_t woke_ns, int64_t encoded_ns)
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
	frame->woke_ns = woke_ns;
	frame->captured_ns = fr->captured_ns;
	frame->encoded_ns = encoded_ns;
	frame->header = live_buf_json(header ? live_target_json(self, header) : NULL);
	frame->jpeg = live_buf_new(fr->jpeg, fr->len);
	if (!frame->header || !frame->jpeg) {
		live_frame_unref(frame);
		return;
	}
	frame->published_ns = clock_ns();
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
		int64_t woke_ns = clock_ns();
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
		live_feed_publish(self, &fr, woke_ns, clock_ns());
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
