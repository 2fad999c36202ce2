/* capture/'s Wayland backend, only through capture_create("wayland:..."),
 * on a headless sway of its own (private runtime dir, stopped by pid, also
 * on failure) with the GTK probe tests/apps/wl_probe.py (green, a blue box
 * at 100,50 200x100, a text view below): the screen's size and pixels, a
 * region, a window capture matching its geometry, change counters that
 * grow on a repaint and stay while still, the window list, focus, move,
 * the pointer, and an output at scale 2. wayland/ directly only to drive
 * input (typing makes the probe repaint). Without sway or python3-gi the
 * desktop checks are skipped. */
#define _GNU_SOURCE
#include "capture/capture.h"
#include "wayland/wayland.h"
#include "base/clock.h"
#include "tests/unit/tst.h"
#include "tests/unit/wl_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define W 1280
#define H 800
#define T 5000
#define BLUE 0x283ce6
#define GREEN 0x14c828

static struct wayland_sway* sway;
static pid_t probe_pid;
static char dir[64] = "/tmp/deskd-capwl-XXXXXX";
static char sway_log[128], probe_log[128], probe_text[128], probe_err[128];

static uint32_t rgb(const struct frame* f, int x, int y)
{
	if (x < 0 || y < 0 || x >= f->width || y >= f->height)
		return 0xdeadbeef;
	const uint8_t* p = f->data + (size_t)y * (size_t)f->stride + 4 * (size_t)x;
	return (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static bool probe_ready(void)
{
	FILE* f = fopen(probe_log, "r");
	char line[64];
	bool ready = false;
	while (f && fgets(line, sizeof(line), f))
		ready = ready || strcmp(line, "ready\n") == 0;
	if (f)
		fclose(f);
	return ready;
}

/* The probe in the window list (by its pid), waited for. */
static bool find_probe(struct capture* cap, struct capture_window_info* out, int ms)
{
	int64_t end = clock_ms() + ms;
	do {
		struct capture_window_info* list;
		size_t n;
		bool found = false;
		if (capture_list_windows(cap, &list, &n) == 0) {
			for (size_t i = 0; i < n && !found; i++)
				if (list[i].pid == probe_pid) {
					*out = list[i];
					found = true;
				}
			free(list);
		}
		if (found)
			return true;
		clock_sleep_ms(50);
	} while (clock_ms() < end);
	return false;
}

/* Wait (bounded) until the target stops changing: true if it did. */
static bool settle(struct capture* cap, uint32_t window, uint64_t* counter)
{
	int64_t end = clock_ms() + 5000;
	while (clock_ms() < end) {
		uint64_t now;
		int rc = capture_wait_changes(cap, window, *counter, 300, &now);
		if (rc == -ETIMEDOUT)
			return true;
		if (rc < 0)
			return false;
		*counter = now;
	}
	return false;
}

static void pixel_checks(struct capture* cap, const struct capture_window_info* win)
{
	struct frame* f = NULL;
	int64_t best = INT64_MAX;
	for (int i = 0; i < 5; i++) {
		frame_unref(f);
		f = NULL;
		int64_t t0 = clock_ns();
		TST_EQ_INT(capture_screen(cap, NULL, false, &f), 0);
		if (clock_ns() - t0 < best)
			best = clock_ns() - t0;
	}
	TST_CHECK(f != NULL);
	if (f) {
		printf("  capture_screen %dx%d: best of 5 %.2f ms\n", f->width, f->height, best / 1e6);
		TST_EQ_INT(f->width, W);
		TST_EQ_INT(f->height, H);
		TST_EQ_INT(rgb(f, win->rect.x + 200, win->rect.y + 100), BLUE);
		TST_EQ_INT(rgb(f, win->rect.x + 101, win->rect.y + 51), BLUE);
		TST_EQ_INT(rgb(f, win->rect.x + 99, win->rect.y + 100), GREEN);
		TST_EQ_INT(rgb(f, win->rect.x + 50, win->rect.y + 300), GREEN);
		TST_EQ_INT(f->data[3], 0xff);
	}
	frame_unref(f);
	f = NULL;
	/* a region, and one that misses the screen */
	struct capture_rect region = { win->rect.x + 90, win->rect.y + 40, 220, 120 };
	TST_EQ_INT(capture_screen(cap, &region, false, &f), 0);
	if (f) {
		TST_EQ_INT(f->width, 220);
		TST_EQ_INT(f->height, 120);
		TST_EQ_INT(rgb(f, 110, 60), BLUE);
		TST_EQ_INT(rgb(f, 9, 9), GREEN);
		TST_EQ_INT(rgb(f, 11, 11), BLUE);
	}
	frame_unref(f);
	f = NULL;
	struct capture_rect off = { W + 10, 0, 10, 10 };
	TST_EQ_INT(capture_screen(cap, &off, false, &f), -ERANGE);
	/* the window: its geometry's size, its own coordinates */
	struct capture_rect g;
	TST_EQ_INT(capture_window_geometry(cap, win->id, &g), 0);
	TST_CHECK(memcmp(&g, &win->rect, sizeof(g)) == 0);
	TST_EQ_INT(capture_window(cap, win->id, NULL, false, &f), 0);
	if (f) {
		TST_EQ_INT(f->width, g.width);
		TST_EQ_INT(f->height, g.height);
		TST_EQ_INT(rgb(f, 200, 100), BLUE);
		TST_EQ_INT(rgb(f, 99, 100), GREEN);
		TST_EQ_INT(rgb(f, 50, 300), GREEN);
	}
	frame_unref(f);
	f = NULL;
	struct capture_rect wr = { 100, 50, 200, 100 };
	TST_EQ_INT(capture_window(cap, win->id, &wr, false, &f), 0);
	if (f) {
		TST_EQ_INT(f->width, 200);
		TST_EQ_INT(rgb(f, 0, 0), BLUE);
		TST_EQ_INT(rgb(f, 199, 99), BLUE);
	}
	frame_unref(f);
	f = NULL;
	TST_EQ_INT(capture_window(cap, 999999, NULL, false, &f), -ENOENT);
	printf("  no such window: %s\n", capture_error(cap));
}

static void change_checks(struct capture* cap, struct wayland* wl,
		const struct capture_window_info* win)
{
	uint64_t c = 0, s = 0, now = 0;
	TST_EQ_INT(capture_changes(cap, win->id, &c), 0);
	TST_EQ_INT(capture_changes(cap, 0, &s), 0);
	TST_CHECK(settle(cap, win->id, &c));
	TST_CHECK(settle(cap, 0, &s));
	TST_EQ_INT(capture_changes(cap, win->id, &c), 0);
	/* still: neither grows */
	int64_t t0 = clock_ns();
	for (int i = 0; i < 20; i++)
		TST_EQ_INT(capture_changes(cap, win->id, &now), 0);
	printf("  capture_changes while still (a window tracked): %.3f ms per call\n",
			(double)(clock_ns() - t0) / 1e6 / 20);
	TST_EQ_INT(now, c);
	TST_EQ_INT(capture_wait_changes(cap, win->id, c, 500, &now), -ETIMEDOUT);
	TST_EQ_INT(capture_wait_changes(cap, 0, s, 200, &now), -ETIMEDOUT);
	/* a repaint: the text view gets a character */
	TST_EQ_INT(wayland_pointer_click(wl, win->rect.x + 300, win->rect.y + 500, 1, 1, T), 0);
	TST_CHECK(settle(cap, win->id, &c));
	int64_t w0 = clock_ms();
	TST_EQ_INT(wayland_type(wl, "x", 0, T), 0);
	TST_EQ_INT(capture_wait_changes(cap, win->id, c, 3000, &now), 0);
	TST_CHECK(now > c);
	printf("  the typed repaint seen after %lld ms\n", (long long)(clock_ms() - w0));
	TST_EQ_INT(capture_changes(cap, 0, &now), 0);
	TST_CHECK(now > s);
	TST_EQ_INT(capture_changes(cap, 999999, &now), -ENOENT);
	capture_untrack(cap, win->id);
}

static void window_checks(struct capture* cap, const struct capture_window_info* win)
{
	TST_EQ_STR(win->title, "wl-probe");
	TST_CHECK(win->mapped && win->visible && !win->minimized);
	struct capture_window_info info;
	TST_EQ_INT(capture_window_info(cap, win->id, &info), 0);
	TST_EQ_INT(info.pid, probe_pid);
	TST_EQ_INT(capture_focus_window(cap, win->id), 0);
	TST_EQ_INT(capture_window_info(cap, win->id, &info), 0);
	TST_CHECK(info.focused);
	TST_EQ_INT(capture_focus_window(cap, 999999), -ENOENT);
	int x = 100, y = 80, w = 700, h = 500;
	struct capture_rect r = { 0 };
	TST_EQ_INT(capture_move_window(cap, win->id, &x, &y, &w, &h, &r), 0);
	TST_EQ_INT(r.x, 100);
	TST_EQ_INT(r.y, 80);
	TST_EQ_INT(r.width, 700);
	TST_EQ_INT(r.height, 500);
	clock_sleep_ms(200);	/* the client's new frame */
	struct frame* f = NULL;
	TST_EQ_INT(capture_window(cap, win->id, NULL, false, &f), 0);
	if (f) {
		TST_EQ_INT(f->width, 700);
		TST_EQ_INT(f->height, 500);
		TST_EQ_INT(rgb(f, 200, 100), BLUE);
		TST_EQ_INT(rgb(f, 50, 200), GREEN);
	}
	frame_unref(f);
	int px, py;
	TST_EQ_INT(capture_pointer(cap, win->id, &px, &py), 0);
	int sx, sy;
	TST_EQ_INT(capture_pointer(cap, 0, &sx, &sy), 0);
	TST_EQ_INT(px, sx - 100);
	TST_EQ_INT(py, sy - 80);
}

/* HEADLESS-1 at scale 2: the layout is 640x400 logical, frames too. */
static void scale_checks(struct capture* cap, const struct capture_window_info* win)
{
	TST_EQ_INT(wayland_sway_command(wayland_sway_ipc_path(sway), "output HEADLESS-1 scale 2",
			T, NULL, 0), 0);
	int w = 0, h = 0;
	int64_t end = clock_ms() + 3000;
	uint64_t c;
	do {
		capture_changes(cap, 0, &c);
		capture_screen_size(cap, &w, &h);
		if (w == W / 2)
			break;
		clock_sleep_ms(20);
	} while (clock_ms() < end);
	TST_EQ_INT(w, W / 2);
	TST_EQ_INT(h, H / 2);
	int x = 10, y = 10, ww = 600, wh = 380;
	struct capture_rect r;
	TST_EQ_INT(capture_move_window(cap, win->id, &x, &y, &ww, &wh, &r), 0);
	clock_sleep_ms(300);	/* GTK redraws at scale 2 */
	struct frame* f = NULL;
	TST_EQ_INT(capture_screen(cap, NULL, false, &f), 0);
	if (f) {
		printf("  at scale 2: screen %dx%d, window at %d,%d %dx%d\n", f->width, f->height,
				r.x, r.y, r.width, r.height);
		TST_EQ_INT(f->width, W / 2);
		TST_EQ_INT(f->height, H / 2);
		TST_EQ_INT(rgb(f, r.x + 200, r.y + 100), BLUE);
		TST_EQ_INT(rgb(f, r.x + 50, r.y + 300), GREEN);
	}
	frame_unref(f);
}

static void desktop_checks(void)
{
	int err = 0;
	sway = wlt_start_sway(W, H, sway_log);
	TST_CHECK(sway != NULL);
	if (!sway)
		return;
	struct wayland* wl = wayland_connect(wayland_sway_display(sway),
			wayland_sway_runtime_dir(sway), T, &err);
	TST_CHECK(wl != NULL);
	if (!wl)
		return;
	TST_EQ_INT(wayland_input_open(wl, 100, T), 0);
	char sock[256], address[WAYLAND_ADDRESS_MAX], bare[WAYLAND_ADDRESS_MAX], why[256];
	snprintf(sock, sizeof(sock), "%s/%s", wayland_sway_runtime_dir(sway),
			wayland_sway_display(sway));
	TST_EQ_INT(wayland_address_format(sock, wayland_sway_ipc_path(sway), address,
			sizeof(address)), 0);
	TST_EQ_INT(wayland_address_format(sock, NULL, bare, sizeof(bare)), 0);
	struct capture* cap = capture_create(address, why, sizeof(why));
	TST_CHECK(cap != NULL);
	if (!cap) {
		fprintf(stderr, "  capture_create: %s\n", why);
		wayland_disconnect(wl);
		return;
	}
	int w, h, px, py;
	capture_screen_size(cap, &w, &h);
	TST_EQ_INT(w, W);
	TST_EQ_INT(h, H);
	TST_CHECK(capture_has_shm(cap) && capture_has_window_capture(cap) && capture_connected(cap));
	TST_EQ_INT(capture_root_window(cap), 0);
	TST_CHECK(capture_fd(cap) >= 0);
	TST_EQ_INT(capture_pointer(cap, 0, &px, &py), -ENODATA);

	probe_pid = wlt_start_probe(sway, dir, probe_log, probe_text, probe_err);
	int64_t end = clock_ms() + 20000;
	while (!probe_ready() && clock_ms() < end)
		clock_sleep_ms(50);
	struct capture_window_info win;
	bool found = find_probe(cap, &win, 10000);
	TST_CHECK(found);
	if (found) {
		printf("  probe: id %u \"%s\" app \"%s\" pid %d rect %d,%d %dx%d\n", win.id,
				win.title, win.app, win.pid, win.rect.x, win.rect.y, win.rect.width,
				win.rect.height);
		/* the pointer off the probe: headless draws it into every frame */
		TST_EQ_INT(wayland_pointer_move(wl, W - 1, H - 1, T), 0);
		TST_EQ_INT(capture_pointer(cap, 0, &px, &py), 0);
		TST_EQ_INT(px, W - 1);
		TST_EQ_INT(py, H - 1);
		clock_sleep_ms(300);
		pixel_checks(cap, &win);
		change_checks(cap, wl, &win);
		window_checks(cap, &win);
		scale_checks(cap, &win);
	}
	capture_destroy(cap);

	/* without IPC: pixels yes, windows -ENOTSUP */
	cap = capture_create(bare, why, sizeof(why));
	TST_CHECK(cap != NULL);
	if (cap) {
		struct capture_window_info* list;
		size_t n;
		TST_EQ_INT(capture_list_windows(cap, &list, &n), -ENOTSUP);
		printf("  without IPC: %s\n", capture_error(cap));
		TST_EQ_INT(capture_focus_window(cap, 1), -ENOTSUP);
		struct frame* f = NULL;
		TST_EQ_INT(capture_screen(cap, NULL, false, &f), 0);
		frame_unref(f);
		capture_destroy(cap);
	}
	TST_CHECK(capture_create("wayland:/nonexistent/wayland-9", why, sizeof(why)) == NULL);
	wayland_disconnect(wl);
}

static void cleanup(void)
{
	wlt_stop_probe(&probe_pid);
	TST_CHECK(wlt_stop_sway(&sway));
}

static void print_file(const char* path)
{
	FILE* f = fopen(path, "r");
	char line[512];
	fprintf(stderr, "---- %s\n", path);
	while (f && fgets(line, sizeof(line), f))
		fputs(line, stderr);
	if (f)
		fclose(f);
}

int main(void)
{
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
	desktop_checks();
	cleanup();
	if (tst_failed) {
		print_file(sway_log);
		print_file(probe_err);
	}
	const char* files[] = { sway_log, probe_log, probe_text, probe_err };
	for (size_t i = 0; i < 4; i++)
		unlink(files[i]);
	rmdir(dir);
	TST_END();
}
