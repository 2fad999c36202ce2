/* The embedded desktop's processes: Xvfb (-displayfd), the window manager,
 * setxkbmap and the --launch programs. Each is forked with the parent death
 * signal into its own process group, reaped by the display watcher, and
 * stopped by PID (SIGTERM, a grace period, SIGKILL). Private to desktop/
 * (desktop_private.h); display.c drives it. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "gnome/gnome.h"
#include "x11/x11.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"

#include <X11/Xlib.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DESKTOP_XVFB_READY_MS 10000
#define DESKTOP_STOP_GRACE_MS 2000
#define DESKTOP_DEFAULT_LAUNCH "xterm -fa Monospace -fs 11"
#define DESKTOP_DEFAULT_WAYLAND_LAUNCH "foot"

/* Touched by the main thread before the watcher starts and after it
 * stopped, and by the watcher in between: no lock needed. */
static struct {
	bool embedded;		/* deskd's own Xvfb */
	bool embedded_wayland;	/* deskd's own sway or Mutter (wayland_desktop.c,
				 * gnome_desktop.c start them) */
	int virtual_width, virtual_height;
	char xvfb_path[PATH_MAX];
	char wm_path[PATH_MAX];	/* "" = no window manager */
	char setxkbmap_path[PATH_MAX];
	char wm_config_dir[256];	/* openbox's rc.xml and menu.xml; "" none */
	char** launch;		/* copies of --launch ("none" left out) */
	int n_launch;
	bool launch_none;	/* --launch none: not even the default terminal */
	struct desktop__child xvfb, wm;
	struct desktop__child* launched;	/* n_launch entries */
	struct desktop__child** stopping;	/* room for the launched and the WM (xvfb_stop) */
} P;

/* Processes: fork + exec with the parent death signal, each in its own
 * process group. Everything the child needs is prepared before fork: only
 * async-signal-safe calls run between fork and exec. */

/* In the child: report err over the pipe and exit. */
static void child_fail(int report, int err)
{
	while (write(report, &err, sizeof(err)) < 0 && errno == EINTR)
		;
	_exit(127);
}

/* The child's stdout and stderr go into a pipe that childlog.c reads and
 * re-logs, line by line, as program at level (never to our stdout: it
 * carries MCP in --stdio mode; straight to our stderr only when no pipe can
 * be had), or to /dev/null when quiet. */
pid_t desktop__spawn_with(const struct desktop__spawn_args* s)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		return -errno;
	int report[2];
	if (pipe2(report, O_CLOEXEC) != 0) {
		int err = -errno;
		close(devnull);
		return err;
	}
	char** env = desktop__env_build(s->display, s->env, s->n_env);
	if (!env) {
		close(devnull);
		close(report[0]);
		close(report[1]);
		return -ENOMEM;
	}
	int out = s->quiet ? devnull : 2;
	int capture = -1;
	if (!s->quiet) {
		int w;
		capture = childlog_open(s->program, s->level, &w);
		if (capture >= 0)
			out = w;
	}
	int fd3 = s->fd3;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		/* The report pipe out of the way of fds 0..3 first. */
		int rep = fcntl(report[1], F_DUPFD_CLOEXEC, 64);
		if (rep < 0)
			_exit(127);
		/* The program's descriptor above it, out of the way too. */
		int xfd = -1;
		if (s->by_fd && (xfd = fcntl(s->exec_fd, F_DUPFD_CLOEXEC, rep + 1)) < 0)
			child_fail(rep, errno);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		dup2(devnull, 0);
		/* Before fd 3 is set up: out may be fd 3 itself. */
		if (out == 1 || out == 2)
			fcntl(out, F_SETFD, 0);
		if (out != 1)
			dup2(out, 1);
		if (out != 2)
			dup2(out, 2);
		if (fd3 == 3) {
			fcntl(3, F_SETFD, 0);
		} else if (fd3 >= 0) {
			dup2(fd3, 3);
		}
		close_range(fd3 >= 0 ? 4 : 3, (unsigned)rep - 1, 0);
		if (xfd > rep + 1)
			close_range((unsigned)rep + 1, (unsigned)xfd - 1, 0);
		close_range((unsigned)(xfd > rep ? xfd : rep) + 1, ~0U, 0);
		if (s->cwd && chdir(s->cwd) != 0)
			child_fail(rep, errno);
		if (xfd < 0) {
			execve(s->path, s->argv, env);
		} else {
			execveat(xfd, "", s->argv, env, AT_EMPTY_PATH);
			/* A #! script: its interpreter opens /dev/fd/N, which
			 * close-on-exec takes away (ENOENT); keep it open. */
			if (errno == ENOENT && fcntl(xfd, F_SETFD, 0) == 0)
				execveat(xfd, "", s->argv, env, AT_EMPTY_PATH);
		}
		child_fail(rep, errno);
	}
	int err = errno;
	close(report[1]);
	desktop__env_free(env);
	close(devnull);
	if (capture >= 0) {
		close(out);
		if (pid > 0)
			childlog_attach(capture, (long)pid);
		else
			childlog_cancel(capture);
	}
	if (pid < 0) {
		close(report[0]);
		return -err;
	}
	setpgid(pid, pid);	/* also in the parent: no race with a quick stop */
	/* Closed at exec (0 bytes), or the child's errno. */
	int child_err = 0;
	ssize_t r;
	while ((r = read(report[0], &child_err, sizeof(child_err))) < 0 && errno == EINTR)
		;
	close(report[0]);
	if (r == (ssize_t)sizeof(child_err)) {
		waitpid(pid, NULL, 0);
		return -(child_err > 0 ? child_err : EIO);
	}
	return pid;
}

