/* The desktop: an external X display, or an embedded Xvfb with a window
 * manager and --launch programs. See desktop.h for the thread rules. */
#define _GNU_SOURCE
#include "desktop/desktop.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/options.h"

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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

#define DESKTOP_NAME_SLOTS 16
#define DESKTOP_XVFB_READY_MS 10000
#define DESKTOP_STOP_GRACE_MS 2000

struct child {
	pid_t pid;		/* 0 when not running */
	char label[64];
};

static struct {
	pthread_mutex_t mutex;	/* guards what follows, except the atomics */
	pthread_cond_t cond;	/* wakes the watcher (stop) */
	bool started, stopping;
	bool embedded;
	int virtual_width, virtual_height;
	char xvfb_path[PATH_MAX];
	char wm_path[PATH_MAX];	/* "" = no window manager */
	char setxkbmap_path[PATH_MAX];
	char** launch;		/* copies of --launch */
	int n_launch;
	int display_number;	/* embedded only */
	struct child xvfb, wm;
	struct child* launched;	/* n_launch entries */
	int width, height;
	char server_info[128];
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
static char name_slots[DESKTOP_NAME_SLOTS][64];
static atomic_int name_slot = -1;

/* The ticket lock. */
static pthread_mutex_t ticket_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ticket_cond = PTHREAD_COND_INITIALIZER;
static unsigned long ticket_next, ticket_serving;

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

static void set_display_name(const char* name)
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

bool desktop_available(void)
{
	return atomic_load(&available);
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

void desktop_server_info(char* out, size_t size)
{
	pthread_mutex_lock(&g.mutex);
	snprintf(out, size, "%s", g.server_info);
	pthread_mutex_unlock(&g.mutex);
}

/* X error handlers: process-wide, log and return. */

static int on_x_error(Display* dpy, XErrorEvent* ev)
{
	char text[128];
	XGetErrorText(dpy, ev->error_code, text, sizeof(text));
	log_debug("X error (not fatal): %s, request %d.%d, resource 0x%lx",
			text, ev->request_code, ev->minor_code, ev->resourceid);
	return 0;
}

static int on_x_io_error(Display* dpy)
{
	log_debug("X connection to %s lost", DisplayString(dpy));
	return 0;
}

static void on_x_io_exit(Display* dpy, void* ud)
{
	/* Returning keeps the process alive; Xlib calls on dpy are no-ops now.
	 * _XIOError took the user lock (XLockDisplay) for the exit it
	 * expected: release it, or an XCloseDisplay on another thread waits
	 * for it forever. */
	if (ud)
		*(bool*)ud = true;
	XUnlockDisplay(dpy);
}

/* Installed only where Xlib's default is in place: a module that installed
 * its own (and chains to the previous one) keeps it. */
static void install_x_handlers(void)
{
	XErrorHandler cur = XSetErrorHandler(NULL);
	XErrorHandler def = XSetErrorHandler(cur);
	if (cur == def)
		XSetErrorHandler(on_x_error);
	XIOErrorHandler cur_io = XSetIOErrorHandler(NULL);
	XIOErrorHandler def_io = XSetIOErrorHandler(cur_io);
	if (cur_io == def_io)
		XSetIOErrorHandler(on_x_io_error);
}

/* Processes: fork + exec with the parent death signal, each in its own
 * process group. Everything the child needs is prepared before fork: only
 * async-signal-safe calls run between fork and exec. */

static char** make_env(char* display_var)
{
	size_t n = 0;
	for (char** e = environ; e && *e; e++)
		n++;
	char** env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	size_t o = 0;
	for (char** e = environ; e && *e; e++)
		if (strncmp(*e, "DISPLAY=", 8) != 0)
			env[o++] = *e;
	env[o++] = display_var;
	env[o] = NULL;
	return env;
}

/* Start path with argv. fd3 (or -1) becomes the child's fd 3. quiet sends
 * the child's stdout and stderr to /dev/null; otherwise both go to our
 * stderr (never our stdout: it carries MCP in --stdio mode). */
static pid_t spawn(const char* path, char* const argv[], const char* display,
		int fd3, bool quiet)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		return -errno;
	char display_var[80];
	snprintf(display_var, sizeof(display_var), "DISPLAY=%s", display);
	char** env = make_env(display_var);
	if (!env) {
		close(devnull);
		return -ENOMEM;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		dup2(devnull, 0);
		dup2(quiet ? devnull : 2, 1);
		if (quiet)
			dup2(devnull, 2);
		if (fd3 == 3) {
			fcntl(3, F_SETFD, 0);
		} else if (fd3 >= 0) {
			dup2(fd3, 3);
		}
		close_range(fd3 >= 0 ? 4 : 3, ~0U, 0);
		execve(path, argv, env);
		_exit(127);
	}
	int err = errno;
	free(env);
	close(devnull);
	if (pid < 0)
		return -err;
	setpgid(pid, pid);	/* also in the parent: no race with a quick stop */
	return pid;
}

/* Did it exit? Reaps it when it did. */
static bool child_exited(pid_t pid, int* status)
{
	int st = 0;
	pid_t r = waitpid(pid, &st, WNOHANG);
	if (r == pid || (r < 0 && errno == ECHILD)) {
		if (status)
			*status = st;
		return true;
	}
	return false;
}

static void describe_status(int status, char* out, size_t size)
{
	if (WIFEXITED(status))
		snprintf(out, size, "exit code %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, size, "signal %s", strsignal(WTERMSIG(status)));
	else
		snprintf(out, size, "status %d", status);
}

static void signal_child(pid_t pid, int sig)
{
	/* The group first: takes the shell's children (--launch) along. */
	if (kill(-pid, sig) != 0)
		kill(pid, sig);
}

/* Stop these processes: SIGTERM, up to grace_ms, then SIGKILL; reaps. */
static void stop_children(struct child** list, int n, int grace_ms)
{
	for (int i = 0; i < n; i++)
		if (list[i]->pid > 0) {
			log_debug("stopping %s (pid %ld)", list[i]->label,
					(long)list[i]->pid);
			signal_child(list[i]->pid, SIGTERM);
		}
	int64_t end = clock_ms() + grace_ms;
	for (;;) {
		bool left = false;
		for (int i = 0; i < n; i++) {
			if (list[i]->pid <= 0)
				continue;
			if (child_exited(list[i]->pid, NULL)) {
				/* Leftovers of the group (a shell's children). */
				kill(-list[i]->pid, SIGKILL);
				list[i]->pid = 0;
			} else {
				left = true;
			}
		}
		if (!left || clock_ms() >= end)
			break;
		clock_sleep_ms(10);
	}
	for (int i = 0; i < n; i++) {
		if (list[i]->pid <= 0)
			continue;
		log_warn("%s (pid %ld) ignored SIGTERM for %d ms; killing it",
				list[i]->label, (long)list[i]->pid, grace_ms);
		signal_child(list[i]->pid, SIGKILL);
		waitpid(list[i]->pid, NULL, 0);
		list[i]->pid = 0;
	}
}

/* Start Xvfb; number >= 0 asks for that display, else -displayfd picks one.
 * Returns the display number or -errno. Caller holds no lock. */
static int start_xvfb(int number, struct child* out)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -errno;
	char screen[64], display[16] = "";
	snprintf(screen, sizeof(screen), "%dx%dx24", g.virtual_width,
			g.virtual_height);
	char* argv[12];
	int a = 0;
	argv[a++] = (char*)"Xvfb";
	if (number >= 0) {
		snprintf(display, sizeof(display), ":%d", number);
		argv[a++] = display;
	}
	argv[a++] = (char*)"-displayfd";
	argv[a++] = (char*)"3";
	argv[a++] = (char*)"-screen";
	argv[a++] = (char*)"0";
	argv[a++] = screen;
	argv[a++] = (char*)"-nolisten";
	argv[a++] = (char*)"tcp";
	argv[a++] = (char*)"-noreset";
	argv[a] = NULL;

	bool quiet = !log_enabled(LOG_DEBUG);
	pid_t pid = spawn(g.xvfb_path, argv, "", fds[1], quiet);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return pid;
	}

