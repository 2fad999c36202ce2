/* The screen tools: screenshot, zoom, wait_for_change. Captures, the screenshot cache and the coordinate space
 * are desktop/ services; these handlers parse arguments, keep the session's
 * max dimension and build the results. */
#include "tools/tools.h"
#include "tools/actions.h"
#include "tools/capture_args.h"
#include "base/clock.h"
#include "capture/capture.h"
#include "record/record.h"
#include "desktop/desktop.h"
#include "base/log.h"
#include "base/options.h"
#include "base/base64.h"
#include "base/real.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The image block from the blob's base64 (no second encoding, no UTF-8
 * scan), and the raw bytes for REST's GET /api/v1/screenshot. */
static int add_image(struct tool_result* out, const struct desktop_image* b, const char* mime)
{
	json_t* data = json_stringn_nocheck(b->b64, b->b64_len);
	if (!data)
		return -ENOMEM;
	json_array_append_new(out->content, json_pack("{s:s, s:o, s:s}", "type", "image",
			"data", data, "mimeType", mime));
	if (!out->image) {
		out->image = malloc(b->len ? b->len : 1);
		if (!out->image)
			return -ENOMEM;
		memcpy(out->image, b->data, b->len);
		out->image_len = b->len;
		out->image_mime = mime;
	}
	return 0;
}

/* ---- Helpers ------------------------------------------------------------------ */

/* The code for a failed capture call: whatever failed, a context whose
 * connection died means the display is gone (D10). */
enum tool_code tools_capture_code(struct desktop_capture* p, int rc)
{
	return capture_connected(desktop_capture_backend(p)) ? tool_code_for_errno(rc)
			: TOOL_DISPLAY_UNAVAILABLE;
}

int tools_capture_fail(struct tool_result* out, struct desktop_capture* p, int rc)
{
	tool_result_error(out, tools_capture_code(p, rc), NULL, "%s",
			capture_error(desktop_capture_backend(p)));
	return 0;
}

static struct desktop_capture* capture_get(struct tool_result* out, bool warm)
{
	char err[256];
	struct desktop_capture* p = warm ? desktop_capture_get_warm(err, sizeof(err))
			: desktop_capture_get(err, sizeof(err));
	if (!p)
		tool_result_error(out, TOOL_DISPLAY_UNAVAILABLE, NULL,
				"cannot connect to the X display: %s", err);
	return p;
}

/* A pooled capture context, or NULL with display_unavailable in out. */
struct desktop_capture* tools_capture_get(struct tool_result* out)
{
	return capture_get(out, false);
}

/* The window argument: absent or 0 = the screen. */
bool tools_window_arg(json_t* args, uint32_t* window, struct tool_result* out)
{
	if (!tool_arg_window(args, window)) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"window must be a window id from the windows tool (or 0 for the screen)");
		return false;
	}
	return true;
}

/* max_dimension: 0 (native) or 16..16384. */
static bool max_dimension_arg(json_t* args, int* value, bool* given,
		struct tool_result* out)
{
	json_t* v = json_object_get(args, "max_dimension");
	*given = v != NULL;
	if (!v)
		return true;
	int64_t m = json_integer_value(v);
	if (m != 0 && (m < 16 || m > 16384)) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"max_dimension must be 0 (native size) or 16..16384, not %lld",
				(long long)m);
		return false;
	}
	*value = (int)m;
	return true;
}

/* A region [x0, y0, x1, y1] in screenshot space (iw x ih, end-exclusive). */
static bool region_arg(json_t* args, int iw, int ih, int region[4],
		struct tool_result* out)
{
	json_t* r = json_object_get(args, "region");
	for (int i = 0; i < 4; i++) {
		json_t* v = json_array_get(r, (size_t)i);
		int64_t n = json_integer_value(v);
		if (n < -1000000000 || n > 1000000000) {
			tool_result_error(out, TOOL_OUT_OF_BOUNDS, NULL,
					"region values must be within the %dx%d screenshot", iw, ih);
			return false;
		}
		region[i] = (int)n;
	}
	if (region[2] <= region[0] || region[3] <= region[1]) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"region [x0, y0, x1, y1] needs x1 > x0 and y1 > y0 (end-exclusive), got [%d, %d, %d, %d]",
				region[0], region[1], region[2], region[3]);
		return false;
	}
	if (region[0] < 0 || region[1] < 0 || region[2] > iw || region[3] > ih) {
		tool_result_error(out, TOOL_OUT_OF_BOUNDS,
				json_pack("{s:i, s:i}", "image_width", iw, "image_height", ih),
				"region [%d, %d, %d, %d] is outside the %dx%d screenshot of this target",
				region[0], region[1], region[2], region[3], iw, ih);
		return false;
	}
	return true;
}