static pid_t spawn(const char* path, char* const argv[], const char* display,
		int fd3, bool quiet, const char* program, enum log_level level)
{
	struct desktop__spawn_args s = {
		.path = path, .argv = argv, .display = display, .fd3 = fd3,
		.quiet = quiet, .program = program, .level = level,
	};
	return desktop__spawn_with(&s);
}

/* Did it exit? Reaps it when it did. */
bool desktop__child_exited(pid_t pid, int* status)
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

void desktop__describe_status(int status, char* out, size_t size)
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
	/* The group first: takes the shell's children (--launch) alonP. */
	if (kill(-pid, sig) != 0)
		kill(pid, sig);
}

/* Stop these processes: SIGTERM, up to grace_ms, then SIGKILL; reaps. */
void desktop__stop_children(struct desktop__child** list, int n, int grace_ms)
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
			if (desktop__child_exited(list[i]->pid, NULL)) {
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
static int start_xvfb(int number, struct desktop__child* out)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -errno;
	char screen[64], display[16] = "";
	snprintf(screen, sizeof(screen), "%dx%dx24", P.virtual_width,
			P.virtual_height);
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
	pid_t pid = spawn(P.xvfb_path, argv, "", fds[1], quiet, "Xvfb", LOG_DEBUG);
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
		struct desktop__child c = { .pid = pid, .label = "Xvfb" };
		struct desktop__child* list[] = { &c };
		desktop__stop_children(list, 1, 500);
		return rc;
	}
	out->pid = pid;
	snprintf(out->label, sizeof(out->label), "Xvfb :%d", rc);
	return rc;
}

/* Run setxkbmap once, bounded: the US layout without the multimedia keys
 * of inet(evdev) (what "setxkbmap us" adds), so that 131 keycodes are
 * empty and input/ has a large pool of spare slots (INPUT.md). */
