/* Clipboard tools: clipboard_read and clipboard_write, over desktop/'s
 * clipboard (X selections, owned by deskd after a write). */
#include "tools/tools.h"
#include "base/base64.h"
#include "base/text.h"
#include "capture/capture.h"
#include "desktop/desktop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_TIMEOUT_MS 2000

/* A clipboard image passes (either way) only if its PNG header is sound and
 * it declares at most this many pixels: the limit deskd itself decodes
 * images to. 64 Mi pixels is 8192x8192 (256 MiB as RGBA), twice an 8K
 * screen; a "bomb" (a few KB that inflate to gigabytes) is refused before
 * it reaches the agent's image decoder or the desktop's apps. */
#define CLIPBOARD_IMAGE_MAX_PIXELS CAPTURE_DECODE_MAX_PIXELS

/* Check a PNG from image_base64 (who: "image_base64") or a selection owner
 * (who: "the clipboard owner's image/png"): 0, or the error set on out. */
static int check_png(const void* data, size_t len, const char* who, enum tool_code not_png,
		struct tool_result* out)
{
	struct capture_png_header h;
	const char* why;
	if (capture_png_header(data, len, &h, &why) < 0) {
		tool_result_error(out, not_png, NULL, "%s is not a PNG: %s", who, why);
		return -1;
	}
	uint64_t pixels = (uint64_t)h.width * h.height;
	if (pixels > CLIPBOARD_IMAGE_MAX_PIXELS) {
		tool_result_error(out, TOOL_TOO_LARGE, json_pack("{s:I, s:I, s:I}",
				"width", (json_int_t)h.width, "height", (json_int_t)h.height,
				"max_pixels", (json_int_t)CLIPBOARD_IMAGE_MAX_PIXELS),
				"%s declares %ux%u pixels (%llu), over the limit of %u (64 Mi, e.g. "
				"8192x8192): a decompression bomb for whoever decodes it; it was not "
				"passed on", who, (unsigned)h.width, (unsigned)h.height,
				(unsigned long long)pixels, CLIPBOARD_IMAGE_MAX_PIXELS);
		return -1;
	}
	return 0;
}

static enum desktop_selection selection_arg(json_t* args)
{
	const char* s = tool_arg_string(args, "selection", "clipboard");
	return strcmp(s, "primary") == 0 ? DESKTOP_PRIMARY : DESKTOP_CLIPBOARD;
}

static enum tool_code clipboard_code(int rc)
{
	switch (rc) {
	case -ENOENT:
	case -ENODATA: return TOOL_CLIPBOARD_EMPTY;
	case -EFBIG: return TOOL_BAD_ARGUMENTS;
	default: return tool_code_for_errno(rc);
	}
}

static int clipboard_read(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	enum desktop_selection sel = selection_arg(args);
	bool image = strcmp(tool_arg_string(args, "format", "text"), "image") == 0;
	void* data;
	size_t len;
	char err[512];
	int rc = desktop_clipboard_read(sel, image, &data, &len, READ_TIMEOUT_MS, err, sizeof(err));
	if (rc < 0) {
		tool_result_error(out, clipboard_code(rc), NULL, "%s", err);
		return 0;
	}
	const char* name = sel == DESKTOP_PRIMARY ? "primary" : "clipboard";
	if (image) {
		char who[64];
		snprintf(who, sizeof(who), "the %s owner's image/png", name);
		if (check_png(data, len, who, TOOL_CLIPBOARD_EMPTY, out) < 0) {
			free(data);
			return 0;
		}
		if (tool_result_image(out, data, len, "image/png") < 0) {
			free(data);
			return -ENOMEM;
		}
		free(data);
		tool_result_ok(out, json_pack("{s:s, s:s, s:I}", "selection", name,
				"format", "image", "bytes", (json_int_t)len));
		return 0;
	}
	/* The text exactly: a NUL or invalid UTF-8 cannot be a JSON string. */
	/* json_stringn checks a code point at a time; a NUL (which
	 * text_utf8_valid refuses) still goes that way. */
	json_t* text = memchr(data, 0, len) ? json_stringn(data, len)
			: text_utf8_valid(data, len) ? json_stringn_nocheck(data, len) : NULL;
	free(data);
	if (!text) {
		tool_result_error(out, TOOL_CLIPBOARD_EMPTY, NULL,
				"the %s content is not valid UTF-8 text", name);
		return 0;
	}
	/* The text once, as the first block, as an image is (a 1 MB text in
	 * both the block and structuredContent was 2.7 MB of JSON to encode
	 * and parse); structuredContent and its mirror say what it is. */
	json_array_append_new(out->content, json_pack("{s:s, s:o}", "type", "text", "text", text));
	tool_result_ok(out, json_pack("{s:s, s:s, s:I}", "selection", name,
			"format", "text", "bytes", (json_int_t)len));
	return 0;
}

