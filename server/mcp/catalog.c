/* deskd's own MCP content besides tools: the window recordings as
 * resources (deskd://recordings/<id>, with completion of the id) and the
 * computer_use_guide prompt. Registered by main.c with mcp_catalog_add(). */
#include "server/mcp/mcp.h"
#include "server/mcp/core.h"
#include "base/base64.h"
#include "base/text.h"
#include "tools/tools.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RESOURCE_MAX_BYTES (32L << 20)

#define RECORDING_PREFIX "deskd://recordings/"

static json_t* recording_resources(void)
{
	json_t* out = json_array();
	json_t* list = tools_record_list();
	size_t i;
	json_t* r;
	json_array_foreach(list, i, r) {
		const char* id = json_string_value(json_object_get(r, "id"));
		char path[4096];
		if (!id || tools_record_path(id, path, sizeof(path)) < 0)
			continue;
		char uri[512];
		snprintf(uri, sizeof(uri), RECORDING_PREFIX "%s", id);
		json_t* res = json_pack("{s:s, s:s, s:s, s:s}", "uri", uri, "name", id,
				"title", "Recording", "mimeType", "video/mp4");
		const char* base = strrchr(path, '/');
		char desc[600];
		const char* file = base ? base + 1 : path;
		snprintf(desc, sizeof(desc), "Window recording %.*s", text_cut(file, 500), file);
		json_object_set_new(res, "description", json_string(desc));
		json_t* bytes = json_object_get(r, "bytes");
		if (json_is_integer(bytes))
			json_object_set(res, "size", bytes);
		json_array_append_new(out, res);
	}
	json_decref(list);
	return out;
}

static json_t* catalog_fail(int* code, int rpc_code, char* message, size_t size,
		const char* fmt, ...) __attribute__((format(printf, 5, 6)));

static json_t* catalog_fail(int* code, int rpc_code, char* message, size_t size,
		const char* fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, size, fmt, ap);
	va_end(ap);
	*code = rpc_code;
	return NULL;
}

static json_t* read_recording(const char* uri, int* code, char* message, size_t msize,
		json_t** data)
{
	if (strncmp(uri, RECORDING_PREFIX, strlen(RECORDING_PREFIX)) != 0)
		return NULL;	/* *code stays 0: not ours */
	const char* id = uri + strlen(RECORDING_PREFIX);
	char path[4096];
	if (!*id || strchr(id, '/') || tools_record_path(id, path, sizeof(path)) < 0) {
		*data = json_pack("{s:s}", "uri", uri);
		return catalog_fail(code, MCP_RESOURCE_NOT_FOUND, message, msize,
				"Resource not found: %s", uri);
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return catalog_fail(code, MCP_RESOURCE_NOT_FOUND, message, msize,
				"Resource not found: %s (%s)", uri, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return catalog_fail(code, MCP_INTERNAL, message, msize, "cannot read %s", uri);
	}
	if (st.st_size > RESOURCE_MAX_BYTES) {
		close(fd);
		return catalog_fail(code, MCP_INTERNAL, message, msize,
				"%s is %lld bytes, over the %ld byte limit of "
				"resources/read; download it from GET /api/v1/recordings/%s",
				uri, (long long)st.st_size, RESOURCE_MAX_BYTES, id);
	}
	size_t size = (size_t)st.st_size;
	unsigned char* buf = malloc(size ? size : 1);
	size_t got = 0;
	while (buf && got < size) {
		ssize_t n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!buf || got != size) {
		free(buf);
		return catalog_fail(code, MCP_INTERNAL, message, msize, "cannot read %s", uri);
	}
	char* b64 = base64_encode(buf, size, NULL);
	free(buf);
	if (!b64)
		return catalog_fail(code, MCP_INTERNAL, message, msize, "out of memory");
	json_t* out = json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri,
			"mimeType", "video/mp4", "blob", b64);
	free(b64);
	return out;
}

static json_t* recording_templates(void)
{
	return json_pack("[{s:s, s:s, s:s, s:s}]",
			"uriTemplate", RECORDING_PREFIX "{id}", "name", "recording",
			"description", "A finished window recording (MP4) by its id",
			"mimeType", "video/mp4");
}

static bool complete_recording(const char* uri_template, const char* argument,
		const char* prefix, json_t* values)
{
	if (strcmp(uri_template, RECORDING_PREFIX "{id}") != 0)
		return false;
	if (strcmp(argument, "id") != 0)
		return true;
	json_t* list = tools_record_list();
	size_t i;
	json_t* r;
	json_array_foreach(list, i, r) {
		const char* id = json_string_value(json_object_get(r, "id"));
		if (id && strncmp(id, prefix, strlen(prefix)) == 0
				&& json_array_size(values) < 100)
			json_array_append_new(values, json_string(id));
	}
	json_decref(list);
	return true;
}

static const struct mcp_prompt_arg guide_args[] = {
	{ "task", "What you want to get done on the desktop (optional)", false },
	{ 0 },
};

static json_t* guide_get(json_t* args)
{
	const char* task = json_string_value(json_object_get(args, "task"));
	char text[4096];
	snprintf(text, sizeof(text),
		"You control a Linux desktop through deskd's tools.%s%s\n\n"
		"How to work well:\n"
		"1. Look first: call `screenshot` (or `windows` to list windows with their ids, "
		"titles and geometry) before acting. Never guess coordinates.\n"
		"2. Coordinates are in the pixel space of the latest screenshot of the same "
		"target. A screenshot may be scaled (see width, height and scale_factor in its "
		"result); deskd maps your coordinates back to the desktop exactly. Pass "
		"\"coordinate_space\": \"desktop\" only when you really have desktop pixels.\n"
		"3. Prefer a window target: pass `window` (an id from `windows`) to screenshot "
		"and to actions. Window images are smaller and sharper, and coordinates are "
		"relative to that window's screenshot.\n"
		"4. Use `zoom` with a region [x0, y0, x1, y1] (screenshot space) to read small "
		"text at full resolution instead of guessing.\n"
		"5. After each action that changes the screen (click, type, keypress, scroll), "
		"call `wait_for_change` (or take a fresh screenshot) before the next decision, "
		"so you see the result, not the old frame.\n"
		"6. Batch simple sequences with `computer_use` {\"actions\": [...]}: it stops at "
		"the first failure and tells you which action failed.\n"
		"7. Keys: `keypress` takes a chord such as [\"ctrl\", \"s\"]; `type` types any "
		"Unicode text exactly.\n"
		"8. Errors are results with isError and a code (out_of_bounds, "
		"window_not_found, timeout, ...): read the message, refresh your view, retry.\n"
		"9. To show what happened, record a window with `record_start`/`record_stop`.",
		task ? "\n\nTask: " : "", task ? task : "");
	return json_pack("[{s:s, s:{s:s, s:s}}]", "role", "user", "content",
			"type", "text", "text", text);
}

static const struct mcp_prompt deskd_prompts[] = {
	{ "computer_use_guide", "Computer use guide",
	  "How to use deskd's tools well: look first, coordinates, window targets, zoom, "
	  "waiting for changes", guide_args, guide_get, NULL },
	{ 0 },
};

const struct mcp_catalog mcp_deskd_catalog = {
	.prompts = deskd_prompts,
	.resources = recording_resources,
	.resource_templates = recording_templates,
	.resource_read = read_recording,
	.complete = complete_recording,
};