static void run_setxkbmap(const char* display)
{
	if (!P.setxkbmap_path[0])
		return;
	char* argv[] = { (char*)"setxkbmap", (char*)"-keycodes", (char*)"evdev",
		(char*)"-types", (char*)"complete", (char*)"-compat", (char*)"complete",
		(char*)"-symbols", (char*)"pc+us", (char*)"-geometry", (char*)"pc", NULL };
	pid_t pid = spawn(P.setxkbmap_path, argv, display, -1, false, "setxkbmap",
			LOG_INFO);
	if (pid < 0)
		return;
	struct desktop__child c = { .pid = pid, .label = "setxkbmap" };
	int64_t end = clock_ms() + 3000;
	int status = 0;
	while (!desktop__child_exited(pid, &status)) {
		if (clock_ms() >= end) {
			struct desktop__child* list[] = { &c };
			desktop__stop_children(list, 1, 200);
			log_warn("setxkbmap did not finish in 3 s");
			return;
		}
		clock_sleep_ms(5);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		log_warn("setxkbmap failed; the keyboard layout stays the X server's default");
}

static bool root_has_property(Display* dpy, Window root, Atom property)
{
	int format;
	unsigned char* data;
	bool there = x11_property(dpy, root, property, AnyPropertyType, 1, &format, &data) >= 0;
	if (data)
		XFree(data);
	return there;
}

/* A window mapped while the WM is still starting can be lost (it neither
 * maps nor gets managed), so --launch programs wait, bounded, until a client
 * redirects the root's substructure: the WM is taking over. */
static void wait_for_wm(const char* display)
{
	struct x11_conn conn = { 0 };
	Display* dpy = x11_open(&conn, display);
	if (!dpy)
		return;
	Window root = DefaultRootWindow(dpy);
	Atom check = XInternAtom(dpy, "_NET_SUPPORTING_WM_CHECK", False);
	Atom clients = XInternAtom(dpy, "_NET_CLIENT_LIST", False);
	for (int waited = 0; waited < 3000 && !x11_lost(&conn); waited += 10) {
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
	x11_close(&conn);
}

/* openbox: Debian's rc.xml names a menu file that only the 'menu' package
 * generates (a warning at every start), has four desktops that a scroll on
 * the root window switches between, and grabs many keys. deskd gives it a
 * small configuration of its own, written into a private directory at each
 * start (a user's own ~/.config/openbox/rc.xml wins): one desktop, click to
 * focus, move and resize, Alt-Tab, Alt-F4, a root menu with a terminal. */
static const char openbox_rc[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<!-- deskd's openbox configuration for its embedded desktop, written at every\n"
	"     start (a ~/.config/openbox/rc.xml of your own is used instead). -->\n"
	"<openbox_config xmlns=\"http://openbox.org/3.4/rc\">\n"
	"<focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>\n"
	"<placement><policy>Smart</policy><center>yes</center></placement>\n"
	"<theme><name>Clearlooks</name><titleLayout>NLIMC</titleLayout><keepBorder>yes</keepBorder><animateIconify>no</animateIconify></theme>\n"
	"<desktops><number>1</number><popupTime>0</popupTime></desktops>\n"
	"<keyboard>\n"
	"  <keybind key=\"A-F4\"><action name=\"Close\"/></keybind>\n"
	"  <keybind key=\"A-Tab\"><action name=\"NextWindow\"><dialog>none</dialog><finalactions><action name=\"Focus\"/><action name=\"Raise\"/><action name=\"Unshade\"/></finalactions></action></keybind>\n"
	"  <keybind key=\"A-S-Tab\"><action name=\"PreviousWindow\"><dialog>none</dialog><finalactions><action name=\"Focus\"/><action name=\"Raise\"/><action name=\"Unshade\"/></finalactions></action></keybind>\n"
	"</keyboard>\n"
	"<mouse>\n"
	"  <dragThreshold>1</dragThreshold>\n"
	"  <doubleClickTime>500</doubleClickTime>\n"
	"  <context name=\"Frame\">\n"
	"    <mousebind button=\"A-Left\" action=\"Press\"><action name=\"Focus\"/><action name=\"Raise\"/></mousebind>\n"
	"    <mousebind button=\"A-Left\" action=\"Drag\"><action name=\"Move\"/></mousebind>\n"
	"  </context>\n"
	"  <context name=\"Titlebar\">\n"
	"    <mousebind button=\"Left\" action=\"Drag\"><action name=\"Move\"/></mousebind>\n"
	"    <mousebind button=\"Left\" action=\"DoubleClick\"><action name=\"ToggleMaximize\"/></mousebind>\n"
	"  </context>\n"
	"  <context name=\"Titlebar Top Right Bottom Left TLCorner TRCorner BRCorner BLCorner Icon\">\n"
	"    <mousebind button=\"Left\" action=\"Press\"><action name=\"Focus\"/><action name=\"Raise\"/><action name=\"Unshade\"/></mousebind>\n"
	"    <mousebind button=\"Right\" action=\"Press\"><action name=\"Focus\"/><action name=\"Raise\"/><action name=\"ShowMenu\"><menu>client-menu</menu></action></mousebind>\n"
	"  </context>\n"
	"  <context name=\"Top\"><mousebind button=\"Left\" action=\"Drag\"><action name=\"Resize\"><edge>top</edge></action></mousebind></context>\n"
	"  <context name=\"Left\"><mousebind button=\"Left\" action=\"Drag\"><action name=\"Resize\"><edge>left</edge></action></mousebind></context>\n"
	"  <context name=\"Right\"><mousebind button=\"Left\" action=\"Drag\"><action name=\"Resize\"><edge>right</edge></action></mousebind></context>\n"
	"  <context name=\"Bottom\"><mousebind button=\"Left\" action=\"Drag\"><action name=\"Resize\"><edge>bottom</edge></action></mousebind></context>\n"
	"  <context name=\"TRCorner BRCorner TLCorner BLCorner\"><mousebind button=\"Left\" action=\"Drag\"><action name=\"Resize\"/></mousebind></context>\n"
	"  <context name=\"Client\">\n"
	"    <mousebind button=\"Left\" action=\"Press\"><action name=\"Focus\"/><action name=\"Raise\"/></mousebind>\n"
	"    <mousebind button=\"Middle\" action=\"Press\"><action name=\"Focus\"/><action name=\"Raise\"/></mousebind>\n"
	"    <mousebind button=\"Right\" action=\"Press\"><action name=\"Focus\"/><action name=\"Raise\"/></mousebind>\n"
	"  </context>\n"
	"  <context name=\"Close\"><mousebind button=\"Left\" action=\"Click\"><action name=\"Close\"/></mousebind></context>\n"
	"  <context name=\"Maximize\"><mousebind button=\"Left\" action=\"Click\"><action name=\"ToggleMaximize\"/></mousebind></context>\n"
	"  <context name=\"Iconify\"><mousebind button=\"Left\" action=\"Click\"><action name=\"Iconify\"/></mousebind></context>\n"
	"  <context name=\"Root\">\n"
	"    <mousebind button=\"Right\" action=\"Press\"><action name=\"ShowMenu\"><menu>root-menu</menu></action></mousebind>\n"
	"    <mousebind button=\"Middle\" action=\"Press\"><action name=\"ShowMenu\"><menu>client-list-combined-menu</menu></action></mousebind>\n"
	"  </context>\n"
	"</mouse>\n"
	"<menu><file>%s/menu.xml</file></menu>\n"
	"</openbox_config>\n";

static const char openbox_menu[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<openbox_menu xmlns=\"http://openbox.org/3.4/menu\">\n"
	"<menu id=\"root-menu\" label=\"deskd\">\n"
	"  <item label=\"Terminal\"><action name=\"Execute\"><command>xterm -fa Monospace -fs 11</command></action></item>\n"
	"</menu>\n"
	"</openbox_menu>\n";

static int write_file(const char* dir, const char* name, const char* text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int err = w < 0 ? -errno : -EIO;
			close(fd);
			return err;
		}
		off += (size_t)w;
	}
	return close(fd) == 0 ? 0 : -errno;
}

static void remove_openbox_config(void)
{
	if (!P.wm_config_dir[0])
		return;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/rc.xml", P.wm_config_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/menu.xml", P.wm_config_dir);
	unlink(path);
	rmdir(P.wm_config_dir);
	P.wm_config_dir[0] = '\0';
}

/* The directories of deskds that were killed (-9) before removing theirs:
 * deskd-openbox-<pid>-XXXXXX, ours (uid), whose pid is gone. */
static void remove_stale_openbox_configs(const char* tmp)
{
	DIR* d = opendir(tmp);
	if (!d)
		return;
	struct dirent* e;
	while ((e = readdir(d))) {
		long pid;
		char tail[16];
		if (sscanf(e->d_name, "deskd-openbox-%ld-%15s", &pid, tail) != 2 || pid <= 0
				|| strlen(tail) != 6)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		int dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (dfd < 0)
			continue;
		if (fstat(dfd, &st) == 0 && st.st_uid == geteuid()) {
			unlinkat(dfd, "rc.xml", 0);
			unlinkat(dfd, "menu.xml", 0);
			if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0)
				log_debug("removed %s/%s, left by a deskd that was killed", tmp, e->d_name);
		}
		close(dfd);
	}
	closedir(d);
}

