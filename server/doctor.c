/* Health checks: display and extensions, programs, port, data dir, token. */
#include "server/doctor.h"
#include "desktop/desktop.h"
#include "server/desktop_config.h"
#include "a11y/a11y.h"
#include "server/http/http.h"
#include "base/log.h"
#include "base/options.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DOCTOR_PROBE_MS 1000	/* the whole exchange with a running server */

/* A deskd already serving on the --listen address, as `deskd doctor` found
 * it: GET /healthz, then the status tool (with the token) for its display. */
struct peer {
	bool found;		/* /healthz answered as deskd does */
	int healthz;		/* its HTTP status */
	char addr[320];		/* host:port */
	char version[32];
	char display[64];	/* "" unknown */
	bool embedded;
	char note[256];		/* why the display is unknown */
};

static void add_check(json_t* checks, const char* name, bool ok,
		const char* fmt, ...) __attribute__((format(printf, 4, 5)));

static void add_check(json_t* checks, const char* name, bool ok,
		const char* fmt, ...)
{
	char detail[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	json_array_append_new(checks, json_pack("{s:s, s:b, s:s}", "name", name,
			"ok", ok, "detail", detail));
}

static const char* const extensions[] = {
	"MIT-SHM", "XTEST", "Composite", "DAMAGE", "XFIXES", "RANDR",
};
#define N_EXTENSIONS (sizeof(extensions) / sizeof(extensions[0]))

/* A Wayland desktop: the compositor's outputs, each protocol deskd uses,
 * and sway's IPC (windows). */
static void check_wayland(json_t* checks, const char* display, bool embedded)
{
	struct desktop_wayland_probe p;
	int rc = desktop_wayland_probe(display, &p);
	if (rc < 0) {
		add_check(checks, "display", false, "%s: cannot connect to the compositor (%s)",
				display, strerror(-rc));
		return;
	}
	add_check(checks, "display", true, "%s, %dx%d, %d output(s), wayland%s", display,
			p.width, p.height, p.outputs, embedded ? " (embedded sway)" : "");
	/* The window list needs one of the two; foreign-toplevel alone is
	 * fine when sway's IPC answers. */
	for (int i = 0; i < p.n; i++) {
		bool spare = p.features[i].spare_with_ipc && p.sway_ipc;
		add_check(checks, p.features[i].name, p.features[i].present || spare, "%s: %s",
				p.features[i].present ? "present" : "missing", p.features[i].purpose);
	}
	if (p.sway_ipc)
		add_check(checks, "windows", true, "sway IPC: windows are listed with geometry and "
				"pid, focused, moved, resized and closed");
	else
		add_check(checks, "windows", p.toplevels, p.toplevels ? "foreign-toplevel (no sway "
				"IPC): windows are listed by title and app id, focused, closed and set "
				"fullscreen; no geometry or pid, so no move, resize, one-window shots or "
				"recordings" : "none (no sway IPC, no foreign-toplevel): no window list, "
				"focus or window states");
}

static void check_display(json_t* checks, const char* display, bool embedded)
{
	if (desktop_is_gnome()) {
		add_check(checks, "display", desktop_available(), "%s: %s", display,
				desktop_available() ? "Mutter answers (RemoteDesktop on its session bus)"
				: "Mutter does not answer");
		if (desktop_gnome_shell())
			add_check(checks, "windows", true, "GNOME Shell with deskd's extension: geometry, "
					"pid, focus and window states");
		else
			add_check(checks, "windows", false, "no window list (Mutter alone, or GNOME Shell "
					"without deskd's extension): no window ids, focus or window states; ui "
					"tools take a pid or a launched program");
		return;
	}
	if (desktop_is_wayland_address(display)) {
		check_wayland(checks, display, embedded);
		return;
	}
	struct desktop_probe probe;
	bool present[N_EXTENSIONS];
	char refusal[256];
	const char* why = "cannot connect";
	bool ok = display && *display;
	if (ok && desktop_unavailable_reason(refusal, sizeof(refusal))) {
		why = refusal;
		ok = false;
	} else if (!ok)
		why = "no display: give --display :N, or install Xvfb for the embedded one";
	else
		ok = desktop_probe(display, extensions, N_EXTENSIONS, present, &probe) == 0;
	if (!ok) {
		add_check(checks, "display", false, "%s%s%s", display ? display : "",
				display && *display ? ": " : "", why);
		for (size_t i = 0; i < N_EXTENSIONS; i++)
			add_check(checks, extensions[i], false, "unknown: display unreachable");
		return;
	}
	add_check(checks, "display", true, "%s, %dx%d, %s %d%s", display, probe.width,
			probe.height, probe.vendor, probe.release,
			embedded ? " (embedded Xvfb)" : "");
	for (size_t i = 0; i < N_EXTENSIONS; i++)
		add_check(checks, extensions[i], present[i], present[i] ? "present"
				: "missing: capture, input or recording needs it");
}

/* The embedded Wayland desktop's programs: sway (needed), run as the
 * compositor user when deskd is root; Xwayland and foot (optional). */
static void check_wayland_programs(json_t* checks)
{
	const char* path = getenv("PATH");
	char found[PATH_MAX];
	bool sway = desktop_find_program("sway", path, found, sizeof(found)) == 0;
	add_check(checks, "sway", sway, sway ? "%s" : "not on PATH: needed for --desktop wayland "
			"(apt-get install sway)", found);
	if (geteuid() == 0) {
		bool user = getpwnam("deskd-compositor") != NULL;
		add_check(checks, "compositor user", true, user ? "deskd-compositor (sway runs as it: "
				"it refuses root)" : "no deskd-compositor (scripts/install-deps makes it): "
				"sway runs as nobody");
	}
	bool xw = desktop_find_program("Xwayland", path, found, sizeof(found)) == 0;
	add_check(checks, "Xwayland", true, xw ? "%s (X programs run on the Wayland desktop)"
			: "not on PATH (optional: only Wayland programs run)", found);
	bool foot = desktop_find_program("foot", path, found, sizeof(found)) == 0;
	add_check(checks, "foot", true, foot ? "%s (the default terminal)"
			: "not on PATH (optional: the desktop starts empty)", found);
}

/* The embedded GNOME desktop's programs (all needed). */
static void check_gnome_programs(json_t* checks, bool shell)
{
	size_t n;
	const char* const* programs = desktop_gnome_programs(shell, &n);
	char found[PATH_MAX];
	for (size_t i = 0; i < n; i++) {
		bool there = desktop_find_program(programs[i], getenv("PATH"), found, sizeof(found)) == 0;
		if (there)
			add_check(checks, programs[i], true, "%s", found);
		else
			add_check(checks, programs[i], false, "not on PATH: needed for --desktop %s "
					"(apt-get install %s pipewire wireplumber)", shell ? "gnome" : "mutter",
					shell ? "gnome-shell" : "mutter");
	}
}

static void check_programs(json_t* checks, const struct options* opts,
		const char* display)
{
	const char* path = getenv("PATH");
	char found[PATH_MAX];
	if (opts->wayland_display) {
		(void)display;
		return;		/* a compositor deskd attaches to: nothing to start */
	}
	if (opts->wayland && (!opts->display || !*opts->display)) {
		check_wayland_programs(checks);
		return;
	}
	if (opts->gnome && !opts->gnome_bus && (!opts->display || !*opts->display)) {
		check_gnome_programs(checks, opts->gnome_shell);
		return;
	}
	bool need_xvfb = !opts->display || !*opts->display;
	if (desktop_find_program("Xvfb", path, found, sizeof(found)) == 0)
		add_check(checks, "Xvfb", true, "%s", found);
	else if (need_xvfb)
		add_check(checks, "Xvfb", false,
				"not on PATH: needed for the embedded display (apt-get install xvfb), or give --display :N");
	else
		add_check(checks, "Xvfb", true,
				"not on PATH (only needed without --display)");

	/* The check is named after the window manager (openbox by default). */
	const char* wm = opts->wm ? opts->wm : "openbox";
	if (strcmp(wm, "none") == 0)
		add_check(checks, "window manager", true, "none (--wm none)");
	else if (desktop_find_program(wm, path, found, sizeof(found)) == 0)
		add_check(checks, wm, true, "%s (window manager of the embedded display)",
				found);
	else
		add_check(checks, wm, true,
				"not on PATH (optional: the embedded display runs without a window manager)");

	if (desktop_find_program("setxkbmap", path, found, sizeof(found)) == 0)
		add_check(checks, "setxkbmap", true, "%s", found);
	else
		add_check(checks, "setxkbmap", true,
				"not on PATH (optional: the embedded display keeps Xvfb's default keymap)");
	(void)display;
}

static void check_port(json_t* checks, const struct options* opts, bool serving,
		const struct peer* peer)
{
	const char* name = "listen port";
	if (opts->stdio && !opts->listen_given) {
		add_check(checks, name, true, "not listening (--stdio)");
		return;
	}
	if (peer && peer->found) {
		char version[48] = "";
		if (peer->version[0])
			snprintf(version, sizeof(version), " %s", peer->version);
		if (peer->healthz == 200)
			add_check(checks, name, true, "deskd%s is serving on %s (healthz ok)%s%s",
					version, peer->addr, peer->note[0] ? "; " : "", peer->note);
		else
			add_check(checks, name, false,
					"deskd%s is serving on %s, but /healthz answers %d: its display is gone%s%s",
					version, peer->addr, peer->healthz,
					peer->note[0] ? "; " : "", peer->note);
		return;
	}
	if (serving) {
		const char* origin = http_own_origin();
		add_check(checks, name, true, "serving on %s",
				origin && *origin ? origin : opts->listen);
		return;
	}
	if (opts->listen_port == 0) {
		add_check(checks, name, true, "%s: port 0 picks a free port",
				opts->listen);
		return;
	}
	char port[16];
	snprintf(port, sizeof(port), "%d", opts->listen_port);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE };
	struct addrinfo* res = NULL;
	int gai = getaddrinfo(opts->listen_host, port, &hints, &res);
	if (gai != 0) {
		add_check(checks, name, false, "%s: cannot resolve %s: %s", opts->listen,
				opts->listen_host, gai_strerror(gai));
		return;
	}
	int err = 0;
	for (struct addrinfo* a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
				a->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0) {
			close(fd);
			err = 0;
			break;
		}
		err = errno;
		close(fd);
	}
	freeaddrinfo(res);
	if (err == 0)
		add_check(checks, name, true, "%s is free", opts->listen);
	else
		add_check(checks, name, false, "%s: %s; pick another with --listen ADDR:PORT",
				opts->listen, strerror(err));
}

