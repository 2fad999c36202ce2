#pragma once

/* record/: the window recorder and the safe-output library it shares with
 * screenshots (DESIGN.md section 8). No X11 or libav types here. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Safe output: the file is written in a private 0700 staging directory next
 * to the destination, created O_CREAT|O_EXCL|O_NOFOLLOW 0600, fsynced, then
 * published with link() (never replacing anything, symlinks included). */
struct safe_output;

/** Check `path` (absolute, parent exists and is canonical with no symlink,
 *  under one of roots) and that nothing exists there; create the staging
 *  file. Returns 0, -EINVAL (bad path; reason in err), -EEXIST (output
 *  exists), or -errno. On success *out owns the staging file. */
int safe_output_open(const char* path, char* const* roots, int n_roots,
		struct safe_output** out, char* err, size_t err_size);
/** The staging file's descriptor (owned by self) and path (for libav). */
int safe_output_fd(const struct safe_output* self);
const char* safe_output_staging_path(const struct safe_output* self);
/** The destination path. */
const char* safe_output_path(const struct safe_output* self);
/** fsync, publish without replacing, remove the staging dir, free self.
 *  Returns 0 or -errno (-EEXIST if the destination appeared meanwhile);
 *  on failure the staging is removed too. */
int safe_output_publish(struct safe_output* self);
/** Remove the staging and free self. NULL-safe. */
void safe_output_abort(struct safe_output* self);
/** Write all of buf to the staging file; 0 or -errno (e.g. -ENOSPC). */
int safe_output_write(struct safe_output* self, const void* buf, size_t len);
/** Remove staging directories left by a crash (kill -9) under these dirs. */
void safe_output_cleanup_stale(char* const* dirs, int n_dirs);

/* Files under a root (the file tools): `rel` is a path relative to root made
 * of plain names (no empty, '.' or '..' component, no staging name; valid
 * UTF-8 without control or bidirectional characters, base/text.h), walked
 * from the root with O_NOFOLLOW at every step, so a symlink anywhere below
 * the root (a directory or the file, dangling or not) is refused and nothing
 * outside the root is reached. Errors: -EINVAL bad path text, -ELOOP a
 * symlink, -ENOTDIR a component is no directory, -ENOENT missing, -ENXIO the
 * root is missing; the reason is in err. */

/** Like safe_output_open, for rel under root (the directories must exist):
 *  -EEXIST when anything is there (file, directory, symlink). Writes past
 *  max_bytes (0: no limit) fail with -EFBIG. */
int safe_output_open_under(const char* root, const char* rel, long long max_bytes,
		struct safe_output** out, char* err, size_t err_size);
/** Open rel under root for reading: a regular file (-EISDIR a directory,
 *  -EINVAL anything else that is not a regular file) with one link (-EMLINK
 *  a file with other hard links, which may be outside the root) of at most
 *  max_bytes (0: no limit; else -EFBIG). Returns the descriptor (the caller
 *  closes it) with its size in *size, or -errno. */
int safe_input_open(const char* root, const char* rel, long long max_bytes,
		long long* size, char* err, size_t err_size);

enum safe_entry_type { SAFE_ENTRY_FILE, SAFE_ENTRY_DIR, SAFE_ENTRY_SYMLINK, SAFE_ENTRY_OTHER };
struct safe_entry {
	char name[256];
	enum safe_entry_type type;	/* of the entry itself (symlinks not followed) */
	long long size;			/* files only */
	unsigned mode;			/* permission bits */
	long long mtime;		/* seconds since the epoch */
};
/** The entries of the directory rel under root ("" = the root), sorted by
 *  name, staging directories left out, at most max (then *truncated).
 *  *out is malloc'd (free it). 0 or -errno. */
int safe_dir_list(const char* root, const char* rel, size_t max, struct safe_entry** out,
		size_t* n_out, bool* truncated, char* err, size_t err_size);

/* The window recorder: one window -> XComposite capture -> swscale ->
 * libx264 (yuv420p, no B-frames, a keyframe every 2 s) -> MP4 (+faststart,
 * variable-rate: a frame only when the window changed) through the
 * safe-output library. Each recorder has its own thread and its own X
 * connection; it finalizes and publishes by itself when stopped, when the
 * window is destroyed, when max_seconds pass, or when the display goes away,
 * and removes its staging on any error (ENOSPC included). */