/* Has the user an openbox rc.xml of their own? */
static bool user_openbox_config(void)
{
	const char* xdg = getenv("XDG_CONFIG_HOME");
	const char* home = getenv("HOME");
	char path[PATH_MAX];
	if (xdg && *xdg)
		snprintf(path, sizeof(path), "%s/openbox/rc.xml", xdg);
	else if (home && *home)
		snprintf(path, sizeof(path), "%s/.config/openbox/rc.xml", home);
	else
		return false;
	return access(path, R_OK) == 0;
}

/* The rc.xml to pass with --config-file, or NULL to let openbox find one. */
static const char* openbox_config(void)
{
	static char rc_path[PATH_MAX];
	if (user_openbox_config())
		return NULL;
	if (!P.wm_config_dir[0]) {
		const char* tmp = getenv("TMPDIR");
		if (!tmp || !*tmp)
			tmp = "/tmp";
		remove_stale_openbox_configs(tmp);
		snprintf(P.wm_config_dir, sizeof(P.wm_config_dir), "%s/deskd-openbox-%ld-XXXXXX",
				tmp, (long)getpid());
		if (!mkdtemp(P.wm_config_dir)) {
			log_debug("cannot create a directory for openbox's configuration: %s",
					strerror(errno));
			P.wm_config_dir[0] = '\0';
			return NULL;
		}
	}
	char rc[sizeof(openbox_rc) + PATH_MAX];
	snprintf(rc, sizeof(rc), openbox_rc, P.wm_config_dir);
	if (write_file(P.wm_config_dir, "rc.xml", rc) < 0
			|| write_file(P.wm_config_dir, "menu.xml", openbox_menu) < 0) {
		remove_openbox_config();
		return NULL;
	}
	snprintf(rc_path, sizeof(rc_path), "%s/rc.xml", P.wm_config_dir);
	return rc_path;
}

