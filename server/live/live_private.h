#pragma once

/* Private to server/live/: the live view split by thread (server/live.h is
 * its face). live.c: the lws protocol, the events ring, auth and the
 * service-thread wake-up; feeds.c: buffers, frames, feeds and their producer
 * threads; clients.c: the sockets, their writes and backpressure; control.c:
 * the lease and the control messages (the hands are desktop/hands.c);
 * hello.c: the hello on a worker and the outbox other threads post to. */

#include "desktop/desktop.h"
#include "server/http/http.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lws;
struct lws_context;

#define LIVE_PROTOCOL "deskd.live"
#define LIVE_MAX_MESSAGE (16 * 1024)	/* client messages; larger closes with 1009 */
#define LIVE_EVENT_RING 256		/* events kept for slow clients and replay */
#define LIVE_MAX_CTRL 8			/* queued control messages per client */
#ifndef LIVE_PING_US
#define LIVE_PING_US (10 * 1000 * 1000)	/* heartbeat tick */
#endif
#ifndef LIVE_DEAD_MS
#define LIVE_DEAD_MS 35000		/* no pong or message for this long: close */
#endif
#define LIVE_DEFAULT_FPS 15
#define LIVE_MAX_FPS 60
#define LIVE_DEFAULT_QUALITY 70
#define LIVE_IDLE_POLL_MS 100		/* cursor poll while nothing changes */
#define LIVE_MAX_FEEDS 16		/* distinct (target, settings) at once */
/* Control (docs/CONTROL.md) */
#define LIVE_CTL_PING_US (1000 * 1000)	/* the holder's heartbeat */
#define LIVE_CTL_DEAD_MS 5000		/* the holder answered nothing this long */
#define LIVE_CTL_BUCKET 400.0		/* input messages in a burst */
#define LIVE_CTL_RATE 200.0		/* input messages a second, sustained */
#define LIVE_CTL_MAX_KEYS DESKTOP_HANDS_MAX_KEYS	/* keys held at once by a person */
#define LIVE_CTL_MAX_NOTE 2000

enum { LIVE_MOD_CTRL = 1, LIVE_MOD_ALT = 2, LIVE_MOD_META = 4 };

struct live_buf {
	atomic_int refs;
	size_t len;
	unsigned char data[];	/* LWS_PRE bytes, then len bytes of payload */
};

struct live_frame {
	atomic_int refs;
	uint64_t seq;
	int width, height;	/* of the JPEG: the space of control coordinates */
	uint64_t cursor_seq;	/* the feed's cursor state this frame carries */
	/* clock_ns() stamps along its way, for the trace log: the change seen,
	 * the pixels read, the JPEG done, published to the service thread. */
	int64_t woke_ns, captured_ns, encoded_ns, published_ns;
	struct live_buf* header;
	struct live_buf* jpeg;
};

struct live_feed_key {
	uint32_t window;	/* 0 = the screen */
	int fps, quality, max_dimension;
};

struct live_feed {
	atomic_int refs;	/* the feed list's and the producer's */
	struct live_feed_key key;

	/* Service thread only. */
	struct live_feed* next;
	int n_clients;
	bool error_sent;

	/* Under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct live_frame* latest;
	struct live_buf* cursor;	/* {"type":"cursor",...} */
	uint64_t cursor_seq;
	struct live_buf* error;		/* {"type":"error",...}: the producer gave up */
	struct live_buf* notice;	/* {"type":"error",...} that does not end the
					 * feed (the display is gone for now), or NULL */
	uint64_t notice_seq;		/* bumped whenever notice changes */

	atomic_uint_fast64_t latest_seq, latest_cursor_seq;
	atomic_bool failed;
};

/* ---- clients (lws per-session data, zeroed by lws) ---- */

struct live_client {
	struct lws* wsi;
	struct live_client* prev;
	struct live_client* next;
	uint64_t id;
	enum http_role role;
	bool established;
	bool has_slot;			/* holds one of its role's stream slots */

	struct live_buf* hello;		/* set by the hello worker (via the outbox) */
	bool hello_sent;
	struct live_buf* ctrl[LIVE_MAX_CTRL];
	int n_ctrl;
	uint64_t event_seq;		/* last event sent */
	bool ping_due;
	int64_t last_rx_ms;

