/* The window tools: windows (the list), window_focus, window_move. The
 * window list and these operations are desktop/ and capture/ services; the
 * handlers parse arguments and build the results. */
#include "tools/tools.h"
#include "tools/capture_args.h"
#include "capture/capture.h"
#include "desktop/desktop.h"
#include "a11y/a11y.h"
#include "base/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Helpers ------------------------------------------------------------------ */

/* The window argument where one is required (not the screen). */
static bool window_required(json_t* args, uint32_t* window, struct tool_result* out)
{
	if (!tools_window_arg(args, window, out))
		return false;
	if (!*window)
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"window is required (an id from the windows tool)");
	return *window != 0;
}

/* ---- windows ----------------------------------------------------------------------- */

int tools_window_app_pid(const struct capture_window_info* w, const struct a11y_app* apps,
		size_t n)
{
	if (w->pid > 0) {
		for (size_t i = 0; i < n; i++)
			if (apps[i].pid == w->pid)
				return w->pid;
		return 0;
	}
	const char* const names[] = { w->instance, w->app };
	return a11y_app_pid_named(apps, n, names, 2);
}

json_t* tools_window_json(const struct capture_window_info* w)
{
	json_t* j = json_pack("{s:I, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:b, s:b}",
			"id", (json_int_t)w->id, "pid", w->pid, "title", w->title,
			"app", w->app[0] ? w->app : w->instance,
			"x", w->rect.x, "y", w->rect.y, "width", w->rect.width,
			"height", w->rect.height, "focused", w->focused, "visible", w->visible);
	json_t* more = json_pack("{s:s, s:s, s:b, s:b, s:b, s:b, s:I}", "class", w->app,
			"instance", w->instance, "minimized", w->minimized, "maximized", w->maximized,
			"fullscreen", w->fullscreen, "modal", w->modal,
			"transient_for", (json_int_t)w->transient_for);
	json_object_update(j, more);
	json_decref(more);
	return j;
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
	struct desktop_capture* p = tools_capture_get(out);
	if (!p)
		return 0;
	struct capture_window_info* list;
	size_t n;
	int rc = capture_list_windows(desktop_capture_backend(p), &list, &n);
	if (rc < 0) {
		tools_capture_fail(out, p, rc);
		desktop_capture_put(p);
		return 0;
	}
	/* Which pids publish an accessibility tree (the ui tools), bounded. */
	struct a11y_app* apps = NULL;
	size_t n_apps = 0;
	bool pidless = false;
	for (size_t i = 0; i < n; i++)
		pidless |= list[i].pid <= 0;
	bool know_a11y = a11y_apps(&apps, &n_apps, clock_ms() + 300, pidless, NULL, 0) == 0;
	json_t* arr = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct capture_window_info* w = &list[i];
		if (app && !contains_nocase(w->app, app) && !contains_nocase(w->instance, app))
			continue;
		if (pid && w->pid != pid)
			continue;
		if (on_screen && !w->visible)
			continue;
		json_t* j = tools_window_json(w);
		if (know_a11y) {
			bool accessible = tools_window_app_pid(w, apps, n_apps) > 0;
			json_object_set_new(j, "accessible", json_boolean(accessible));
		}
		json_array_append_new(arr, j);
	}
	free(apps);
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
		tools_capture_fail(out, p, rc);
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
	struct desktop_capture* p = tools_capture_get(out);
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
	struct desktop_capture* p = tools_capture_get(out);
	if (!p)
		return 0;
	struct capture_rect r;
	int rc = capture_move_window(desktop_capture_backend(p), window, ptr[0], ptr[1], ptr[2], ptr[3], &r);
	return window_reply(out, p, window, rc);
}

/* ---- Window states ---------------------------------------------------------------- */

