/* deskd's GNOME Shell extension written out for a shell (gnome/gnome.h):
 * the files of gnome/shell/, compiled into the binary. extension.js is
 * legacy.js or esm.js with service.js at its "// @service" line, so the
 * window calls have one copy for both forms. */
#define _GNU_SOURCE
#include "gnome/gnome.h"
#include "gnome/gnome_private.h"
#include "base/clock.h"
#include "base/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SERVICE_MARK "// @service\n"
#define VERSION_MARK "@SHELL_VERSION@"
#define MIN_SHELL 42
#define WRITE_MS 5000

extern char** environ;

static const struct gnome_shell_file* shell_file(const char* path)
{
	for (const struct gnome_shell_file* f = gnome_shell_files; f->path; f++)
		if (strcmp(f->path, path) == 0)
			return f;
	return NULL;
}

/* template's bytes with mark replaced by insert (template must hold it). */
static int write_file(const char* path, const struct gnome_shell_file* template,
		const char* mark, const void* insert, size_t insert_size)
{
	const char* text = (const char*)template->data;
	const char* at = strstr(text, mark);
	if (!at)
		return -EINVAL;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	size_t before = (size_t)(at - text), mark_len = strlen(mark);
	int rc = gnome__write_all(fd, text, before, WRITE_MS);
	if (rc == 0)
		rc = gnome__write_all(fd, insert, insert_size, WRITE_MS);
	if (rc == 0)
		rc = gnome__write_all(fd, at + mark_len, template->size - before - mark_len, WRITE_MS);
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

int gnome_extension_install(const char* data_dir, int shell_major, char* err, size_t err_size)
{
	if (shell_major < MIN_SHELL) {
		snprintf(err, err_size, "GNOME Shell %d is older than deskd's extension (%d on)",
				shell_major, MIN_SHELL);
		return -ENOTSUP;
	}
	const struct gnome_shell_file* code = shell_file(shell_major >= GNOME_SHELL_FIRST_MODULES
			? "/esm.js" : "/legacy.js");
	const struct gnome_shell_file* service = shell_file("/service.js");
	const struct gnome_shell_file* metadata = shell_file("/metadata.json");
	char dir[512], path[600], version[16];
	if (snprintf(dir, sizeof(dir), "%s/gnome-shell/extensions/" GNOME_EXTENSION_UUID, data_dir)
			>= (int)sizeof(dir)) {
		snprintf(err, err_size, "the data folder's path is too long");
		return -ENAMETOOLONG;
	}
	int rc = fs_make_dir(dir);
	if (rc < 0) {
		snprintf(err, err_size, "cannot make %s: %s", dir, strerror(-rc));
		return rc;
	}
	int n = snprintf(version, sizeof(version), "%d", shell_major);
	snprintf(path, sizeof(path), "%s/metadata.json", dir);
	rc = write_file(path, metadata, VERSION_MARK, version, (size_t)n);
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/extension.js", dir);
		rc = write_file(path, code, SERVICE_MARK, service->data, service->size);
	}
	if (rc < 0)
		snprintf(err, err_size, "cannot write %s: %s", path, strerror(-rc));
	return rc;
}

/* Up to size - 1 bytes of the child's output on fd, by the deadline. */
static ssize_t read_until(int fd, char* buf, size_t size, int64_t deadline)
{
	size_t got = 0;
	while (got + 1 < size) {
		int64_t left = deadline - clock_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ETIMEDOUT;
		ssize_t n = read(fd, buf + got, size - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

int gnome_shell_major(const char* program, char* err, size_t err_size)
{
	int pipe_fds[2];
	if (pipe2(pipe_fds, O_CLOEXEC) < 0) {
		snprintf(err, err_size, "pipe: %s", strerror(errno));
		return -errno;
	}
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
	char* argv[] = { (char*)program, (char*)"--version", NULL };
	pid_t pid;
	int rc = -posix_spawn(&pid, program, &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	close(pipe_fds[1]);
	if (rc < 0) {
		close(pipe_fds[0]);
		snprintf(err, err_size, "cannot run %s: %s", program, strerror(-rc));
		return rc;
	}
	char out[256];
	ssize_t n = read_until(pipe_fds[0], out, sizeof(out), clock_ms() + 5000);
	close(pipe_fds[0]);
	/* Its output read (or not in time): it has nothing more to say. */
	if (waitpid(pid, NULL, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	int major = 0;
	if (n < 0) {
		snprintf(err, err_size, "%s --version: %s", program,
				n == -ETIMEDOUT ? "no answer in 5 s" : strerror((int)-n));
		return (int)n;
	}
	if (sscanf(out, "GNOME Shell %d", &major) != 1 || major <= 0) {
		out[strcspn(out, "\n")] = '\0';
		snprintf(err, err_size, "%s --version said '%.80s', not \"GNOME Shell N\"", program, out);
		return -EPROTO;
	}
	return major;
}
