#pragma once
/* For the Wayland unit tests (test_wayland, test_capture_wayland,
 * test_input_wayland): a whole file read into memory, and the GTK probe
 * (tests/apps/wl_probe.py) started on a headless sway as a child that dies
 * with the test. Header-only, like xvfb.h. */

#include "wayland/wayland.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <signal.h>
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