static json_t* outcome_json(uint32_t window, const struct desktop_window_outcome* o,
		enum desktop_window_op op)
{
	const struct desktop_window_state* a = &o->after;
	json_t* j = json_pack("{s:I, s:b, s:b, s:b}", "window", (json_int_t)window,
			"applied", o->applied, "window_manager", o->wm, "exists", a->exists);
	if (a->exists) {
		json_t* st = json_pack("{s:b, s:b, s:b, s:b, s:b, s:i, s:i, s:i, s:i}",
				"mapped", a->mapped, "minimized", a->minimized,
				"maximized", a->maximized, "fullscreen", a->fullscreen, "modal", a->modal,
				"x", a->x, "y", a->y, "width", a->width, "height", a->height);
		json_object_update(j, st);
		json_decref(st);
	}
	if (o->wm_name[0])
		json_object_set_new(j, "wm_name", json_string(o->wm_name));
	if (op == DESKTOP_WINDOW_CLOSE) {
		json_object_set_new(j, "closed", json_boolean(o->closed));
		json_object_set_new(j, "killed", json_boolean(o->killed));
		json_t* d = json_array();
		for (int i = 0; i < o->n_dialogs; i++)
			json_array_append_new(d, json_integer((json_int_t)o->dialogs[i]));
		json_object_set_new(j, "dialogs", d);
	}
	if (o->note[0])
		json_object_set_new(j, "message", json_string(o->note));
	return j;
}

static int window_op(struct tool_ctx* ctx, json_t* args, struct tool_result* out,
		enum desktop_window_op op, int default_timeout_ms)
{
	uint32_t window;
	if (!window_required(args, &window, out))
		return 0;
	struct desktop_window_request req = {
		.window = window, .op = op,
		.width = (int)tool_arg_int(args, "width", 0),
		.height = (int)tool_arg_int(args, "height", 0),
		.force = tool_arg_bool(args, "force", false),
		.timeout_ms = (int)tool_arg_int(args, "timeout_ms", default_timeout_ms),
		.cancelled = ctx->cancelled,
	};
	struct desktop_window_outcome o;
	char err[256];
	int rc = desktop_window_op(&req, &o, err, sizeof(err));
	if (rc < 0)
		tool_result_error(out, tool_code_for_errno(rc), NULL, "%s", err);
	else
		tool_result_ok(out, outcome_json(window, &o, op));
	return 0;
}

#define WINDOW_STATE_TIMEOUT_MS 1000
#define WINDOW_CLOSE_TIMEOUT_MS 2000

static int window_minimize(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	return window_op(ctx, args, out, DESKTOP_WINDOW_MINIMIZE, WINDOW_STATE_TIMEOUT_MS);
}

static int window_maximize(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	return window_op(ctx, args, out, DESKTOP_WINDOW_MAXIMIZE, WINDOW_STATE_TIMEOUT_MS);
}

static int window_restore(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	return window_op(ctx, args, out, DESKTOP_WINDOW_RESTORE, WINDOW_STATE_TIMEOUT_MS);
}

static int window_fullscreen(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	return window_op(ctx, args, out, DESKTOP_WINDOW_FULLSCREEN, WINDOW_STATE_TIMEOUT_MS);
}

static int window_raise(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	return window_op(ctx, args, out, DESKTOP_WINDOW_RAISE, WINDOW_STATE_TIMEOUT_MS);
}

static int window_resize(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	return window_op(ctx, args, out, DESKTOP_WINDOW_RESIZE, WINDOW_STATE_TIMEOUT_MS);
}

static int window_close(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	return window_op(ctx, args, out, DESKTOP_WINDOW_CLOSE, WINDOW_CLOSE_TIMEOUT_MS);
}

/* ---- launch ------------------------------------------------------------------------- */

/* args' argv and env as C strings (borrowed from args); false with the
 * error in out. A JSON string with a NUL in it cannot be passed to exec. */
