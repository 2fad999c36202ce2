/* Recording tools: record_start, record_stop, recordings, over the registry
 * of recordings in desktop/ (which also serves status, MCP resources and
 * REST downloads through tools_record_list and tools_record_path). */
#include "tools/tools.h"

#include "record/record.h"
#include "desktop/desktop.h"
#include "base/real.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_MAX_SECONDS 3600

static const char* state_name(enum record_state s)
{
	switch (s) {
	case RECORD_RUNNING: return "recording";
	case RECORD_FINISHED: return "finished";
	default: return "failed";
	}
}

static const char* end_name(enum record_end e)
{
	switch (e) {
	case RECORD_END_STOPPED: return "stopped";
	case RECORD_END_WINDOW_GONE: return "window_destroyed";
	case RECORD_END_MAX_SECONDS: return "max_seconds";
	case RECORD_END_DISPLAY_GONE: return "display_gone";
	case RECORD_END_ERROR: return "error";
	default: return NULL;
	}
}

static json_t* recording_json(const struct desktop_recording* r)
{
	const struct record_stats* s = &r->stats;
	char started[32];
	struct tm tm;
	gmtime_r(&r->started, &tm);
	strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t* o = json_pack("{s:s, s:I, s:s, s:s, s:I, s:I, s:f, s:I, s:i, s:i, s:i, s:s}",
			"id", r->id, "window", (json_int_t)r->window, "path", r->path,
			"state", state_name(s->state), "frames", (json_int_t)s->frames,
			"dropped_frames", (json_int_t)s->dropped_frames,
			"duration_seconds", real_round(s->duration_seconds, REAL_TIME), "bytes", (json_int_t)s->bytes,
			"width", s->width, "height", s->height, "fps", r->fps, "started", started);
	if (!o)
		return NULL;
	const char* end = end_name(s->end);
	if (end)
		json_object_set_new(o, "ended", json_string(end));
	if (s->state == RECORD_FAILED && s->message[0])
		json_object_set_new(o, "error", json_string(s->message));
	if (s->state == RECORD_FINISHED)
		json_object_set_new(o, "uri", json_sprintf("deskd://recordings/%s", r->id));
	return o;
}

json_t* tools_record_list(void)
{
	struct desktop_recording* list;
	size_t n;
	if (desktop_recordings(&list, &n) < 0)
		return NULL;
	json_t* arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		json_t* o = recording_json(&list[i]);
		if (o)
			json_array_append_new(arr, o);
	}
	free(list);
	return arr;
}

int tools_record_path(const char* id, char* path, size_t size)
{
	return desktop_recording_path(id, path, size);
}

/* ---- record_start ------------------------------------------------------------------ */

static int record_start_tool(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!tool_arg_window(args, &window)) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"window must be a window id from the windows tool");
		return 0;
	}
	struct desktop_record_params params = {
		.window = window,
		.out = tool_arg_string(args, "out", NULL),
		.fps = (int)tool_arg_int(args, "fps", 30),
		.max_seconds = tool_arg_double(args, "max_seconds", DEFAULT_MAX_SECONDS),
		.cursor = tool_arg_bool(args, "cursor", false),
		.owner = ctx->session,
	};
	if (!params.window) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"window: give a window id from the windows tool");
		return 0;
	}
	struct desktop_recording r;
	char err[1024] = "";
	int rc = desktop_record_start(&params, &r, err, sizeof(err));
	if (rc < 0) {
		enum tool_code code = rc == -EINVAL ? TOOL_BAD_PATH
				: rc == -ENOTSUP ? TOOL_BAD_ARGUMENTS : tool_code_for_errno(rc);
		tool_result_error(out, code, NULL, "%s", err);
		return 0;
	}
	if (ctx->session)
		tool_session_add_recording(ctx->session, r.id);
	/* What ends it, so a client knows whether it must call record_stop:
	 * without a session (MCP 2026-07-28, REST) nothing ends it for the
	 * client. */
	json_t* ends = ctx->session
		? json_pack("[s,s,s,s,s]", "record_stop", "max_seconds", "window_destroyed",
				"session_end", "shutdown")
		: json_pack("[s,s,s,s]", "record_stop", "max_seconds", "window_destroyed",
				"shutdown");
	tool_result_ok(out, json_pack("{s:s, s:I, s:s, s:i, s:i, s:i, s:f, s:o}",
			"id", r.id, "window", (json_int_t)r.window, "path", r.path,
			"width", r.stats.width, "height", r.stats.height, "fps", r.fps,
			"max_seconds", real_round(params.max_seconds, REAL_TIME), "ends_on", ends));
	return 0;
}

