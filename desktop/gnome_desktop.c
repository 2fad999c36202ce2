/* The GNOME desktop (the display service's third backend, display.c picks
 * it for --desktop gnome): a headless Mutter, which is a Wayland compositor
 * that offers its screen and input over D-Bus (org.gnome.Mutter.ScreenCast,
 * .RemoteDesktop) and casts to PipeWire. deskd starts, in the private
 * runtime dir of the session bus (buses.c, the one dbus-daemon deskd
 * starts for every embedded desktop), pipewire, wireplumber, then mutter
 * with the configured size, as deskd's user (root too: Mutter does not
 * refuse it), each through desktop__spawn_with (own process group, the
 * parent death signal, output to childlog at debug, the bus and
 * XDG_RUNTIME_DIR in its environment only).
 *
 * The processes start here and not in gnome/ (which has the D-Bus side):
 * the spawn code, childlog and the environment are desktop/'s, and gnome/
 * sits below desktop/, so a gnome/embed.c would be a second copy of them.
 *
 * Its address, "gnome:<bus>?pipewire=<socket>&wayland=<socket>"
 * (gnome/gnome.h), is the display name. The watcher probes Mutter every
 * second (gnome_reachable; available turns false when it stops answering); a Mutter that
 * exits is not restarted: its clients die with it; deskd says so and tools
 * answer display_unavailable. Private to desktop/. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "gnome/gnome.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PIPEWIRE_READY_MS 5000
#define MUTTER_READY_MS 15000
#define STOP_GRACE_MS 2000
#define PROBE_EVERY_MS 1000
#define PROBE_TIMEOUT_MS 1000
/* Mutter's socket in the runtime dir (a name: --wayland-display takes no path). */
#define WAYLAND_NAME "wayland-deskd"
#define PIPEWIRE_NAME "pipewire-0"
#define PORTAL_TOKEN_FILE "gnome-portal-token"	/* in the data dir */

/* In start order; stopped in reverse. The compositor is GNOME Shell when it
 * is installed (its window list, through deskd's extension), else Mutter
 * alone; the shell also wants a system bus (its login manager's), which a
 * second private dbus-daemon poses as. */
enum { PIPEWIRE, WIREPLUMBER, SYSTEM_BUS, MUTTER, N_PROCS };
/* spawns: pipewire wireplumber dbus-daemon mutter gnome-shell */
static const char* const PROGRAMS[N_PROCS] = {
	[PIPEWIRE] = "pipewire", [WIREPLUMBER] = "wireplumber", [SYSTEM_BUS] = "dbus-daemon",
	[MUTTER] = "mutter",
};
#define SHELL_PROGRAM "gnome-shell"
#define SYSTEM_BUS_NAME "system_bus"

/* Main thread before the watcher starts and after it stopped, the watcher
 * in between. */
static struct {
	struct desktop__child child[N_PROCS];
	char path[N_PROCS][PATH_MAX];
	char runtime_dir[PATH_MAX];
	char wayland[sizeof(((struct gnome_address*)0)->wayland)];	/* Mutter's socket */
	char address[GNOME_ADDRESS_MAX];
	bool mutter_exited;
	bool shell;		/* the compositor is GNOME Shell */
	struct gnome* portal;	/* attached through the portal: the approved session, held */
	const char* names[N_PROCS];	/* what runs in each slot (NULL: nothing) */
} G;

const char* const* desktop_gnome_programs(bool shell, size_t* n)
{
	/* In start order: GNOME Shell also wants the system bus's daemon. */
	static const char* const with_shell[] = { "pipewire", "wireplumber", "dbus-daemon",
		SHELL_PROGRAM };
	static const char* const alone[] = { "pipewire", "wireplumber", "mutter" };
	*n = shell ? sizeof(with_shell) / sizeof(with_shell[0]) : sizeof(alone) / sizeof(alone[0]);
	return shell ? with_shell : alone;
}