static bool launch_args(json_t* args, const char*** argv, size_t* argc, const char*** env,
		size_t* n_env, struct tool_result* out)
{
	json_t* a = json_object_get(args, "argv");
	json_t* e = json_object_get(args, "env");
	*argc = json_array_size(a);
	*n_env = json_array_size(e);
	*argv = calloc(*argc + 1, sizeof(**argv));
	*env = calloc(*n_env + 1, sizeof(**env));
	if (!*argv || !*env) {
		tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory");
		return false;
	}
	size_t i;
	json_t* item;
	json_array_foreach(a, i, item) {
		if (!json_is_string(item)) {
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "argv[%zu] must be a string", i);
			return false;
		}
		if (strlen(json_string_value(item)) != json_string_length(item)) {
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
					"argv[%zu] contains a NUL byte: nothing was started", i);
			return false;
		}
		(*argv)[i] = json_string_value(item);
	}
	json_array_foreach(e, i, item) {
		const char* v = json_string_value(item);
		if (!v || strlen(v) != json_string_length(item) || !strchr(v, '=')) {
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "env[%zu] must be a string "
					"\"NAME=value\" without NUL bytes", i);
			return false;
		}
		(*env)[i] = (char*)v;
	}
	return true;
}

static enum tool_code launch_code(int rc)
{
	switch (rc) {
	case -EINVAL: return TOOL_BAD_ARGUMENTS;
	case -ENOENT: return TOOL_NOT_FOUND;
	case -EPERM: return TOOL_FORBIDDEN;
	case -ENOEXEC: return TOOL_BAD_ARGUMENTS;
	case -EMFILE: return TOOL_FORBIDDEN;
	case -ESHUTDOWN:
	case -ECONNRESET: return TOOL_DISPLAY_UNAVAILABLE;
	default: return tool_code_for_errno(rc);
	}
}

static int launch(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char** argv = NULL;
	const char** env = NULL;
	size_t argc = 0, n_env = 0;
	if (!launch_args(args, &argv, &argc, &env, &n_env, out))
		goto done;
	struct desktop_launch_params p = {
		.argv = (char* const*)argv, .argc = argc, .env = (char* const*)env, .n_env = n_env,
		.cwd = tool_arg_string(args, "cwd", NULL),
		.wait_for_window = tool_arg_bool(args, "wait_for_window", true),
		.timeout_ms = (int)tool_arg_int(args, "timeout_ms", 5000),
		.cancelled = ctx->cancelled, .deadline_ms = ctx->deadline_ms,
	};
	struct desktop_launch_result r;
	char err[512];
	int rc = desktop_launch(&p, &r, err, sizeof(err));
	if (rc < 0) {
		json_t* extra = r.pid ? json_pack("{s:I}", "pid", (json_int_t)r.pid) : NULL;
		tool_result_error(out, launch_code(rc), extra, "%s", err);
		goto done;
	}
	json_t* res = json_pack("{s:I, s:s, s:s}", "pid", (json_int_t)r.pid,
			"program", r.program, "path", r.path);
	char msg[512] = "";
	if (r.window) {
		json_object_set_new(res, "window", json_integer((json_int_t)r.window));
	} else if (r.exited) {
		json_object_set_new(res, "exited", json_true());
		json_object_set_new(res, "exit_code", json_integer(r.exit_code));
		if (r.signal)
			json_object_set_new(res, "signal", json_string(strsignal(r.signal)));
		json_object_set_new(res, "output", json_string(r.output));
		snprintf(msg, sizeof(msg), "%.200s (pid %ld) ended after %lld ms without a window (%s %d)",
				r.path, r.pid, (long long)r.waited_ms, r.signal ? "signal" : "exit code",
				r.signal ? r.signal : r.exit_code);
		/* A failure is an error, with its last words: no agent should poll
		 * the window list for a program that is gone. Exit 0 (a launcher
		 * whose program went elsewhere, a command) is a result. */
		if (r.signal || r.exit_code != 0) {
			tool_result_error(out, TOOL_PROGRAM_EXITED, res, "%s%s%.700s", msg,
					r.output[0] ? "; its last output:\n" : "; it wrote nothing", r.output);
			goto done;
		}
	} else if (r.note[0]) {
		snprintf(msg, sizeof(msg), "started %.200s (pid %ld); not waited for its window: %s",
				r.path, r.pid, r.note);
	} else if (p.wait_for_window) {
		json_object_set_new(res, "timed_out", json_true());
		snprintf(msg, sizeof(msg), "started %.200s (pid %ld); it mapped no window within %lld ms "
				"(it still runs)", r.path, r.pid, (long long)r.waited_ms);
	}
	if (msg[0])
		json_object_set_new(res, "message", json_string(msg));
	tool_result_ok(out, res);
done:
	free(argv);
	free(env);
	return 0;
}