/* ---- record_stop ------------------------------------------------------------------- */

static int record_stop_tool(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char* id = tool_arg_string(args, "id", NULL);
	struct desktop_recording r;
	int n_running = 0;
	int rc = desktop_record_stop(id, ctx->session, &r, &n_running);
	if (rc == -ENOENT) {
		tool_result_error(out, TOOL_NO_RECORDING, NULL,
				"no recording with id %s (the recordings tool lists them)", id);
		return 0;
	}
	if (rc == -EBUSY) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"%d recordings are running; give the id of the one to stop", n_running);
		return 0;
	}
	if (rc < 0) {
		tool_result_error(out, TOOL_NO_RECORDING, NULL,
				"no recording is running; start one with record_start");
		return 0;
	}
	const struct record_stats* s = &r.stats;
	if (r.result < 0) {
		tool_result_error(out, r.result == -EEXIST ? TOOL_OUTPUT_EXISTS
				: tool_code_for_write_errno(r.result),
				json_pack("{s:s}", "id", r.id), "recording %s failed: %s", r.id,
				s->message[0] ? s->message : strerror(-r.result));
		return 0;
	}
	json_t* result = json_pack("{s:s, s:s, s:I, s:I, s:I, s:f, s:i, s:i, s:i, s:I}",
			"id", r.id, "path", r.path, "bytes", (json_int_t)s->bytes,
			"frames", (json_int_t)s->frames, "dropped_frames", (json_int_t)s->dropped_frames,
			"duration_seconds", real_round(s->duration_seconds, REAL_TIME), "width", s->width, "height", s->height,
			"fps", s->fps, "window", (json_int_t)s->window);
	if (result && end_name(s->end))
		json_object_set_new(result, "ended", json_string(end_name(s->end)));
	tool_result_ok(out, result);
	const char* name = strrchr(r.path, '/');
	json_t* link = json_pack("{s:s, s:s+, s:s, s:s, s:I}", "type", "resource_link",
			"uri", "deskd://recordings/", r.id, "name", name ? name + 1 : r.path,
			"mimeType", "video/mp4", "size", (json_int_t)s->bytes);
	if (link && out->content)
		json_array_append_new(out->content, link);
	else
		json_decref(link);
	return 0;
}

/* ---- recordings -------------------------------------------------------------------- */

static int recordings_tool(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	(void)ctx;
	(void)args;
	json_t* list = tools_record_list();
	if (!list) {
		tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory");
		return 0;
	}
	tool_result_ok(out, json_pack("{s:o}", "recordings", list));
	return 0;
}

/* The schemas are data: tools/schemas/record.json, under each tool's name. */

const struct tool_def tools_record[] = {
	{
		.name = "record_start",
		.title = "Start recording a window",
		.description =
			"Record a window's own pixels to MP4 in the background; returns id and path now. "
			"The file appears when it ends (record_stop, max_seconds...: see ends_on). out: an "
			"absolute path under an output root (0600, never replaced).",
		.flags = TOOL_OPEN_WORLD | TOOL_GROUPED,
		.handler = record_start_tool,
	},
	{
		.name = "record_stop",
		.title = "Stop a recording",
		.description =
			"Stop a recording (id, or your only one) and publish its MP4; also answers for "
			"one that already ended.",
		.flags = TOOL_OPEN_WORLD | TOOL_GROUPED,
		.handler = record_stop_tool,
	},
	{
		.name = "recordings",
		.title = "List recordings",
		.description =
			"This server's recordings, newest first.",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_NO_DISPLAY | TOOL_GROUPED,
		.handler = recordings_tool,
	},
	{
		.name = "record",
		.title = "Record a window",
		.description = "start: record a window's own pixels to MP4 in the background (id and "
			"path now, the file once it ends); stop: end one (default: yours) and publish it; "
			"list: newest first. out: absolute, under an output root (0600, never replaced).",
		.flags = TOOL_GROUP,
		.members = (const struct tool_group_member[]){
			{ "start", "record_start" }, { "stop", "record_stop" },
			{ "list", "recordings" }, { 0 } },
	},
	{ 0 },
};