/* Map a screenshot-space region to physical pixels of the target. */
static struct capture_rect map_region(const int region[4], int w, int h, int iw, int ih)
{
	int x0 = desktop_map(region[0], w, iw);
	int y0 = desktop_map(region[1], h, ih);
	int x1 = region[2] >= iw ? w : desktop_map(region[2], w, iw);
	int y1 = region[3] >= ih ? h : desktop_map(region[3], h, ih);
	if (x1 <= x0)
		x1 = x0 + 1;
	if (y1 <= y0)
		y1 = y0 + 1;
	return (struct capture_rect){ x0, y0, x1 - x0, y1 - y0 };
}

/* out: checked and staged before the capture (fail fast), written and
 * published after. */
static struct safe_output* out_open(const char* path, struct tool_result* out)
{
	const struct options* opts = options_get();
	char* const* roots = opts ? opts->output_root : NULL;
	int n_roots = opts ? opts->n_output_root : 0;
	char* def[1];
	if (n_roots == 0 && opts && opts->data_dir) {
		def[0] = opts->data_dir;
		roots = def;
		n_roots = 1;
	}
	char err[512] = "";
	struct safe_output* so = NULL;
	int rc = safe_output_open(path, roots, n_roots, &so, err, sizeof(err));
	if (rc == -EEXIST)
		tool_result_error(out, TOOL_OUTPUT_EXISTS, NULL,
				"%s already exists; deskd never replaces files: pick a new name", path);
	else if (rc == -EINVAL)
		tool_result_error(out, TOOL_BAD_PATH, NULL, "out: %s", err[0] ? err : path);
	else if (rc < 0)
		tool_result_error(out, tool_code_for_write_errno(rc), NULL, "cannot write %s: %s",
				path, err[0] ? err : strerror(-rc));
	return rc < 0 ? NULL : so;
}

/* Write and publish; consumes so. */
static int out_finish(struct safe_output* so, const char* path, const uint8_t* data,
		size_t len, struct tool_result* out)
{
	int rc = safe_output_write(so, data, len);
	if (rc < 0) {
		safe_output_abort(so);
		tool_result_error(out, tool_code_for_write_errno(rc), NULL, "cannot write %s: %s; "
				"nothing was written", path, strerror(-rc));
		return -1;
	}
	rc = safe_output_publish(so);
	if (rc == -EEXIST) {
		tool_result_error(out, TOOL_OUTPUT_EXISTS, NULL,
				"%s appeared while writing; deskd never replaces files", path);
		return -1;
	}
	if (rc < 0) {
		tool_result_error(out, tool_code_for_write_errno(rc), NULL, "cannot publish %s: %s",
				path, strerror(-rc));
		return -1;
	}
	return 0;
}

static json_t* region_json(const int r[4])
{
	return json_pack("[i,i,i,i]", r[0], r[1], r[2], r[3]);
}

/* ---- screenshot ------------------------------------------------------------------- */

