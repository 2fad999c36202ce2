/* input/'s Wayland backend, through input_new("wayland:...") only, on a
 * headless sway of its own (private runtime dir) with two Wayland-native
 * GTK 3 probes (tests/apps/wl_probe.py), all stopped by pid, also on
 * failure: clicks on exact pixels (the probe's corners too), a double
 * click, modifiers held during a click, a drag's path, wheel notches, a
 * Unicode corpus typed and read back byte-exact, chords (ctrl+a, BackSpace,
 * F5, super+1, shift+Tab, a non-ASCII key), hold and release, focus by con
 * id, and -ECONNRESET once sway is gone. Without sway or python3-gi only
 * the address checks run. */
#define _GNU_SOURCE
#include "input/input.h"
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
#define T 5000	/* ms: every wait's bound */

struct probe {
	pid_t pid;
	char log[128], text[128], err[128];
	struct wayland_window win;	/* its window (strings not kept) */
};

static struct wayland_sway* sway;
static struct probe probes[2];
static char dir[64] = "/tmp/deskd-inwltest-XXXXXX";
static char sway_log[128];

/* The probe log's lines that start with prefix, after the first `skip`
 * bytes of the log; malloc'd ("" when none, NULL without a log). */
static char* lines_with(const struct probe* p, size_t skip, const char* prefix)
{
	char* s = wlt_slurp(p->log);
	if (!s)
		return NULL;
	size_t k = 0, len = strlen(s);
	for (char* q = s + (skip < len ? skip : len); *q;) {
		char* nl = strchr(q, '\n');
		size_t l = nl ? (size_t)(nl - q + 1) : strlen(q);
		if (strncmp(q, prefix, strlen(prefix)) == 0) {
			memmove(s + k, q, l);
			k += l;
		}
		q += l;
	}
	s[k] = '\0';
	return s;
}

static size_t log_size(const struct probe* p)
{
	char* s = wlt_slurp(p->log);
	size_t n = s ? strlen(s) : 0;
	free(s);
	return n;
}

/* Wait until the log after skip holds exactly want in its prefix lines. */
static bool wait_lines(const struct probe* p, size_t skip, const char* prefix,
		const char* want)
{
	int64_t end = clock_ms() + T;
	char* got = NULL;
	do {
		free(got);
		clock_sleep_ms(20);
		got = lines_with(p, skip, prefix);
	} while ((!got || strcmp(got, want) != 0) && clock_ms() < end);
	bool same = got && strcmp(got, want) == 0;
	if (!same)
		fprintf(stderr, "  %s lines: want\n%s  got\n%s\n", prefix, want, got ? got : "(none)");
	free(got);
	return same;
}

static bool wait_text(const struct probe* p, const char* want)
{
	int64_t end = clock_ms() + T;
	do {
		char* s = wlt_slurp(p->text);
		bool same = s && strcmp(s, want) == 0;
		free(s);
		if (same)
			return true;
		clock_sleep_ms(10);
	} while (clock_ms() < end);
	return false;
}

/* Start a probe and wait for its first frame and its window. */
static bool probe_up(struct probe* p, int i)
{
	snprintf(p->log, sizeof(p->log), "%s/probe%d.log", dir, i);
	snprintf(p->text, sizeof(p->text), "%s/probe%d.txt", dir, i);
	snprintf(p->err, sizeof(p->err), "%s/probe%d.err", dir, i);
	p->pid = wlt_start_probe(sway, dir, p->log, p->text, p->err);
	int64_t end = clock_ms() + 20000;
	while (clock_ms() < end) {
		char* s = lines_with(p, 0, "ready");
		bool ready = s && *s;
		free(s);
		struct wayland_window* ws;
		size_t n;
		if (ready && wayland_sway_windows(wayland_sway_ipc_path(sway), T, &ws, &n) == 0) {
			bool found = false;
			for (size_t k = 0; k < n && !found; k++) {
				if (ws[k].pid == p->pid) {
					p->win = ws[k];
					p->win.app_id = p->win.title = NULL;
					found = true;
				}
			}
			wayland_windows_free(ws, n);
			if (found)
				return true;
		}
		clock_sleep_ms(50);
	}
	return false;
}