static void check_data_dir(json_t* checks, const struct options* opts)
{
	const char* name = "data dir";
	const char* dir = opts->data_dir;
	struct stat st;
	if (!dir || !*dir) {
		add_check(checks, name, false, "no data dir: give --data-dir D");
		return;
	}
	if (lstat(dir, &st) != 0) {
		if (errno != ENOENT) {
			add_check(checks, name, false, "%s: %s", dir, strerror(errno));
			return;
		}
		/* Creatable when the nearest existing ancestor is writable. */
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%s", dir);
		for (;;) {
			char* slash = strrchr(parent, '/');
			if (!slash) {
				snprintf(parent, sizeof(parent), ".");
				break;
			}
			if (slash == parent) {
				parent[1] = '\0';
				break;
			}
			*slash = '\0';
			if (stat(parent, &st) == 0)
				break;
		}
		if (access(parent, W_OK | X_OK) == 0)
			add_check(checks, name, true, "%s: will be created (mode 0700)", dir);
		else
			add_check(checks, name, false, "%s: does not exist and %s is not writable",
					dir, parent);
		return;
	}
	if (S_ISLNK(st.st_mode) && stat(dir, &st) != 0) {
		add_check(checks, name, false, "%s: dangling symlink", dir);
		return;
	}
	unsigned mode = (unsigned)st.st_mode & 07777;
	if (!S_ISDIR(st.st_mode))
		add_check(checks, name, false, "%s: not a directory", dir);
	else if (st.st_uid != geteuid())
		add_check(checks, name, false, "%s: owned by uid %ld, not us (%ld)", dir,
				(long)st.st_uid, (long)geteuid());
	else if (mode & 022)
		add_check(checks, name, false,
				"%s: mode %04o is group/world writable; run chmod 700 %s",
				dir, mode, dir);
	else if (mode & 077)
		add_check(checks, name, true, "%s: mode %04o (0700 recommended)", dir, mode);
	else
		add_check(checks, name, true, "%s: mode %04o", dir, mode);
}

