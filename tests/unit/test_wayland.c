/* wayland/: the keymap generator alone; then on a headless sway of its own
 * (private runtime dir, stopped by pid, also on failure) with a
 * Wayland-native GTK 3 probe (tests/apps/wl_probe.py): the output's logical
 * geometry, screencopy pixels of the probe (whole output and a region),
 * 20 clicks landing at their coordinates, Unicode strings typed byte-exact
 * through one keyboard with ctrl+a between them, and sway IPC (the probe
 * with its pid and rect; floating, resize, move; kill). Without sway or
 * python3-gi on the machine only the keymap checks run. */
#define _GNU_SOURCE
#include "wayland/wayland.h"
#include "base/clock.h"
#include "tests/unit/tst.h"
#include "tests/unit/wl_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xkbcommon/xkbcommon.h>

#define W 1280
#define H 800
#define T 5000	/* ms: every wayland call's bound */

static struct wayland_sway* sway;
static pid_t probe_pid;
static char dir[64] = "/tmp/deskd-wltest-XXXXXX";
static char sway_log[128], probe_log[128], probe_text[128], probe_err[128];

static void keymap_checks(void)
{
	const uint32_t cps[] = { 'h', 0xe9, 0x4f60, 0x1f600, 0x2713, ' ', '\n', 'A' };
	size_t n = sizeof(cps) / sizeof(cps[0]);
	int err = 0;
	char* text = wayland_keymap_text(cps, n, true, &err);
	TST_CHECK(text != NULL);
	if (!text)
		return;
	struct xkb_context* ctx = xkb_context_new(XKB_CONTEXT_NO_DEFAULT_INCLUDES);
	struct xkb_keymap* km = xkb_keymap_new_from_string(ctx, text,
			XKB_KEYMAP_FORMAT_TEXT_V1, XKB_KEYMAP_COMPILE_NO_FLAGS);
	TST_CHECK(km != NULL);
	if (km) {
		struct xkb_state* st = xkb_state_new(km);
		for (size_t i = 0; i < n; i++) {
			xkb_keysym_t sym = xkb_state_key_get_one_sym(st, (xkb_keycode_t)(9 + i));
			uint32_t want = cps[i] == '\n' ? '\r' : cps[i];	/* Return's utf32 is CR */
			TST_EQ_INT(xkb_keysym_to_utf32(sym), want);
		}
		/* the modifiers are there and mapped */
		xkb_keycode_t ctrl = xkb_keymap_key_by_name(km, "LCTL");
		TST_CHECK(ctrl != XKB_KEYCODE_INVALID);
		xkb_state_update_key(st, ctrl, XKB_KEY_DOWN);
		TST_CHECK(xkb_state_mod_name_is_active(st, XKB_MOD_NAME_CTRL,
				XKB_STATE_MODS_EFFECTIVE) > 0);
		xkb_state_unref(st);
		xkb_keymap_unref(km);
	}
	xkb_context_unref(ctx);
	free(text);
	/* a control character has no key; too many distinct ones do not fit */
	const uint32_t bad[] = { 0x07 };
	TST_CHECK(wayland_keymap_text(bad, 1, false, &err) == NULL && err == -EINVAL);
	uint32_t many[WAYLAND_KEYMAP_MAX + 1];
	for (size_t i = 0; i <= WAYLAND_KEYMAP_MAX; i++)
		many[i] = 0x4e00 + (uint32_t)i;
	TST_CHECK(wayland_keymap_text(many, WAYLAND_KEYMAP_MAX + 1, false, &err) == NULL);
	char* full = wayland_keymap_text(many, WAYLAND_KEYMAP_MAX, false, &err);
	TST_CHECK(full != NULL);
	free(full);
}

static int count_lines(const char* path, const char* prefix)
{
	char* s = wlt_slurp(path);
	int n = 0;
	for (char* p = s; p && *p;) {
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			n++;
		char* nl = strchr(p, '\n');
		p = nl ? nl + 1 : p + strlen(p);
	}
	free(s);
	return n;
}