bool desktop_gnome_shell(void)
{
	return desktop_is_gnome() && G.shell && G.address[0];
}

bool desktop__gnome_tracked(pid_t pid)
{
	for (int i = 0; pid > 0 && i < N_PROCS; i++)
		if (G.child[i].pid == pid)
			return true;
	return false;
}

/* Log why a program ended at start, with its last lines. */
static void log_exit(int i, int status)
{
	char how[64], tail[1100];
	desktop__describe_status(status, how, sizeof(how));
	size_t n = childlog_tail((long)G.child[i].pid, 200, tail, sizeof(tail));
	while (n > 0 && tail[n - 1] == '\n')
		tail[--n] = '\0';
	log_error("gnome: %s exited at start (%s)%s%s", G.names[i], how,
			n ? "; its last output:\n" : "", n ? tail : "");
}

static int spawn(int i, char* const* argv, char* const* env, size_t n_env)
{
	struct desktop__spawn_args s = {
		.path = G.path[i], .argv = argv, .display = "", .fd3 = -1,
		.env = env, .n_env = n_env, .program = G.names[i], .level = LOG_DEBUG,
	};
	pid_t pid = desktop__spawn_with(&s);
	if (pid < 0) {
		log_error("gnome: cannot start %s: %s", G.path[i], strerror((int)-pid));
		return (int)pid;
	}
	G.child[i].pid = pid;
	snprintf(G.child[i].label, sizeof(G.child[i].label), "%s", G.names[i]);
	log_debug("gnome: %s started (pid %ld)", G.names[i], (long)pid);
	return 0;
}

/* Does a Unix socket accept at path? (Mutter's and PipeWire's are made
 * before they listen: existing is not enough.) */
static bool socket_accepts(const char* path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return false;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	bool ok = connect(fd, (struct sockaddr*)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/* Is Mutter there and answering: its Wayland socket accepts, and its
 * RemoteDesktop has an owner on the bus (what every session needs)? */
static bool mutter_answers(int timeout_ms)
{
	return (!G.wayland[0] || socket_accepts(G.wayland)) && gnome_reachable(G.address, timeout_ms);
}

/* Wait (bounded) until ready() for program i, which must not exit
 * meanwhile. 0, -ECHILD (it exited: logged) or -ETIMEDOUT. */
static int wait_ready(int i, bool (*ready)(void), int timeout_ms)
{
	int64_t end = clock_ms() + timeout_ms;
	for (;;) {
		int status;
		if (desktop__child_exited(G.child[i].pid, &status)) {
			log_exit(i, status);
			G.child[i].pid = 0;
			return -ECHILD;
		}
		if (ready())
			return 0;
		if (clock_ms() >= end) {
			log_error("gnome: %s was not ready in %d ms; add --log-level debug to see "
					"its output", G.names[i], timeout_ms);
			return -ETIMEDOUT;
		}
		clock_sleep_ms(10);
	}
}

static bool pipewire_ready(void)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/" PIPEWIRE_NAME, G.runtime_dir);
	return socket_accepts(path);
}

/* Mutter answers, and in the shell deskd's extension too, with the
 * overview it starts in left. */
static bool mutter_ready(void)
{
	return mutter_answers(PROBE_TIMEOUT_MS)
			&& (!G.shell || gnome_shell_ready(G.address, PROBE_TIMEOUT_MS));
}

static bool system_bus_ready(void)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/" SYSTEM_BUS_NAME, G.runtime_dir);
	return socket_accepts(path);
}

/* The compositor: GNOME Shell (--desktop gnome), or Mutter alone
 * (--desktop mutter). */
