#include "base/events.h"
#include "base/log.h"
#include "base/text.h"
#include "base/real.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
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
	bool all;	/* background events too */
};

struct thumbnail {
	uint64_t id;
	void* data;
	size_t len;
};

static pthread_mutex_t events__mutex = PTHREAD_MUTEX_INITIALIZER;
static json_t* history[EVENTS_HISTORY];
static size_t history_next, history_count;
static struct subscriber subscribers[EVENTS_MAX_SUBSCRIBERS];
static int next_handle = 1;
static atomic_uint_fast64_t next_id = 1;
static pthread_mutex_t thumbs_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct thumbnail thumbs[EVENTS_THUMBNAILS];
static size_t thumbs_next;

const char* events_actor_kind_name(enum events_actor_kind kind)
{
	switch (kind) {
	case EVENTS_ACTOR_PERSON: return "person";
	case EVENTS_ACTOR_DESKD: return "deskd";
	case EVENTS_ACTOR_AGENT: break;
	}
	return "agent";
}

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
	pthread_mutex_lock(&thumbs_mutex);
	for (size_t i = 0; i < EVENTS_THUMBNAILS; i++) {
		free(thumbs[i].data);
		thumbs[i] = (struct thumbnail){ 0 };
	}
	thumbs_next = 0;
	pthread_mutex_unlock(&thumbs_mutex);
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

/* Background events (the dashboard's refreshes) reach only the subscribers
 * that count everything: they would push real actions out of the history. */
static void publish(json_t* event, bool background)
{
	if (!event)
		return;
	pthread_mutex_lock(&events__mutex);
	if (!background) {
		json_decref(history[history_next]);
		history[history_next] = json_incref(event);
		history_next = (history_next + 1) % EVENTS_HISTORY;
		if (history_count < EVENTS_HISTORY)
			history_count++;
	}
	for (int i = 0; i < EVENTS_MAX_SUBSCRIBERS; i++)
		if (subscribers[i].fn && (!background || subscribers[i].all))
			subscribers[i].fn(subscribers[i].ud, event);
	pthread_mutex_unlock(&events__mutex);
}

static const struct events_actor rest_agent = { EVENTS_ACTOR_AGENT, NULL, NULL, "rest", false };

/* A name as shown: cut, so that a client cannot make every event huge. */
static json_t* short_string(const char* s)
{
	return strlen(s) <= 100 ? json_string(s) : cut_string(s);
}

/* {kind, name, session?, via?}: name is the transport's when the caller
 * gave none. */
static json_t* actor_json(const struct events_actor* a)
{
	const char* name = a->name && *a->name ? a->name : a->via ? a->via
			: a->kind == EVENTS_ACTOR_DESKD ? "deskd" : "unknown";
	json_t* out = json_pack("{s:s, s:o}", "kind", events_actor_kind_name(a->kind),
			"name", short_string(name));
	if (out && a->session)
		json_object_set_new(out, "session", short_string(a->session));
	if (out && a->via)
		json_object_set_new(out, "via", json_string(a->via));
	return out;
}

/* The event's "source" as before actors: the transport family ("mcp" for
 * stdio too), "rest" for an agent that gave none, else the actor's kind. */
static const char* source_of(const struct events_actor* a)
{
	if (a->via)
		return strcmp(a->via, "stdio") == 0 ? "mcp" : a->via;
	return a->kind == EVENTS_ACTOR_AGENT ? "rest" : events_actor_kind_name(a->kind);
}

/* The fields every event has; source and session stay for older readers. */
static json_t* event_new(uint64_t id, const struct events_actor* a, const char* kind)
{
	json_t* event = json_pack("{s:s, s:I, s:f, s:s, s:o}",
			"type", "event", "id", (json_int_t)id, "ts", real_round(now_seconds(), REAL_TIME),
			"kind", kind, "actor", actor_json(a));
	if (!event)
		return NULL;
	json_object_set_new(event, "source", json_string(source_of(a)));
	if (a->session)
		json_object_set_new(event, "session", short_string(a->session));
	return event;
}

uint64_t events_tool_start(const struct events_actor* actor, const char* tool,
		json_t* args)
{
	const struct events_actor* a = actor ? actor : &rest_agent;
	uint64_t id = atomic_fetch_add(&next_id, 1);
	int budget = EVENTS_MAX_NODES;
	json_t* event = event_new(id, a, "tool");
	if (event) {
		json_object_set_new(event, "tool", json_string(tool));
		json_object_set_new(event, "args", summarize(args, 0, &budget));
		json_object_set_new(event, "status", json_string("started"));
	}
	publish(event, a->background);
	json_decref(event);
	return id;
}