	char buf[32];
	size_t len = 0;
	int rc = -ETIMEDOUT;
	int64_t end = clock_ms() + DESKTOP_XVFB_READY_MS;
	for (;;) {
		int left = (int)(end - clock_ms());
		if (left <= 0)
			break;
		struct pollfd pfd = { fds[0], POLLIN, 0 };
		int n = poll(&pfd, 1, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ssize_t r = read(fds[0], buf + len, sizeof(buf) - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = -EIO;	/* Xvfb closed the pipe: it exited */
			break;
		}
		len += (size_t)r;
		if (memchr(buf, '\n', len)) {
			rc = desktop_parse_display_number(buf, len);
			break;
		}
		if (len >= sizeof(buf) - 1) {
			rc = -EINVAL;
			break;
		}
	}
	close(fds[0]);
	if (rc < 0) {
		struct child c = { .pid = pid, .label = "Xvfb" };
		struct child* list[] = { &c };
		stop_children(list, 1, 500);
		return rc;
	}
	out->pid = pid;
	snprintf(out->label, sizeof(out->label), "Xvfb :%d", rc);
	return rc;
}

/* Run setxkbmap us once; bounded. */
static void run_setxkbmap(const char* display)
{
	if (!g.setxkbmap_path[0])
		return;
	char* argv[] = { (char*)"setxkbmap", (char*)"us", NULL };
	pid_t pid = spawn(g.setxkbmap_path, argv, display, -1, false);
	if (pid < 0)
		return;
	struct child c = { .pid = pid, .label = "setxkbmap" };
	int64_t end = clock_ms() + 3000;
	int status = 0;
	while (!child_exited(pid, &status)) {
		if (clock_ms() >= end) {
			struct child* list[] = { &c };
			stop_children(list, 1, 200);
			log_warn("setxkbmap us did not finish in 3 s");
			return;
		}
		clock_sleep_ms(5);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		log_warn("setxkbmap us failed; the keyboard layout stays the X server's default");
}

static bool root_has_property(Display* dpy, Window root, Atom property)
{
	Atom type = None;
	int format;
	unsigned long n, after;
	unsigned char* data = NULL;
	if (XGetWindowProperty(dpy, root, property, 0, 0, False, AnyPropertyType,
			&type, &format, &n, &after, &data) != Success)
		return false;
	XFree(data);
	return type != None;
}

/* A window mapped while the WM is still starting can be lost (it neither
 * maps nor gets managed), so --launch programs wait, bounded, until a client
 * redirects the root's substructure: the WM is taking over. */
static void wait_for_wm(const char* display)
{
	Display* dpy = XOpenDisplay(display);
	if (!dpy)
		return;
	bool dead = false;
	XSetIOErrorExitHandler(dpy, on_x_io_exit, &dead);
	Window root = DefaultRootWindow(dpy);
	Atom check = XInternAtom(dpy, "_NET_SUPPORTING_WM_CHECK", False);
	Atom clients = XInternAtom(dpy, "_NET_CLIENT_LIST", False);
	for (int waited = 0; waited < 3000 && !dead; waited += 10) {
		/* Ready: it redirects the root's substructure and, if it speaks
		 * EWMH, has published its client list (openbox drops map
		 * requests that come before it manages the existing windows). */
		XWindowAttributes attrs;
		if (XGetWindowAttributes(dpy, root, &attrs)
				&& (attrs.all_event_masks & SubstructureRedirectMask)
				&& (!root_has_property(dpy, root, check)
					|| root_has_property(dpy, root, clients))) {
			log_debug("window manager ready after %d ms", waited);
			break;
		}
		clock_sleep_ms(10);
	}
	XCloseDisplay(dpy);
}

static void start_wm(const char* display)
{
	if (!g.wm_path[0] || g.wm.pid > 0)
		return;
	const char* base = strrchr(g.wm_path, '/');
	base = base ? base + 1 : g.wm_path;
	char* argv[3] = { (char*)base, NULL, NULL };
	if (strcmp(base, "openbox") == 0)
		argv[1] = (char*)"--sm-disable";
	pid_t pid = spawn(g.wm_path, argv, display, -1, false);
	if (pid < 0) {
		log_warn("cannot start the window manager %s: %s", g.wm_path,
				strerror((int)-pid));
		return;
	}
	g.wm.pid = pid;
	snprintf(g.wm.label, sizeof(g.wm.label), "%.63s", base);
	log_info("window manager %s started (pid %ld)", base, (long)pid);
	wait_for_wm(display);
}

int desktop_launch_script(const char* cmd, char* out, size_t size)
{
	/* Characters that make the command more than one simple command. */
	static const char special[] = ";&|<>()$`\\\"'\n*?[]#~={}!";
	bool simple = cmd[strspn(cmd, " \t")] != '\0' && !strpbrk(cmd, special);
	int n = snprintf(out, size, "%s%s", simple ? "exec " : "", cmd);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return simple ? 1 : 0;
}

static void start_launch(int i, const char* display)
{
	if (g.launched[i].pid > 0)
		return;
	/* A simple command replaces the shell, so it gets the parent death
	 * signal itself and is the one we stop. */
	char script[8192];
	if (desktop_launch_script(g.launch[i], script, sizeof(script)) < 0) {
		log_warn("--launch command too long: '%.40s...'", g.launch[i]);
		return;
	}
	char* argv[] = { (char*)"sh", (char*)"-c", script, NULL };
	pid_t pid = spawn("/bin/sh", argv, display, -1, false);
	if (pid < 0) {
		log_warn("cannot launch '%s': %s", g.launch[i], strerror((int)-pid));
		return;
	}
	g.launched[i].pid = pid;
	snprintf(g.launched[i].label, sizeof(g.launched[i].label), "%s", g.launch[i]);
	log_info("launched '%s' (pid %ld)", g.launch[i], (long)pid);
}

/* Start (or restart) the embedded Xvfb with the WM, setxkbmap and the
 * --launch programs that are not running. number >= 0: try that display
 * number first. Returns 0 or -errno. */
static int start_embedded(int number)
{
	int rc = -ENOENT;
	if (number >= 0) {
		rc = start_xvfb(number, &g.xvfb);
		if (rc < 0)
			log_warn("cannot restart Xvfb on :%d (%s); letting it pick a display",
					number, strerror(-rc));
	}
	if (rc < 0)
		rc = start_xvfb(-1, &g.xvfb);
	if (rc < 0)
		return rc;
	char name[32];
	snprintf(name, sizeof(name), ":%d", rc);
	pthread_mutex_lock(&g.mutex);
	g.display_number = rc;
	pthread_mutex_unlock(&g.mutex);
	if (strcmp(name, desktop_display_name()) != 0)
		set_display_name(name);
	log_info("embedded Xvfb on %s, %dx%d (pid %ld)", name, g.virtual_width,
			g.virtual_height, (long)g.xvfb.pid);
	run_setxkbmap(name);
	start_wm(name);
	for (int i = 0; i < g.n_launch; i++)
		start_launch(i, name);
	return 0;
}

/* The watcher thread. */

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

static Display* connect_display(const char* name, bool* dead, int* rr_base)
{
	Display* dpy = XOpenDisplay(name);
	if (!dpy)
		return NULL;
	*dead = false;
	XSetIOErrorExitHandler(dpy, on_x_io_exit, dead);
	Window root = DefaultRootWindow(dpy);
	XSelectInput(dpy, root, StructureNotifyMask);
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
	return dpy;
}

static void drain_events(Display* dpy, const bool* dead, int rr_base)
{
	while (!*dead && XPending(dpy) > 0 && !*dead) {
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
static bool watcher_wait(int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
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

/* Reap what exited; returns true when the embedded Xvfb died. */
static bool reap_children(void)
{
	char how[64];
	int status;
	bool xvfb_died = false;
	if (g.xvfb.pid > 0 && child_exited(g.xvfb.pid, &status)) {
		describe_status(status, how, sizeof(how));
		log_warn("the embedded %s exited (%s); restarting it", g.xvfb.label, how);
		g.xvfb.pid = 0;
		xvfb_died = true;
	}
	if (g.wm.pid > 0 && child_exited(g.wm.pid, &status)) {
		describe_status(status, how, sizeof(how));
		log_info("window manager %s exited (%s)", g.wm.label, how);
		g.wm.pid = 0;
	}
	for (int i = 0; i < g.n_launch; i++) {
		if (g.launched[i].pid > 0 && child_exited(g.launched[i].pid, &status)) {
			describe_status(status, how, sizeof(how));
			log_info("'%s' exited (%s)", g.launched[i].label, how);
			g.launched[i].pid = 0;
		}
	}
	return xvfb_died;
}

static bool launched_running(void)
{
	for (int i = 0; i < g.n_launch; i++)
		if (g.launched[i].pid > 0)
			return true;
	return false;
}

static void* watcher_main(void* ud)
{
	Display* dpy = NULL;
	bool dead = false;
	int rr_base = -1;
	int retry_ms = 100;
	int restart_failures = 0;
	bool had_connection = false;

	while (!is_stopping()) {
		bool xvfb_died = reap_children();
		if (g.embedded && (xvfb_died || g.xvfb.pid <= 0)) {
			atomic_store(&available, false);
			if (dpy) {
				atomic_fetch_add(&disconnects, 1);
				XCloseDisplay(dpy);
				dpy = NULL;
			}
			/* Its clients die with it; stop the WM for a clean restart
			 * and give the --launch programs a moment to notice, so
			 * those that exit are started again. */
			struct child* list[] = { &g.wm };
			stop_children(list, 1, 500);
			for (int t = 0; t < 50 && launched_running(); t++) {
				clock_sleep_ms(10);
				reap_children();
			}
			int number;
			pthread_mutex_lock(&g.mutex);
			number = g.display_number;
			pthread_mutex_unlock(&g.mutex);
			if (start_embedded(number) < 0) {
				restart_failures++;
				int wait = restart_failures < 6 ? 250 << restart_failures : 10000;
				log_error("cannot restart the embedded Xvfb; retrying in %d ms",
						wait);
				if (watcher_wait(wait))
					break;
				continue;
			}
			restart_failures = 0;
		}

		if (!dpy) {
			dpy = connect_display(desktop_display_name(), &dead, &rr_base);
			if (dpy) {
				atomic_store(&available, true);
				retry_ms = 100;
				if (had_connection)
					log_info("display %s is back", desktop_display_name());
				had_connection = true;
				continue;
			}
			if (watcher_wait(retry_ms))
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
			drain_events(dpy, &dead, rr_base);
		if (dead) {
			atomic_store(&available, false);
			atomic_fetch_add(&disconnects, 1);
			XCloseDisplay(dpy);
			dpy = NULL;
			log_warn("lost the X display %s; tools answer display_unavailable until it is back",
					desktop_display_name());
		}
	}
	if (dpy)
		XCloseDisplay(dpy);
	atomic_store(&available, false);
	return NULL;
}

/* Start and stop. */

static void free_config(void)
{
	for (int i = 0; i < g.n_launch; i++)
		free(g.launch[i]);
	free(g.launch);
	free(g.launched);
	g.launch = NULL;
	g.launched = NULL;
	g.n_launch = 0;
}

static int copy_config(const struct options* opts)
{
	g.virtual_width = opts->virtual_width > 0 ? opts->virtual_width : 1280;
	g.virtual_height = opts->virtual_height > 0 ? opts->virtual_height : 800;
	g.n_launch = 0;
	g.launch = calloc((size_t)opts->n_launch + 1, sizeof(*g.launch));
	g.launched = calloc((size_t)opts->n_launch + 1, sizeof(*g.launched));
	if (!g.launch || !g.launched)
		goto nomem;
	for (int i = 0; i < opts->n_launch; i++) {
		g.launch[i] = strdup(opts->launch[i]);
		if (!g.launch[i])
			goto nomem;
		g.n_launch++;
	}
	return 0;
nomem:
	free_config();
	return -ENOMEM;
}

static void resolve_programs(const struct options* opts)
{
	const char* path = getenv("PATH");
	g.wm_path[0] = '\0';
	if (!opts->wm) {
		if (desktop_find_program("openbox", path, g.wm_path,
				sizeof(g.wm_path)) < 0) {
			g.wm_path[0] = '\0';
			log_info("no window manager: openbox is not installed (give --wm NAME for another)");
		}
	} else if (strcmp(opts->wm, "none") != 0) {
		if (desktop_find_program(opts->wm, path, g.wm_path,
				sizeof(g.wm_path)) < 0) {
			g.wm_path[0] = '\0';
			log_warn("window manager '%s' not found on PATH; running without one",
					opts->wm);
		}
	}
	if (desktop_find_program("setxkbmap", path, g.setxkbmap_path,
			sizeof(g.setxkbmap_path)) < 0)
		g.setxkbmap_path[0] = '\0';
}

int desktop_start(const struct options* opts)
{
	int rc;
	if (g.started)
		return -EALREADY;
	install_x_handlers();
	if ((rc = copy_config(opts)) < 0)
		return rc;
	g.stopping = false;
	g.width = g.height = 0;
	atomic_store(&available, false);

	if (opts->display && *opts->display) {
		g.embedded = false;
		set_display_name(opts->display);
		if (opts->n_launch > 0) {
			/* --launch works on an external display too. */
			for (int i = 0; i < g.n_launch; i++)
				start_launch(i, opts->display);
		}
	} else {
		const char* path = getenv("PATH");
		if (desktop_find_program("Xvfb", path, g.xvfb_path,
				sizeof(g.xvfb_path)) < 0) {
			log_error("Xvfb is not installed (apt-get install xvfb), and no --display was given");
			rc = -ENOENT;
			goto config_failure;
		}
		resolve_programs(opts);
		g.embedded = true;
		if ((rc = start_embedded(-1)) < 0) {
			log_error("cannot start the embedded Xvfb: %s; add --log-level debug to see its output", strerror(-rc));
			goto embedded_failure;
		}
	}

	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		wake_pipe[0] = wake_pipe[1] = -1;	/* then stop waits up to 200 ms */
	rc = pthread_create(&g.watcher, NULL, watcher_main, NULL);
	if (rc != 0) {
		rc = -rc;
		goto thread_failure;
	}
	g.watcher_running = true;
	g.started = true;

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
	{
		struct child* list[2 + OPTIONS_MAX_LIST];
		int n = 0;
		list[n++] = &g.wm;
		for (int i = 0; i < g.n_launch; i++)
			list[n++] = &g.launched[i];
		list[n++] = &g.xvfb;
		stop_children(list, n, DESKTOP_STOP_GRACE_MS);
	}
config_failure:
	free_config();
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
	if (g.watcher_running) {
		/* Bounded: XOpenDisplay on a hung X server never returns. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 3;
		if (pthread_timedjoin_np(g.watcher, NULL, &ts) != 0) {
			log_warn("the display watcher is stuck (a hung X server?); stopping without it");
			pthread_detach(g.watcher);
			stuck = true;
		}
		g.watcher_running = false;
	}
	atomic_store(&available, false);

	/* The clients first (so they exit cleanly, not on a lost display),
	 * then the X server. */
	struct child* list[1 + OPTIONS_MAX_LIST];
	int n = 0;
	for (int i = 0; i < g.n_launch; i++)
		list[n++] = &g.launched[i];
	list[n++] = &g.wm;
	stop_children(list, n, DESKTOP_STOP_GRACE_MS / 2);
	list[0] = &g.xvfb;
	stop_children(list, 1, DESKTOP_STOP_GRACE_MS);
	if (!stuck) {	/* else the watcher may still use them */
		free_config();
		for (int i = 0; i < 2; i++) {
			if (wake_pipe[i] >= 0)
				close(wake_pipe[i]);
			wake_pipe[i] = -1;
		}
	}
	g.started = false;
}