struct recorder;

enum record_state {
	RECORD_RUNNING = 0,
	RECORD_FINISHED,	/* published at the destination */
	RECORD_FAILED,		/* nothing published; error and message say why */
};

enum record_end {
	RECORD_END_NONE = 0,	/* still running */
	RECORD_END_STOPPED,	/* record_stop / record_request_stop */
	RECORD_END_WINDOW_GONE,	/* the window was destroyed */
	RECORD_END_MAX_SECONDS,
	RECORD_END_DISPLAY_GONE,
	RECORD_END_ERROR,	/* a write or encoder error */
};

struct record_params {
	const char* display;	/* X display name (":1"); NULL: $DISPLAY */
	uint32_t window;	/* X window id (the client window) */
	const char* path;	/* destination, checked by safe_output_open */
	char* const* roots;	/* output roots for path */
	int n_roots;
	int fps;		/* 1..60; 0 means 30 */
	double max_seconds;	/* 0: no limit */
	bool cursor;		/* draw the mouse pointer into the video */
	long long min_free_bytes; /* refuse to start with less free space; 0: 1 MiB */
};

struct record_stats {
	enum record_state state;
	enum record_end end;
	uint32_t window;
	int width, height;	/* the video's size (even, fixed at start) */
	int fps;
	unsigned long long frames;	/* frames in the video: one per slot where
					 * the window changed, a keyframe every 2 s,
					 * and the last slot */
	unsigned long long dropped_frames; /* slots missed because encoding fell
					    * behind: the previous picture lasts
					    * over them */
	unsigned long long bytes;	/* bytes written so far / file size */
	double duration_seconds;	/* video duration (frames span) */
	int error;			/* 0, or -errno when FAILED */
	char message[256];		/* why it failed, or "" */
};

/** Where libav and recorder messages go; level 0 error, 1 warning, 2 info,
 *  3 debug. Set once before the first record_start (not thread-safe).
 *  Without it, messages are dropped and libav is kept at AV_LOG_ERROR. */
typedef void (*record_log_fn)(void* ud, int level, const char* message);
void record_set_log(record_log_fn fn, void* ud);

/* The libav libraries the recorder runs with (run-time versions), for status
 * reports: no libav header is needed outside record/. */
#define RECORD_VERSIONS 5
struct record_version {
	const char* library;	/* "ffmpeg", "libavcodec", "libavformat", "libswscale", "libavutil" */
	char version[32];	/* "5.1.6", "59.37.100" */
};
/** Fill out[0..RECORD_VERSIONS), in the order above. Any thread. */
void record_versions(struct record_version out[RECORD_VERSIONS]);

/** Check the window and the output, open the encoder and start recording on
 *  a new thread. Returns 0 with *out set, or -errno with a reason in err:
 *  -ENOENT the window does not exist, -EINVAL bad path, -EEXIST the output
 *  exists, -ECONNREFUSED the display cannot be opened, -ENOSPC not enough
 *  free space, -ENOTSUP the root window or no Composite, -ENOMEM, -EIO. */
int record_start(const struct record_params* params, struct recorder** out,
		char* err, size_t err_size);
/** Ask the recording to finalize and publish; returns at once. Any thread. */
void record_request_stop(struct recorder* self);
/** Stop (if running), wait until finalized, fill stats. Returns 0 when the
 *  file is published, else the recording's -errno (stats.message says why).
 *  Idempotent; any thread but the recorder's. */
int record_stop(struct recorder* self, struct record_stats* stats);
/** Has the recording ended (published or failed)? Any thread. */
bool record_done(struct recorder* self);
/** A snapshot of the live numbers. Any thread. */
void record_get_stats(struct recorder* self, struct record_stats* out);
/** The destination path (valid until record_destroy). */
const char* record_path(const struct recorder* self);
/** Stop and publish if still running, join the thread, free. NULL-safe. */
void record_destroy(struct recorder* self);