/* The lines of path that start with prefix, malloc'd ("" when none). */
static char* lines_with(const char* path, const char* prefix)
{
	char* s = wlt_slurp(path);
	size_t k = 0;
	for (char* p = s; p && *p;) {
		char* nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p + 1) : strlen(p);
		if (strncmp(p, prefix, strlen(prefix)) == 0) {
			memmove(s + k, p, l);
			k += l;
		}
		p += l;
	}
	if (s)
		s[k] = '\0';
	return s;
}

/* Wait until path holds exactly want; true if it did in time. */
static bool wait_text(const char* path, const char* want, int ms)
{
	int64_t end = clock_ms() + ms;
	do {
		char* s = wlt_slurp(path);
		bool same = s && strcmp(s, want) == 0;
		free(s);
		if (same)
			return true;
		clock_sleep_ms(20);
	} while (clock_ms() < end);
	return false;
}

static bool find_probe(struct wayland_window* out, int ms)
{
	int64_t end = clock_ms() + ms;
	do {
		struct wayland_window* ws;
		size_t n;
		if (wayland_sway_windows(wayland_sway_ipc_path(sway), T, &ws, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				if (ws[i].pid == probe_pid) {
					*out = ws[i];
					out->app_id = strdup(ws[i].app_id);
					out->title = strdup(ws[i].title);
					wayland_windows_free(ws, n);
					return true;
				}
			}
			wayland_windows_free(ws, n);
		}
		clock_sleep_ms(50);
	} while (clock_ms() < end);
	return false;
}

static void window_clear(struct wayland_window* w)
{
	free(w->app_id);
	free(w->title);
	w->app_id = w->title = NULL;
}

/* The probe's toplevel in the tracked list (dispatching tl up to ms for
 * it to satisfy want); false when it is not there in time. */
static bool toplevel_wait(struct wayland* tl, const char* title, int ms,
		bool (*want)(const struct wayland_toplevel* t), struct wayland_toplevel* out)
{
	int64_t end = clock_ms() + ms;
	do {
		struct wayland_toplevel* ts;
		size_t n;
		bool found = false;
		if (wayland_toplevels(&ts, &n) == 0) {
			for (size_t i = 0; i < n && !found; i++) {
				if (strcmp(ts[i].title, title) == 0 && (!want || want(&ts[i]))) {
					*out = ts[i];
					found = true;
				}
			}
			free(ts);
		}
		if (found)
			return true;
		wayland_dispatch(tl, 20);
	} while (clock_ms() < end);
	return false;
}

static bool tl_full(const struct wayland_toplevel* t) { return t->fullscreen; }
static bool tl_not_full(const struct wayland_toplevel* t) { return !t->fullscreen; }
static bool tl_active(const struct wayland_toplevel* t) { return t->activated; }
static bool tl_inactive(const struct wayland_toplevel* t) { return !t->activated; }

/* foreign-toplevel: one connection tracks the list; its ids take requests
 * from any code; sway's IPC confirms each effect; close ends the probe. */
