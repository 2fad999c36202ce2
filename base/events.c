#include "base/events.h"
#include "base/log.h"
#include "base/text.h"
#include "base/real.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EVENTS_HISTORY 200
#define EVENTS_MAX_SUBSCRIBERS 64
#define EVENTS_MAX_STRING 200
#define EVENTS_MAX_NODES 500	/* values shown per args object */

struct subscriber {
	int handle;
	events_fn fn;
	void* ud;
};

static pthread_mutex_t events__mutex = PTHREAD_MUTEX_INITIALIZER;
static json_t* history[EVENTS_HISTORY];
static size_t history_next, history_count;
static struct subscriber subscribers[EVENTS_MAX_SUBSCRIBERS];
static int next_handle = 1;
static atomic_uint_fast64_t next_id = 1;

int events_init(void)
{
	return 0;
}

void events_deinit(void)
{
	pthread_mutex_lock(&events__mutex);
	for (size_t i = 0; i < EVENTS_HISTORY; i++) {
		json_decref(history[i]);
		history[i] = NULL;
	}
	history_count = history_next = 0;
	pthread_mutex_unlock(&events__mutex);
}

/* The first EVENTS_MAX_STRING bytes of a long string, and "...". */
static json_t* cut_string(const char* s)
{
	size_t cut = (size_t)text_cut(s, EVENTS_MAX_STRING);	/* never split a character */
	char* buf = malloc(cut + 4);
	if (!buf)
		return json_string("...");
	memcpy(buf, s, cut);
	memcpy(buf + cut, "...", 4);
	json_t* out = json_string(buf);
	free(buf);
	return out ? out : json_string("...");
}

/* Arguments as shown in events: long strings and keys cut, at most 50
 * members or items (EVENTS_MAX_NODES in all), image data dropped. */