static bool con_focused(int64_t id)
{
	struct wayland_window* ws;
	size_t n;
	bool focused = false;
	if (wayland_sway_windows(wayland_sway_ipc_path(sway), T, &ws, &n) == 0) {
		for (size_t k = 0; k < n; k++)
			if (ws[k].id == id)
				focused = ws[k].focused;
		wayland_windows_free(ws, n);
	}
	return focused;
}

static struct input_chord chord(const char* text)
{
	struct input_chord c = { 0 };
	char err[128];
	int rc = input_chord_parse(&c, text, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "  chord %s: %s\n", text, err);
	TST_EQ_INT(rc, 0);
	return c;
}

/* Clicks at points of the drawing area, its four corner pixels included. */
static void click_checks(struct input* in, const struct probe* p)
{
	static const int pts[][2] = { { 0, 0 }, { 599, 0 }, { 0, 399 }, { 599, 399 },
		{ 100, 50 }, { 299, 149 }, { 13, 211 }, { 457, 333 } };
	char want[1024] = "";
	size_t skip = log_size(p);
	int64_t t0 = clock_ns();
	for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
		int x = p->win.x + pts[i][0], y = p->win.y + pts[i][1];
		TST_EQ_INT(input_move(in, x, y), 0);
		int cx = -1, cy = -1;
		TST_EQ_INT(input_cursor_position(in, &cx, &cy), 0);
		TST_CHECK(cx == x && cy == y);
		TST_EQ_INT(input_click(in, INPUT_BUTTON_LEFT, 1, NULL), 0);
		size_t l = strlen(want);
		snprintf(want + l, sizeof(want) - l, "click %d %d 1\n", pts[i][0], pts[i][1]);
		clock_sleep_ms(450);	/* no double click with the next one */
	}
	double ms = (double)(clock_ns() - t0) / 1e6;
	TST_CHECK(wait_lines(p, skip, "click ", want));
	printf("  %zu clicks exact (corners included), %.1f ms per move+click (450 ms pause each)\n",
			sizeof(pts) / sizeof(pts[0]), ms / 8 - 450);

	/* a double click: two presses, GTK's double */
	skip = log_size(p);
	TST_EQ_INT(input_move(in, p->win.x + 200, p->win.y + 200), 0);
	TST_EQ_INT(input_click(in, INPUT_BUTTON_LEFT, 2, NULL), 0);
	TST_CHECK(wait_lines(p, skip, "double ", "double 200 200 1\n"));
	TST_CHECK(wait_lines(p, skip, "click ", "click 200 200 1\nclick 200 200 1\n"));
	clock_sleep_ms(450);

	/* modifiers held through a click, and gone after */
	skip = log_size(p);
	struct input_chord mods = chord("ctrl+shift");
	TST_EQ_INT(input_move(in, p->win.x + 50, p->win.y + 60), 0);
	TST_EQ_INT(input_click(in, INPUT_BUTTON_RIGHT, 1, &mods), 0);
	TST_CHECK(wait_lines(p, skip, "mods ", "mods 50 60 shift,ctrl\n"));
	clock_sleep_ms(450);
	TST_EQ_INT(input_click(in, INPUT_BUTTON_LEFT, 1, NULL), 0);
	TST_CHECK(wait_lines(p, skip, "click ", "click 50 60 3\nclick 50 60 1\n"));
	TST_CHECK(wait_lines(p, skip, "mods ", "mods 50 60 shift,ctrl\n"));
	clock_sleep_ms(450);
}