static void start_wm(const char* display)
{
	if (!P.wm_path[0] || P.wm.pid > 0)
		return;
	const char* base = strrchr(P.wm_path, '/');
	base = base ? base + 1 : P.wm_path;
	char* argv[5] = { (char*)base, NULL, NULL, NULL, NULL };
	if (strcmp(base, "openbox") == 0) {
		argv[1] = (char*)"--sm-disable";
		const char* rc = openbox_config();
		if (rc) {
			argv[2] = (char*)"--config-file";
			argv[3] = (char*)rc;
		}
	}
	pid_t pid = spawn(P.wm_path, argv, display, -1, false, base, LOG_INFO);
	if (pid < 0) {
		log_warn("cannot start the window manager %s: %s", P.wm_path,
				strerror((int)-pid));
		return;
	}
	P.wm.pid = pid;
	snprintf(P.wm.label, sizeof(P.wm.label), "%.63s", base);
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

/* The name a --launch program's output is logged under: the first word of
 * the command, without its directory ("xterm" for "/usr/bin/xterm -e top"). */
static void program_name(const char* cmd, char* out, size_t size)
{
	cmd += strspn(cmd, " \t");
	if (strncmp(cmd, "exec ", 5) == 0)
		cmd += 5 + strspn(cmd + 5, " \t");
	size_t n = strcspn(cmd, " \t;&|<>()");
	const char* slash = memrchr(cmd, '/', n);
	if (slash) {
		n -= (size_t)(slash + 1 - cmd);
		cmd = slash + 1;
	}
	if (n == 0) {
		cmd = "sh";
		n = 2;
	}
	snprintf(out, size, "%.*s", (int)n, cmd);
}

static void start_launch(int i, const char* display)
{
	if (P.launched[i].pid > 0)
		return;
	/* A simple command replaces the shell, so it gets the parent death
	 * signal itself and is the one we stop. */
	char script[8192];
	if (desktop_launch_script(P.launch[i], script, sizeof(script)) < 0) {
		log_warn("--launch command too long: '%.*s...'", text_cut(P.launch[i], 40), P.launch[i]);
		return;
	}
	char* argv[] = { (char*)"sh", (char*)"-c", script, NULL };
	char name[64];
	program_name(P.launch[i], name, sizeof(name));
	pid_t pid = spawn("/bin/sh", argv, display, -1, false, name, LOG_INFO);
	if (pid < 0) {
		log_warn("cannot launch '%s': %s", P.launch[i], strerror((int)-pid));
		return;
	}
	P.launched[i].pid = pid;
	snprintf(P.launched[i].label, sizeof(P.launched[i].label), "%s", P.launch[i]);
	log_info("launched '%s' (pid %ld)", P.launch[i], (long)pid);
}

int xvfb_start(int number)
{
	int rc = -ENOENT;
	if (number >= 0) {
		rc = start_xvfb(number, &P.xvfb);
		if (rc < 0)
			log_warn("cannot restart Xvfb on :%d (%s); letting it pick a display",
					number, strerror(-rc));
	}
	if (rc < 0)
		rc = start_xvfb(-1, &P.xvfb);
	if (rc < 0)
		return rc;
	log_info("embedded Xvfb on :%d, %dx%d (pid %ld)", rc, P.virtual_width,
			P.virtual_height, (long)P.xvfb.pid);
	return rc;
}

void xvfb_start_clients(const char* display)
{
	if (P.embedded) {
		run_setxkbmap(display);
		buses_start(display);	/* before any program: toolkits decide at start */
		start_wm(display);
	} else if (P.embedded_wayland) {
		buses_start(display);	/* the compositor is the window manager */
	} else {
		struct gnome_address a;	/* an attached GNOME session: its own bus */
		buses_external(gnome_address_parse(display, &a) == 0 ? a.bus : NULL);
	}
	for (int i = 0; i < P.n_launch; i++)
		start_launch(i, display);
}

/* The watcher thread. */

static bool is_tracked(pid_t pid)
{
	if (pid == P.xvfb.pid || pid == P.wm.pid || launch__tracked(pid) || buses_tracked(pid)
			|| desktop__wayland_tracked(pid) || desktop__gnome_tracked(pid))
		return true;
	for (int i = 0; i < P.n_launch; i++)
		if (pid == P.launched[i].pid)
			return true;
	return false;
}

/* deskd is the child subreaper of what it starts (xvfb_configure): the
 * orphans of its programs (what a launcher started and left, a setsid
 * daemon) are re-parented to deskd, not to init, so that stop_descendants
 * finds and stops them when deskd exits. As PID 1 (a container's init) it
 * inherits every orphan in its pid namespace anyway (what `podman exec`
 * started too). Nobody else reaps them, so they would stay zombies. Runs
 * after the tracked children were checked; it only peeks (WNOWAIT) and
 * leaves a tracked child's status for child_exited on the next round. */
static bool subreaper;

static void reap_orphans(void)
{
	if (!subreaper && getpid() != 1)
		return;
	for (int n = 0; n < 1024; n++) {
		siginfo_t si;
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0
				|| si.si_pid == 0 || is_tracked(si.si_pid))
			return;
		if (waitpid(si.si_pid, NULL, WNOHANG) == si.si_pid)
			log_debug("reaped orphan pid %ld", (long)si.si_pid);
	}
}