static void check_token(json_t* checks, const struct options* opts)
{
	const char* name = "token file";
	char path[PATH_MAX];
	if (opts->token_file)
		snprintf(path, sizeof(path), "%s", opts->token_file);
	else
		snprintf(path, sizeof(path), "%s/token", opts->data_dir ? opts->data_dir : ".");
	struct stat st;
	if (stat(path, &st) != 0) {
		if (opts->token_file)
			add_check(checks, name, false, "%s: %s", path, strerror(errno));
		else if (opts->token || opts->no_auth)
			add_check(checks, name, true, "%s: absent (token %s)", path,
					opts->no_auth ? "off: --no-auth" : "given with --token");
		else
			add_check(checks, name, true, "%s: absent; generated at startup (mode 0600)",
					path);
		return;
	}
	unsigned mode = (unsigned)st.st_mode & 07777;
	if (!S_ISREG(st.st_mode))
		add_check(checks, name, false, "%s: not a regular file", path);
	else if (st.st_uid != geteuid())
		add_check(checks, name, false, "%s: owned by uid %ld, not us", path,
				(long)st.st_uid);
	else if (mode & 077)
		add_check(checks, name, false, "%s: mode %04o; run chmod 600 %s", path,
				mode, path);
	else
		add_check(checks, name, true, "%s: mode %04o", path, mode);
}