static int find_programs(bool shell)
{
	G.shell = shell;
	for (int i = 0; i < N_PROCS; i++)
		G.names[i] = i == MUTTER && shell ? SHELL_PROGRAM
				: i == SYSTEM_BUS && !shell ? NULL : PROGRAMS[i];
	for (int i = 0; i < N_PROCS; i++)
		if (G.names[i] && desktop_find_program(G.names[i], getenv("PATH"), G.path[i],
				sizeof(G.path[i])) < 0) {
			log_error("gnome: %s is not installed (apt-get install %s pipewire "
					"wireplumber)%s", G.names[i], shell ? "gnome-shell" : "mutter",
					shell ? "; --desktop mutter runs Mutter alone, without a window list" : "");
			return -ENOENT;
		}
	return 0;
}

/* GNOME Shell's own files under the runtime dir: deskd's extension in its
 * data dir, and its settings as a GLib keyfile (no dconf) that enables it.
 * The environment it runs with goes into env (n_env of them). */
#define SHELL_ENV_MAX 6
static int prepare_shell(char env[SHELL_ENV_MAX][PATH_MAX + 64], size_t* n_env)
{
	char data[PATH_MAX], config[PATH_MAX], file[PATH_MAX + 64], err[256];
	err[0] = '\0';
	int rc = (size_t)snprintf(data, sizeof(data), "%s/shell/data", G.runtime_dir) < sizeof(data)
			&& (size_t)snprintf(config, sizeof(config), "%s/shell/config/glib-2.0/settings",
				G.runtime_dir) < sizeof(config) ? 0 : -ENAMETOOLONG;
	int major = rc == 0 ? gnome_shell_major(G.path[MUTTER], err, sizeof(err)) : rc;
	rc = major < 0 ? major : gnome_extension_install(data, major, err, sizeof(err));
	if (rc == 0)
		rc = fs_make_dir(config);
	if (rc < 0) {
		log_error("gnome: cannot prepare GNOME Shell's files: %s", err[0] ? err : strerror(-rc));
		return rc;
	}
	snprintf(file, sizeof(file), "%s/keyfile", config);
	FILE* f = fopen(file, "wx");
	/* No animations: a window that has mapped is on the screen at once
	 * (the shell's map animation kept a new window off the screenshots
	 * for 400 ms, measured), as an agent's next screenshot expects. */
	if (!f || fprintf(f, "[org/gnome/shell]\nenabled-extensions=['" GNOME_EXTENSION_UUID "']\n"
			"disable-user-extensions=false\nwelcome-dialog-last-shown-version='999'\n"
			"[org/gnome/desktop/interface]\nenable-animations=false\n") < 0
			|| fclose(f) != 0) {
		log_error("gnome: cannot write GNOME Shell's settings %s: %s", file, strerror(errno));
		return -EIO;
	}
	size_t n = 0;
	snprintf(env[n++], sizeof(env[0]), "XDG_DATA_HOME=%s", data);
	snprintf(env[n++], sizeof(env[0]), "XDG_CONFIG_HOME=%s/shell/config", G.runtime_dir);
	snprintf(env[n++], sizeof(env[0]), "XDG_CACHE_HOME=%s/shell/cache", G.runtime_dir);
	snprintf(env[n++], sizeof(env[0]), "GSETTINGS_BACKEND=keyfile");
	snprintf(env[n++], sizeof(env[0]), "DBUS_SYSTEM_BUS_ADDRESS=unix:path=%s/" SYSTEM_BUS_NAME,
			G.runtime_dir);
	snprintf(env[n++], sizeof(env[0]), "DESKD_SHELL_HIDE_OVERVIEW=1");
	*n_env = n;
	return 0;
}

/* The system bus GNOME Shell's login manager wants: a session-config
 * daemon on a socket in the runtime dir (nothing is activated there; the
 * shell's system services are missing and it goes on without them). */
static int start_system_bus(void)
{
	char listen[PATH_MAX + 64];
	int rc = buses__listen_address(G.runtime_dir, SYSTEM_BUS_NAME, listen, sizeof(listen));
	if (rc < 0)
		return rc;
	char* argv[] = { (char*)"dbus-daemon", (char*)"--session", (char*)"--nofork",
		(char*)"--nopidfile", listen, NULL };
	if ((rc = spawn(SYSTEM_BUS, argv, NULL, 0)) < 0)
		return rc;
	return wait_ready(SYSTEM_BUS, system_bus_ready, PIPEWIRE_READY_MS);
}