/* deskd's children now (every thread's: /proc/self/task/N/children, or a
 * scan of /proc without it), but keep; at most max. */
static size_t list_children(pid_t keep, pid_t* out, size_t max)
{
	size_t n = 0;
	bool listed = false;
	DIR* d = opendir("/proc/self/task");
	struct dirent* e;
	while (d && (e = readdir(d)) && n < max) {
		if (e->d_name[0] == '.')
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
		FILE* f = fopen(path, "r");
		if (!f)
			continue;
		listed = true;
		long pid;
		while (n < max && fscanf(f, "%ld", &pid) == 1)
			if (pid > 0 && (pid_t)pid != keep)
				out[n++] = (pid_t)pid;
		fclose(f);
	}
	if (d)
		closedir(d);
	if (listed || !(d = opendir("/proc")))
		return n;
	pid_t self = getpid();
	while ((e = readdir(d)) && n < max) {
		char path[300], buf[512];
		long pid = strtol(e->d_name, NULL, 10), ppid;
		if (pid <= 0 || (pid_t)pid == keep)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		FILE* f = fopen(path, "r");
		if (!f)
			continue;
		size_t r = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[r] = '\0';
		const char* p = strrchr(buf, ')');
		if (p && sscanf(p + 1, " %*c %ld", &ppid) == 1 && (pid_t)ppid == self)
			out[n++] = (pid_t)pid;
	}
	closedir(d);
	return n;
}

#define DESCENDANTS_MAX 512

/* Stop every process of deskd's but keep (the Xvfb, stopped after its
 * clients) that is still there once the tracked ones were stopped: the
 * orphans of the programs deskd started, re-parented to it (its subreaper,
 * or PID 1), those that left their process group (setsid) among them, and
 * then their own children as each is re-parented in turn. SIGTERM once to
 * each, up to grace_ms, then SIGKILL, reaping; 500 ms more at most. */
