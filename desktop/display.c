/* The desktop: an external X display, or an embedded Xvfb with a window
 * manager and --launch programs. See desktop.h for the thread rules. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "x11/x11.h"
#include "wayland/wayland.h"
#include "gnome/gnome.h"
#include "base/clock.h"
#include "base/log.h"

#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/extensions/Xrandr.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DESKTOP_NAME_SLOTS 16

static struct {
	pthread_mutex_t mutex;	/* guards what follows, except the atomics */
	pthread_cond_t cond;	/* wakes the watcher (stop) */
	bool started, stopping;
	bool embedded;
	int display_number;	/* embedded only */
	int width, height;
	char server_info[128];
	/* The X server deskd attached to (D8): the mark on its root window and
	 * its vendor and release; "" until the first connection. A reconnect
	 * to a server without the same mark is refused (refusal says why). */
	char identity[40];
	char identity_vendor[128];
	int identity_release;
	bool reattach;
	char refusal[256];
	pthread_t watcher;
	bool watcher_running;
} g = {
	.mutex = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

static atomic_bool available;
/* Written by desktop_stop to wake the watcher out of poll. */
static int wake_pipe[2] = { -1, -1 };
static atomic_uint disconnects;
/* Display names never move: a new name goes into the next slot. */
static char name_slots[DESKTOP_NAME_SLOTS][WAYLAND_ADDRESS_MAX > GNOME_ADDRESS_MAX
		? WAYLAND_ADDRESS_MAX : GNOME_ADDRESS_MAX];
static atomic_int name_slot = -1;

/* The ticket lock. */
static pthread_mutex_t ticket_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ticket_cond = PTHREAD_COND_INITIALIZER;
static unsigned long ticket_next, ticket_serving;

bool desktop_lock_yield(void)
{
	pthread_mutex_lock(&ticket_mutex);
	bool waiting = ticket_next != ticket_serving + 1;
	pthread_mutex_unlock(&ticket_mutex);
	if (!waiting)
		return false;
	desktop_unlock();
	desktop_lock();	/* behind everyone who was waiting */
	return true;
}

bool desktop_lock_pause(int ms)
{
	pthread_mutex_lock(&ticket_mutex);
	unsigned long next = ticket_serving + 1;	/* ours again if nobody comes */
	pthread_mutex_unlock(&ticket_mutex);
	desktop_unlock();
	if (ms > 0)
		clock_sleep_ms(ms);
	pthread_mutex_lock(&ticket_mutex);
	unsigned long mine = ticket_next++;
	while (mine != ticket_serving)
		pthread_cond_wait(&ticket_cond, &ticket_mutex);
	pthread_mutex_unlock(&ticket_mutex);
	return mine != next;
}

void desktop_lock(void)
{
	pthread_mutex_lock(&ticket_mutex);
	unsigned long mine = ticket_next++;
	while (mine != ticket_serving)
		pthread_cond_wait(&ticket_cond, &ticket_mutex);
	pthread_mutex_unlock(&ticket_mutex);
}

void desktop_unlock(void)
{
	pthread_mutex_lock(&ticket_mutex);
	ticket_serving++;
	pthread_cond_broadcast(&ticket_cond);
	pthread_mutex_unlock(&ticket_mutex);
}

/* Helpers. */

int desktop_find_program(const char* name, const char* path, char* out,
		size_t size)
{
	if (!name || !*name)
		return -ENOENT;
	if (strchr(name, '/')) {
		if (strlen(name) >= size)
			return -ENAMETOOLONG;
		if (access(name, X_OK) != 0)
			return -ENOENT;
		struct stat st;
		if (stat(name, &st) != 0 || !S_ISREG(st.st_mode))
			return -ENOENT;
		strcpy(out, name);
		return 0;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	const char* p = path;
	for (;;) {
		const char* end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char cand[PATH_MAX];
		int n;
		if (len == 0)
			n = snprintf(cand, sizeof(cand), "./%s", name);
		else
			n = snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, p, name);
		struct stat st;
		if (n > 0 && (size_t)n < sizeof(cand) && access(cand, X_OK) == 0
				&& stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
			if ((size_t)n >= size)
				return -ENAMETOOLONG;
			memcpy(out, cand, (size_t)n + 1);
			return 0;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return -ENOENT;
}

int desktop_parse_display_number(const char* text, size_t len)
{
	size_t i = 0;
	long v = 0;
	if (len == 0 || text[0] < '0' || text[0] > '9')
		return -EINVAL;
	for (; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
		v = v * 10 + (text[i] - '0');
		if (v > 1000000)
			return -EINVAL;
	}
	if (i >= len || text[i] != '\n')
		return -EINVAL;
	return (int)v;
}

void desktop__set_display_name(const char* name)
{
	int slot = (atomic_load(&name_slot) + 1) % DESKTOP_NAME_SLOTS;
	snprintf(name_slots[slot], sizeof(name_slots[slot]), "%s", name);
	atomic_store(&name_slot, slot);
}

const char* desktop_display_name(void)
{
	int slot = atomic_load(&name_slot);
	return slot < 0 ? "" : name_slots[slot];
}

bool desktop_is_embedded(void)
{
	pthread_mutex_lock(&g.mutex);
	bool e = g.embedded;
	pthread_mutex_unlock(&g.mutex);
	return e;
}

bool desktop__connected(void)
{
	return atomic_load(&available);
}

bool desktop_available(void)
{
	return atomic_load(&available) && !desktop__hung(NULL);
}

unsigned desktop_disconnects(void)
{
	return atomic_load(&disconnects);
}

void desktop_screen_size(int* width, int* height)
{
	pthread_mutex_lock(&g.mutex);
	*width = g.width;
	*height = g.height;
	pthread_mutex_unlock(&g.mutex);
}

bool desktop_unavailable_reason(char* out, size_t size)
{
	int64_t since;
	if (desktop__hung(&since)) {
		snprintf(out, size, "the X server on %s has not answered for %.1f s (stopped or "
				"overloaded?); deskd goes on when it answers again",
				desktop_display_name(), (double)(clock_ms() - since) / 1000);
		return true;
	}
	pthread_mutex_lock(&g.mutex);
	bool refused = g.refusal[0] != '\0';
	snprintf(out, size, "%s", g.refusal);
	pthread_mutex_unlock(&g.mutex);
	return refused;
}

void desktop_server_info(char* out, size_t size)
{
	pthread_mutex_lock(&g.mutex);
	snprintf(out, size, "%s", g.server_info);
	pthread_mutex_unlock(&g.mutex);
}

void desktop__set_size(int width, int height)
{
	pthread_mutex_lock(&g.mutex);
	g.width = width;
	g.height = height;
	pthread_mutex_unlock(&g.mutex);
}

void desktop__set_server_info(const char* info)
{
	pthread_mutex_lock(&g.mutex);
	snprintf(g.server_info, sizeof(g.server_info), "%s", info);
	pthread_mutex_unlock(&g.mutex);
}

void desktop__set_available(bool up, bool lost)
{
	atomic_store(&available, up);
	if (lost)
		atomic_fetch_add(&disconnects, 1);
}


/* Start (or restart) the embedded Xvfb with the WM, setxkbmap and the
 * --launch programs that are not running. number >= 0: try that display
 * number first. Returns 0 or -errno. */
static int start_embedded(int number)
{
	int rc = xvfb_start(number);
	if (rc < 0)
		return rc;
	/* deskd's own new server: the next connection marks it. */
	pthread_mutex_lock(&g.mutex);
	g.identity[0] = '\0';
	pthread_mutex_unlock(&g.mutex);
	char name[32];
	snprintf(name, sizeof(name), ":%d", rc);
	pthread_mutex_lock(&g.mutex);
	g.display_number = rc;
	pthread_mutex_unlock(&g.mutex);
	if (strcmp(name, desktop_display_name()) != 0)
		desktop__set_display_name(name);
	xvfb_start_clients(name);
	return 0;
}

static void update_size(Display* dpy)
{
	int w = DisplayWidth(dpy, DefaultScreen(dpy));
	int h = DisplayHeight(dpy, DefaultScreen(dpy));
	pthread_mutex_lock(&g.mutex);
	bool changed = w != g.width || h != g.height;
	g.width = w;
	g.height = h;
	pthread_mutex_unlock(&g.mutex);
	if (changed)
		log_info("screen size %dx%d", w, h);
}

#define IDENTITY_PROPERTY "_DESKD_SERVER_ID"

/* The mark on the root window, or "" (read_mark) / a new random one (new_mark). */
static void read_mark(Display* dpy, char* out, size_t size)
{
	Atom prop = XInternAtom(dpy, IDENTITY_PROPERTY, False);
	Atom type = None;
	int format;
	unsigned long n = 0, after;
	unsigned char* data = NULL;
	out[0] = '\0';
	if (XGetWindowProperty(dpy, DefaultRootWindow(dpy), prop, 0, 16, False,
			XA_STRING, &type, &format, &n, &after, &data) == Success
			&& type == XA_STRING && format == 8 && data)
		snprintf(out, size, "%.*s", (int)n, (const char*)data);
	XFree(data);
}

static void new_mark(Display* dpy, char* out, size_t size)
{
	unsigned char r[16];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		int64_t t = clock_ns() ^ (int64_t)getpid() << 32;
		memcpy(r, &t, sizeof(t));
		memcpy(r + 8, &t, sizeof(t));
	}
	for (size_t i = 0; i < sizeof(r) && 2 * i + 2 < size; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	XChangeProperty(dpy, DefaultRootWindow(dpy),
			XInternAtom(dpy, IDENTITY_PROPERTY, False), XA_STRING, 8,
			PropModeReplace, (const unsigned char*)out, (int)strlen(out));
	XSync(dpy, False);
}

/* Is this the X server deskd attached to? The first connection marks it (or
 * adopts the mark of another deskd on it); a later one must find the same
 * mark, vendor and release, unless --display-reattach. A freed display
 * number can be taken by another X server at once, and deskd must never act
 * on it (D8). Watcher thread. */
static bool same_server(Display* dpy)
{
	char mark[40];
	read_mark(dpy, mark, sizeof(mark));
	pthread_mutex_lock(&g.mutex);
	bool first = !g.identity[0] || g.reattach;
	bool same = first || (strcmp(mark, g.identity) == 0
			&& strcmp(ServerVendor(dpy), g.identity_vendor) == 0
			&& VendorRelease(dpy) == g.identity_release);
	pthread_mutex_unlock(&g.mutex);
	if (!same) {
		char why[256];
		snprintf(why, sizeof(why),
				"the X server now on %s is not the one deskd attached to (%s %d, %s): "
				"it was restarted or replaced, and deskd does not act on another X server; "
				"restart deskd, or run it with --display-reattach",
				desktop_display_name(), ServerVendor(dpy), VendorRelease(dpy),
				mark[0] ? "another mark on its root window" : "no deskd mark on its root window");
		pthread_mutex_lock(&g.mutex);
		bool again = strcmp(why, g.refusal) == 0;
		snprintf(g.refusal, sizeof(g.refusal), "%s", why);
		pthread_mutex_unlock(&g.mutex);
		if (!again)
			log_error("%s", why);
		return false;
	}
	if (first && !mark[0])
		new_mark(dpy, mark, sizeof(mark));
	pthread_mutex_lock(&g.mutex);
	snprintf(g.identity, sizeof(g.identity), "%s", mark);
	snprintf(g.identity_vendor, sizeof(g.identity_vendor), "%s", ServerVendor(dpy));
	g.identity_release = VendorRelease(dpy);
	g.refusal[0] = '\0';
	pthread_mutex_unlock(&g.mutex);
	return true;
}

/* The embedded desktop's background: a calm dark grey-blue, so that an
 * empty desktop does not look like a black, broken screen. Set on the root
 * window, which keeps it after this connection closes. */
#define DESKTOP_BACKGROUND "#2e3a48"

static void paint_background(Display* dpy)
{
	int screen = DefaultScreen(dpy);
	XColor color;
	if (!XParseColor(dpy, DefaultColormap(dpy, screen), DESKTOP_BACKGROUND, &color)
			|| !XAllocColor(dpy, DefaultColormap(dpy, screen), &color))
		return;
	Window root = RootWindow(dpy, screen);
	XSetWindowBackground(dpy, root, color.pixel);
	XClearWindow(dpy, root);
}

static Display* connect_display(const char* name, struct x11_conn* conn, int* rr_base)
{
	Display* dpy = x11_open(conn, name);
	if (!dpy)
		return NULL;
	if (!same_server(dpy) || x11_lost(conn)) {
		x11_close(conn);
		return NULL;
	}
	Window root = DefaultRootWindow(dpy);
	XSelectInput(dpy, root, StructureNotifyMask);
	if (g.embedded)
		paint_background(dpy);
	int err_base;
	*rr_base = -1;
	if (XRRQueryExtension(dpy, rr_base, &err_base))
		XRRSelectInput(dpy, root, RRScreenChangeNotifyMask);
	else
		*rr_base = -1;
	XSync(dpy, False);
	pthread_mutex_lock(&g.mutex);
	snprintf(g.server_info, sizeof(g.server_info), "%s %d",
			ServerVendor(dpy), VendorRelease(dpy));
	pthread_mutex_unlock(&g.mutex);
	update_size(dpy);
	/* The watcher's own connection stays up through a stop (it never
	 * waits on the server: it reads only what poll says is there), so a
	 * stop does not count as a disconnect; every other one is aborted. */
	x11_keep(conn);
	if (x11_lost(conn)) {
		x11_close(conn);
		return NULL;
	}
	return dpy;
}

static void drain_events(Display* dpy, const struct x11_conn* conn, int rr_base)
{
	while (!x11_lost(conn) && XPending(dpy) > 0 && !x11_lost(conn)) {
		XEvent ev;
		XNextEvent(dpy, &ev);
		if (rr_base >= 0 && ev.type == rr_base + RRScreenChangeNotify) {
			XRRUpdateConfiguration(&ev);
			update_size(dpy);
		} else if (ev.type == ConfigureNotify
				&& ev.xconfigure.window == DefaultRootWindow(dpy)) {
			XRRUpdateConfiguration(&ev);
			update_size(dpy);
		}
	}
}

/* Wait on the condvar for ms unless stopping; returns true when stopping. */
bool desktop__watcher_wait(int ms)
{
	struct timespec ts = clock_realtime_in(ms);
	pthread_mutex_lock(&g.mutex);
	if (!g.stopping)
		pthread_cond_timedwait(&g.cond, &g.mutex, &ts);
	bool stopping = g.stopping;
	pthread_mutex_unlock(&g.mutex);
	return stopping;
}

static bool is_stopping(void)
{
	pthread_mutex_lock(&g.mutex);
	bool s = g.stopping;
	pthread_mutex_unlock(&g.mutex);
	return s;
}

static void* watcher_main(void* ud)
{
	Display* dpy = NULL;
	struct x11_conn conn = { 0 };	/* the trap: stays put while open */
	int rr_base = -1;
	int retry_ms = 100;
	int restart_failures = 0;
	bool had_connection = false;

	while (!is_stopping()) {
		bool xvfb_died = xvfb_reap();
		if (g.embedded && (xvfb_died || !xvfb_running())) {
			atomic_store(&available, false);
			if (dpy) {
				atomic_fetch_add(&disconnects, 1);
				x11_close(&conn);
				dpy = NULL;
			}
			xvfb_before_restart();
			int number;
			pthread_mutex_lock(&g.mutex);
			number = g.display_number;
			pthread_mutex_unlock(&g.mutex);
			if (start_embedded(number) < 0) {
				restart_failures++;
				int wait = restart_failures < 6 ? 250 << restart_failures : 10000;
				log_error("cannot restart the embedded Xvfb; retrying in %d ms",
						wait);
				if (desktop__watcher_wait(wait))
					break;
				continue;
			}
			restart_failures = 0;
		}

		if (!dpy) {
			dpy = connect_display(desktop_display_name(), &conn, &rr_base);
			if (dpy) {
				atomic_store(&available, true);
				retry_ms = 100;
				if (had_connection)
					log_info("display %s is back", desktop_display_name());
				had_connection = true;
				continue;
			}
			if (desktop__watcher_wait(retry_ms))
				break;
			retry_ms = retry_ms * 2 > 1000 ? 1000 : retry_ms * 2;
			continue;
		}

		struct pollfd pfd[2] = {
			{ ConnectionNumber(dpy), POLLIN, 0 },
			{ wake_pipe[0], POLLIN, 0 },
		};
		int n = poll(pfd, wake_pipe[0] >= 0 ? 2 : 1, 200);
		if (n > 0 && (pfd[1].revents & POLLIN))
			continue;	/* desktop_stop */
		if (n > 0 || XPending(dpy) > 0)
			drain_events(dpy, &conn, rr_base);
		desktop__capture_trim();
		if (x11_lost(&conn)) {
			atomic_store(&available, false);
			atomic_fetch_add(&disconnects, 1);
			x11_close(&conn);
			dpy = NULL;
			log_warn("lost the X display %s; tools answer display_unavailable until it is back",
					desktop_display_name());
		}
	}
	if (dpy)
		x11_close(&conn);
	atomic_store(&available, false);
	return NULL;
}

/* Start and stop. */

static struct desktop_config config;

void desktop_configure(const struct desktop_config* c)
{
	config = *c;
}

const struct desktop_config* desktop__config(void)
{
	return &config;
}

static int x11_start(const struct desktop_config* opts, bool embedded)
{
	if (!embedded) {
		desktop__set_display_name(opts->display);
		xvfb_start_clients(opts->display);	/* --launch works here too */
		return 0;
	}
	int rc = start_embedded(-1);
	if (rc < 0)
		log_error("cannot start the embedded Xvfb: %s; add --log-level debug to see its output", strerror(-rc));
	return rc;
}

/* The display service's implementations: start (the display name, the
 * programs), the watcher thread, stop. The rest of desktop/ and everything
 * above go through the display name. */
struct display_backend {
	const char* name;
	int (*start)(const struct desktop_config* opts, bool embedded);
	void* (*watch)(void* ud);
	void (*stop)(bool keep_config);
	bool pinger;		/* the hang detector pings an X server */
};

static const struct display_backend BACKENDS[] = {
	{ "x11", x11_start, watcher_main, xvfb_stop, true },
	{ "wayland", desktop__wayland_start, desktop__wayland_watch, desktop__wayland_stop, false },
	{ "gnome", desktop__gnome_start, desktop__gnome_watch, desktop__gnome_stop, false },
};
enum { BACKEND_X11, BACKEND_WAYLAND, BACKEND_GNOME };
static const struct display_backend* backend = &BACKENDS[BACKEND_X11];

bool desktop_is_wayland(void)
{
	return backend == &BACKENDS[BACKEND_WAYLAND];
}

bool desktop_is_gnome(void)
{
	return backend == &BACKENDS[BACKEND_GNOME];
}

const char* desktop_backend(void)
{
	return backend->name;
}

int desktop_start(void)
{
	const struct desktop_config* opts = &config;
	int rc;
	if (g.started)
		return -EALREADY;
	bool wayland = opts->wayland || (opts->wayland_display && *opts->wayland_display);
	bool attach_gnome = opts->gnome_bus && *opts->gnome_bus;
	bool embedded = wayland ? !(opts->wayland_display && *opts->wayland_display)
			: !(opts->display && *opts->display) && !attach_gnome;
	/* --desktop gnome embedded, or --gnome-bus; a --display given beside
	 * --desktop gnome wins. */
	bool gnome = attach_gnome || (opts->gnome && !wayland && embedded);
	backend = &BACKENDS[gnome ? BACKEND_GNOME : wayland ? BACKEND_WAYLAND : BACKEND_X11];
	enum desktop__kind kind = !embedded ? DESKTOP__EXTERNAL
			: gnome ? DESKTOP__EMBEDDED_GNOME
			: wayland ? DESKTOP__EMBEDDED_WAYLAND : DESKTOP__EMBEDDED_X11;
	if ((rc = xvfb_configure(opts, kind)) < 0)
		return rc;
	g.stopping = false;
	g.reattach = opts->display_reattach;
	g.identity[0] = g.refusal[0] = '\0';
	g.width = g.height = 0;
	atomic_store(&available, false);
	g.embedded = embedded;
	if ((rc = backend->start(opts, embedded)) < 0)
		goto embedded_failure;

	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		wake_pipe[0] = wake_pipe[1] = -1;	/* then stop waits up to 200 ms */
	rc = pthread_create(&g.watcher, NULL, backend->watch, NULL);
	if (rc != 0) {
		rc = -rc;
		goto thread_failure;
	}
	g.watcher_running = true;
	g.started = true;
	if (backend->pinger && desktop__pinger_start() < 0)
		log_warn("no hang detector: a stopped X server blocks tool calls until it answers");

	/* Wait (bounded) for the first connection so "ready" means usable. */
	int64_t end = clock_ms() + (g.embedded ? 5000 : 1000);
	while (!desktop_available() && clock_ms() < end)
		clock_sleep_ms(5);
	if (!desktop_available())
		log_warn("display %s is not reachable yet; tools answer display_unavailable until it is",
				desktop_display_name());
	return 0;

thread_failure:
	for (int i = 0; i < 2; i++) {
		if (wake_pipe[i] >= 0)
			close(wake_pipe[i]);
		wake_pipe[i] = -1;
	}
embedded_failure:
	backend->stop(false);
	return rc;
}

void desktop_stop(void)
{
	bool stuck = false;
	if (!g.started)
		return;
	pthread_mutex_lock(&g.mutex);
	g.stopping = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.mutex);
	if (wake_pipe[1] >= 0 && write(wake_pipe[1], "x", 1) < 0)
		log_debug("cannot wake the display watcher: %s", strerror(errno));
	if (backend->pinger)
		desktop__pinger_stop();
	desktop_clipboard_stop();
	if (g.watcher_running) {
		/* Bounded: XOpenDisplay on a hung X server never returns. */
		struct timespec ts = clock_realtime_in(1000);
		if (pthread_timedjoin_np(g.watcher, NULL, &ts) != 0) {
			log_warn("the display watcher is stuck (a hung X server?); stopping without it");
			pthread_detach(g.watcher);
			stuck = true;
		}
		g.watcher_running = false;
	}
	atomic_store(&available, false);

	backend->stop(stuck);	/* a stuck watcher may still use the config */
	if (!stuck) {
		for (int i = 0; i < 2; i++) {
			if (wake_pipe[i] >= 0)
				close(wake_pipe[i]);
			wake_pipe[i] = -1;
		}
	}
	g.started = false;
}

int desktop_probe(const char* display, const char* const* extensions, size_t n,
		bool* present, struct desktop_probe* out)
{
	struct x11_conn conn = { 0 };
	Display* dpy = x11_open(&conn, display);
	if (!dpy)
		return -ECONNREFUSED;
	out->width = DisplayWidth(dpy, DefaultScreen(dpy));
	out->height = DisplayHeight(dpy, DefaultScreen(dpy));
	snprintf(out->vendor, sizeof(out->vendor), "%s", ServerVendor(dpy));
	out->release = VendorRelease(dpy);
	for (size_t i = 0; i < n; i++) {
		int op, ev, err;
		present[i] = XQueryExtension(dpy, extensions[i], &op, &ev, &err) && !x11_lost(&conn);
	}
	bool lost = x11_lost(&conn);
	x11_close(&conn);
	return lost ? -ECONNRESET : 0;
}