/* Start a pooled capture's stream before ready: Mutter's first frame on a
 * new stream came 1.2-2.3 s late about once in six (measured), and a first
 * screenshot that came while the watcher warmed one opened a second
 * stream (0.9 s, measured in make bench); the pool keeps the context. */
static void warm_capture(void)
{
	char err[256];
	struct desktop_capture* c = desktop_capture_get(err, sizeof(err));
	if (!c) {
		log_debug("gnome: no capture at start (%s)", err);
		return;
	}
	desktop_capture_put(c);
}

/* The portal's restore token beside deskd's own token, in the data dir. */
static void keep_portal_grant(const char* data_dir)
{
	char path[PATH_MAX];
	int rc = data_dir ? fs_make_dir(data_dir) : -ENOENT;
	if (rc < 0 || (size_t)snprintf(path, sizeof(path), "%s/" PORTAL_TOKEN_FILE, data_dir)
			>= sizeof(path)) {
		if (data_dir)
			log_warn("gnome: cannot keep the portal's grant in %s: %s", data_dir,
					strerror(rc < 0 ? -rc : ENAMETOOLONG));
		return;
	}
	gnome_portal_token_file(path);
}

/* A running GNOME session (--gnome-bus): its bus, PipeWire's own lookup
 * (deskd runs in that session), its Wayland socket from $WAYLAND_DISPLAY
 * for the programs deskd starts; windows when deskd's extension answers
 * there. Nothing is started or stopped but deskd's own sessions. */