static void stop_descendants(pid_t keep, int grace_ms)
{
	if (!subreaper && getpid() != 1)
		return;
	static pid_t kids[DESCENDANTS_MAX], termed[DESCENDANTS_MAX];
	size_t n_termed = 0;
	int64_t term_end = clock_ms() + grace_ms, end = term_end + 500;
	bool said = false;
	for (;;) {
		size_t n = list_children(keep, kids, DESCENDANTS_MAX), left = 0;
		for (size_t i = 0; i < n; i++) {
			pid_t r = waitpid(kids[i], NULL, WNOHANG);
			if (r != kids[i] && !(r < 0 && errno == ECHILD))
				kids[left++] = kids[i];
		}
		if (left == 0)
			break;
		int64_t now = clock_ms();
		if (now >= end) {
			log_warn("%zu processes started by deskd's programs did not end after SIGKILL",
					left);
			break;
		}
		if (!said) {
			log_debug("stopping %zu processes left by the programs deskd started", left);
			said = true;
		}
		for (size_t i = 0; i < left; i++) {
			if (now >= term_end) {
				kill(kids[i], SIGKILL);
				continue;
			}
			bool sent = false;
			for (size_t j = 0; j < n_termed && !sent; j++)
				sent = termed[j] == kids[i];
			if (!sent && n_termed < DESCENDANTS_MAX) {
				termed[n_termed++] = kids[i];
				kill(kids[i], SIGTERM);
			}
		}
		clock_sleep_ms(10);
	}
}

bool xvfb_reap(void)
{
	char how[64];
	int status;
	bool xvfb_died = false;
	if (P.xvfb.pid > 0 && desktop__child_exited(P.xvfb.pid, &status)) {
		desktop__describe_status(status, how, sizeof(how));
		log_warn("the embedded %s exited (%s); restarting it", P.xvfb.label, how);
		P.xvfb.pid = 0;
		xvfb_died = true;
	}
	if (P.wm.pid > 0 && desktop__child_exited(P.wm.pid, &status)) {
		desktop__describe_status(status, how, sizeof(how));
		log_info("window manager %s exited (%s)", P.wm.label, how);
		P.wm.pid = 0;
	}
	for (int i = 0; i < P.n_launch; i++) {
		if (P.launched[i].pid > 0 && desktop__child_exited(P.launched[i].pid, &status)) {
			desktop__describe_status(status, how, sizeof(how));
			log_info("'%s' exited (%s)", P.launched[i].label, how);
			P.launched[i].pid = 0;
		}
	}
	launch__reap();
	buses_reap();
	reap_orphans();
	return xvfb_died;
}

static bool launched_running(void)
{
	for (int i = 0; i < P.n_launch; i++)
		if (P.launched[i].pid > 0)
			return true;
	return false;
}

static void free_config(void)
{
	for (int i = 0; i < P.n_launch; i++)
		free(P.launch[i]);
	free(P.launch);
	free(P.launched);
	free(P.stopping);
	P.launch = NULL;
	P.launched = NULL;
	P.stopping = NULL;
	P.n_launch = 0;
}

static int copy_config(const struct desktop_config* opts)
{
	P.virtual_width = opts->virtual_width > 0 ? opts->virtual_width : 1280;
	P.virtual_height = opts->virtual_height > 0 ? opts->virtual_height : 800;
	P.n_launch = 0;
	P.launch = calloc((size_t)opts->n_launch + 1, sizeof(*P.launch));
	P.launched = calloc((size_t)opts->n_launch + 1, sizeof(*P.launched));
	P.stopping = calloc((size_t)opts->n_launch + 2, sizeof(*P.stopping));
	if (!P.launch || !P.launched || !P.stopping)
		goto nomem;
	P.launch_none = false;
	for (int i = 0; i < opts->n_launch; i++) {
		if (strcmp(opts->launch[i], "none") == 0) {
			P.launch_none = true;	/* no default program */
			continue;
		}
		if (!(P.launch[P.n_launch] = strdup(opts->launch[i])))
			goto nomem;
		P.n_launch++;
	}
	return 0;
nomem:
	free_config();
	return -ENOMEM;
}

static void resolve_programs(const struct desktop_config* opts)
{
	const char* path = getenv("PATH");
	P.wm_path[0] = '\0';
	if (!opts->wm) {
		if (desktop_find_program("openbox", path, P.wm_path,
				sizeof(P.wm_path)) < 0) {
			P.wm_path[0] = '\0';
			log_info("no window manager: openbox is not installed (give --wm NAME for another)");
		}
	} else if (strcmp(opts->wm, "none") != 0) {
		if (desktop_find_program(opts->wm, path, P.wm_path,
				sizeof(P.wm_path)) < 0) {
			P.wm_path[0] = '\0';
			log_warn("window manager '%s' not found on PATH; running without one",
					opts->wm);
		}
	}
	if (desktop_find_program("setxkbmap", path, P.setxkbmap_path,
			sizeof(P.setxkbmap_path)) < 0)
		P.setxkbmap_path[0] = '\0';
}