/* ---- The table ------------------------------------------------------------------------ */

/* The schemas are data: tools/schemas/windows.json, under each tool's name. */

#define WINDOW_STATE_TOOL(tool, tool_title, text, fn) { \
		.name = tool, .title = tool_title, .description = text, \
		.flags = TOOL_DESKTOP_LOCK | TOOL_IDEMPOTENT | TOOL_GROUPED, .handler = fn }

const struct tool_def tools_windows[] = {
	{
		.name = "launch",
		.title = "Launch a program",
		.description =
			"Start a program without a shell (argv[0] on PATH; env [\"NAME=value\"], with "
			"--allow-launch none that loads code: LD_*, PATH, PYTHON*...); returns its pid and "
			"first window (waits up to timeout_ms unless wait_for_window is false). Stopped when "
			"deskd exits.",
		.flags = TOOL_OPEN_WORLD,
		.handler = launch,
	},
	{
		.name = "windows",
		.title = "List windows",
		.description =
			"Top-level windows: id (the window argument of other tools), pid, title, app, class, "
			"client area in desktop pixels, focus, visibility, states, transient_for (a "
			"dialog's owner). Filter by app, pid or on_screen_only.",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_GROUPED,
		.handler = windows,
	},
	{
		.name = "window_focus",
		.title = "Focus a window",
		.description = "Raise a window (restoring it if minimized) and give it the keyboard focus; "
			"returns its info.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_IDEMPOTENT | TOOL_GROUPED,
		.handler = window_focus,
	},
	{
		.name = "window_move",
		.title = "Move or resize a window",
		.description =
			"Move or resize a window's client area (desktop pixels); omitted values stay.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_GROUPED,
		.handler = window_move,
	},
	WINDOW_STATE_TOOL("window_minimize", "Minimize a window",
			"Minimize (iconify) a window; reports what the window manager did.",
			window_minimize),
	WINDOW_STATE_TOOL("window_maximize", "Maximize a window",
			"Maximize a window; reports what the window manager did.", window_maximize),
	WINDOW_STATE_TOOL("window_restore", "Restore a window",
			"Undo minimize, maximize and fullscreen; reports what the window manager did.",
			window_restore),
	WINDOW_STATE_TOOL("window_fullscreen", "Make a window fullscreen",
			"Make a window fullscreen; reports what the window manager did.",
			window_fullscreen),
	WINDOW_STATE_TOOL("window_raise", "Raise a window",
			"Raise a window above the others (without focusing it).", window_raise),
	{
		.name = "window_resize",
		.title = "Resize a window",
		.description = "Resize a window's client area; reports the size the window manager allowed.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_IDEMPOTENT | TOOL_GROUPED,
		.handler = window_resize,
	},
	{
		.name = "window_close",
		.title = "Close a window",
		.description =
			"Ask a window to close (WM_DELETE_WINDOW). A window that stays (e.g. an "
			"unsaved-changes dialog: dialogs) is reported; force: end its client after timeout_ms.",
		.flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE | TOOL_GROUPED,
		.handler = window_close,
	},
	{
		.name = "window",
		.title = "Windows",
		.description =
			"list: top-level windows (id, pid, title, app, class, client area in desktop "
			"pixels, focus, states, transient_for). The rest read back: applied false, with "
			"the state seen, if the window manager refused; close force: end the client.",
		.flags = TOOL_GROUP,
		.members = (const struct tool_group_member[]){
			{ "focus", "window_focus" }, { "move", "window_move" },
			{ "resize", "window_resize" }, { "raise", "window_raise" },
			{ "minimize", "window_minimize" }, { "maximize", "window_maximize" },
			{ "restore", "window_restore" }, { "fullscreen", "window_fullscreen" },
			{ "close", "window_close" },
			/* Last: the first op of a group that acts is an acting one
			 * (the view-token audit calls it). */
			{ "list", "windows" }, { 0 } },
	},
	{ 0 },
};