static int attach(const struct desktop_config* c)
{
	struct gnome_address a = { 0 };
	if ((size_t)snprintf(a.bus, sizeof(a.bus), "%s", c->gnome_bus) >= sizeof(a.bus)) {
		log_error("gnome: --gnome-bus is too long");
		return -ENAMETOOLONG;
	}
	const char* wl = getenv("WAYLAND_DISPLAY");
	const char* rt = getenv("XDG_RUNTIME_DIR");
	if (wl && *wl && (size_t)snprintf(a.wayland, sizeof(a.wayland), "%s%s%s", wl[0] == '/' ? ""
			: rt ? rt : "", wl[0] == '/' ? "" : "/", wl) >= sizeof(a.wayland))
		a.wayland[0] = '\0';
	snprintf(G.wayland, sizeof(G.wayland), "%s", a.wayland);
	snprintf(a.portal, sizeof(a.portal), "%s", c->gnome_portal ? "1" : "");
	int rc = gnome_address_format(&a, G.address, sizeof(G.address));
	if (rc < 0) {
		log_error("gnome: --gnome-bus %s cannot be used as an address (%s)", c->gnome_bus,
				strerror(-rc));
		return rc;
	}
	if (!c->gnome_portal && !gnome_reachable(G.address, MUTTER_READY_MS)) {
		/* A filtered bus (a sandbox) shows the portal only. */
		snprintf(a.portal, sizeof(a.portal), "1");
		if (gnome_address_format(&a, G.address, sizeof(G.address)) < 0
				|| !gnome_reachable(G.address, PROBE_TIMEOUT_MS * 3)) {
			log_error("gnome: no Mutter RemoteDesktop and no desktop portal on the bus %s "
					"(is it a GNOME session's session bus?)", c->gnome_bus);
			return -ECONNREFUSED;
		}
		log_info("gnome: the bus %s has no Mutter RemoteDesktop: through the desktop portal",
				c->gnome_bus);
	} else if (c->gnome_portal && !gnome_reachable(G.address, MUTTER_READY_MS)) {
		log_error("gnome: no desktop portal answers on the bus %s (apt-get install "
				"xdg-desktop-portal xdg-desktop-portal-gnome)", c->gnome_bus);
		return -ECONNREFUSED;
	}
	/* The screen's size from a session's stream, and whether the
	 * extension answers. Through the portal that session is the one the
	 * person approves, kept for the capture and the input. */
	char err[256];
	keep_portal_grant(c->data_dir);
	if (a.portal[0])
		log_info("gnome: asking through the desktop portal: approve deskd in the desktop's "
				"dialog, with 'Allow remote interaction' on, within %d s",
				GNOME_CONSENT_MS / 1000);
	struct gnome* probe = gnome_open(G.address, 0, PROBE_TIMEOUT_MS * 3, err, sizeof(err));
	if (!probe) {
		log_error("gnome: %s refused a session: %s", a.portal[0] ? "the portal" : "Mutter",
				err);
		return -ECONNREFUSED;
	}
	int w, h;
	gnome_size(probe, &w, &h);
	if (a.portal[0])
		G.portal = probe;
	else
		gnome_close(probe);
	struct gnome_shell* shell = gnome_shell_open(G.address, PROBE_TIMEOUT_MS, err, sizeof(err));
	struct gnome_window* ws = NULL;
	size_t n;
	G.shell = shell && gnome_windows(shell, &ws, &n) == 0;
	free(ws);
	gnome_shell_close(shell);
	log_info("gnome: attached to the GNOME session on %s (%dx%d%s)%s", c->gnome_bus, w, h,
			G.portal ? ", through the desktop portal" : "",
			G.shell ? "; windows through deskd's extension" : "; no window list (deskd's GNOME "
			"Shell extension is not enabled there)");
	desktop__set_display_name(G.address);
	desktop__set_size(w, h);
	static const char* const INFO[2][2] = {	/* [through the portal][windows] */
		{ "GNOME session (attached; no window list)",
			"GNOME session (attached; deskd's extension for windows)" },
		{ "GNOME session (attached through the desktop portal; no window list)",
			"GNOME session (attached through the desktop portal; deskd's extension for "
			"windows)" },
	};
	desktop__set_server_info(INFO[G.portal != NULL][G.shell]);
	warm_capture();
	xvfb_start_clients(G.address);
	return 0;
}