static void toplevel_checks(const struct wayland_window* win)
{
	int err = 0;
	TST_CHECK(!wayland_toplevels_tracked());
	struct wayland_toplevel* ts;
	size_t n;
	TST_EQ_INT(wayland_toplevels(&ts, &n), -ENODATA);
	struct wayland* tl = wayland_connect(wayland_sway_display(sway),
			wayland_sway_runtime_dir(sway), T, &err);
	struct wayland* other = wayland_connect(wayland_sway_display(sway),
			wayland_sway_runtime_dir(sway), T, &err);
	TST_CHECK(tl && other);
	if (!tl || !other)
		goto out;
	TST_CHECK(wayland_has(tl, WAYLAND_FOREIGN_TOPLEVEL));
	TST_EQ_INT(wayland_toplevels_track(tl, T), 0);
	TST_EQ_INT(wayland_toplevels_track(other, T), -EBUSY);
	TST_CHECK(wayland_toplevels_tracked());
	struct wayland_toplevel t;
	TST_CHECK(toplevel_wait(tl, "wl-probe", 3000, NULL, &t));
	TST_EQ_STR(t.app_id, win->app_id);
	TST_CHECK(t.id > 0 && t.parent == 0 && !t.minimized && !t.maximized);
	TST_EQ_INT(wayland_toplevel_request(t.id + 1000, WAYLAND_TOPLEVEL_CLOSE), -ENOENT);

	TST_EQ_INT(wayland_toplevel_request(t.id, WAYLAND_TOPLEVEL_FULLSCREEN), 0);
	TST_CHECK(toplevel_wait(tl, "wl-probe", 3000, tl_full, &t));
	struct wayland_window w2 = { 0 };
	TST_CHECK(find_probe(&w2, 3000) && w2.fullscreen);
	window_clear(&w2);
	TST_EQ_INT(wayland_toplevel_request(t.id, WAYLAND_TOPLEVEL_UNFULLSCREEN), 0);
	TST_CHECK(toplevel_wait(tl, "wl-probe", 3000, tl_not_full, &t));
	TST_CHECK(find_probe(&w2, 3000) && !w2.fullscreen);
	window_clear(&w2);

	/* focus elsewhere (no window: an empty workspace), then activate */
	TST_EQ_INT(wayland_sway_command(wayland_sway_ipc_path(sway), "workspace 9", T, NULL, 0), 0);
	TST_CHECK(toplevel_wait(tl, "wl-probe", 3000, tl_inactive, &t));
	TST_EQ_INT(wayland_toplevel_request(t.id, WAYLAND_TOPLEVEL_ACTIVATE), 0);
	TST_CHECK(toplevel_wait(tl, "wl-probe", 3000, tl_active, &t));
	TST_CHECK(find_probe(&w2, 3000) && w2.focused && w2.visible);
	window_clear(&w2);

	/* close: the probe quits; its entry leaves the list */
	uint32_t id = t.id;
	TST_EQ_INT(wayland_toplevel_request(id, WAYLAND_TOPLEVEL_CLOSE), 0);
	int64_t end = clock_ms() + 5000;
	while (wayland_toplevel_get(id, &t) == 0 && clock_ms() < end)
		wayland_dispatch(tl, 20);
	TST_EQ_INT(wayland_toplevel_get(id, &t), -ENOENT);
	printf("  foreign-toplevel: listed as %u, fullscreen and back, activated, closed\n",
			(unsigned)id);
out:
	wayland_disconnect(tl);
	TST_CHECK(!wayland_toplevels_tracked());
	TST_EQ_INT(wayland_toplevels(&ts, &n), -ENODATA);
	wayland_disconnect(other);
}

/* In a child process: a connection of its own that reads the clipboard
 * into path (mode 'g'), or sets text and serves it for 5 s (mode 's',
 * "set" on fd once it is the clipboard). */
static pid_t clip_child(char mode, const char* text, const char* path, int fd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int err = 0;
	struct wayland* w2 = wayland_connect(wayland_sway_display(sway),
			wayland_sway_runtime_dir(sway), T, &err);
	if (!w2)
		_exit(2);
	if (mode == 'g') {
		char* got = NULL;
		if (wayland_clipboard_get(w2, T, &got, NULL) < 0)
			_exit(3);
		FILE* f = fopen(path, "w");
		if (!f)
			_exit(4);
		fputs(got, f);
		fclose(f);
		_exit(0);
	}
	if (wayland_clipboard_set(w2, text, T) < 0)
		_exit(5);
	if (write(fd, "set", 3) != 3)
		_exit(6);
	int64_t end = clock_ms() + 5000;
	while (clock_ms() < end)
		wayland_dispatch(w2, 50);
	_exit(0);
}