/* Accessibility: the session bus, the AT-SPI bus, IsEnabled, the registry.
 * Unhealthy only on deskd's own desktop (there it should always work). */
static void check_accessibility(json_t* checks, bool embedded, bool serving)
{
	struct desktop_buses b;
	desktop_buses(&b);
	if (!serving && b.pid <= 0)	/* deskd doctor on an external display */
		a11y_configure(getenv("DBUS_SESSION_BUS_ADDRESS"));
	struct a11y_status st;
	a11y_status(&st, 1000);
	if (st.registry)
		add_check(checks, "accessibility", true, "AT-SPI bus %s, IsEnabled %s, %d app(s) "
				"registered (session bus %s)", st.bus_address, st.enabled ? "true" : "false",
				st.apps, st.session_address);
	else
		add_check(checks, "accessibility", !(embedded && serving),
				"not available: %s; the ui tools answer no_accessibility (screenshots and "
				"pixel actions still work)", st.reason[0] ? st.reason : "no AT-SPI bus");
}

static json_t* run_checks(const struct options* opts, const char* display,
		bool embedded, bool serving, const struct peer* peer)
{
	json_t* checks = json_array();
	if (!checks)
		return NULL;
	check_display(checks, display, embedded);
	check_programs(checks, opts, display);
	check_port(checks, opts, serving, peer);
	check_data_dir(checks, opts);
	check_token(checks, opts);
	check_accessibility(checks, embedded, serving);

	bool healthy = true;
	size_t i;
	json_t* c;
	json_array_foreach(checks, i, c)
		if (!json_is_true(json_object_get(c, "ok")))
			healthy = false;
	return json_pack("{s:b, s:o}", "healthy", healthy, "checks", checks);
}

json_t* doctor_run(const struct options* opts, const char* display, bool serving)
{
	bool embedded = display && desktop_is_embedded()
			&& strcmp(display, desktop_display_name()) == 0;
	return run_checks(opts, display, embedded, serving, NULL);
}

/* A running server: a small HTTP client, bounded by DOCTOR_PROBE_MS. */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int left = (int)(deadline - now_ms());
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = { fd, events, 0 };
		int n = poll(&p, 1, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n > 0)
			return 0;
	}
}

/* Send request to host:port, read the answer (up to size - 1 bytes, NUL
 * terminated) until the server closes. Returns the length or -errno. */