int desktop__gnome_start(const struct desktop_config* c, bool embedded)
{
	memset(&G, 0, sizeof(G));
	if (!embedded)
		return attach(c);
	int rc = find_programs(c->gnome_shell);
	if (rc < 0)
		return rc;
	int64_t t0 = clock_ms();
	/* Mutter needs the session bus: it is where its APIs are. */
	buses_start("");
	char bus[512];
	if (!buses_session(G.runtime_dir, sizeof(G.runtime_dir), bus, sizeof(bus))) {
		struct desktop_buses b;
		desktop_buses(&b);
		log_error("gnome: Mutter needs a session bus and there is none (%s)", b.reason);
		return -ENOTCONN;
	}
	char* pw_argv[] = { (char*)"pipewire", NULL };
	if ((rc = spawn(PIPEWIRE, pw_argv, NULL, 0)) < 0
			|| (rc = wait_ready(PIPEWIRE, pipewire_ready, PIPEWIRE_READY_MS)) < 0)
		return rc;
	/* The session manager links Mutter's stream to its consumer; nothing
	 * waits for it at start. */
	char* wp_argv[] = { (char*)"wireplumber", NULL };
	if ((rc = spawn(WIREPLUMBER, wp_argv, NULL, 0)) < 0)
		return rc;
	char shell_env[SHELL_ENV_MAX][PATH_MAX + 64];
	char* env[SHELL_ENV_MAX];
	size_t n_env = 0;
	if (G.shell && ((rc = prepare_shell(shell_env, &n_env)) < 0 || (rc = start_system_bus()) < 0))
		return rc;
	for (size_t i = 0; i < n_env; i++)
		env[i] = shell_env[i];
	char size[32];
	snprintf(size, sizeof(size), "%dx%d", c->virtual_width > 0 ? c->virtual_width : 1280,
			c->virtual_height > 0 ? c->virtual_height : 800);
	char* m_argv[] = { (char*)G.names[MUTTER], (char*)"--headless", (char*)"--virtual-monitor",
		size, (char*)"--wayland", (char*)"--no-x11", (char*)"--wayland-display",
		(char*)WAYLAND_NAME, NULL };
	struct gnome_address a = { 0 };
	if ((size_t)snprintf(G.wayland, sizeof(G.wayland), "%s/" WAYLAND_NAME, G.runtime_dir)
			>= sizeof(G.wayland) || (size_t)snprintf(a.pipewire, sizeof(a.pipewire),
			"%s/" PIPEWIRE_NAME, G.runtime_dir) >= sizeof(a.pipewire)
			|| (size_t)snprintf(a.bus, sizeof(a.bus), "%s", bus) >= sizeof(a.bus)) {
		log_error("gnome: the runtime dir %s is too long for the address", G.runtime_dir);
		return -ENAMETOOLONG;
	}
	memcpy(a.wayland, G.wayland, sizeof(a.wayland));
	if ((rc = gnome_address_format(&a, G.address, sizeof(G.address))) < 0) {
		log_error("gnome: cannot name the desktop (%s)", strerror(-rc));
		return rc;
	}
	if ((rc = spawn(MUTTER, m_argv, env, n_env)) < 0
			|| (rc = wait_ready(MUTTER, mutter_ready, MUTTER_READY_MS)) < 0)
		return rc;
	log_info("gnome: %s %ld is up on %s (%s) in %lld ms", G.names[MUTTER],
			(long)G.child[MUTTER].pid, WAYLAND_NAME, size, (long long)(clock_ms() - t0));
	/* What gnome-session tells the bus on a real session: services it
	 * starts (the desktop portal and its dialogs) find the compositor. */
	char err[256];
	if (gnome_activation_environment(G.address, PROBE_TIMEOUT_MS, err, sizeof(err)) < 0)
		log_warn("gnome: services the bus starts will not find the desktop: %s", err);
	desktop__set_display_name(G.address);
	/* The configured size. The hook for the stream's own (gnome_size of a
	 * session, logical pixels): desktop__set_size; nothing calls it yet. */
	desktop__set_size(c->virtual_width > 0 ? c->virtual_width : 1280,
			c->virtual_height > 0 ? c->virtual_height : 800);
	desktop__set_server_info(G.shell ? "gnome-shell (headless, Wayland, no Xwayland, deskd's "
			"extension for windows)" : "mutter (headless, Wayland, no Xwayland, no window list)");
	warm_capture();
	xvfb_start_clients(G.address);
	return 0;
}

/* Reap ours that exited: Mutter's end ends the desktop (logged once);
 * PipeWire's or WirePlumber's only the screen's stream. */
static void reap(void)
{
	for (int i = 0; i < N_PROCS; i++) {
		int status;
		if (G.child[i].pid <= 0 || !desktop__child_exited(G.child[i].pid, &status))
			continue;
		char how[64];
		desktop__describe_status(status, how, sizeof(how));
		if (i == MUTTER) {
			G.mutter_exited = true;
			log_error("gnome: the embedded Mutter (pid %ld) exited (%s): its programs "
					"ended with it, and it is not restarted; tools answer "
					"display_unavailable: restart deskd", (long)G.child[i].pid, how);
		} else {
			log_warn("gnome: %s (pid %ld) exited (%s) and is not restarted: the screen's "
					"stream is gone; restart deskd", G.names[i], (long)G.child[i].pid, how);
		}
		G.child[i].pid = 0;
	}
}

