/* The embedded desktop's buses: a private D-Bus session bus (dbus-daemon,
 * started with the desktop, stopped by PID with it) on which the AT-SPI bus
 * is brought up (org.a11y.Bus.GetAddress starts at-spi-bus-launcher, which
 * also sets AT_SPI_BUS on the root window for Qt) and announced
 * (org.a11y.Status.IsEnabled = true) BEFORE any program starts: Chromium,
 * Firefox and Qt decide at their start whether to publish their trees.
 * The environment every program deskd starts gets is in buses_env().
 * On an external display the caller's session bus is used as it is.
 * Private to desktop/ (desktop_private.h); xvfb.c drives it. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "a11y/a11y.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUS_READY_MS 5000
#define BUS_STOP_GRACE_MS 1000

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pid_t pid;			/* the session dbus-daemon, 0 none */
	char runtime_dir[PATH_MAX];	/* private XDG_RUNTIME_DIR, "" none */
	char address[512];		/* the session bus */
	char reason[256];		/* why there is none */
	bool embedded;
} B;

/* What deskd publishes for its programs (env.c), and drops from what they
 * inherit. */
static const char* const dropped[] = {
	"NO_AT_BRIDGE", "GTK_A11Y", "AT_SPI_BUS_ADDRESS",
};

static void env_add(const char* key, const char* value)
{
	if (desktop__env_set(key, value) < 0)
		log_warn("cannot pass %s to the desktop's programs", key);
}

static void env_clear(void)
{
	static const char* const names[] = {
		"XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON",
		"ACCESSIBILITY_ENABLED", "GNOME_ACCESSIBILITY", "NO_AT_BRIDGE", "GTK_A11Y",
		"AT_SPI_BUS_ADDRESS",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		desktop__env_set(names[i], NULL);
}

static int remove_entry(const char* path, const struct stat* st, int flag, struct FTW* ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

static void remove_runtime_dir(void)
{
	if (B.runtime_dir[0])
		nftw(B.runtime_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
	B.runtime_dir[0] = '\0';
}

/* Read the address dbus-daemon prints on fd 3 (one line). */
static int read_address(int fd, char* out, size_t size)
{
	size_t len = 0;
	int64_t end = clock_ms() + BUS_READY_MS;
	while (len + 1 < size) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - clock_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		ssize_t n = read(fd, out + len, size - 1 - len);
		if (n <= 0)
			return -EPIPE;
		len += (size_t)n;
		out[len] = '\0';
		char* nl = strchr(out, '\n');
		if (nl) {
			*nl = '\0';
			return out[0] ? 0 : -EINVAL;
		}
	}
	return -ENAMETOOLONG;
}

int buses__listen_address(const char* dir, const char* name, char* out, size_t size)
{
	static const char plain[] = "-_/.*";
	static const char hex[] = "0123456789abcdef";
	size_t o = (size_t)snprintf(out, size, "--address=unix:path=");
	for (const char* p = dir; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (o + 4 >= size)
			return -ENAMETOOLONG;
		if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
				|| strchr(plain, c)) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	return snprintf(out + o, size - o, "/%s", name) < (int)(size - o) ? 0 : -ENAMETOOLONG;
}

void buses_start(const char* display)
{
	pthread_mutex_lock(&mutex);
	if (B.pid > 0) {
		pthread_mutex_unlock(&mutex);
		return;
	}
	B.embedded = true;
	B.address[0] = B.reason[0] = '\0';
	env_clear();
	char daemon[PATH_MAX];
	if (desktop_find_program("dbus-daemon", getenv("PATH"), daemon, sizeof(daemon)) < 0) {
		snprintf(B.reason, sizeof(B.reason), "dbus-daemon is not installed (apt-get install dbus at-spi2-core)");
		log_info("no accessibility: %s", B.reason);
		a11y_configure(NULL);
		pthread_mutex_unlock(&mutex);
		return;
	}
	/* A private runtime dir: the AT-SPI bus socket and the apps' own
	 * sockets live there, apart from any other session's. */
	const char* tmp = getenv("TMPDIR");
	snprintf(B.runtime_dir, sizeof(B.runtime_dir), "%s/deskd-run-%ld-XXXXXX",
			tmp && *tmp && strlen(tmp) < 60 ? tmp : "/tmp", (long)getpid());
	if (!mkdtemp(B.runtime_dir)) {
		snprintf(B.reason, sizeof(B.reason), "cannot create a runtime directory: %s", strerror(errno));
		B.runtime_dir[0] = '\0';
		log_warn("no accessibility: %s", B.reason);
		pthread_mutex_unlock(&mutex);
		return;
	}
	chmod(B.runtime_dir, 0700);
	env_add("XDG_RUNTIME_DIR", B.runtime_dir);	/* the daemon's activations inherit it */
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0) {
		snprintf(B.reason, sizeof(B.reason), "pipe: %s", strerror(errno));
		goto fail;
	}
	/* The socket in the private dir too (the session config's default is
	 * an abstract socket, which any process of the network namespace can
	 * reach), removed with it. */
	char listen[PATH_MAX + 32];
	if (buses__listen_address(B.runtime_dir, "bus", listen, sizeof(listen)) < 0) {
		snprintf(B.reason, sizeof(B.reason), "the runtime directory's path is too long");
		close(fds[0]);
		close(fds[1]);
		goto fail;
	}
	char* argv[] = { (char*)"dbus-daemon", (char*)"--session", (char*)"--nofork",
		(char*)"--nopidfile", listen, (char*)"--print-address=3", NULL };
	struct desktop__spawn_args sa = {
		.path = daemon, .argv = argv, .display = display, .fd3 = fds[1],
		.program = "dbus-daemon", .level = LOG_INFO,
	};
	pid_t pid = desktop__spawn_with(&sa);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		snprintf(B.reason, sizeof(B.reason), "cannot start dbus-daemon: %s", strerror((int)-pid));
		goto fail;
	}
	B.pid = pid;
	int rc = read_address(fds[0], B.address, sizeof(B.address));
	close(fds[0]);
	if (rc < 0) {
		snprintf(B.reason, sizeof(B.reason), "dbus-daemon gave no address (%s)", strerror(-rc));
		goto fail;
	}
	env_add("DBUS_SESSION_BUS_ADDRESS", B.address);
	a11y_configure(B.address);
	char a11y_bus[512], err[256] = "";
	int64_t t0 = clock_ms();
	rc = a11y_bus_setup(true, 3000, a11y_bus, sizeof(a11y_bus), err, sizeof(err));
	if (rc < 0)
		log_warn("the AT-SPI bus did not come up (%s): accessibility tools will say so "
				"(apt-get install at-spi2-core)", err);
	else
		log_info("session bus %s (dbus-daemon pid %ld), AT-SPI bus up and enabled in %lld ms",
				B.address, (long)pid, (long long)(clock_ms() - t0));
	/* What makes toolkits publish their trees (docs/DESIGN.md, "Accessibility"). */
	env_add("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1");
	env_add("ACCESSIBILITY_ENABLED", "1");
	env_add("GNOME_ACCESSIBILITY", "1");
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
		desktop__env_unset(dropped[i]);
	pthread_mutex_unlock(&mutex);
	return;
fail:
	log_warn("no accessibility: %s", B.reason);
	if (B.pid > 0) {
		kill(B.pid, SIGKILL);
		waitpid(B.pid, NULL, 0);
		B.pid = 0;
	}
	B.address[0] = '\0';
	env_clear();
	remove_runtime_dir();
	a11y_configure(NULL);
	pthread_mutex_unlock(&mutex);
}