static int clipboard_write(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	enum desktop_selection sel = selection_arg(args);
	json_t* text = json_object_get(args, "text");
	const char* image_b64 = tool_arg_string(args, "image_base64", NULL);
	/* REST's PUT /api/v1/clipboard: the body is the text. */
	bool raw = ctx->raw_data != NULL;
	if ((text != NULL) + (image_b64 != NULL) + raw != 1) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"give text, or image_base64 (a PNG), not both and not neither");
		return 0;
	}
	void* decoded = NULL;
	const void* data;
	size_t len;
	if (raw) {
		data = ctx->raw_data;
		len = ctx->raw_len;
		if (!text_utf8_valid(data, len)) {
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
					"the body is not UTF-8 text without NUL; nothing was copied");
			return 0;
		}
	} else if (text) {
		data = json_string_value(text);
		len = json_string_length(text);
	} else {
		decoded = base64_decode(image_b64, strlen(image_b64), &len);
		if (!decoded) {
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
					"image_base64 must be a PNG file in standard padded Base64");
			return 0;
		}
		if (check_png(decoded, len, "image_base64", TOOL_BAD_ARGUMENTS, out) < 0) {
			free(decoded);
			return 0;
		}
		data = decoded;
	}
	char err[512];
	int rc = desktop_clipboard_write(sel, data, len, image_b64 != NULL, err, sizeof(err));
	free(decoded);
	if (rc < 0) {
		tool_result_error(out, rc == -EFBIG ? TOOL_BAD_ARGUMENTS : tool_code_for_errno(rc),
				NULL, "%s", err);
		return 0;
	}
	tool_result_ok(out, json_pack("{s:s, s:s, s:I}",
			"selection", sel == DESKTOP_PRIMARY ? "primary" : "clipboard",
			"format", image_b64 ? "image" : "text", "bytes", (json_int_t)len));
	return 0;
}

/* The schemas are data: tools/schemas/clipboard.json, under each tool's name. */

const struct tool_def tools_clipboard[] = {
	{
		.name = "clipboard_read",
		.title = "Read the clipboard",
		.description =
			"The clipboard's text, exact, as the first text block, or format image: a PNG. "
			"clipboard_empty: none.",
		.flags = TOOL_READ_ONLY | TOOL_NO_VIEW | TOOL_GROUPED | TOOL_OBSERVES,
		.handler = clipboard_read,
	},
	{
		.name = "clipboard_write",
		.title = "Write the clipboard",
		.description =
			"Copy text (exact) or a PNG (image_base64) for programs to paste; 8 MiB at most.",
		.flags = TOOL_IDEMPOTENT | TOOL_LARGE_ARGS | TOOL_GROUPED,
		.handler = clipboard_write,
	},
	{
		.name = "clipboard",
		.title = "Clipboard",
		.description = "The clipboard: text (exact) or a PNG (image_base64, format image); "
			"8 MiB at most. clipboard_empty: nothing to read.",
		.flags = TOOL_GROUP,
		.members = (const struct tool_group_member[]){
			{ "read", "clipboard_read" }, { "write", "clipboard_write" }, { 0 } },
	},
	{ 0 },
};
