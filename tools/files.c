/* The file tools: file_upload, file_download and file_list, inside
 * --files-root (default <data-dir>/files), with the safe-output rules of
 * the recorder (record/record.h): paths are plain names relative to the
 * root, walked without following any symlink; a new file is staged 0600 in
 * a private directory and published with link(), never replacing anything;
 * sizes are bounded by --max-file-size. Every refusal says why and leaves
 * the disk as it was. REST's raw PUT and GET (server/rest.c) come through
 * here too: PUT as file_upload with tool_ctx.raw_data, GET through
 * tools_file_open(). */
#include "tools/tools.h"
#include "base/base64.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/options.h"
#include "base/sha256.h"
#include "base/text.h"
#include "record/record.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIST_MAX 10000
#define DEFAULT_MAX_FILE (64L << 20)

static long long max_file_size(void)
{
	const struct options* o = options_get();
	return o && o->max_file_size > 0 ? o->max_file_size : DEFAULT_MAX_FILE;
}

static void stale_cleanup(char* root)
{
	char* dirs[1] = { root };
	safe_output_cleanup_stale(dirs, 1);
}

/* The files root, canonical, created 0700 when missing (and, for the
 * default, the data dir above it, with its parents). Staging left by a crash inside it is
 * removed on first use. */
static int files_root(char* out, size_t size, char* err, size_t err_size)
{
	const struct options* o = options_get();
	char want[PATH_MAX];
	if (o && o->files_root) {
		snprintf(want, sizeof(want), "%s", o->files_root);
	} else if (o && o->data_dir) {
		int rc = fs_make_dir(o->data_dir);
		if (rc < 0) {
			snprintf(err, err_size, "cannot create the data dir %s: %s", o->data_dir,
					strerror(-rc));
			return rc;
		}
		snprintf(want, sizeof(want), "%s/files", o->data_dir);
	} else {
		snprintf(err, err_size, "no files root: set --files-root or --data-dir");
		return -ENXIO;
	}
	if (mkdir(want, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		snprintf(err, err_size, "cannot create the files root %s: %s", want, strerror(e));
		return -e;
	}
	char canon[PATH_MAX];
	if (!realpath(want, canon)) {
		int e = errno;
		snprintf(err, err_size, "cannot resolve the files root %s: %s", want, strerror(e));
		return -e;
	}
	struct stat st;
	if (stat(canon, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, err_size, "the files root %s is not a directory", canon);
		return -ENOTDIR;
	}
	snprintf(out, size, "%s", canon);
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static bool cleaned;
	pthread_mutex_lock(&lock);
	if (!cleaned) {
		cleaned = true;
		stale_cleanup(canon);
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

static enum tool_code code_for(int rc)
{
	switch (rc) {
	case -EINVAL:
	case -ELOOP:
	case -ENOTDIR:
	case -EISDIR:
	case -ENAMETOOLONG:
	case -EMLINK: return TOOL_BAD_PATH;
	case -ENOENT: return TOOL_NOT_FOUND;
	case -EEXIST: return TOOL_OUTPUT_EXISTS;
	case -EFBIG: return TOOL_TOO_LARGE;
	default: return tool_code_for_write_errno(rc);	/* no_space, internal */
	}
}

/* The path argument as a C string; false (after the error) when it holds a
 * NUL, which would cut it short. */
static bool path_arg(json_t* args, const char* def, const char** path, struct tool_result* out)
{
	json_t* p = json_object_get(args, "path");
	if (!p) {
		*path = def;
		if (!def) {
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "path is required");
			return false;
		}
		return true;
	}
	*path = json_string_value(p);
	if (strlen(*path) != json_string_length(p)) {
		tool_result_error(out, TOOL_BAD_PATH, NULL, "path has a NUL character");
		return false;
	}
	return true;
}

static void hex_digest(const void* data, size_t len, char hex[2 * SHA256_SIZE + 1])
{
	uint8_t d[SHA256_SIZE];
	sha256(data, len, d);
	for (int i = 0; i < SHA256_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static int file_upload(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char* path;
	if (!path_arg(args, NULL, &path, out))
		return 0;
	json_t* jdata = json_object_get(args, "data");
	const char* encoding = tool_arg_string(args, "encoding", "text");
	bool b64 = strcmp(encoding, "base64") == 0;
	if (jdata && ctx->raw_data) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "give the data once");
		return 0;
	}
	if (!jdata && !ctx->raw_data) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "data is required (the file's "
				"content, as text or with encoding base64)");
		return 0;
	}
	long long limit = max_file_size();
	void* decoded = NULL;
	const void* data;
	size_t len;
	if (ctx->raw_data) {
		data = ctx->raw_data;
		len = ctx->raw_len;
	} else if (b64) {
		const char* text = json_string_value(jdata);
		size_t tlen = json_string_length(jdata);
		if (tlen / 4 * 3 > (size_t)limit + 2) {
			tool_result_error(out, TOOL_TOO_LARGE, NULL, "the data is over the limit of "
					"%lld bytes (--max-file-size); nothing was written", limit);
			return 0;
		}
		decoded = base64_decode(text, tlen, &len);
		if (!decoded) {
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "data is not standard padded "
					"Base64 (RFC 4648, no whitespace)");
			return 0;
		}
		data = decoded;
	} else {
		data = json_string_value(jdata);
		len = json_string_length(jdata);
	}
	if ((long long)len > limit) {
		free(decoded);
		tool_result_error(out, TOOL_TOO_LARGE, NULL, "%zu bytes is over the limit of %lld "
				"bytes (--max-file-size); nothing was written", len, limit);
		return 0;
	}
	char root[PATH_MAX], err[PATH_MAX + 256] = "";
	int rc = files_root(root, sizeof(root), err, sizeof(err));
	if (rc < 0) {
		free(decoded);
		tool_result_error(out, TOOL_INTERNAL, NULL, "%s", err);
		return 0;
	}
	struct safe_output* so = NULL;
	rc = safe_output_open_under(root, path, limit, &so, err, sizeof(err));
	if (rc == 0 && (rc = safe_output_write(so, data, len)) < 0) {
		snprintf(err, sizeof(err), "cannot write '%s': %s", path, strerror(-rc));
		safe_output_abort(so);
	} else if (rc == 0 && (rc = safe_output_publish(so)) < 0) {
		snprintf(err, sizeof(err), rc == -EEXIST ? "'%s' appeared while it was written; "
				"deskd never replaces files" : "cannot publish '%s'", path);
	}
	if (rc < 0 && code_for(rc) == TOOL_NO_SPACE) {
		/* The staging (what was written of it) is gone already. */
		snprintf(err, sizeof(err), "no space left for '%s' (%zu bytes) under the files root: "
				"%s; nothing was written. Free some space there and retry", path, len,
				strerror(-rc));
	}
	if (rc < 0) {
		free(decoded);
		tool_result_error(out, code_for(rc), NULL, "%s", err[0] ? err : strerror(-rc));
		return 0;
	}
	char hex[2 * SHA256_SIZE + 1];
	hex_digest(data, len, hex);
	free(decoded);
	log_info("files: wrote %s (%zu bytes, from %s)", path, len, ctx->source);
	tool_result_ok(out, json_pack("{s:s, s:I, s:s}", "path", path,
			"bytes", (json_int_t)len, "sha256", hex));
	return 0;
}