void buses_external(const char* address)
{
	pthread_mutex_lock(&mutex);
	B.embedded = false;
	const char* addr = address && *address ? address : getenv("DBUS_SESSION_BUS_ADDRESS");
	snprintf(B.address, sizeof(B.address), "%s", addr ? addr : "");
	if (!B.address[0]) {
		snprintf(B.reason, sizeof(B.reason),
				"no session bus: DBUS_SESSION_BUS_ADDRESS is not set for this external display");
		log_info("accessibility: %s (the ui tools will say so)", B.reason);
	}
	a11y_configure(B.address);
	pthread_mutex_unlock(&mutex);
}

bool buses_tracked(pid_t pid)
{
	pthread_mutex_lock(&mutex);
	bool t = pid > 0 && pid == B.pid;
	pthread_mutex_unlock(&mutex);
	return t;
}

void buses_reap(void)
{
	pthread_mutex_lock(&mutex);
	int st;
	if (B.pid > 0 && waitpid(B.pid, &st, WNOHANG) == B.pid) {
		log_warn("the session dbus-daemon (pid %ld) exited; accessibility is off until deskd restarts",
				(long)B.pid);
		B.pid = 0;
		snprintf(B.reason, sizeof(B.reason), "the session dbus-daemon exited");
	}
	pthread_mutex_unlock(&mutex);
}

void buses_stop(void)
{
	pthread_mutex_lock(&mutex);
	a11y_shutdown();
	if (B.pid > 0) {
		/* at-spi-bus-launcher, its daemon and the registry follow the
		 * session bus within about 2 s (they are not our children). */
		kill(-B.pid, SIGTERM);
		kill(B.pid, SIGTERM);
		int64_t end = clock_ms() + BUS_STOP_GRACE_MS;
		pid_t r;
		while ((r = waitpid(B.pid, NULL, WNOHANG)) != B.pid && r >= 0) {
			if (clock_ms() >= end) {
				kill(B.pid, SIGKILL);
				waitpid(B.pid, NULL, 0);
				break;
			}
			clock_sleep_ms(10);
		}
		B.pid = 0;
	}
	remove_runtime_dir();
	pthread_mutex_unlock(&mutex);
}

bool buses_session(char* runtime_dir, size_t rt_size, char* address, size_t addr_size)
{
	pthread_mutex_lock(&mutex);
	bool up = B.pid > 0 && B.address[0] && B.runtime_dir[0];
	if (up) {
		snprintf(runtime_dir, rt_size, "%s", B.runtime_dir);
		snprintf(address, addr_size, "%s", B.address);
	}
	pthread_mutex_unlock(&mutex);
	return up;
}

void desktop_buses(struct desktop_buses* out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&mutex);
	out->embedded = B.embedded;
	out->pid = B.pid;
	snprintf(out->session, sizeof(out->session), "%s", B.address);
	snprintf(out->reason, sizeof(out->reason), "%s", B.reason);
	pthread_mutex_unlock(&mutex);
}