void* desktop__gnome_watch(void* ud)
{
	(void)ud;
	bool up = false, had = false;
	int64_t next_probe = 0;
	while (!desktop__watcher_wait(up ? 250 : 50)) {
		xvfb_reap();
		reap();
		desktop__capture_trim();
		if (G.mutter_exited) {
			if (up)
				desktop__set_available(false, true);
			up = false;
			continue;
		}
		if (clock_ms() < next_probe)
			continue;
		bool now = mutter_answers(PROBE_TIMEOUT_MS);
		next_probe = clock_ms() + PROBE_EVERY_MS;
		if (now == up)
			continue;
		desktop__set_available(now, !now);
		if (!now)
			log_warn("gnome: Mutter at %s does not answer; tools answer "
					"display_unavailable until it does", G.wayland);
		else if (had)
			log_info("gnome: Mutter answers again");
		up = now;
		had = true;
	}
	desktop__set_available(false, false);
	return NULL;
}

void desktop__gnome_stop(bool keep_config)
{
	/* The programs first (while their compositor lives), then Mutter,
	 * WirePlumber, PipeWire, then the bus with the runtime dir. */
	xvfb_stop_programs();
	/* deskd's own sessions first: Mutter ignores SIGTERM while one casts
	 * (seen with 43.8: killed after the grace period). */
	desktop__capture_close_idle();
	desktop__input_close();
	gnome_close(G.portal);
	G.portal = NULL;
	desktop__gnome_wm_stop();
	for (int i = N_PROCS - 1; i >= 0; i--) {
		struct desktop__child* one[] = { &G.child[i] };
		desktop__stop_children(one, 1, STOP_GRACE_MS);
	}
	xvfb_stop(keep_config);
	G.address[0] = G.wayland[0] = G.runtime_dir[0] = '\0';
	G.mutter_exited = false;
}

/* What a GNOME desktop lacks, and why (a tool's error says it). */
static const struct {
	const char* what;
	const char* why;
} UNSUPPORTED[] = {
	{ "windows", GNOME_NO_WINDOWS },
};

int desktop__gnome_unsupported(const char* what, char* err, size_t err_size)
{
	const char* why = "not on the GNOME desktop";
	for (size_t i = 0; i < sizeof(UNSUPPORTED) / sizeof(UNSUPPORTED[0]); i++)
		if (strcmp(UNSUPPORTED[i].what, what) == 0)
			why = UNSUPPORTED[i].why;
	if (err && err_size)
		snprintf(err, err_size, "%s: %s", what, why);
	return -ENOTSUP;
}

int desktop_gnome_extension_write(int* major, bool* module, char* dir, size_t dir_size,
		char* err, size_t err_size)
{
	char data[PATH_MAX], program[PATH_MAX];
	const char* xdg = getenv("XDG_DATA_HOME");
	const char* home = getenv("HOME");
	/* XDG_DATA_HOME counts only when absolute (the XDG spec). */
	int n = xdg && xdg[0] == '/' ? snprintf(data, sizeof(data), "%s", xdg)
			: home && home[0] == '/' ? snprintf(data, sizeof(data), "%s/.local/share", home)
			: -1;
	if (n < 0 || (size_t)n >= sizeof(data)) {
		snprintf(err, err_size, "neither XDG_DATA_HOME nor HOME says where your data folder is");
		return -EINVAL;
	}
	if (*major == 0) {
		if (desktop_find_program(SHELL_PROGRAM, getenv("PATH"), program, sizeof(program)) < 0) {
			snprintf(err, err_size, SHELL_PROGRAM " is not on PATH: give --shell-version N, "
					"the session's GNOME Shell major version");
			return -ENOENT;
		}
		int rc = gnome_shell_major(program, err, err_size);
		if (rc < 0)
			return rc;
		*major = rc;
	}
	int rc = gnome_extension_install(data, *major, err, err_size);
	if (rc < 0)
		return rc;
	*module = *major >= GNOME_SHELL_FIRST_MODULES;
	snprintf(dir, dir_size, "%s/gnome-shell/extensions/" GNOME_EXTENSION_UUID, data);
	return 0;
}