static long http_exchange(const char* host, int port, const char* request,
		size_t request_len, char* out, size_t size, int64_t deadline)
{
	char service[16];
	snprintf(service, sizeof(service), "%d", port);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo* res = NULL;
	if (getaddrinfo(host, service, &hints, &res) != 0)
		return -EHOSTUNREACH;
	int fd = -1, rc = -ECONNREFUSED;
	for (struct addrinfo* a = res; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				a->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
			rc = 0;
		} else if (errno == EINPROGRESS) {
			int err = 0;
			socklen_t len = sizeof(err);
			if ((rc = wait_fd(fd, POLLOUT, deadline)) == 0
					&& getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err)
				rc = -err;
		} else {
			rc = -errno;
		}
		if (rc < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		return rc;
	size_t sent = 0;
	while (sent < request_len) {
		ssize_t w = send(fd, request + sent, request_len - sent, MSG_NOSIGNAL);
		if (w > 0) {
			sent += (size_t)w;
		} else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			if ((rc = wait_fd(fd, POLLOUT, deadline)) < 0)
				goto out;
		} else {
			rc = -errno;
			goto out;
		}
	}
	size_t got = 0;
	for (;;) {
		if (got + 1 >= size)
			break;
		ssize_t r = recv(fd, out + got, size - 1 - got, 0);
		if (r > 0) {
			got += (size_t)r;
		} else if (r == 0) {
			break;
		} else if (errno == EAGAIN || errno == EINTR) {
			if ((rc = wait_fd(fd, POLLIN, deadline)) < 0)
				goto out;
		} else {
			rc = -errno;
			goto out;
		}
	}
	out[got] = '\0';
	rc = (int)got;
out:
	close(fd);
	return rc;
}

/* "HTTP/1.1 200 OK..." -> 200 and the body, or -1. */
static int http_status(const char* resp, const char** body)
{
	int status;
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	const char* b = strstr(resp, "\r\n\r\n");
	*body = b ? b + 4 : "";
	return status;
}

/* The token the server wants: --token, --token-file, or <data-dir>/token. */
static bool read_token(const struct options* opts, char* out, size_t size)
{
	if (opts->token) {
		snprintf(out, size, "%s", opts->token);
		return true;
	}
	char path[PATH_MAX];
	if (opts->token_file)
		snprintf(path, sizeof(path), "%s", opts->token_file);
	else
		snprintf(path, sizeof(path), "%s/token", opts->data_dir ? opts->data_dir : ".");
	FILE* f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(out, (int)size, f) != NULL;
	fclose(f);
	out[strcspn(out, "\r\n")] = '\0';
	return ok && out[0];
}