enum tool_code tools_file_open(const char* rel, int* fd, long long* size,
		char* err, size_t err_size)
{
	char root[PATH_MAX];
	int rc = files_root(root, sizeof(root), err, err_size);
	if (rc < 0)
		return TOOL_INTERNAL;
	rc = safe_input_open(root, rel, max_file_size(), size, err, err_size);
	if (rc < 0)
		return code_for(rc);
	*fd = rc;
	return TOOL_OK;
}

static int read_all(int fd, unsigned char* buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = read(fd, buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;	/* shrank meanwhile */
		off += (size_t)n;
	}
	return 0;
}

static int file_download(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	(void)ctx;
	const char* path;
	if (!path_arg(args, NULL, &path, out))
		return 0;
	const char* encoding = tool_arg_string(args, "encoding", NULL);
	char err[PATH_MAX + 256] = "";
	int fd;
	long long size;
	enum tool_code code = tools_file_open(path, &fd, &size, err, sizeof(err));
	if (code != TOOL_OK) {
		tool_result_error(out, code, NULL, "%s", err);
		return 0;
	}
	unsigned char* buf = malloc((size_t)size + 1);
	int rc = buf ? read_all(fd, buf, (size_t)size) : -ENOMEM;
	close(fd);
	if (rc < 0) {
		free(buf);
		tool_result_error(out, TOOL_INTERNAL, NULL, "cannot read '%s': %s", path,
				strerror(-rc));
		return 0;
	}
	/* Text when asked for or, by default, when it is UTF-8; else Base64. */
	json_t* data = NULL;
	if (!encoding || strcmp(encoding, "text") == 0)
		data = json_stringn((const char*)buf, (size_t)size);
	if (!data && encoding && strcmp(encoding, "text") == 0) {
		free(buf);
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "'%s' is not UTF-8 text; ask for "
				"encoding base64", path);
		return 0;
	}
	const char* used = data ? "text" : "base64";
	if (!data) {
		size_t n;
		char* b = base64_encode(buf, (size_t)size, &n);
		data = b ? json_stringn_nocheck(b, n) : NULL;
		free(b);
	}
	char hex[2 * SHA256_SIZE + 1];
	hex_digest(buf, (size_t)size, hex);
	free(buf);
	if (!data)
		return -ENOMEM;
	tool_result_ok(out, json_pack("{s:s, s:I, s:s, s:s, s:o}", "path", path,
			"bytes", (json_int_t)size, "sha256", hex, "encoding", used, "data", data));
	return 0;
}