static int screenshot(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!tools_window_arg(args, &window, out))
		return 0;
	int max_dim = 0;
	bool max_given;
	if (!max_dimension_arg(args, &max_dim, &max_given, out))
		return 0;
	const char* format = tool_arg_string(args, "format", "png");
	bool jpeg = strcmp(format, "jpeg") == 0;
	int quality = (int)tool_arg_int(args, "quality", 80);
	bool cursor = tool_arg_bool(args, "cursor", false);
	bool include_image = tool_arg_bool(args, "include_image", true);
	const char* path = tool_arg_string(args, "out", NULL);
	if (path && path[0] != '/') {
		tool_result_error(out, TOOL_BAD_PATH, NULL,
				"out must be an absolute path, not \"%s\"", path);
		return 0;
	}

	struct safe_output* so = NULL;
	if (path && !(so = out_open(path, out)))
		return 0;
	struct desktop_capture* p = capture_get(out, true);
	if (!p) {
		safe_output_abort(so);
		return 0;
	}
	struct desktop_image* blob = NULL;
	struct capture_rect target;
	int rc = desktop_capture_resolve(p, window, &target);
	if (rc < 0) {
		tools_capture_fail(out, p, rc);
		goto done;
	}
	if (!max_given)
		max_dim = tool_session_max_dimension(ctx->session, window);
	int iw, ih;
	desktop_scaled_size(target.width, target.height, max_dim, &iw, &ih);

	int region[4] = { 0, 0, iw, ih };
	bool has_region = json_object_get(args, "region") != NULL;
	if (has_region && !region_arg(args, iw, ih, region, out))
		goto done;
	struct capture_rect phys = map_region(region, target.width, target.height, iw, ih);
	int ow = region[2] - region[0], oh = region[3] - region[1];
	if (ow > phys.width)
		ow = phys.width;
	if (oh > phys.height)
		oh = phys.height;

	struct desktop_shot req = {
		.window = window,
		.part = has_region ? &phys : NULL,
		.width = ow,
		.height = oh,
		.target_width = target.width,
		.target_height = target.height,
		.jpeg = jpeg,
		.quality = quality,
		.cursor = cursor,
	};
	if (has_region)
		memcpy(req.region, region, sizeof(region));
	char why[256] = "";
	rc = desktop_shot(p, &req, &blob, why, sizeof(why));
	if (rc < 0) {
		tool_result_error(out, rc == -ENOMEM || rc == -EIO ? TOOL_INTERNAL
				: tools_capture_code(p, rc), NULL, "%s", why);
		goto done;
	}
	ow = blob->width;
	oh = blob->height;
	if (so) {
		int wrc = out_finish(so, path, blob->data, blob->len, out);
		so = NULL;
		if (wrc < 0)
			goto done;
	}
	/* Later clicks on this target map through the same space. */
	if (max_given)
		tool_session_set_max_dimension(ctx->session, window, max_dim);

	const char* mime = jpeg ? "image/jpeg" : "image/png";
	json_t* meta = json_pack("{s:i, s:i, s:i, s:i, s:f, s:I, s:s, s:I, s:[i,i,i,i]}",
			"width", ow, "height", oh,
			"physical_width", phys.width, "physical_height", phys.height,
			"scale_factor", real_round(iw ? (double)target.width / iw : 1.0, REAL_SCALE),
			"window", (json_int_t)window, "format", jpeg ? "jpeg" : "png",
			"bytes", (json_int_t)blob->len,
			"desktop", target.x + phys.x, target.y + phys.y, phys.width, phys.height);
	if (has_region)
		json_object_set_new(meta, "region", region_json(region));
	if (path)
		json_object_set_new(meta, "path", json_string(path));
	char space[32];
	action_space_format(space, sizeof(space), iw, ih, max_dim);
	json_object_set_new(meta, "coordinate_space", json_string(space));
	/* Image first: clients that show one block show the picture. */
	int irc = 0;
	if (include_image) {
		irc = add_image(out, blob, mime);
	} else if (!out->image) {
		/* No block, but REST's GET /api/v1/screenshot still wants bytes. */
		out->image = malloc(blob->len ? blob->len : 1);
		if (out->image) {
			memcpy(out->image, blob->data, blob->len);
			out->image_len = blob->len;
			out->image_mime = mime;
		} else {
			irc = -ENOMEM;
		}
	}
	if (irc < 0) {
		json_decref(meta);
		tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory");
		goto done;
	}
	tool_result_ok(out, meta);
done:
	safe_output_abort(so);
	desktop_image_unref(blob);
	desktop_capture_put(p);
	return 0;
}

/* ---- zoom -------------------------------------------------------------------------- */