	struct live_feed* feed;
	uint64_t frame_seq;		/* last frame sent from this feed */
	uint64_t cursor_seq;		/* last cursor state sent */
	uint64_t notice_seq;		/* last feed notice seen */
	struct live_frame* pending;	/* header sent, JPEG not yet */
	int64_t header_ns;		/* when pending's header went out (trace) */
	int64_t rx_ns;			/* when the message being read arrived */

	char* rx;
	size_t rx_len, rx_cap;

	/* Control (service thread). */
	bool state_due;			/* send a "control" state message */
	double bucket;			/* rate limit: input messages left */
	int64_t bucket_ms, rate_error_ms;
	unsigned mods;			/* Control/Alt/Meta held (LIVE_MOD_*) */
	struct { char code[32]; uint32_t keysym; } keys[LIVE_CTL_MAX_KEYS];
	int n_keys;			/* keys pressed as keysyms, by code */
};

/* ---- the outbox: what other threads post to a client ---- */

struct live_outbox_item {
	struct live_outbox_item* next;
	uint64_t client_id;
	struct live_buf* hello;
	struct live_buf* ctrl;		/* or a control message (an input error) */
};


/* A hello built on a worker for a client (hello.c, clients.c). */
struct live_hello_job {
	uint64_t client_id;
	enum http_role role;
};

/* Counters for live_stats(). */
struct live_counters {
	atomic_uint_fast64_t captures, encodes, frames_sent, frames_skipped,
			bytes_sent, events_sent, cursor_sent, clients_total,
			refused;
	atomic_int clients, feeds;
};

/* Module state (live.c defines it; the guard is named at the definition). */
extern pthread_mutex_t live__lock;
extern pthread_cond_t live__cond;
extern struct lws_context* live__ctx;
extern bool live__shutdown;
extern struct live_outbox_item* live__outbox;
extern struct live_buf* live__events[LIVE_EVENT_RING];
extern uint64_t live__event_next;
extern int live__producers;
extern struct live_client* live__clients;
extern struct live_feed* live__feeds;
extern uint64_t live__next_client_id;
extern struct live_counters live__stats;
/* The lease (control.c). */
extern uint64_t live__holder;
extern int64_t live__holder_active_ms;
extern atomic_uint_fast64_t live__lease;
extern atomic_bool live__gate_changed;
extern const struct desktop_hands_owner live__hands_owner;

/* live.c */
void live_wake(void);
struct live_buf* live_next_event(uint64_t* seq);
bool live_has_event(uint64_t seq);

/* feeds.c */
struct live_buf* live_buf_json(json_t* json);
struct live_buf* live_buf_ref(struct live_buf* self);
void live_buf_unref(struct live_buf* self);
struct live_frame* live_frame_ref(struct live_frame* self);
void live_frame_unref(struct live_frame* self);
void live_feed_unref(struct live_feed* self);
struct live_feed* live_feed_get(const struct live_feed_key* key);
void live_feed_stop(struct live_feed* self);
void live_feed_put(struct live_feed* self);

/* clients.c */
void live_client_ctrl(struct live_client* c, struct live_buf* buf);
bool live_client_has_work(struct live_client* c);
int live_client_writeable(struct live_client* c);
void live_client_unwatch(struct live_client* c);
int live_client_receive(struct live_client* c, const void* in, size_t len);
void live_client_closed(struct live_client* c);
void live_client_established(struct lws* wsi, struct live_client* c);

/* control.c */
void live_gate_listener(void);
void live_ctl_broadcast(void);
struct live_buf* live_ctl_state(struct live_client* c);
void live_ctl_set_holder(struct live_client* to, const char* why, const char* note);
bool live_ctl_message(struct live_client* c, const char* type, json_t* msg);
bool live_ctl_timer(struct live_client* c);

/* hello.c */
struct live_buf* live_hello(enum http_role role, bool with_windows);
void live_post_ctrl(uint64_t client_id, struct live_buf* ctrl);
void live_hello_worker(void* ud);