static json_t* summarize(json_t* value, int depth, int* budget)
{
	if (depth > 8 || --*budget < 0)
		return json_string("...");
	if (json_is_string(value)) {
		if (json_string_length(value) <= EVENTS_MAX_STRING)
			return json_incref(value);
		return cut_string(json_string_value(value));
	}
	if (json_is_object(value)) {
		/* Keys too: events are kept (history, live view) and sent to
		 * every subscriber, so one request must not make them huge. */
		json_t* out = json_object();
		const char* key;
		json_t* member;
		size_t i = 0;
		json_object_foreach(value, key, member) {
			if (i++ >= 50) {
				json_object_set_new(out, "...", json_string("..."));
				break;
			}
			if (strlen(key) <= EVENTS_MAX_STRING) {
				json_object_set_new(out, key, summarize(member, depth + 1, budget));
				continue;
			}
			json_t* cut = cut_string(key);
			json_object_set_new(out, json_string_value(cut),
					summarize(member, depth + 1, budget));
			json_decref(cut);
		}
		return out;
	}
	if (json_is_array(value)) {
		json_t* out = json_array();
		size_t i;
		json_t* item;
		json_array_foreach(value, i, item) {
			if (i >= 50) {
				json_array_append_new(out, json_string("..."));
				break;
			}
			json_array_append_new(out, summarize(item, depth + 1, budget));
		}
		return out;
	}
	return json_incref(value);
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void publish(json_t* event)
{
	pthread_mutex_lock(&events__mutex);
	json_decref(history[history_next]);
	history[history_next] = json_incref(event);
	history_next = (history_next + 1) % EVENTS_HISTORY;
	if (history_count < EVENTS_HISTORY)
		history_count++;
	for (int i = 0; i < EVENTS_MAX_SUBSCRIBERS; i++)
		if (subscribers[i].fn)
			subscribers[i].fn(subscribers[i].ud, event);
	pthread_mutex_unlock(&events__mutex);
}

uint64_t events_tool_start(const char* source, const char* session,
		const char* tool, json_t* args)
{
	uint64_t id = atomic_fetch_add(&next_id, 1);
	int budget = EVENTS_MAX_NODES;
	json_t* event = json_pack("{s:s, s:I, s:f, s:s, s:s, s:o, s:s}",
			"type", "event", "id", (json_int_t)id, "ts", real_round(now_seconds(), REAL_TIME),
			"source", source ? source : "rest", "tool", tool,
			"args", summarize(args, 0, &budget), "status", "started");
	if (session)
		json_object_set_new(event, "session", json_string(session));
	publish(event);
	json_decref(event);
	return id;
}

void events_tool_end(uint64_t id, const char* source, const char* session,
		const char* tool, const char* status, double duration_ms,
		const char* error, json_t* extra)
{
	json_t* event = json_pack("{s:s, s:I, s:f, s:s, s:s, s:s, s:f}",
			"type", "event", "id", (json_int_t)id, "ts", real_round(now_seconds(), REAL_TIME),
			"source", source ? source : "rest", "tool", tool,
			"status", status, "duration_ms", real_round(duration_ms, REAL_TIME));
	if (session)
		json_object_set_new(event, "session", json_string(session));
	if (error)
		json_object_set_new(event, "error", json_string(error));
	if (extra) {
		json_object_update(event, extra);
		json_decref(extra);
	}
	log_debug("%s %s %s %.2f ms%s%s", source ? source : "rest", tool, status,
			duration_ms, error ? ": " : "", error ? error : "");
	publish(event);
	json_decref(event);
}

uint64_t events_control(const char* what, const char* source, const char* status,
		json_t* extra)
{
	uint64_t id = atomic_fetch_add(&next_id, 1);
	json_t* event = json_pack("{s:s, s:I, s:f, s:s, s:s, s:s, s:s}",
			"type", "event", "id", (json_int_t)id, "ts", real_round(now_seconds(), REAL_TIME),
			"source", source ? source : "dashboard", "tool", what,
			"kind", "control", "status", status);
	if (extra) {
		int budget = EVENTS_MAX_NODES;
		json_t* small = summarize(extra, 0, &budget);
		json_object_update_missing(event, small);
		json_decref(small);
		json_decref(extra);
	}
	log_info("control: %s %s", what, status);
	publish(event);
	json_decref(event);
	return id;
}

int events_subscribe(events_fn fn, void* ud, int replay)
{
	pthread_mutex_lock(&events__mutex);
	int slot = -1;
	for (int i = 0; i < EVENTS_MAX_SUBSCRIBERS; i++)
		if (!subscribers[i].fn) {
			slot = i;
			break;
		}
	if (slot < 0) {
		pthread_mutex_unlock(&events__mutex);
		return -EAGAIN;
	}
	if (replay) {
		size_t start = (history_next + EVENTS_HISTORY - history_count) % EVENTS_HISTORY;
		for (size_t i = 0; i < history_count; i++)
			fn(ud, history[(start + i) % EVENTS_HISTORY]);
	}
	subscribers[slot] = (struct subscriber){ next_handle++, fn, ud };
	int handle = subscribers[slot].handle;
	pthread_mutex_unlock(&events__mutex);
	return handle;
}

void events_unsubscribe(int handle)
{
	pthread_mutex_lock(&events__mutex);
	for (int i = 0; i < EVENTS_MAX_SUBSCRIBERS; i++)
		if (subscribers[i].handle == handle)
			memset(&subscribers[i], 0, sizeof(subscribers[i]));
	pthread_mutex_unlock(&events__mutex);
}

json_t* events_history(void)
{
	json_t* out = json_array();
	pthread_mutex_lock(&events__mutex);
	size_t start = (history_next + EVENTS_HISTORY - history_count) % EVENTS_HISTORY;
	for (size_t i = 0; i < history_count; i++)
		json_array_append(out, history[(start + i) % EVENTS_HISTORY]);
	pthread_mutex_unlock(&events__mutex);
	return out;
}
