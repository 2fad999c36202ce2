/* The window tools: windows (the list), window_focus, window_move. The
 * window list and these operations are desktop/ and capture/ services; the
 * handlers parse arguments and build the results. */
#include "tools/tools.h"
#include "capture/capture.h"
#include "desktop/desktop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Helpers ------------------------------------------------------------------ */

/* The code for a failed capture call: whatever failed, a context whose
 * connection died means the display is gone (D10). */
static enum tool_code capture_code(struct desktop_capture* p, int rc)
{
	return capture_connected(desktop_capture_backend(p)) ? tool_code_for_errno(rc)
			: TOOL_DISPLAY_UNAVAILABLE;
}

static int fail_rc(struct tool_result* out, struct desktop_capture* p, int rc)
{
	tool_result_error(out, capture_code(p, rc), NULL, "%s",
			capture_error(desktop_capture_backend(p)));
	return 0;
}

/* A pooled capture context, or NULL with display_unavailable in out. */
static struct desktop_capture* pool_get_for(struct tool_result* out)
{
	char err[256];
	struct desktop_capture* p = desktop_capture_get(err, sizeof(err));
	if (!p)
		tool_result_error(out, TOOL_DISPLAY_UNAVAILABLE, NULL,
				"cannot connect to the X display: %s", err);
	return p;
}

/* The window argument: absent or 0 = the screen. */
static bool window_arg(json_t* args, uint32_t* window, struct tool_result* out)
{
	if (!tool_arg_window(args, window)) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"window must be a window id from the windows tool (or 0 for the screen)");
		return false;
	}
	return true;
}

/* The window argument where one is required (not the screen). */
static bool window_required(json_t* args, uint32_t* window, struct tool_result* out)
{
	if (!window_arg(args, window, out))
		return false;
	if (!*window)
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"window is required (an id from the windows tool)");
	return *window != 0;
}

/* ---- windows ----------------------------------------------------------------------- */

json_t* tools_window_json(const struct capture_window_info* w)
{
	return json_pack("{s:I, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:b, s:b}",
			"id", (json_int_t)w->id, "pid", w->pid, "title", w->title,
			"app", w->app[0] ? w->app : w->instance,
			"x", w->rect.x, "y", w->rect.y, "width", w->rect.width,
			"height", w->rect.height, "focused", w->focused, "visible", w->visible);
}

static bool contains_nocase(const char* hay, const char* needle)
{
	size_t n = strlen(needle);
	for (const char* h = hay; *h; h++)
		if (strncasecmp(h, needle, n) == 0)
			return true;
	return n == 0;
}

static int windows(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char* app = tool_arg_string(args, "app", NULL);
	int64_t pid = tool_arg_int(args, "pid", 0);
	bool on_screen = tool_arg_bool(args, "on_screen_only", false);
	struct desktop_capture* p = pool_get_for(out);
	if (!p)
		return 0;
	struct capture_window_info* list;
	size_t n;
	int rc = capture_list_windows(desktop_capture_backend(p), &list, &n);
	if (rc < 0) {
		fail_rc(out, p, rc);
		desktop_capture_put(p);
		return 0;
	}
	json_t* arr = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct capture_window_info* w = &list[i];
		if (app && !contains_nocase(w->app, app) && !contains_nocase(w->instance, app))
			continue;
		if (pid && w->pid != pid)
			continue;
		if (on_screen && !w->visible)
			continue;
		json_array_append_new(arr, tools_window_json(w));
	}
	free(list);
	int sw, sh;
	capture_screen_size(desktop_capture_backend(p), &sw, &sh);
	desktop_capture_put(p);
	tool_result_ok(out, json_pack("{s:o, s:{s:i, s:i}}", "windows", arr,
			"screen", "width", sw, "height", sh));
	return 0;
}

/* ---- window_focus, window_move ------------------------------------------------------ */

/* After a window operation (rc): the window as it is now, or the error;
 * gives the context back. */