static int zoom(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!tools_window_arg(args, &window, out))
		return 0;
	int max_dim = 0;
	bool max_given;
	if (!max_dimension_arg(args, &max_dim, &max_given, out))
		return 0;
	struct desktop_capture* p = tools_capture_get(out);
	if (!p)
		return 0;
	struct frame* f = NULL;
	uint8_t* data = NULL;
	size_t len = 0;
	struct capture_rect target;
	int rc = desktop_capture_resolve(p, window, &target);
	if (rc < 0) {
		tools_capture_fail(out, p, rc);
		goto done;
	}
	/* The region is in the target's screenshot space: coordinate_space when
	 * it is a space token, else the session's max dimension (the server's
	 * default without one); zoom's own max_dimension only sizes its output. */
	int space_max = tool_session_max_dimension(ctx->session, window);
	int tok_w = 0, tok_h = 0;
	const char* space_arg = tool_arg_string(args, "coordinate_space", NULL);
	bool token = space_arg && strcmp(space_arg, "screenshot") != 0;
	if (token && action_space_parse(space_arg, &tok_w, &tok_h, &space_max) < 0) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "coordinate_space must be "
				"\"screenshot\" or the coordinate_space of a screenshot result "
				"(like \"1280x800/1280\"), not \"%.60s\"", space_arg);
		goto done;
	}
	int iw, ih;
	desktop_scaled_size(target.width, target.height, space_max, &iw, &ih);
	if (token && (iw != tok_w || ih != tok_h)) {
		tool_result_error(out, TOOL_OUT_OF_BOUNDS, NULL, "coordinate_space %s is stale: "
				"the target changed size and its screenshots are %dx%d/%d now; take a "
				"new screenshot", space_arg, iw, ih, space_max);
		goto done;
	}
	int region[4];
	if (!region_arg(args, iw, ih, region, out))
		goto done;
	struct capture_rect phys = map_region(region, target.width, target.height, iw, ih);
	/* Lent: encoded (or scaled) and unreffed before p goes back. */
	rc = window ? capture_window_lent(desktop_capture_backend(p), window, &phys, false, &f)
			: capture_screen_lent(desktop_capture_backend(p), &phys, false, &f);
	if (rc < 0) {
		tools_capture_fail(out, p, rc);
		goto done;
	}
	int ow, oh;
	desktop_scaled_size(f->width, f->height, max_given ? max_dim : 0, &ow, &oh);
	if (ow != f->width || oh != f->height) {
		struct frame* s = capture_scale(f, ow, oh);
		if (!s) {
			tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory while scaling");
			goto done;
		}
		frame_unref(f);
		f = s;
	}
	rc = capture_encode_png(f, &data, &len);
	if (rc < 0) {
		tool_result_error(out, TOOL_INTERNAL, NULL, "encoding failed: %s", strerror(-rc));
		goto done;
	}
	if (tool_result_image(out, data, len, "image/png") < 0) {
		tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory");
		goto done;
	}
	json_t* meta = json_pack("{s:i, s:i, s:i, s:i, s:f, s:I, s:o, s:s, s:I, s:[i,i,i,i]}",
			"width", f->width, "height", f->height,
			"physical_width", phys.width, "physical_height", phys.height,
			"scale_factor", real_round((double)phys.width / f->width, REAL_SCALE),
			"window", (json_int_t)window, "region", region_json(region),
			"format", "png", "bytes", (json_int_t)len,
			"desktop", target.x + phys.x, target.y + phys.y, phys.width, phys.height);
	char space[32];
	action_space_format(space, sizeof(space), iw, ih, space_max);
	json_object_set_new(meta, "coordinate_space", json_string(space));
	tool_result_ok(out, meta);
done:
	free(data);
	frame_unref(f);
	desktop_capture_put(p);
	return 0;
}

/* ---- wait_for_change ----------------------------------------------------------------- */

static int wait_for_change(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!tools_window_arg(args, &window, out))
		return 0;
	int timeout_ms = (int)tool_arg_int(args, "timeout_ms", 10000);
	int stable_ms = (int)tool_arg_int(args, "stable_ms", 200);
	struct desktop_capture* p = tools_capture_get(out);
	if (!p)
		return 0;
	int64_t start = clock_ms();
	bool changed = false, stable = false;
	int rc = desktop_wait_change(p, window, timeout_ms, stable_ms, true, ctx->cancelled,
			ctx->deadline_ms, &changed, &stable);
	int64_t waited = clock_ms() - start;
	if (rc == -ECANCELED)
		tool_result_error(out, TOOL_TIMEOUT, NULL, "cancelled after %lld ms", (long long)waited);
	else if (rc < 0)
		tools_capture_fail(out, p, rc);
	else
		tool_result_ok(out, json_pack("{s:b, s:b, s:I, s:I, s:b}",
				"changed", changed, "stable", stable,
				"waited_ms", (json_int_t)waited, "window", (json_int_t)window,
				"timed_out", !(changed && stable)));
	desktop_capture_put(p);
	return 0;
}

/* ---- The table ------------------------------------------------------------------------ */

/* The schemas are data: tools/schemas/screen.json, under each tool's name. */

const struct tool_def tools_screen[] = {
	{
		.name = "screenshot",
		.title = "Screenshot",
		.description =
			"The screen or one window (its own pixels, even covered) as PNG or JPEG, scaled "
			"to max_dimension (later coordinates for the target are pixels of this image: "
			"pass its coordinate_space). region: a part; out: also write it (absolute, under "
			"an output root, 0600, never replacing a file).",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_OBSERVES,
		.handler = screenshot,
	},
	{
		.name = "zoom",
		.title = "Zoom into a region",
		.description =
			"A full-resolution crop of region (your screenshot's pixels; pass its coordinate_space) "
			"to read small text; max_dimension caps it. Clicks stay in screenshot pixels.",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_OBSERVES,
		.handler = zoom,
	},
	{
		.name = "wait_for_change",
		.title = "Wait for the screen to change",
		.description =
			"Wait until the screen (or a window) changes and then stays still for stable_ms, "
			"at most timeout_ms; use it instead of sleeping. A timeout is a result (timed_out).",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_OBSERVES,
		.handler = wait_for_change,
	},
	{ 0 },
};