static const char* type_name(enum safe_entry_type t)
{
	switch (t) {
	case SAFE_ENTRY_FILE: return "file";
	case SAFE_ENTRY_DIR: return "directory";
	case SAFE_ENTRY_SYMLINK: return "symlink";
	default: return "other";
	}
}

static int file_list(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	(void)ctx;
	const char* path;
	if (!path_arg(args, "", &path, out))
		return 0;
	char root[PATH_MAX], err[PATH_MAX + 256] = "";
	int rc = files_root(root, sizeof(root), err, sizeof(err));
	if (rc < 0) {
		tool_result_error(out, TOOL_INTERNAL, NULL, "%s", err);
		return 0;
	}
	struct safe_entry* list;
	size_t n;
	bool truncated;
	rc = safe_dir_list(root, path, LIST_MAX, &list, &n, &truncated, err, sizeof(err));
	if (rc < 0) {
		tool_result_error(out, code_for(rc), NULL, "%s", err);
		return 0;
	}
	/* A name deskd would refuse to create (a control or bidirectional
	 * character, invalid UTF-8) is left out, not shown escaped: it could
	 * not be downloaded by that name either; the count says it is there. */
	json_t* entries = json_array();
	size_t skipped = 0;
	for (size_t i = 0; i < n; i++) {
		size_t at;
		uint32_t cp;
		if (text_name_check(list[i].name, strlen(list[i].name), &at, &cp) != TEXT_NAME_OK) {
			skipped++;
			continue;
		}
		json_t* e = json_pack("{s:s, s:s, s:I, s:I}", "name", list[i].name,
				"type", type_name(list[i].type), "mtime", (json_int_t)list[i].mtime,
				"mode", (json_int_t)list[i].mode);
		if (list[i].type == SAFE_ENTRY_FILE)
			json_object_set_new(e, "bytes", json_integer(list[i].size));
		json_array_append_new(entries, e);
	}
	free(list);
	json_t* result = json_pack("{s:s, s:o, s:b}", "path", path, "entries", entries,
			"truncated", truncated);
	if (result && skipped)
		json_object_set_new(result, "skipped", json_integer((json_int_t)skipped));
	tool_result_ok(out, result);
	return 0;
}

/* The schemas are data: tools/schemas/files.json, under each tool's name. */

const struct tool_def tools_files[] = {
	{
		.name = "file_upload",
		.title = "Upload a file",
		.description = "Write a new file under the files root: data as text or encoding "
			"base64. Never replaces; mode 0600.",
		.flags = TOOL_NO_DISPLAY | TOOL_LARGE_ARGS | TOOL_GROUPED,
		.handler = file_upload,
	},
	{
		.name = "file_download",
		.title = "Download a file",
		.description = "Read a file under the files root: text when UTF-8, else base64 "
			"(or as encoding says).",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_NO_VIEW | TOOL_NO_DISPLAY | TOOL_GROUPED,
		.handler = file_download,
	},
	{
		.name = "file_list",
		.title = "List files",
		.description = "The entries of a directory under the files root (default the root).",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_NO_VIEW | TOOL_NO_DISPLAY | TOOL_GROUPED,
		.handler = file_list,
	},
	{
		.name = "files",
		.title = "Files",
		.description = "Files under the files root (upload makes new ones only).",
		.flags = TOOL_GROUP,
		.members = (const struct tool_group_member[]){
			{ "upload", "file_upload" }, { "download", "file_download" },
			{ "list", "file_list" }, { 0 } },
	},
	{ 0 },
};
