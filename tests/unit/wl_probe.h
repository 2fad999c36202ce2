#pragma once
/* For the Wayland unit tests (test_wayland, test_capture_wayland,
 * test_input_wayland): a whole file read into memory, and the GTK probe
 * (tests/apps/wl_probe.py) started on a headless sway as a child that dies
 * with the test. Header-only, like xvfb.h. */

#include "wayland/wayland.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/** path's bytes, NUL-terminated and malloc'd, or NULL. */
static inline char* wlt_slurp(const char* path)
{
	FILE* f = fopen(path, "rb");
	if (!f)
		return NULL;
	char* buf = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = (cap + 4096) * 2;
			char* b = realloc(buf, cap);
			if (!b)
				break;
			buf = b;
		}
		size_t k = fread(buf + len, 1, cap - len - 1, f);
		if (k == 0)
			break;
		len += k;
	}
	fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf;
}

/** Fork the probe on sway: it logs to log, writes its text to text, its
 *  stderr to err; HOME is home. The child's pid (it gets SIGKILL when the
 *  test dies), or -1. */
static inline pid_t wlt_start_probe(const struct wayland_sway* sway, const char* home,
		const char* log, const char* text, const char* err)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	char e_disp[64], e_rt[160], e_home[160];
	snprintf(e_disp, sizeof(e_disp), "WAYLAND_DISPLAY=%s", wayland_sway_display(sway));
	snprintf(e_rt, sizeof(e_rt), "XDG_RUNTIME_DIR=%s", wayland_sway_runtime_dir(sway));
	snprintf(e_home, sizeof(e_home), "HOME=%s", home);
	char e_path[] = "PATH=/usr/bin:/bin", e_gdk[] = "GDK_BACKEND=wayland",
	     e_at[] = "NO_AT_BRIDGE=1", e_im[] = "GTK_IM_MODULE=gtk-im-context-simple",
	     e_lang[] = "LANG=C.UTF-8";
	char* env[] = { e_disp, e_rt, e_home, e_path, e_gdk, e_at, e_im, e_lang, NULL };
	char a0[] = "/usr/bin/python3", a1[] = "tests/apps/wl_probe.py";
	char* argv[] = { a0, a1, (char*)log, (char*)text, NULL };
	execve(argv[0], argv, env);
	_exit(127);
}

/** Can the desktop checks run here: sway and python3-gi with GTK 3? Says
 *  so when not. */
static inline bool wlt_can_run(void)
{
	bool have = access("/usr/bin/sway", X_OK) == 0 &&
		system("/usr/bin/python3 -c 'import gi; gi.require_version(\"Gtk\", \"3.0\")' "
				">/dev/null 2>&1") == 0;
	if (!have)
		printf("  no sway or python3-gi here (scripts/install-deps test): desktop checks skipped\n");
	return have;
}

/** A headless sway of width x height logging to log (dies with the test),
 *  or NULL. */
static inline struct wayland_sway* wlt_start_sway(int width, int height, const char* log)
{
	int err = 0;
	struct wayland_sway_options o = { .width = width, .height = height, .log_path = log,
		.die_with_parent = true };
	return wayland_sway_start(&o, &err);
}

/** Stop a probe by its pid (SIGKILL, reaped); *pid becomes 0. */
static inline void wlt_stop_probe(pid_t* pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		*pid = 0;
	}
}

/** Stop sway by its pid; true when it is gone. *sway becomes NULL. */
static inline bool wlt_stop_sway(struct wayland_sway** sway)
{
	if (!*sway)
		return true;
	pid_t pid = wayland_sway_pid(*sway);
	wayland_sway_stop(*sway);
	*sway = NULL;
	return kill(pid, 0) < 0 && errno == ESRCH;
}