static void desktop_checks(void)
{
	int err = 0;
	int64_t t0 = clock_ms();
	sway = wlt_start_sway(W, H, sway_log);
	TST_CHECK(sway != NULL);
	if (!sway)
		return;
	printf("  sway %d up in %lld ms on %s\n", (int)wayland_sway_pid(sway),
			(long long)(clock_ms() - t0), wayland_sway_display(sway));
	struct stat st;
	TST_CHECK(stat(wayland_sway_runtime_dir(sway), &st) == 0 && (st.st_mode & 0777) == 0700);
	if (geteuid() == 0)
		TST_CHECK(st.st_uid != 0);

	/* a wrong name is refused, not waited on */
	TST_CHECK(wayland_connect("wayland-99", wayland_sway_runtime_dir(sway), T, &err) == NULL);
	TST_EQ_INT(err, -ENOENT);

	struct wayland* wl = wayland_connect(wayland_sway_display(sway),
			wayland_sway_runtime_dir(sway), T, &err);
	TST_CHECK(wl != NULL);
	if (!wl)
		return;
	printf("  missing globals: \"%s\"\n", wayland_missing(wl));
	TST_CHECK(wayland_has(wl, WAYLAND_SHM | WAYLAND_SEAT | WAYLAND_XDG_OUTPUT |
			WAYLAND_SCREENCOPY | WAYLAND_VIRTUAL_POINTER | WAYLAND_VIRTUAL_KEYBOARD));
	TST_EQ_INT(wayland_output_count(wl), 1);
	struct wayland_output out;
	TST_EQ_INT(wayland_output_get(wl, 0, &out), 0);
	TST_EQ_STR(out.name, "HEADLESS-1");
	TST_EQ_INT(out.x, 0);
	TST_EQ_INT(out.y, 0);
	TST_EQ_INT(out.width, W);
	TST_EQ_INT(out.height, H);
	TST_EQ_INT(out.scale, 1);
	TST_EQ_INT(wayland_output_get(wl, 1, &out), -ENOENT);

	/* the devices before the app, so it sees them from its start */
	TST_EQ_INT(wayland_input_open(wl, 100, T), 0);
	probe_pid = wlt_start_probe(sway, dir, probe_log, probe_text, probe_err);
	int64_t end = clock_ms() + 20000;
	while (count_lines(probe_log, "ready") == 0 && clock_ms() < end)
		clock_sleep_ms(50);
	TST_EQ_INT(count_lines(probe_log, "ready"), 1);
	struct wayland_window win = { 0 };
	bool found = find_probe(&win, 10000);
	TST_CHECK(found);
	if (!found)
		goto out;
	printf("  probe: id %lld app_id \"%s\" title \"%s\" pid %d rect %d,%d %dx%d focused %d\n",
			(long long)win.id, win.app_id, win.title, (int)win.pid, win.x, win.y,
			win.width, win.height, win.focused);
	TST_EQ_STR(win.title, "wl-probe");
	TST_CHECK(win.width > 600 && win.height > 400);
	TST_CHECK(!win.xwayland);
	/* the pointer away from the probe: a headless output draws the cursor
	 * in software, into every frame */
	TST_EQ_INT(wayland_pointer_move(wl, W - 1, H - 1, T), 0);
	clock_sleep_ms(300);	/* its first frame on screen */

	/* capture: the whole output, then a region */
	struct wayland_frame* f = NULL;
	int64_t best = INT64_MAX;
	for (int i = 0; i < 5; i++) {
		wayland_frame_free(f);
		f = NULL;
		TST_EQ_INT(wayland_capture(wl, 0, NULL, T, &f), 0);
		if (f && f->capture_ns < best)
			best = f->capture_ns;
	}
	TST_CHECK(f != NULL);
	if (f) {
		printf("  capture %dx%d stride %d pixel %d y_inverted %d: best of 5 %.2f ms\n",
				f->width, f->height, f->stride, f->pixel, f->y_inverted, best / 1e6);
		TST_EQ_INT(f->width, W);
		TST_EQ_INT(f->height, H);
		TST_EQ_INT(wayland_frame_rgb(f, win.x + 200, win.y + 100), 0x283ce6);
		TST_EQ_INT(wayland_frame_rgb(f, win.x + 101, win.y + 51), 0x283ce6);
		TST_EQ_INT(wayland_frame_rgb(f, win.x + 99, win.y + 100), 0x14c828);
		TST_EQ_INT(wayland_frame_rgb(f, win.x + 50, win.y + 300), 0x14c828);
	}
	wayland_frame_free(f);
	f = NULL;
	int32_t region[4] = { win.x + 90, win.y + 40, 220, 120 };
	TST_EQ_INT(wayland_capture(wl, 0, region, T, &f), 0);
	if (f) {
		TST_EQ_INT(f->width, 220);
		TST_EQ_INT(f->height, 120);
		TST_EQ_INT(wayland_frame_rgb(f, 110, 60), 0x283ce6);
		TST_EQ_INT(wayland_frame_rgb(f, 5, 5), 0x14c828);
		TST_EQ_INT(wayland_frame_rgb(f, 11, 11), 0x283ce6);
		TST_EQ_INT(wayland_frame_rgb(f, 9, 9), 0x14c828);
	}
	wayland_frame_free(f);
	f = NULL;

	/* --memory-idle's release: the buffer and the damage watch go; a grab
	 * makes the buffer again (same pixels), the damage poll starts again
	 * with the whole output */
	int32_t box[4];
	for (int64_t until = clock_ms() + 2000; wayland_damage(wl, 0, 0, box) == 1 && clock_ms() < until;)
		clock_sleep_ms(50);
	wayland_release_buffers(wl);
	TST_EQ_INT(wayland_damage(wl, 0, T, box), 1);
	TST_EQ_INT(box[0], 0);
	TST_EQ_INT(box[1], 0);
	TST_EQ_INT(box[2], W);
	TST_EQ_INT(box[3], H);
	TST_EQ_INT(wayland_capture(wl, 0, NULL, T, &f), 0);
	if (f)
		TST_EQ_INT(wayland_frame_rgb(f, win.x + 200, win.y + 100), 0x283ce6);
	wayland_frame_free(f);
	f = NULL;

	/* 20 clicks land where they were sent */
	char want[2048] = "";
	int64_t c0 = clock_ns();
	for (int i = 0; i < 20; i++) {
		int x = 13 + (i * 97) % 570, y = 11 + (i * 53) % 380;
		int button = i % 5 == 4 ? 3 : 1;
		TST_EQ_INT(wayland_pointer_click(wl, win.x + x, win.y + y, button, 1, T), 0);
		size_t l = strlen(want);
		snprintf(want + l, sizeof(want) - l, "click %d %d %d\n", x, y, button);
	}
	double click_ms = (double)(clock_ns() - c0) / 1e6 / 20;
	end = clock_ms() + 10000;
	while (count_lines(probe_log, "click") < 20 && clock_ms() < end)
		clock_sleep_ms(20);
	/* the probe logs releases too: the clicks alone */
	char* got = lines_with(probe_log, "click ");
	const char* clicks = got;
	TST_EQ_STR(clicks, want);
	int landed = 0;
	for (const char* p = want; clicks && *p;) {
		const char* nl = strchr(p, '\n');
		if (strncmp(p, clicks, (size_t)(nl - p + 1)) == 0)
			landed++;
		clicks = strchr(clicks, '\n');
		clicks = clicks ? clicks + 1 : NULL;
		p = nl + 1;
	}
	printf("  clicks landed exactly: %d/20 (%.2f ms per click call)\n", landed, click_ms);
	free(got);
	TST_EQ_INT(wayland_pointer_scroll(wl, 0, 2, T), 0);
	TST_EQ_INT(wayland_pointer_move(wl, W + 5, 10, T), -EINVAL);

	/* typing: focus the text view, then each string replaces the last
	 * (ctrl+a selects all: without it the text would pile up) */
	TST_EQ_INT(wayland_pointer_click(wl, win.x + 300, win.y + 500, 1, 1, T), 0);
	static const char* strings[] = {
		"héllo 你好 😀 ✓",
		"abc XYZ 0123456789",
		"Ünïcödé ß € ¿¡ «»",
		"日本語のテキスト、한국어",
		"emoji 🎉🚀👍🏽 ❤️",
		"tab\there !@#$%^&*()_+-=[]{};':\",./<>?`~|\\",
		"Ελληνικά кириллица עברית العربية",
		"two\nlines",
	};
	size_t n_strings = sizeof(strings) / sizeof(strings[0]);
	int exact = 0;
	size_t chars = 0;
	int64_t k0 = clock_ns();
	for (size_t i = 0; i < n_strings; i++) {
		if (i > 0)
			TST_EQ_INT(wayland_key_chord(wl, "ctrl+a", T), 0);
		TST_EQ_INT(wayland_type(wl, strings[i], 0, T), 0);
		bool ok = wait_text(probe_text, strings[i], 10000);
		if (!ok) {
			char* s = wlt_slurp(probe_text);
			fprintf(stderr, "  typed \"%s\", the view holds \"%s\"\n", strings[i],
					s ? s : "(nothing)");
			free(s);
		}
		exact += ok;
		chars += strlen(strings[i]);
	}
	printf("  typed byte-exact: %d/%zu strings (%zu bytes, %.0f ms in all)\n", exact,
			n_strings, chars, (double)(clock_ns() - k0) / 1e6);
	TST_EQ_INT(exact, (int)n_strings);
	TST_EQ_INT(wayland_type(wl, "bell\a", 0, T), -EINVAL);
	TST_EQ_INT(wayland_type(wl, "\xc3\x28", 0, T), -EINVAL);
	TST_EQ_INT(wayland_key_chord(wl, "ctrl+nosuchkey", T), -EINVAL);
	TST_EQ_INT(wayland_key_chord(wl, "hyper+a", T), -EINVAL);

	/* the clipboard: ours read by another client and pasted into GTK;
	 * another client's read by us */
	const char* clip_text = "clip ✓ 你好 😀\nline";
	char clip_path[160];
	snprintf(clip_path, sizeof(clip_path), "%s/clip.txt", dir);
	TST_EQ_INT(wayland_clipboard_set(wl, clip_text, T), 0);
	pid_t cp = clip_child('g', NULL, clip_path, -1);
	int cstatus = -1;
	end = clock_ms() + 5000;
	while (waitpid(cp, &cstatus, WNOHANG) == 0 && clock_ms() < end)
		wayland_dispatch(wl, 20);
	if (clock_ms() >= end) {
		kill(cp, SIGKILL);
		waitpid(cp, &cstatus, 0);
	}
	TST_CHECK(WIFEXITED(cstatus) && WEXITSTATUS(cstatus) == 0);
	char* clip_got = wlt_slurp(clip_path);
	TST_EQ_STR(clip_got, clip_text);
	free(clip_got);
	unlink(clip_path);
	TST_EQ_INT(wayland_key_chord(wl, "ctrl+a", T), 0);
	TST_EQ_INT(wayland_key_chord(wl, "ctrl+v", T), 0);
	bool pasted = false;
	end = clock_ms() + 10000;
	while (!pasted && clock_ms() < end) {
		wayland_dispatch(wl, 20);
		pasted = wait_text(probe_text, clip_text, 0);
	}
	TST_CHECK(pasted);
	int sp[2];
	TST_CHECK(pipe(sp) == 0);
	cp = clip_child('s', "from another client ✓", NULL, sp[1]);
	close(sp[1]);
	char mark[4] = "";
	struct pollfd pfd = { .fd = sp[0], .events = POLLIN };
	if (poll(&pfd, 1, T) == 1)
		TST_EQ_INT(read(sp[0], mark, 3), 3);
	close(sp[0]);
	char* other = NULL;
	TST_EQ_INT(wayland_clipboard_get(wl, T, &other, NULL), 0);
	TST_EQ_STR(other, "from another client ✓");
	free(other);
	kill(cp, SIGKILL);
	waitpid(cp, NULL, 0);
	printf("  clipboard: set read back by another client, pasted into GTK, read from another client\n");

	/* sway IPC: float, resize and move it, click it there; then foreign-toplevel (closes it) */
	char cmd[128], msg[256];
	snprintf(cmd, sizeof(cmd), "[pid=%d] floating enable, resize set 700 500, "
			"move position 100 80", (int)probe_pid);
	TST_EQ_INT(wayland_sway_command(wayland_sway_ipc_path(sway), cmd, T, msg, sizeof(msg)), 0);
	TST_EQ_INT(wayland_sway_command(wayland_sway_ipc_path(sway), "[con_id=999999] focus",
			T, msg, sizeof(msg)), -EINVAL);
	printf("  a failed command says: %s\n", msg);
	window_clear(&win);
	clock_sleep_ms(200);
	TST_CHECK(find_probe(&win, 3000));
	TST_EQ_INT(win.x, 100);
	TST_EQ_INT(win.y, 80);
	TST_EQ_INT(win.width, 700);
	TST_EQ_INT(win.height, 500);
	TST_CHECK(win.floating);
	int before = count_lines(probe_log, "click");
	TST_EQ_INT(wayland_pointer_click(wl, 100 + 42, 80 + 24, 1, 1, T), 0);
	end = clock_ms() + 3000;
	while (count_lines(probe_log, "click") == before && clock_ms() < end)
		clock_sleep_ms(20);
	got = lines_with(probe_log, "click ");
	size_t gl = got ? strlen(got) : 0;
	const char* tail = "click 42 24 1\n";
	TST_CHECK(gl >= strlen(tail) && strcmp(got + gl - strlen(tail), tail) == 0);
	free(got);
	toplevel_checks(&win);
	window_clear(&win);
	end = clock_ms() + 5000;
	int status = 0;
	pid_t w = 0;
	while ((w = waitpid(probe_pid, &status, WNOHANG)) == 0 && clock_ms() < end)
		clock_sleep_ms(20);
	TST_EQ_INT(w, probe_pid);
	if (w == probe_pid)
		probe_pid = 0;
out:
	window_clear(&win);
	wayland_disconnect(wl);
}