static void drag_scroll_checks(struct input* in, const struct probe* p)
{
	size_t skip = log_size(p);
	int xs[] = { p->win.x + 40, p->win.x + 360, p->win.x + 360 };
	int ys[] = { p->win.y + 30, p->win.y + 30, p->win.y + 330 };
	TST_EQ_INT(input_drag(in, xs, ys, 3, INPUT_BUTTON_LEFT, NULL), 0);
	TST_CHECK(wait_lines(p, skip, "release ", "release 360 330 1\n"));
	char* got = lines_with(p, skip, "click ");
	TST_EQ_STR(got, "click 40 30 1\n");
	free(got);
	/* every motion on the path, forward, ending at the end (the probe
	 * turns GTK's motion compression off: it sees every one of the ~40
	 * sent, 16 px apart, whatever the load) */
	got = lines_with(p, skip, "motion ");
	int n = 0, bad = 0, lx = 40, ly = 30, x, y;
	for (char* q = got; q && sscanf(q, "motion %d %d", &x, &y) == 2; n++) {
		bool on = (y == 30 && x >= lx && x <= 360) || (x == 360 && y >= ly && y <= 330);
		if (!on) {
			bad++;
			fprintf(stderr, "  motion %d %d after %d %d\n", x, y, lx, ly);
		}
		lx = x;
		ly = y;
		q = strchr(q, '\n');
		q = q ? q + 1 : NULL;
	}
	free(got);
	printf("  drag: %d motions seen by GTK, %d off the path or backwards, last %d,%d\n",
			n, bad, lx, ly);
	TST_CHECK(n >= 20);
	TST_EQ_INT(bad, 0);
	TST_CHECK(lx == 360 && ly == 330);
	clock_sleep_ms(450);

	/* wheel notches, with a modifier held */
	skip = log_size(p);
	TST_EQ_INT(input_move(in, p->win.x + 300, p->win.y + 200), 0);
	TST_EQ_INT(input_scroll(in, 0, 3, NULL), 0);
	TST_EQ_INT(input_scroll(in, 0, -1, NULL), 0);
	struct input_chord shift = chord("shift");
	TST_EQ_INT(input_scroll(in, 0, 2, &shift), 0);
	TST_CHECK(wait_lines(p, skip, "scroll ",
			"scroll down\nscroll down\nscroll down\nscroll up\nscroll down\nscroll down\n"));
	/* Horizontal: wayland_pointer_scroll sends the protocol's sign (> 0
	 * right); GTK 3's Wayland backend names a discrete horizontal step the
	 * other way round (gdkdevice-wayland.c: > 0 is GDK_SCROLL_LEFT), so
	 * two notches left read as "right" in the probe. */
	skip = log_size(p);
	TST_EQ_INT(input_scroll(in, -2, 0, NULL), 0);
	TST_CHECK(wait_lines(p, skip, "scroll ", "scroll right\nscroll right\n"));
	TST_EQ_INT(input_scroll(in, INPUT_MAX_NOTCHES + 1, 0, NULL), -E2BIG);
}

static const char* corpus[] = {
	"é",
	"héllo wörld",
	"你好，世界",
	"日本語のテキスト",
	"한국어 문장",
	"😀",
	"👩‍👩‍👧‍👦 family ZWJ",
	"🏳️‍🌈 and 👍🏽",
	"e\xcc\x81 a\xcc\x8a n\xcc\x83 (combining)",
	"שלום עולם",
	"مرحبا بالعالم",
	"✓ ⇔ ‰ ∑ ∞ ≠ ≤",
	"€ £ ¥ ¢ § ¶ © ®",
	"Ελληνικά Кириллица",
	"tab\there",
	"line one\nline two",
	"quotes \"'` and \\ backslash",
	"~!@#$%^&*()_+{}|:<>?",
	"ǅ ß ẞ ŉ ﬁ",
	"𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟘𝟙𝟚",
	"ไทย हिन्दी ☃",
};

/* A 500-code-point string of every kind above. */
static void mixed_500(char* out, size_t size)
{
	static const char* parts[] = { "a", "é", "你", "😀", "✓", "ש", "\xcc\x81", "Z", " ", "ß" };
	size_t k = 0;
	out[0] = '\0';
	for (int i = 0; i < 500; i++) {
		size_t l = strlen(parts[i * 7 % 10]);
		if (k + l + 1 > size)
			break;
		memcpy(out + k, parts[i * 7 % 10], l + 1);
		k += l;
	}
}