/* The embedded desktop starts with a terminal when no --launch was given
 * (--launch none: nothing), so that a new user sees a desktop that works. */
static void add_default_launch(void)
{
	char found[PATH_MAX];
	if (P.n_launch > 0 || P.launch_none)
		return;
	if (P.embedded_wayland) {
		if (desktop_find_program("foot", getenv("PATH"), found, sizeof(found)) < 0) {
			log_info("no --launch and foot is not installed: the desktop starts empty");
			return;
		}
		if ((P.launch[0] = strdup(DESKTOP_DEFAULT_WAYLAND_LAUNCH)))
			P.n_launch = 1;
		return;
	}
	if (desktop_find_program("xterm", getenv("PATH"), found, sizeof(found)) < 0) {
		log_info("no --launch and xterm is not installed: the desktop starts empty");
		return;
	}
	/* A scalable font: xterm's default bitmap font warns when it is missing. */
	if ((P.launch[0] = strdup(DESKTOP_DEFAULT_LAUNCH)))
		P.n_launch = 1;
}

int xvfb_configure(const struct desktop_config* opts, enum desktop__kind kind)
{
	bool embedded = kind == DESKTOP__EMBEDDED_X11;
	int rc = copy_config(opts);
	if (rc < 0)
		return rc;
	/* Before anything starts: the orphans of what deskd starts come back
	 * to it (reap_orphans, stop_descendants). */
	if (!subreaper) {
		if (prctl(PR_SET_CHILD_SUBREAPER, 1) == 0)
			subreaper = true;
		else
			log_warn("cannot become the child subreaper (%s): what launched programs "
					"leave behind may outlive deskd", strerror(errno));
	}
	P.embedded = embedded;
	P.embedded_wayland = kind == DESKTOP__EMBEDDED_WAYLAND || kind == DESKTOP__EMBEDDED_GNOME;
	if (P.embedded_wayland)
		add_default_launch();
	if (!embedded)
		return 0;
	if (desktop_find_program("Xvfb", getenv("PATH"), P.xvfb_path,
			sizeof(P.xvfb_path)) < 0) {
		log_error("Xvfb is not installed (apt-get install xvfb), and no --display was given");
		free_config();
		return -ENOENT;
	}
	resolve_programs(opts);
	add_default_launch();
	return 0;
}

bool xvfb_running(void)
{
	return P.xvfb.pid > 0;
}

void xvfb_before_restart(void)
{
	/* Its clients die with it; stop the WM for a clean restart and give
	 * the --launch programs a moment to notice, so those that exit are
	 * started again. */
	struct desktop__child* list[] = { &P.wm };
	desktop__stop_children(list, 1, 500);
	for (int t = 0; t < 50 && launched_running(); t++) {
		clock_sleep_ms(10);
		xvfb_reap();
	}
}

void xvfb_stop_programs(void)
{
	launch__terminate();	/* the launch tool's, in the same grace period */
	struct desktop__child* wm_only[1];	/* no config (then no launched programs) */
	struct desktop__child** list = P.stopping ? P.stopping : wm_only;
	int n = 0;
	for (int i = 0; i < P.n_launch; i++)
		list[n++] = &P.launched[i];
	list[n++] = &P.wm;
	desktop__stop_children(list, n, DESKTOP_STOP_GRACE_MS / 2);
	launch__stop(100);
}

void xvfb_stop(bool keep_config)
{
	/* The clients first (so they exit cleanly, not on a lost display),
	 * then the X server. */
	xvfb_stop_programs();
	struct desktop__child* list[1];
	buses_stop();
	stop_descendants(P.xvfb.pid, 300);	/* what they left, while the display lives */
	list[0] = &P.xvfb;
	desktop__stop_children(list, 1, DESKTOP_STOP_GRACE_MS);
	stop_descendants(0, 0);
	childlog_stop();	/* their last lines */
	remove_openbox_config();
	if (!keep_config) {
		free_config();
		desktop__env_reset();
	}
}