void events_tool_end(uint64_t id, const struct events_actor* actor,
		const char* tool, const char* status, double duration_ms,
		const char* error, json_t* extra)
{
	const struct events_actor* a = actor ? actor : &rest_agent;
	json_t* event = event_new(id, a, "tool");
	if (event) {
		json_object_set_new(event, "tool", json_string(tool));
		json_object_set_new(event, "status", json_string(status));
		json_object_set_new(event, "duration_ms",
				json_real(real_round(duration_ms, REAL_TIME)));
		if (error)
			json_object_set_new(event, "error", json_string(error));
		if (extra)
			json_object_update_missing(event, extra);
	}
	json_decref(extra);
	log_debug("%s %s %s %.2f ms%s%s", source_of(a), tool, status,
			duration_ms, error ? ": " : "", error ? error : "");
	publish(event, a->background);
	json_decref(event);
}

uint64_t events_emit(const struct events_actor* actor, const char* kind,
		const char* summary, json_t* extra)
{
	static const struct events_actor deskd = { EVENTS_ACTOR_DESKD, "deskd", NULL, NULL, false };
	const struct events_actor* a = actor ? actor : &deskd;
	uint64_t id = atomic_fetch_add(&next_id, 1);
	json_t* event = event_new(id, a, kind && *kind ? kind : "note");
	if (event && summary)
		json_object_set_new(event, "summary", short_string(summary));
	if (event && extra) {
		/* The shape stays: extra cannot replace id, kind or actor. */
		int budget = EVENTS_MAX_NODES;
		json_t* shown = summarize(extra, 0, &budget);
		json_object_update_missing(event, shown);
		json_decref(shown);
	}
	json_decref(extra);
	log_debug("%s %s: %s", events_actor_kind_name(a->kind), kind ? kind : "note",
			summary ? summary : "");
	publish(event, a->background);
	json_decref(event);
	return id;
}

uint64_t events_control(const char* what, const char* source, const char* status,
		json_t* extra)
{
	const char* via = source ? source : "dashboard";
	struct events_actor actor = { EVENTS_ACTOR_AGENT, NULL, NULL, via, false };
	if (strcmp(via, "dashboard") == 0)
		actor = (struct events_actor){ EVENTS_ACTOR_PERSON, "dashboard", NULL, "dashboard", false };
	else if (strcmp(via, "deskd") == 0)
		actor = (struct events_actor){ EVENTS_ACTOR_DESKD, "deskd", NULL, NULL, false };
	char summary[160];
	snprintf(summary, sizeof(summary), "%s%s%s", what ? what : "control",
			status && strcmp(status, "ok") != 0 ? ": " : "",
			status && strcmp(status, "ok") != 0 ? status : "");
	for (char* p = summary; *p && *p != ':'; p++)
		if (*p == '_')
			*p = ' ';
	json_t* more = json_pack("{s:s, s:s}", "tool", what ? what : "control",
			"status", status ? status : "ok");
	if (more && extra)
		json_object_update_missing(more, extra);
	json_decref(extra);
	return events_emit(&actor, "control", summary, more);
}

static int subscribe(events_fn fn, void* ud, int replay, bool all)
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
	subscribers[slot] = (struct subscriber){ next_handle++, fn, ud, all };
	int handle = subscribers[slot].handle;
	pthread_mutex_unlock(&events__mutex);
	return handle;
}

int events_subscribe(events_fn fn, void* ud, int replay)
{
	return subscribe(fn, ud, replay, false);
}

int events_subscribe_all(events_fn fn, void* ud)
{
	return subscribe(fn, ud, 0, true);
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

int events_thumbnail_put(uint64_t id, const void* jpeg, size_t len)
{
	if (!jpeg || !len || len > EVENTS_THUMBNAIL_MAX_BYTES)
		return -EINVAL;
	void* copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, jpeg, len);
	pthread_mutex_lock(&thumbs_mutex);
	struct thumbnail* t = &thumbs[thumbs_next];
	free(t->data);
	*t = (struct thumbnail){ id, copy, len };
	thumbs_next = (thumbs_next + 1) % EVENTS_THUMBNAILS;
	pthread_mutex_unlock(&thumbs_mutex);
	return 0;
}

int events_thumbnail_get(uint64_t id, void** out, size_t* len)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&thumbs_mutex);
	for (size_t i = 0; i < EVENTS_THUMBNAILS; i++) {
		if (!thumbs[i].data || thumbs[i].id != id)
			continue;
		*out = malloc(thumbs[i].len);
		rc = *out ? 0 : -ENOMEM;
		if (*out) {
			memcpy(*out, thumbs[i].data, thumbs[i].len);
			*len = thumbs[i].len;
		}
		break;
	}
	pthread_mutex_unlock(&thumbs_mutex);
	return rc;
}