static void cleanup(void)
{
	wlt_stop_probe(&probe_pid);
	TST_CHECK(wlt_stop_sway(&sway));
}

static void address_checks(void)
{
	char a[WAYLAND_ADDRESS_MAX], sock[256], ipc[256];
	TST_CHECK(wayland_address_format("/run/d/wayland-1", "/run/d/sway.sock", a, sizeof(a)) == 0);
	TST_CHECK(strcmp(a, "wayland:/run/d/wayland-1?sway=/run/d/sway.sock") == 0);
	TST_CHECK(wayland_is_address(a));
	TST_CHECK(!wayland_is_address(":12") && !wayland_is_address(NULL));
	TST_CHECK(wayland_address_parse(a, sock, sizeof(sock), ipc, sizeof(ipc)) == 0);
	TST_CHECK(strcmp(sock, "/run/d/wayland-1") == 0 && strcmp(ipc, "/run/d/sway.sock") == 0);
	TST_CHECK(wayland_address_format("/run/d/wayland-1", NULL, a, sizeof(a)) == 0);
	TST_CHECK(wayland_address_parse(a, sock, sizeof(sock), ipc, sizeof(ipc)) == 0);
	TST_CHECK(strcmp(sock, "/run/d/wayland-1") == 0 && ipc[0] == '\0');
	TST_CHECK(wayland_address_format("wayland-1", NULL, a, sizeof(a)) == -EINVAL);
	TST_CHECK(wayland_address_format("/a?sway=/b", NULL, a, sizeof(a)) == -EINVAL);
	TST_CHECK(wayland_address_format("/a&b", NULL, a, sizeof(a)) == -EINVAL);
	char x[16];
	TST_CHECK(wayland_address_format("/r/wayland-1", "/r/ipc", a, sizeof(a)) == 0);
	TST_CHECK(wayland_address_x11(a, x, sizeof(x)) == -ENOENT);
	TST_CHECK(wayland_address_add_x11(a, sizeof(a), ":3") == 0);
	TST_CHECK(strcmp(a, "wayland:/r/wayland-1?sway=/r/ipc&x11=:3") == 0);
	TST_CHECK(wayland_address_parse(a, sock, sizeof(sock), ipc, sizeof(ipc)) == 0);
	TST_CHECK(strcmp(sock, "/r/wayland-1") == 0 && strcmp(ipc, "/r/ipc") == 0);
	TST_CHECK(wayland_address_x11(a, x, sizeof(x)) == 0 && strcmp(x, ":3") == 0);
	TST_CHECK(wayland_address_format("/r/wayland-1", NULL, a, sizeof(a)) == 0);
	TST_CHECK(wayland_address_add_x11(a, sizeof(a), ":12") == 0);
	TST_CHECK(strcmp(a, "wayland:/r/wayland-1?x11=:12") == 0);
	TST_CHECK(wayland_address_parse(a, sock, sizeof(sock), ipc, sizeof(ipc)) == 0);
	TST_CHECK(strcmp(sock, "/r/wayland-1") == 0 && ipc[0] == '\0');
	TST_CHECK(wayland_address_x11(a, x, sizeof(x)) == 0 && strcmp(x, ":12") == 0);
	TST_CHECK(wayland_address_add_x11(a, sizeof(a), "12") == -EINVAL);
	TST_CHECK(wayland_address_add_x11(a, strlen(a) + 3, ":7") == -ENAMETOOLONG);
	TST_CHECK(strcmp(a, "wayland:/r/wayland-1?x11=:12") == 0);
	TST_CHECK(wayland_address_parse("wayland:", sock, sizeof(sock), ipc, sizeof(ipc)) == -EINVAL);
	TST_CHECK(wayland_address_parse("wayland:/s?sway=rel", sock, sizeof(sock), ipc, sizeof(ipc)) == -EINVAL);
	TST_CHECK(wayland_address_parse(":0", sock, sizeof(sock), ipc, sizeof(ipc)) == -EINVAL);
	TST_CHECK(wayland_address_parse("wayland:/long/socket", sock, 4, ipc, sizeof(ipc)) == -ENAMETOOLONG);
	TST_CHECK(wayland_address_format("/x", NULL, a, 5) == -ENAMETOOLONG);
}

int main(void)
{
	keymap_checks();
	address_checks();
	if (!wlt_can_run())
		TST_END();
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(sway_log, sizeof(sway_log), "%s/sway.log", dir);
	snprintf(probe_log, sizeof(probe_log), "%s/probe.log", dir);
	snprintf(probe_text, sizeof(probe_text), "%s/probe.txt", dir);
	snprintf(probe_err, sizeof(probe_err), "%s/probe.err", dir);
	int failed_before = tst_failed;
	desktop_checks();
	cleanup();
	if (tst_failed > failed_before) {
		const char* logs[] = { sway_log, probe_err, probe_log };
		for (size_t i = 0; i < 3; i++) {
			char* s = wlt_slurp(logs[i]);
			fprintf(stderr, "---- %s\n%s\n", logs[i], s ? s : "(none)");
			free(s);
		}
	}
	const char* files[] = { sway_log, probe_log, probe_text, probe_err };
	for (size_t i = 0; i < 4; i++)
		unlink(files[i]);
	rmdir(dir);
	TST_END();
}