static int window_reply(struct tool_result* out, struct desktop_capture* p, uint32_t window,
		int rc)
{
	struct capture_window_info info;
	if (rc == 0)
		rc = capture_window_info(desktop_capture_backend(p), window, &info);
	if (rc < 0)
		fail_rc(out, p, rc);
	else
		tool_result_ok(out, tools_window_json(&info));
	desktop_capture_put(p);
	return 0;
}

static int window_focus(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!window_required(args, &window, out))
		return 0;
	struct desktop_capture* p = pool_get_for(out);
	if (!p)
		return 0;
	int rc = capture_focus_window(desktop_capture_backend(p), window);
	return window_reply(out, p, window, rc);
}

static int window_move(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!window_required(args, &window, out))
		return 0;
	int v[4];
	const int* ptr[4] = { NULL };
	const char* names[4] = { "x", "y", "width", "height" };
	int given = 0;
	for (int i = 0; i < 4; i++) {
		json_t* j = json_object_get(args, names[i]);
		if (!j)
			continue;
		v[i] = (int)json_integer_value(j);
		ptr[i] = &v[i];
		given++;
	}
	if (!given) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "give at least one of x, y, width, height");
		return 0;
	}
	struct desktop_capture* p = pool_get_for(out);
	if (!p)
		return 0;
	struct capture_rect r;
	int rc = capture_move_window(desktop_capture_backend(p), window, ptr[0], ptr[1], ptr[2], ptr[3], &r);
	return window_reply(out, p, window, rc);
}

/* ---- The table ------------------------------------------------------------------------ */

#define INT "{\"type\":\"integer\"}"
#define STR "{\"type\":\"string\"}"
#define BOOL "{\"type\":\"boolean\"}"
#define WINDOW_REQUIRED \
	"\"window\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":4294967295," \
	"\"description\":\"Window id (windows tool).\"}"
#define WINDOW_ITEM \
	"{\"type\":\"object\",\"properties\":{" \
	"\"id\":" INT ",\"pid\":" INT ",\"title\":" STR ",\"app\":" STR ",\"x\":" INT ",\"y\":" INT \
	",\"width\":" INT ",\"height\":" INT ",\"focused\":" BOOL ",\"visible\":" BOOL "}," \
	"\"required\":[\"id\",\"pid\",\"title\",\"app\",\"x\",\"y\",\"width\",\"height\",\"focused\",\"visible\"]}"


const struct tool_def tools_windows[] = {
	{
		.name = "windows",
		.title = "List windows",
		.description =
			"Top-level windows: id (the window argument of other tools), pid, title, app, "
			"client area in desktop pixels, focused, visible. Filter by app, pid or on_screen_only.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
			"\"app\":" STR ",\"pid\":{\"type\":\"integer\",\"minimum\":1},\"on_screen_only\":" BOOL "}}",
		.output_schema = "{\"type\":\"object\",\"properties\":{\"windows\":{\"type\":\"array\",\"items\":"
			WINDOW_ITEM "},\"screen\":{\"type\":\"object\",\"properties\":{\"width\":" INT ",\"height\":" INT "},"
			"\"required\":[\"width\",\"height\"]}},\"required\":[\"windows\",\"screen\"]}",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = windows,
	},
	{
		.name = "window_focus",
		.title = "Focus a window",
		.description = "Raise a window (restoring it if minimized) and give it the keyboard focus; "
			"returns its info.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"window\"],\"properties\":{"
			WINDOW_REQUIRED "}}",
		.output_schema = WINDOW_ITEM,
		.flags = TOOL_DESKTOP_LOCK | TOOL_IDEMPOTENT,
		.handler = window_focus,
	},
	{
		.name = "window_move",
		.title = "Move or resize a window",
		.description =
			"Move or resize a window's client area (desktop pixels); omitted values stay.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"window\"],\"properties\":{"
			WINDOW_REQUIRED ","
			"\"x\":{\"type\":\"integer\",\"minimum\":-32768,\"maximum\":32767},"
			"\"y\":{\"type\":\"integer\",\"minimum\":-32768,\"maximum\":32767},"
			"\"width\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":32767},"
			"\"height\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":32767}}}",
		.output_schema = WINDOW_ITEM,
		.flags = TOOL_DESKTOP_LOCK,
		.handler = window_move,
	},
	{ 0 },
};
