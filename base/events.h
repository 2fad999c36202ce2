#pragma once

/* Activity events: one at the start and one at the end of every tool call,
 * from MCP, REST and the CLI, and one per person or deskd event (take
 * control, hand back, a help request, pause, an approval, a person's input
 * summarised). Kept in a bounded in-memory history and pushed to
 * subscribers (the live view, GET /api/v1/events, the log, /metrics).
 *
 * Every event names its actor (DESIGN.md 5.5): who acted, as the caller
 * said (a label for the timeline, not authentication). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum events_actor_kind {
	EVENTS_ACTOR_AGENT,	/* an MCP client, a REST caller, stdio, the CLI */
	EVENTS_ACTOR_PERSON,	/* someone in the dashboard */
	EVENTS_ACTOR_DESKD,	/* deskd itself (a timeout, an automatic release) */
};

struct events_actor {
	enum events_actor_kind kind;
	const char* name;	/* the MCP client's clientInfo.name, "dashboard", ...;
				 * NULL: the transport's name (via) */
	const char* session;	/* MCP session id, a dashboard tab's id; may be NULL */
	const char* via;	/* "mcp", "rest", "stdio", "cli", "live"; may be NULL */
	bool background;	/* the dashboard's own refresh: counted in /metrics,
				 * never kept in the history nor shown */
};

/** "agent", "person", "deskd". */
const char* events_actor_kind_name(enum events_actor_kind kind);

/** Called for each event on the emitting thread; must not block. event is borrowed. */
typedef void (*events_fn)(void* ud, json_t* event);

int events_init(void);
void events_deinit(void);

/** Record and broadcast a tool-call start; returns the event id. args is
 *  borrowed (long strings are cut, images dropped). actor may be NULL (an
 *  agent over REST). */
uint64_t events_tool_start(const struct events_actor* actor, const char* tool,
		json_t* args);
/** Record and broadcast the end of call `id`. error may be NULL. extra
 *  (stolen, may be NULL) is merged into the event (e.g. "screenshot"). */
void events_tool_end(uint64_t id, const struct events_actor* actor,
		const char* tool, const char* status, double duration_ms,
		const char* error, json_t* extra);

/** Record and broadcast any other event: {type: "event", id, ts, kind,
 *  actor, summary, ...extra}. kind names what happened ("control_take",
 *  "control_release", "input", "help_request", "pause", "approval", ...),
 *  summary is one line for people ("typed 12 characters": never what a
 *  person typed). extra (stolen, may be NULL) is merged in. Returns the id. */
uint64_t events_emit(const struct events_actor* actor, const char* kind,
		const char* summary, json_t* extra);

/** A people-in-the-loop event in the control branch's shape (docs/CONTROL.md):
 *  events_emit with kind "control", "tool": what ("take_control",
 *  "hand_back", "request_human_help", "pause", "resume", "approval") and
 *  "status"; the actor from source: "dashboard" a person, "deskd" deskd,
 *  anything else an agent over that transport. extra is stolen (may be
 *  NULL). Returns the event id. Prefer events_emit with a full actor. */
uint64_t events_control(const char* what, const char* source, const char* status,
		json_t* extra);

/** Subscribe; returns a handle > 0. The callback first receives the history
 *  (if replay is set), then live events; background events are not sent. */
int events_subscribe(events_fn fn, void* ud, int replay);
/** Subscribe to every event, background ones too (metrics). No replay. */
int events_subscribe_all(events_fn fn, void* ud);
void events_unsubscribe(int handle);

/** The history, oldest first. New reference. */
json_t* events_history(void);

/* Screenshot thumbnails: a small JPEG for each of the last
 * EVENTS_THUMBNAILS events that returned a screenshot to an agent (never
 * for a person's input), served at GET /api/v1/events/{id}/thumbnail. */
#define EVENTS_THUMBNAILS 64
#define EVENTS_THUMBNAIL_MAX_BYTES (256 * 1024)

/** Keep a copy of a thumbnail for event id (the oldest one goes). 0,
 *  -EINVAL (empty or too large), -ENOMEM. */
int events_thumbnail_put(uint64_t id, const void* jpeg, size_t len);
/** A malloc'd copy of event id's thumbnail into *out; 0 or -ENOENT. */
int events_thumbnail_get(uint64_t id, void** out, size_t* len);