static void typing_checks(struct input* in, const struct probe* p)
{
	TST_EQ_INT(input_move(in, p->win.x + 300, p->win.y + 500), 0);
	TST_EQ_INT(input_click(in, INPUT_BUTTON_LEFT, 1, NULL), 0);
	struct input_chord select_all = chord("ctrl+a");
	char big[4096];
	mixed_500(big, sizeof(big));
	size_t n = sizeof(corpus) / sizeof(corpus[0]) + 1, exact = 0, bytes = 0, chars = 0;
	int64_t t0 = clock_ns();
	for (size_t i = 0; i < n; i++) {
		const char* s = i < n - 1 ? corpus[i] : big;
		struct input_type_stats st;
		size_t done = 0, bad = 0;
		int wait_ms = -1;
		/* ctrl+a then typing replaces the text */
		TST_EQ_INT(input_key_chord(in, &select_all), 0);
		TST_EQ_INT(input_type_some(in, s, strlen(s), &st, &bad, &done, &wait_ms), 0);
		TST_EQ_INT(done, strlen(s));
		TST_EQ_INT(wait_ms, 0);
		TST_EQ_INT(st.remapped, st.chars);
		if (wait_text(p, s))
			exact++;
		else {
			char* got = wlt_slurp(p->text);
			fprintf(stderr, "  not exact: \"%s\" typed as \"%s\"\n", s, got ? got : "");
			free(got);
		}
		bytes += strlen(s);
		chars += st.chars;
	}
	printf("  typed byte-exact: %zu/%zu strings (%zu chars, %zu bytes, %.0f ms in all, "
			"the last %zu chars)\n", exact, n, chars, bytes,
			(double)(clock_ns() - t0) / 1e6, (size_t)500);
	TST_EQ_INT(exact, n);

	/* "\r\n" is one Return, "\b" BackSpace; the BackSpace chord too */
	struct input_chord bs = chord("BackSpace");
	TST_EQ_INT(input_key_chord(in, &select_all), 0);
	TST_EQ_INT(input_type(in, "ab\r\ncd\bX", 8, NULL, NULL), 0);
	TST_CHECK(wait_text(p, "ab\ncX"));
	TST_EQ_INT(input_key_chord(in, &bs), 0);
	TST_CHECK(wait_text(p, "ab\nc"));
	/* errors before anything is typed */
	size_t bad = 0;
	TST_EQ_INT(input_type(in, "ok\x07", 3, NULL, &bad), -EINVAL);
	TST_EQ_INT(bad, 2);
	TST_EQ_INT(input_type(in, "\xc3(", 2, NULL, &bad), -EILSEQ);
	clock_sleep_ms(100);
	TST_CHECK(wait_text(p, "ab\nc"));
}

static void chord_checks(struct input* in, const struct probe* p)
{
	size_t skip = log_size(p);
	const char* chords[] = { "F5", "super+1", "ctrl+shift+t", "é", "alt+F4", "shift+Tab" };
	for (size_t i = 0; i < sizeof(chords) / sizeof(chords[0]); i++) {
		struct input_chord c = chord(chords[i]);
		TST_EQ_INT(input_key_chord(in, &c), 0);
	}
	/* hold and release: ctrl held through a click and a key, then let go */
	struct input_chord ctrl = chord("ctrl"), b = chord("b");
	TST_EQ_INT(input_key_chord_state(in, &ctrl, true), 0);
	TST_EQ_INT(input_move(in, p->win.x + 70, p->win.y + 80), 0);
	TST_EQ_INT(input_click(in, INPUT_BUTTON_LEFT, 1, NULL), 0);
	TST_EQ_INT(input_key_chord(in, &b), 0);
	TST_EQ_INT(input_key_chord_state(in, &ctrl, false), 0);
	TST_EQ_INT(input_key_chord_state(in, &ctrl, false), 0);	/* harmless */
	TST_EQ_INT(input_key_chord(in, &b), 0);
	/* GTK logs the modifier keys' own presses too */
	TST_CHECK(wait_lines(p, skip, "key ", "key F5 -\nkey Super_L -\nkey 1 super\n"
			"key Control_L -\nkey Shift_L ctrl\nkey t shift,ctrl\n"
			"key eacute -\nkey Alt_L -\nkey F4 alt\nkey Shift_L -\nkey Tab shift\n"
			"key Control_L -\nkey b ctrl\nkey b -\n"));
	TST_CHECK(wait_lines(p, skip, "mods ", "mods 70 80 ctrl\n"));
}