/* Is a deskd serving on the --listen address? Fills peer. */
static void probe_server(const struct options* opts, struct peer* peer)
{
	memset(peer, 0, sizeof(*peer));
	if ((opts->stdio && !opts->listen_given) || opts->listen_port == 0
			|| !opts->listen_host)
		return;
	/* A wildcard address is reached on loopback. */
	const char* host = opts->listen_host;
	if (strcmp(host, "0.0.0.0") == 0 || !*host)
		host = "127.0.0.1";
	else if (strcmp(host, "::") == 0)
		host = "::1";
	bool v6 = strchr(host, ':') != NULL;
	snprintf(peer->addr, sizeof(peer->addr), "%s%s%s:%d", v6 ? "[" : "", host,
			v6 ? "]" : "", opts->listen_port);

	int64_t deadline = now_ms() + DOCTOR_PROBE_MS;
	char req[1024], resp[65536];
	int n = snprintf(req, sizeof(req), "GET /healthz HTTP/1.1\r\nHost: %s\r\n"
			"Connection: close\r\n\r\n", peer->addr);
	long got = http_exchange(host, opts->listen_port, req, (size_t)n, resp,
			sizeof(resp), deadline);
	const char* body;
	int status = got > 0 ? http_status(resp, &body) : -1;
	if (!((status == 200 && strncmp(body, "ok", 2) == 0)
			|| (status == 503 && strncmp(body, "display unavailable", 19) == 0)))
		return;	/* nothing there, or not deskd */
	peer->found = true;
	peer->healthz = status;

	/* Its display, from the status tool. */
	char token[512];
	bool have_token = !opts->no_auth && read_token(opts, token, sizeof(token));
	char auth[600] = "";
	if (have_token)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", token);
	n = snprintf(req, sizeof(req), "POST /api/v1/tools/status HTTP/1.1\r\nHost: %s\r\n"
			"%sContent-Type: application/json\r\nContent-Length: 2\r\n"
			"Connection: close\r\n\r\n{}", peer->addr, auth);
	deadline = now_ms() + DOCTOR_PROBE_MS;
	got = n > 0 && (size_t)n < sizeof(req) ? http_exchange(host, opts->listen_port,
			req, (size_t)n, resp, sizeof(resp), deadline) : -EINVAL;
	status = got > 0 ? http_status(resp, &body) : -1;
	if (status != 200) {
		if (status == 401 || status == 403)
			snprintf(peer->note, sizeof(peer->note),
					"its display is unknown: the status tool answered %d (give the server's --token or --token-file)",
					status);
		else
			snprintf(peer->note, sizeof(peer->note),
					"its display is unknown: the status tool answered %s",
					got < 0 ? strerror((int)-got) : "unexpectedly");
		return;
	}
	json_t* root = json_loads(body, 0, NULL);
	json_t* sc = json_object_get(root, "structuredContent");
	const char* version = json_string_value(json_object_get(json_object_get(sc, "server"), "version"));
	json_t* d = json_object_get(sc, "display");
	const char* name = json_string_value(json_object_get(d, "name"));
	if (version)
		snprintf(peer->version, sizeof(peer->version), "%s", version);
	if (name && *name) {
		snprintf(peer->display, sizeof(peer->display), "%s", name);
		peer->embedded = json_is_true(json_object_get(d, "embedded"));
	} else {
		snprintf(peer->note, sizeof(peer->note), "its status names no display");
	}
	json_decref(root);
}

static int print_report(json_t* report);

int doctor_main(const struct options* opts)
{
	bool started = false;
	/* A deskd already serving on the port: check it, its display. */
	struct peer peer;
	probe_server(opts, &peer);
	if (peer.found && peer.display[0]) {
		json_t* report = run_checks(opts, peer.display, peer.embedded, false, &peer);
		return print_report(report);
	}
	if (!opts->display || !*opts->display) {
		/* The embedded display, as `deskd` would start it, minus the
		 * --launch programs (and the default terminal). */
		static char none[] = "none";
		static char* const no_launch[] = { none };
		struct desktop_config desktop;
		server_desktop_config(opts, &desktop);
		desktop.launch = no_launch;
		desktop.n_launch = 1;
		desktop_configure(&desktop);
		started = desktop_start() == 0;
	}
	const char* display = opts->display && *opts->display ? opts->display
			: started ? desktop_display_name() : NULL;
	bool embedded = started && display && strcmp(display, desktop_display_name()) == 0;
	json_t* report = run_checks(opts, display, embedded, false, &peer);
	if (started)
		desktop_stop();
	return print_report(report);
}

static int print_report(json_t* report)
{
	if (!report) {
		fprintf(stderr, "deskd doctor: out of memory\n");
		return 1;
	}

	json_t* checks = json_object_get(report, "checks");
	size_t width = 0, i;
	json_t* c;
	json_array_foreach(checks, i, c) {
		size_t n = strlen(json_string_value(json_object_get(c, "name")));
		if (n > width)
			width = n;
	}
	printf("deskd doctor\n\n");
	json_array_foreach(checks, i, c) {
		printf("  %-4s  %-*s  %s\n",
				json_is_true(json_object_get(c, "ok")) ? "ok" : "FAIL",
				(int)width, json_string_value(json_object_get(c, "name")),
				json_string_value(json_object_get(c, "detail")));
	}
	bool healthy = json_is_true(json_object_get(report, "healthy"));
	printf("\n%s\n", healthy ? "healthy"
			: "not healthy: fix the FAIL lines above");
	fflush(stdout);
	json_decref(report);
	return healthy ? 0 : 1;
}
