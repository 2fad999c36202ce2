/* Health checks: display and extensions, programs, port, data dir, token. */
#include "server/doctor.h"
#include "desktop/desktop.h"
#include "server/http/http.h"
#include "base/log.h"
#include "base/options.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

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

static void check_display(json_t* checks, const char* display)
{
	struct desktop_probe probe;
	bool present[N_EXTENSIONS];
	const char* why = "cannot connect";
	bool ok = display && *display;
	if (!ok)
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
	bool embedded = desktop_is_embedded()
			&& strcmp(display, desktop_display_name()) == 0;
	add_check(checks, "display", true, "%s, %dx%d, %s %d%s", display, probe.width,
			probe.height, probe.vendor, probe.release,
			embedded ? " (embedded Xvfb)" : "");
	for (size_t i = 0; i < N_EXTENSIONS; i++)
		add_check(checks, extensions[i], present[i], present[i] ? "present"
				: "missing: capture, input or recording needs it");
}

static void check_programs(json_t* checks, const struct options* opts,
		const char* display)
{
	const char* path = getenv("PATH");
	char found[PATH_MAX];
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

static void check_port(json_t* checks, const struct options* opts, bool serving)
{
	const char* name = "listen port";
	if (opts->stdio && !opts->listen_given) {
		add_check(checks, name, true, "not listening (--stdio)");
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

json_t* doctor_run(const struct options* opts, const char* display, bool serving)
{
	json_t* checks = json_array();
	if (!checks)
		return NULL;
	check_display(checks, display);
	check_programs(checks, opts, display);
	check_port(checks, opts, serving);
	check_data_dir(checks, opts);
	check_token(checks, opts);

	bool healthy = true;
	size_t i;
	json_t* c;
	json_array_foreach(checks, i, c)
		if (!json_is_true(json_object_get(c, "ok")))
			healthy = false;
	return json_pack("{s:b, s:o}", "healthy", healthy, "checks", checks);
}

int doctor_main(const struct options* opts)
{
	bool started = false;
	if (!opts->display || !*opts->display) {
		/* The embedded display, as `deskd` would start it, minus the
		 * --launch programs (and the default terminal). */
		struct options copy = *opts;
		static char none[] = "none";
		copy.launch[0] = none;
		copy.n_launch = 1;
		started = desktop_start(&copy) == 0;
	}
	const char* display = opts->display && *opts->display ? opts->display
			: started ? desktop_display_name() : NULL;
	json_t* report = doctor_run(opts, display, false);
	if (started)
		desktop_stop();
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