static void focus_checks(struct input* in, const char* bare)
{
	TST_EQ_INT(input_focus_window(in, (uint32_t)probes[0].win.id, T), 0);
	TST_CHECK(con_focused(probes[0].win.id));
	TST_CHECK(!con_focused(probes[1].win.id));
	TST_EQ_INT(input_focus_window(in, (uint32_t)probes[1].win.id, T), 0);
	TST_CHECK(con_focused(probes[1].win.id));
	TST_EQ_INT(input_focus_window(in, 999999, T), -ENOENT);
	/* the keys follow the focus */
	TST_EQ_INT(input_type(in, "to B", 4, NULL, NULL), 0);
	TST_CHECK(wait_text(&probes[1], "to B"));
	char err[256];
	struct input* no_ipc = input_new(bare, err, sizeof(err));
	TST_CHECK(no_ipc != NULL);
	if (no_ipc)
		TST_EQ_INT(input_focus_window(no_ipc, (uint32_t)probes[0].win.id, T), -ENOTSUP);
	input_destroy(no_ipc);
}

static void desktop_checks(void)
{
	sway = wlt_start_sway(W, H, sway_log);
	TST_CHECK(sway != NULL);
	if (!sway)
		return;
	char sock[256], addr[WAYLAND_ADDRESS_MAX], bare[WAYLAND_ADDRESS_MAX], msg[256];
	snprintf(sock, sizeof(sock), "%s/%s", wayland_sway_runtime_dir(sway),
			wayland_sway_display(sway));
	TST_EQ_INT(wayland_address_format(sock, wayland_sway_ipc_path(sway), addr, sizeof(addr)), 0);
	TST_EQ_INT(wayland_address_format(sock, NULL, bare, sizeof(bare)), 0);
	int64_t t0 = clock_ms();
	struct input* in = input_new(addr, msg, sizeof(msg));
	TST_CHECK(in != NULL);
	if (!in) {
		fprintf(stderr, "  input_new: %s\n", msg);
		return;
	}
	printf("  input_new(%s) in %lld ms\n", addr, (long long)(clock_ms() - t0));
	TST_CHECK(input_alive(in));
	int w = 0, h = 0;
	TST_EQ_INT(input_screen_size(in, &w, &h), 0);
	TST_CHECK(w == W && h == H);
	TST_EQ_INT(input_spare_slots(in), WAYLAND_KEYMAP_MAX);
	input_set_timing(in, 10);
	bool up = probe_up(&probes[0], 0);
	TST_CHECK(up);
	if (up) {
		printf("  probe con %lld at %d,%d %dx%d\n", (long long)probes[0].win.id,
				probes[0].win.x, probes[0].win.y, probes[0].win.width, probes[0].win.height);
		click_checks(in, &probes[0]);
		drag_scroll_checks(in, &probes[0]);
		typing_checks(in, &probes[0]);
		chord_checks(in, &probes[0]);
		/* a second probe tiles beside the first: both move */
		if (probe_up(&probes[1], 1)) {
			clock_sleep_ms(300);
			focus_checks(in, bare);
		} else {
			TST_CHECK(!"second probe up");
		}
	}
	/* the compositor gone: -ECONNRESET, not alive, as on X11 */
	wayland_sway_stop(sway);
	sway = NULL;
	int rc = input_move(in, 10, 10);
	TST_CHECK(rc == -ECONNRESET);
	TST_EQ_INT(input_move(in, 10, 10), -ECONNRESET);
	TST_CHECK(!input_alive(in));
	input_destroy(in);
}

static void cleanup(void)
{
	for (int i = 0; i < 2; i++)
		wlt_stop_probe(&probes[i].pid);
	TST_CHECK(wlt_stop_sway(&sway));
}

int main(void)
{
	char err[256];
	TST_CHECK(input_new("wayland:relative", err, sizeof(err)) == NULL);
	TST_CHECK(input_new("wayland:/nonexistent/wayland-9", err, sizeof(err)) == NULL);
	if (!wlt_can_run())
		TST_END();
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(sway_log, sizeof(sway_log), "%s/sway.log", dir);
	int failed_before = tst_failed;
	desktop_checks();
	cleanup();
	if (tst_failed > failed_before) {
		for (int i = 0; i < 2; i++) {
			char* s = wlt_slurp(probes[i].err);
			if (s && *s)
				fprintf(stderr, "---- %s\n%s\n", probes[i].err, s);
			free(s);
		}
	}
	for (int i = 0; i < 2; i++) {
		unlink(probes[i].log);
		unlink(probes[i].text);
		unlink(probes[i].err);
	}
	unlink(sway_log);
	rmdir(dir);
	TST_END();
}
