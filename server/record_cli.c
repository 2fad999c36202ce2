/* deskd record --window ID --out FILE [--fps N]: record one window of an
 * existing display until SIGINT/SIGTERM (or until the window is destroyed),
 * then publish the MP4 and print where it is. main() has already blocked
 * SIGINT and SIGTERM, so they are taken here with sigtimedwait. */
#include "server/record_cli.h"

#include "record/record.h"
#include "base/log.h"
#include "base/options.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void cli_log(void* ud, int level, const char* message)
{
	(void)ud;
	static const enum log_level map[] = { LOG_ERROR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	enum log_level l = level >= 0 && level <= 3 ? map[level] : LOG_DEBUG;
	if (log_enabled(l))
		log_write(l, __FILE__, __LINE__, "%s", message);
}

int record_cli_main(const struct options* opts)
{
	const char* display = opts->display;
	if (!display || !*display) {
		fprintf(stderr, "deskd record: no display; give --display :N or set DISPLAY\n");
		return 1;
	}

	/* A relative --out is taken from the current directory (canonical). */
	char path[PATH_MAX];
	if (opts->record_out[0] == '/') {
		snprintf(path, sizeof(path), "%s", opts->record_out);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd))) {
			fprintf(stderr, "deskd record: cannot get the current directory: %s\n",
					strerror(errno));
			return 1;
		}
		int n = snprintf(path, sizeof(path), "%s%s%s", cwd,
				strcmp(cwd, "/") == 0 ? "" : "/", opts->record_out);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			fprintf(stderr, "deskd record: --out is too long\n");
			return 1;
		}
	}
	/* The person at the terminal chooses the file: any directory, unless
	 * --output-root narrows it. */
	char slash[] = "/";
	char* any[] = { slash };
	struct record_params params = {
		.display = display,
		.window = (uint32_t)opts->record_window,	/* checked: 1..0xffffffff */
		.path = path,
		.roots = opts->n_output_root ? opts->output_root : any,
		.n_roots = opts->n_output_root ? opts->n_output_root : 1,
		.fps = opts->record_fps,
		.max_seconds = 0,
		.cursor = false,
	};
	record_set_log(cli_log, NULL);
	struct recorder* rec = NULL;
	char err[512];
	int rc = record_start(&params, &rec, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "deskd record: %s\n", err[0] ? err : strerror(-rc));
		return 1;
	}
	fprintf(stderr, "deskd record: recording " LOG_WINDOW " at %d fps to %s; Ctrl-C stops\n",
			LOG_WINDOW_ID(opts->record_window), params.fps, path);

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	const struct timespec tick = { 0, 200 * 1000 * 1000 };
	while (!record_done(rec)) {
		int sig = sigtimedwait(&set, NULL, &tick);
		if (sig == SIGINT || sig == SIGTERM)
			break;
	}

	struct record_stats st;
	rc = record_stop(rec, &st);
	record_destroy(rec);
	if (rc < 0) {
		fprintf(stderr, "deskd record: %s\n", st.message[0] ? st.message : strerror(-rc));
		return 1;
	}
	fprintf(stderr, "deskd record: wrote %s: %dx%d, %llu frames (%llu dropped), %.2f s, %llu bytes\n",
			path, st.width, st.height, st.frames, st.dropped_frames,
			st.duration_seconds, st.bytes);
	if (st.end == RECORD_END_WINDOW_GONE)
		fprintf(stderr, "deskd record: stopped because the window was destroyed\n");
	else if (st.end == RECORD_END_DISPLAY_GONE)
		fprintf(stderr, "deskd record: stopped because the display went away\n");
	return 0;
}
