#pragma once

/* Activity events: one at the start and one at the end of every tool call,
 * from MCP, REST and the CLI. Kept in a bounded in-memory history and pushed
 * to subscribers (the live view, GET /api/v1/events, the log). */

#include <jansson.h>
#include <stdint.h>

/** Called for each event on the emitting thread; must not block. event is borrowed. */
typedef void (*events_fn)(void* ud, json_t* event);

int events_init(void);
void events_deinit(void);

/** Record and broadcast a tool-call start; returns the event id. args is
 *  borrowed (long strings are cut, images dropped). */
uint64_t events_tool_start(const char* source, const char* session,
		const char* tool, json_t* args);
/** Record and broadcast the end of call `id`. error may be NULL. extra
 *  (stolen, may be NULL) is merged into the event (e.g. a screenshot id). */
void events_tool_end(uint64_t id, const char* source, const char* session,
		const char* tool, const char* status, double duration_ms,
		const char* error, json_t* extra);

/** Record and broadcast a people-in-the-loop event (docs/CONTROL.md):
 *  {type: "event", id, ts, source, tool: what ("take_control", "hand_back",
 *  "request_human_help", "pause", "resume", "approval"), status, ...extra}.
 *  extra is stolen (may be NULL). Returns the event id. */
uint64_t events_control(const char* what, const char* source, const char* status,
		json_t* extra);

/** Subscribe; returns a handle > 0. The callback first receives the history
 *  (if replay is set), then live events. */
int events_subscribe(events_fn fn, void* ud, int replay);
void events_unsubscribe(int handle);

/** The history, oldest first. New reference. */
json_t* events_history(void);
