/* Recording tools: record_start, record_stop, recordings; and the registry
 * of recordings behind them (status, MCP resources, REST downloads).
 *
 * Each recording is a record/ recorder with its own thread and X connection.
 * It finalizes and publishes by itself when stopped, when its window is
 * destroyed or max_seconds pass; the registry keeps its final numbers. The
 * session that started a recording stops it when it ends; deskd's shutdown
 * (tools_record_shutdown) stops and publishes all of them. */
#include "tools/tools.h"

#include "record/record.h"
#include "desktop/desktop.h"
#include "base/log.h"
#include "base/options.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#define KEEP_FINISHED 256	/* finished recordings remembered for listing */
#define DEFAULT_MAX_SECONDS 3600

struct entry {
	struct entry* next;
	char id[48];
	uint32_t window;
	char* path;
	struct recorder* rec;
	const void* owner;	/* the tool_session that started it (compared, never used) */
	int users;		/* record_stop calls waiting on it */
	bool collected;		/* a record_stop answered its result */
	bool joined;		/* its thread was joined; final is valid */
	struct record_stats final;
	int result;
	time_t started;
	int fps;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry* entries;	/* newest first */
static bool shutting_down;	/* no new recordings once shutdown began */

static void rec_log(void* ud, int level, const char* message)
{
	(void)ud;
	static const enum log_level map[] = { LOG_ERROR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	enum log_level l = level >= 0 && level <= 3 ? map[level] : LOG_DEBUG;
	if (log_enabled(l))
		log_write(l, __FILE__, __LINE__, "%s", message);
}

/* <data-dir>, canonical, or "" when it does not exist. */
static void data_dir(char* out, size_t size)
{
	const struct options* opts = options_get();
	char buf[PATH_MAX];
	out[0] = '\0';
	if (opts && opts->data_dir && realpath(opts->data_dir, buf))
		snprintf(out, size, "%s", buf);
}

static int recordings_dir(char* out, size_t size)
{
	char dir[PATH_MAX];
	data_dir(dir, sizeof(dir));
	if (!dir[0])
		return -ENOENT;
	int n = snprintf(out, size, "%s/recordings", dir);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	if (mkdir(out, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	if (lstat(out, &st) < 0 || !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return 0;
}

void tools_record_init(void)
{
	record_set_log(rec_log, NULL);
	const struct options* opts = options_get();
	char rec_dir[PATH_MAX] = "", dd[PATH_MAX];
	if (recordings_dir(rec_dir, sizeof(rec_dir)) < 0)
		rec_dir[0] = '\0';
	data_dir(dd, sizeof(dd));
	char* dirs[OPTIONS_MAX_LIST + 2];
	int n = 0;
	if (rec_dir[0])
		dirs[n++] = rec_dir;
	if (dd[0])
		dirs[n++] = dd;
	for (int i = 0; opts && i < opts->n_output_root; i++)
		dirs[n++] = opts->output_root[i];
	safe_output_cleanup_stale(dirs, n);
}

/* Join recordings whose thread ended on its own (window destroyed,
 * max_seconds, error) and forget the oldest finished ones. Registry lock held. */
static void reap_locked(void)
{
	int kept = 0;
	struct entry** link = &entries;
	while (*link) {
		struct entry* e = *link;
		if (!e->joined && record_done(e->rec)) {
			e->result = record_stop(e->rec, &e->final);	/* instant: it ended */
			e->joined = true;
		}
		if (e->joined && e->users == 0 && ++kept > KEEP_FINISHED) {
			*link = e->next;
			record_destroy(e->rec);
			free(e->path);
			free(e);
			continue;
		}
		link = &e->next;
	}
}

static int running_locked(void)
{
	int n = 0;
	for (struct entry* e = entries; e; e = e->next)
		if (!e->joined && !record_done(e->rec))
			n++;
	return n;
}

static struct entry* find_locked(const char* id)
{
	for (struct entry* e = entries; e; e = e->next)
		if (strcmp(e->id, id) == 0)
			return e;
	return NULL;
}

static void make_id(char* out, size_t size)
{
	unsigned char r[3] = { 0 };
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r[0] = (unsigned char)ts.tv_nsec;
		r[1] = (unsigned char)(ts.tv_nsec >> 8);
		r[2] = (unsigned char)(ts.tv_nsec >> 16);
	}
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	snprintf(out, size, "rec-%04d%02d%02d-%02d%02d%02d-%02x%02x%02x",
			tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			tm.tm_min, tm.tm_sec, r[0], r[1], r[2]);
}

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

static json_t* entry_json(struct entry* e)
{
	struct record_stats s;
	if (e->joined)
		s = e->final;
	else
		record_get_stats(e->rec, &s);
	char started[32];
	struct tm tm;
	gmtime_r(&e->started, &tm);
	strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t* o = json_pack("{s:s, s:I, s:s, s:s, s:I, s:I, s:f, s:I, s:i, s:i, s:i, s:s}",
			"id", e->id, "window", (json_int_t)e->window, "path", e->path,
			"state", state_name(s.state), "frames", (json_int_t)s.frames,
			"dropped_frames", (json_int_t)s.dropped_frames,
			"duration_seconds", s.duration_seconds, "bytes", (json_int_t)s.bytes,
			"width", s.width, "height", s.height, "fps", e->fps, "started", started);
	if (!o)
		return NULL;
	const char* end = end_name(s.end);
	if (end)
		json_object_set_new(o, "ended", json_string(end));
	if (s.state == RECORD_FAILED && s.message[0])
		json_object_set_new(o, "error", json_string(s.message));
	if (s.state == RECORD_FINISHED)
		json_object_set_new(o, "uri", json_sprintf("deskd://recordings/%s", e->id));
	return o;
}

json_t* tools_record_list(void)
{
	json_t* list = json_array();
	if (!list)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	reap_locked();
	for (struct entry* e = entries; e; e = e->next) {
		json_t* o = entry_json(e);
		if (o)
			json_array_append_new(list, o);
	}
	pthread_mutex_unlock(&registry_lock);
	return list;
}

int tools_record_path(const char* id, char* path, size_t size)
{
	int rc = -ENOENT;
	if (!id)
		return rc;
	pthread_mutex_lock(&registry_lock);
	reap_locked();
	struct entry* e = find_locked(id);
	if (e && e->joined && e->final.state == RECORD_FINISHED) {
		int n = snprintf(path, size, "%s", e->path);
		rc = n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
	}
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

void tools_record_on_session_end(char* const* ids, size_t n)
{
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < n; i++) {
		struct entry* e = find_locked(ids[i]);
		if (!e)
			continue;
		e->owner = NULL;	/* the session's address may be reused */
		if (!e->joined) {
			log_info("session ended: finishing recording %s", e->id);
			record_request_stop(e->rec);	/* it publishes by itself */
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

void tools_record_shutdown(void)
{
	pthread_mutex_lock(&start_lock);	/* wait for a record_start in flight */
	shutting_down = true;
	pthread_mutex_unlock(&start_lock);
	pthread_mutex_lock(&registry_lock);
	for (struct entry* e = entries; e; e = e->next)
		if (!e->joined)
			record_request_stop(e->rec);	/* all finalize in parallel */
	for (struct entry* e = entries; e; e = e->next) {
		if (!e->joined) {
			e->result = record_stop(e->rec, &e->final);
			e->joined = true;
			if (e->result == 0)
				log_info("shutdown: recording %s published at %s (%llu frames)",
						e->id, e->path, e->final.frames);
			else
				log_error("shutdown: recording %s failed: %s", e->id, e->final.message);
		}
	}
	while (entries) {
		struct entry* e = entries;
		entries = e->next;
		if (e->users == 0) {	/* else a record_stop call still holds it */
			record_destroy(e->rec);
			free(e->path);
			free(e);
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

/* ---- record_start ------------------------------------------------------------------ */

static int record_start_tool(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const struct options* opts = options_get();
	uint32_t window = (uint32_t)tool_arg_int(args, "window", 0);
	const char* user_out = tool_arg_string(args, "out", NULL);
	int fps = (int)tool_arg_int(args, "fps", 30);
	double max_seconds = tool_arg_double(args, "max_seconds", DEFAULT_MAX_SECONDS);
	bool cursor = tool_arg_bool(args, "cursor", false);
	char id[48], path[PATH_MAX + 64], dd[PATH_MAX], err[512] = "";

	if (!window) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"window: give a window id from the windows tool");
		return 0;
	}
	make_id(id, sizeof(id));
	data_dir(dd, sizeof(dd));
	char* def_roots[1] = { dd };
	char* const* roots = def_roots;
	int n_roots = 1;
	if (user_out) {
		snprintf(path, sizeof(path), "%s", user_out);
		if (opts && opts->n_output_root > 0) {
			roots = opts->output_root;
			n_roots = opts->n_output_root;
		}
	} else {
		char dir[PATH_MAX];
		int rc = recordings_dir(dir, sizeof(dir));
		if (rc < 0) {
			tool_result_error(out, TOOL_INTERNAL, NULL,
					"cannot create the recordings folder in the data dir: %s; give out",
					strerror(-rc));
			return 0;
		}
		int n = snprintf(path, sizeof(path), "%.4000s/%.47s.mp4", dir, id);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			tool_result_error(out, TOOL_INTERNAL, NULL, "the data dir path is too long; give out");
			return 0;
		}
	}

	pthread_mutex_lock(&start_lock);
	if (shutting_down) {
		pthread_mutex_unlock(&start_lock);
		tool_result_error(out, TOOL_INTERNAL, NULL, "deskd is shutting down");
		return 0;
	}
	pthread_mutex_lock(&registry_lock);
	reap_locked();
	int running = running_locked();
	pthread_mutex_unlock(&registry_lock);
	int cap = opts && opts->max_recordings > 0 ? opts->max_recordings : 4;
	if (running >= cap) {
		pthread_mutex_unlock(&start_lock);
		tool_result_error(out, TOOL_RECORDING_ACTIVE, NULL,
				"%d recording(s) already running, the limit (--max-recordings); stop one with record_stop",
				running);
		return 0;
	}

	struct entry* e = calloc(1, sizeof(*e));
	if (!e || !(e->path = strdup(path))) {
		pthread_mutex_unlock(&start_lock);
		free(e);
		tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory");
		return 0;
	}
	struct record_params params = {
		.display = desktop_display_name(),
		.window = window,
		.path = path,
		.roots = roots,
		.n_roots = n_roots,
		.fps = fps,
		.max_seconds = max_seconds,
		.cursor = cursor,
	};
	int rc = record_start(&params, &e->rec, err, sizeof(err));
	if (rc < 0) {
		pthread_mutex_unlock(&start_lock);
		free(e->path);
		free(e);
		const char* why = err[0] ? err : strerror(-rc);
		switch (rc) {
		case -ENOENT:
			tool_result_error(out, TOOL_WINDOW_NOT_FOUND, NULL, "%s", why);
			break;
		case -EINVAL:
			tool_result_error(out, TOOL_BAD_PATH, NULL, "out: %s", why);
			break;
		case -EEXIST:
			tool_result_error(out, TOOL_OUTPUT_EXISTS, NULL,
					"%s already exists; deskd never replaces files: pick a new name", path);
			break;
		case -ECONNREFUSED:
			tool_result_error(out, TOOL_DISPLAY_UNAVAILABLE, NULL, "%s", why);
			break;
		case -ENOTSUP:
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "%s", why);
			break;
		case -EMFILE:
			tool_result_error(out, TOOL_RECORDING_ACTIVE, NULL, "%s", why);
			break;
		default:
			tool_result_error(out, TOOL_INTERNAL, NULL, "cannot start recording: %s", why);
			break;
		}
		return 0;
	}
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->window = window;
	e->owner = ctx->session;
	e->started = time(NULL);
	e->fps = fps;
	pthread_mutex_lock(&registry_lock);
	e->next = entries;
	entries = e;
	pthread_mutex_unlock(&registry_lock);
	pthread_mutex_unlock(&start_lock);
	if (ctx->session)
		tool_session_add_recording(ctx->session, id);

	struct record_stats s;
	record_get_stats(e->rec, &s);
	tool_result_ok(out, json_pack("{s:s, s:I, s:s, s:i, s:i, s:i, s:f}",
			"id", id, "window", (json_int_t)window, "path", path,
			"width", s.width, "height", s.height, "fps", fps,
			"max_seconds", max_seconds));
	return 0;
}

/* ---- record_stop ------------------------------------------------------------------- */

static int record_stop_tool(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char* id = tool_arg_string(args, "id", NULL);
	struct entry* e = NULL;

	pthread_mutex_lock(&registry_lock);
	reap_locked();
	if (id) {
		e = find_locked(id);
		if (!e) {
			pthread_mutex_unlock(&registry_lock);
			tool_result_error(out, TOOL_NO_RECORDING, NULL,
					"no recording with id %s (the recordings tool lists them)", id);
			return 0;
		}
	} else {
		/* The caller's only recording: running ones first, then one that
		 * ended by itself and was never reported. */
		int n_running = 0, n_done = 0;
		struct entry* running = NULL;
		struct entry* done = NULL;
		for (struct entry* x = entries; x; x = x->next) {
			if (x->owner != (const void*)ctx->session || x->collected)
				continue;
			if (!x->joined) {
				n_running++;
				running = x;
			} else if (!done) {
				n_done++;
				done = x;
			}
		}
		if (n_running > 1) {
			pthread_mutex_unlock(&registry_lock);
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
					"%d recordings are running; give the id of the one to stop", n_running);
			return 0;
		}
		e = running ? running : done;
		if (!e) {
			pthread_mutex_unlock(&registry_lock);
			tool_result_error(out, TOOL_NO_RECORDING, NULL,
					"no recording is running; start one with record_start");
			return 0;
		}
	}
	e->users++;
	pthread_mutex_unlock(&registry_lock);

	/* Flush, trailer, publish: up to a second or so; outside the lock. */
	struct record_stats s;
	int rc = record_stop(e->rec, &s);

	pthread_mutex_lock(&registry_lock);
	if (!e->joined) {
		e->final = s;
		e->result = rc;
		e->joined = true;
	}
	e->collected = true;
	e->users--;
	char eid[48];
	snprintf(eid, sizeof(eid), "%s", e->id);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", e->path);
	pthread_mutex_unlock(&registry_lock);

	if (rc < 0) {
		tool_result_error(out, rc == -EEXIST ? TOOL_OUTPUT_EXISTS : TOOL_INTERNAL,
				json_pack("{s:s}", "id", eid), "recording %s failed: %s", eid,
				s.message[0] ? s.message : strerror(-rc));
		return 0;
	}
	json_t* result = json_pack("{s:s, s:s, s:I, s:I, s:I, s:f, s:i, s:i, s:i, s:I}",
			"id", eid, "path", path, "bytes", (json_int_t)s.bytes,
			"frames", (json_int_t)s.frames, "dropped_frames", (json_int_t)s.dropped_frames,
			"duration_seconds", s.duration_seconds, "width", s.width, "height", s.height,
			"fps", s.fps, "window", (json_int_t)s.window);
	if (result && end_name(s.end))
		json_object_set_new(result, "ended", json_string(end_name(s.end)));
	tool_result_ok(out, result);
	const char* name = strrchr(path, '/');
	json_t* link = json_pack("{s:s, s:s+, s:s, s:s, s:I}", "type", "resource_link",
			"uri", "deskd://recordings/", eid, "name", name ? name + 1 : path,
			"mimeType", "video/mp4", "size", (json_int_t)s.bytes);
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

#define RECORDING_PROPS \
	"\"id\":{\"type\":\"string\"},\"window\":{\"type\":\"integer\"}," \
	"\"path\":{\"type\":\"string\"},\"state\":{\"type\":\"string\",\"enum\":[\"recording\",\"finished\",\"failed\"]}," \
	"\"frames\":{\"type\":\"integer\"},\"dropped_frames\":{\"type\":\"integer\"}," \
	"\"duration_seconds\":{\"type\":\"number\"},\"bytes\":{\"type\":\"integer\"}," \
	"\"width\":{\"type\":\"integer\"},\"height\":{\"type\":\"integer\"},\"fps\":{\"type\":\"integer\"}," \
	"\"started\":{\"type\":\"string\"},\"ended\":{\"type\":\"string\"}," \
	"\"error\":{\"type\":\"string\"},\"uri\":{\"type\":\"string\"}"

const struct tool_def tools_record[] = {
	{
		.name = "record_start",
		.title = "Start recording a window",
		.description =
			"Start recording one window (window: id from the windows tool) to an MP4 "
			"(H.264) video, in the background: the call returns at once with the "
			"recording's id and the path the file will have. Stop it with record_stop, "
			"which returns the finished file; until then nothing exists at the path. The "
			"window's own pixels are recorded even when it is covered; the video keeps "
			"the window's size at the start (rounded down to even), a resized window is "
			"scaled into it with black bars. out: absolute path under an allowed output "
			"root (the file is created mode 0600 and never replaces an existing one); "
			"default: the server's recordings folder. fps 1-60 (default 30). The "
			"recording also ends by itself after max_seconds (default 3600), when the "
			"window is destroyed, or when your session ends; the file is published then too.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,"
			"\"required\":[\"window\"],\"properties\":{"
			"\"window\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":4294967295,"
			"\"description\":\"Window id from the windows tool.\"},"
			"\"out\":{\"type\":\"string\",\"description\":\"Absolute path of the MP4 to write (must not exist).\"},"
			"\"fps\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":60,\"default\":30},"
			"\"max_seconds\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":86400,\"default\":3600,"
			"\"description\":\"Stop and publish after this many seconds.\"},"
			"\"cursor\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Draw the mouse pointer.\"}}}",
		.output_schema = "{\"type\":\"object\",\"properties\":{"
			"\"id\":{\"type\":\"string\"},\"window\":{\"type\":\"integer\"},\"path\":{\"type\":\"string\"},"
			"\"width\":{\"type\":\"integer\"},\"height\":{\"type\":\"integer\"},"
			"\"fps\":{\"type\":\"integer\"},\"max_seconds\":{\"type\":\"number\"}},"
			"\"required\":[\"id\",\"window\",\"path\"]}",
		.flags = TOOL_OPEN_WORLD,
		.handler = record_start_tool,
	},
	{
		.name = "record_stop",
		.title = "Stop a recording",
		.description =
			"Stop a recording started with record_start, finish the MP4 (it plays from "
			"the start: moov first) and publish it at its path. id: the recording's id; "
			"omit it to stop your only recording. Returns the path, size in bytes, "
			"frames, frames dropped because encoding fell behind, duration, video size, "
			"and a resource link (deskd://recordings/ID). A recording that already ended "
			"by itself (window destroyed, max_seconds) returns its result too.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
			"\"id\":{\"type\":\"string\",\"description\":\"Recording id from record_start; omit for your only one.\"}}}",
		.output_schema = "{\"type\":\"object\",\"properties\":{"
			"\"id\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},"
			"\"frames\":{\"type\":\"integer\"},\"dropped_frames\":{\"type\":\"integer\"},"
			"\"duration_seconds\":{\"type\":\"number\"},\"width\":{\"type\":\"integer\"},"
			"\"height\":{\"type\":\"integer\"},\"fps\":{\"type\":\"integer\"},"
			"\"window\":{\"type\":\"integer\"},\"ended\":{\"type\":\"string\"}},"
			"\"required\":[\"id\",\"path\",\"bytes\",\"frames\",\"dropped_frames\",\"duration_seconds\",\"width\",\"height\"]}",
		.flags = TOOL_OPEN_WORLD,
		.handler = record_stop_tool,
	},
	{
		.name = "recordings",
		.title = "List recordings",
		.description =
			"List this server's recordings, running and finished (newest first): id, "
			"window, path, state (recording, finished, failed), frames, dropped_frames, "
			"duration_seconds, bytes, size and fps; running ones show live numbers.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}",
		.output_schema = "{\"type\":\"object\",\"properties\":{\"recordings\":{\"type\":\"array\","
			"\"items\":{\"type\":\"object\",\"properties\":{" RECORDING_PROPS "},"
			"\"required\":[\"id\",\"window\",\"path\",\"state\"]}}},"
			"\"required\":[\"recordings\"]}",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_NO_DISPLAY,
		.handler = recordings_tool,
	},
	{ 0 },
};
