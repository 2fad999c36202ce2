/* Safe output (DESIGN.md section 8): write into a private staging directory
 * next to the destination, publish with link() so nothing is ever replaced.
 *
 * Layout while writing:
 *   <parent>/.deskd-staging-XXXXXXXXXXXX/        mode 0700, ours
 *   <parent>/.deskd-staging-XXXXXXXXXXXX/.deskd-owner   marker, flock()ed
 *   <parent>/.deskd-staging-XXXXXXXXXXXX/<name>  the data, mode 0600
 *
 * The marker is held under an exclusive flock() for the life of the staging,
 * so safe_output_cleanup_stale() can tell a live staging (of this or another
 * deskd) from one left by a crash: the kernel drops the lock when the process
 * dies. All work after the path check goes through directory descriptors. */
#define _GNU_SOURCE
#include "record/record.h"
#include "record/record_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STAGING_PREFIX ".deskd-staging-"
#define STAGING_PREFIX_LEN (sizeof(STAGING_PREFIX) - 1)
#define MARKER_NAME ".deskd-owner"
/* A staging without a marker may be one being created right now. */
#define UNMARKED_GRACE_SECONDS 60
/* How deep cleanup looks below each given directory. */
#define CLEANUP_DEPTH 3
#define CLEANUP_MAX_ENTRIES 20000

struct safe_output {
	int fd;			/* the staging file */
	int parent_fd;		/* the destination's directory */
	int staging_fd;		/* the staging directory */
	int marker_fd;		/* flock()ed while we live */
	char* path;		/* destination */
	char* name;		/* points into path: the last component */
	char staging_name[64];	/* ".deskd-staging-XXXXXXXXXXXX" */
	char* staging_path;	/* <parent>/<staging_name>/<name> */
};

void record__set_err(char* err, size_t err_size, const char* fmt, ...)
{
	if (!err || !err_size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, err_size, fmt, ap);
	va_end(ap);
}

/* Is `path` equal to `root` or below it, on a component boundary? Both are
 * canonical absolute paths. */
static bool path_is_under(const char* path, const char* root)
{
	size_t n = strlen(root);
	if (n == 1 && root[0] == '/')
		return true;
	while (n > 1 && root[n - 1] == '/')
		n--;
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int check_path(const char* path, char* const* roots, int n_roots,
		char* parent, size_t parent_size, const char** name,
		char* err, size_t err_size)
{
	if (!path || !*path) {
		record__set_err(err, err_size, "out is empty: give an absolute file path");
		return -EINVAL;
	}
	if (path[0] != '/') {
		record__set_err(err, err_size, "out must be an absolute path, not '%s'", path);
		return -EINVAL;
	}
	size_t len = strlen(path);
	if (len >= PATH_MAX || len >= parent_size) {
		record__set_err(err, err_size, "out is too long (%zu bytes)", len);
		return -EINVAL;
	}
	const char* slash = strrchr(path, '/');
	const char* base = slash + 1;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		record__set_err(err, err_size, "out must name a file, not a directory: '%s'", path);
		return -EINVAL;
	}
	if (strlen(base) > NAME_MAX) {
		record__set_err(err, err_size, "the file name in out is longer than %d bytes", NAME_MAX);
		return -EINVAL;
	}
	if (strncmp(base, STAGING_PREFIX, STAGING_PREFIX_LEN) == 0 || strcmp(base, MARKER_NAME) == 0) {
		record__set_err(err, err_size, "the file name '%s' is reserved for deskd's staging", base);
		return -EINVAL;
	}
	size_t plen = slash == path ? 1 : (size_t)(slash - path);
	memcpy(parent, path, plen);
	parent[plen] = '\0';

	char canon[PATH_MAX];
	if (!realpath(parent, canon)) {
		int e = errno;
		if (e == ENOENT)
			record__set_err(err, err_size, "the directory %s does not exist", parent);
		else if (e == ENOTDIR)
			record__set_err(err, err_size, "%s is not a directory", parent);
		else
			record__set_err(err, err_size, "cannot resolve the directory %s: %s", parent, strerror(e));
		return -EINVAL;
	}
	struct stat st;
	if (stat(canon, &st) < 0 || !S_ISDIR(st.st_mode)) {
		record__set_err(err, err_size, "%s is not a directory", parent);
		return -EINVAL;
	}
	if (strcmp(canon, parent) != 0) {
		record__set_err(err, err_size, "the directory %s is not canonical (it resolves to %s): "
				"symlinks, '.', '..' and repeated '/' are refused", parent, canon);
		return -EINVAL;
	}

	bool under = false;
	char root_canon[PATH_MAX];
	for (int i = 0; i < n_roots && !under; i++) {
		if (roots[i] && realpath(roots[i], root_canon) && path_is_under(canon, root_canon))
			under = true;
	}
	if (!under) {
		if (n_roots > 0 && roots[0])
			record__set_err(err, err_size, "%s is not under an output root (%s%s); "
					"choose a path there or add --output-root",
					path, roots[0], n_roots > 1 ? ", ..." : "");
		else
			record__set_err(err, err_size, "%s is not under an output root (none configured)", path);
		return -EINVAL;
	}

	if (lstat(path, &st) == 0) {
		record__set_err(err, err_size, "%s already exists (deskd never replaces files or symlinks)", path);
		return -EEXIST;
	}
	if (errno != ENOENT) {
		int e = errno;
		record__set_err(err, err_size, "cannot check %s: %s", path, strerror(e));
		return -e;
	}
	*name = base;
	return 0;
}

static void random_suffix(char* out, size_t n)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char bytes[32];
	if (n > sizeof(bytes))
		n = sizeof(bytes);
	if (getrandom(bytes, n, 0) != (ssize_t)n) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		unsigned long x = (unsigned long)ts.tv_nsec ^ ((unsigned long)getpid() << 16)
			^ (unsigned long)(uintptr_t)out;
		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005UL + 1442695040888963407UL;
			bytes[i] = (unsigned char)(x >> 33);
		}
	}
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[bytes[i] % (sizeof(alphabet) - 1)];
	out[n] = '\0';
}

/* Remove a staging directory's entries (regular files only) and itself.
 * dir_fd is the staging directory; parent_fd/name name it. */
static int remove_staging(int parent_fd, const char* name, int dir_fd)
{
	int fd = dup(dir_fd);
	if (fd < 0)
		return -errno;
	DIR* d = fdopendir(fd);
	if (!d) {
		int e = -errno;
		close(fd);
		return e;
	}
	rewinddir(d);
	struct dirent* de;
	int rc = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			rc = -ENOTEMPTY;	/* not something we made: leave it */
			continue;
		}
		if (unlinkat(dir_fd, de->d_name, 0) < 0 && errno != ENOENT)
			rc = -errno;
	}
	closedir(d);
	if (rc == 0 && unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -errno;
	return rc;
}

static void destroy(struct safe_output* self)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->marker_fd >= 0)
		close(self->marker_fd);	/* drops the flock */
	if (self->staging_fd >= 0)
		close(self->staging_fd);
	if (self->parent_fd >= 0)
		close(self->parent_fd);
	free(self->staging_path);
	free(self->path);
	free(self);
}

int safe_output_open(const char* path, char* const* roots, int n_roots,
		struct safe_output** out, char* err, size_t err_size)
{
	char parent[PATH_MAX];
	const char* base = NULL;
	int rc;

	*out = NULL;
	if (err && err_size)
		err[0] = '\0';
	rc = check_path(path, roots, n_roots, parent, sizeof(parent), &base, err, err_size);
	if (rc < 0)
		return rc;

	struct safe_output* self = calloc(1, sizeof(*self));
	if (!self)
		return -ENOMEM;
	self->fd = self->parent_fd = self->staging_fd = self->marker_fd = -1;
	self->path = strdup(path);
	if (!self->path) {
		rc = -ENOMEM;
		goto path_failure;
	}
	self->name = strrchr(self->path, '/') + 1;

	self->parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (self->parent_fd < 0) {
		rc = -errno;
		record__set_err(err, err_size, "cannot open the directory %s: %s", parent, strerror(-rc));
		goto parent_failure;
	}

	/* mkdtemp, relative to the directory we checked. */
	memcpy(self->staging_name, STAGING_PREFIX, STAGING_PREFIX_LEN);
	for (int tries = 0;; tries++) {
		random_suffix(self->staging_name + STAGING_PREFIX_LEN, 12);
		if (mkdirat(self->parent_fd, self->staging_name, 0700) == 0)
			break;
		if (errno != EEXIST || tries > 100) {
			rc = -errno;
			record__set_err(err, err_size, "cannot create a staging directory in %s: %s",
					parent, strerror(-rc));
			goto mkdir_failure;
		}
	}
	self->staging_fd = openat(self->parent_fd, self->staging_name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (self->staging_fd < 0) {
		rc = -errno;
		unlinkat(self->parent_fd, self->staging_name, AT_REMOVEDIR);
		record__set_err(err, err_size, "cannot open the staging directory: %s", strerror(-rc));
		goto mkdir_failure;
	}
	/* mkdir honours the umask, which can only remove bits: make it exact. */
	if (fchmod(self->staging_fd, 0700) < 0) {
		rc = -errno;
		goto staging_failure;
	}

	self->marker_fd = openat(self->staging_fd, MARKER_NAME,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (self->marker_fd < 0) {
		rc = -errno;
		goto staging_failure;
	}
	if (flock(self->marker_fd, LOCK_EX | LOCK_NB) < 0) {
		rc = -errno;
		goto staging_failure;
	}
	char note[64];
	int n = snprintf(note, sizeof(note), "deskd staging, pid %ld\n", (long)getpid());
	if (n > 0 && write(self->marker_fd, note, (size_t)n) < 0) {
		rc = -errno;
		goto staging_failure;
	}

	self->fd = openat(self->staging_fd, self->name,
			O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (self->fd < 0) {
		rc = -errno;
		goto staging_failure;
	}
	if (fchmod(self->fd, 0600) < 0) {
		rc = -errno;
		goto staging_failure;
	}
	size_t slen = strlen(parent) + 1 + strlen(self->staging_name) + 1 + strlen(self->name) + 1;
	self->staging_path = malloc(slen);
	if (!self->staging_path) {
		rc = -ENOMEM;
		goto staging_failure;
	}
	snprintf(self->staging_path, slen, "%s%s%s/%s", parent,
			strcmp(parent, "/") == 0 ? "" : "/", self->staging_name, self->name);
	*out = self;
	return 0;

staging_failure:
	if (err && err_size && !err[0])
		record__set_err(err, err_size, "cannot create the staging file next to %s: %s",
				path, strerror(-rc));
	if (self->fd >= 0) {
		close(self->fd);
		self->fd = -1;
	}
	remove_staging(self->parent_fd, self->staging_name, self->staging_fd);
mkdir_failure:
parent_failure:
path_failure:
	destroy(self);
	return rc;
}

int safe_output_fd(const struct safe_output* self)
{
	return self ? self->fd : -1;
}

const char* safe_output_staging_path(const struct safe_output* self)
{
	return self ? self->staging_path : NULL;
}

const char* safe_output_path(const struct safe_output* self)
{
	return self ? self->path : NULL;
}

int safe_output_write(struct safe_output* self, const void* buf, size_t len)
{
	const unsigned char* p = buf;
	while (len > 0) {
		ssize_t n = write(self->fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void safe_output_abort(struct safe_output* self)
{
	if (!self)
		return;
	if (self->fd >= 0) {
		close(self->fd);
		self->fd = -1;
	}
	remove_staging(self->parent_fd, self->staging_name, self->staging_fd);
	destroy(self);
}

int safe_output_publish(struct safe_output* self)
{
	int rc = 0;
	struct stat st;

	if (fsync(self->fd) < 0) {
		rc = -errno;
		goto failure;
	}
	/* Fail early with a clear result; link() below is the real guard. */
	if (fstatat(self->parent_fd, self->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		rc = -EEXIST;
		goto failure;
	}
	if (linkat(self->staging_fd, self->name, self->parent_fd, self->name, 0) < 0) {
		rc = -errno;
		if (rc == -EEXIST)
			goto failure;
		/* Filesystems without hard links: rename without replacing. */
		if (renameat2(self->staging_fd, self->name, self->parent_fd, self->name,
				RENAME_NOREPLACE) < 0) {
			if (errno != ENOSYS && errno != EINVAL)
				rc = -errno;
			goto failure;
		}
		rc = 0;
	}
	if (fsync(self->parent_fd) < 0 && errno != EINVAL) {
		/* Published, but not durable: report it, keep the file. */
		rc = -errno;
	}
	close(self->fd);
	self->fd = -1;
	int removed = remove_staging(self->parent_fd, self->staging_name, self->staging_fd);
	(void)removed;
	destroy(self);
	return rc;

failure:
	safe_output_abort(self);
	return rc;
}

/* Is this staging directory ours and dead? dir_fd is open on it. */
static bool staging_is_stale(int dir_fd, const struct stat* st)
{
	if (st->st_uid != geteuid() || (st->st_mode & 0777) != 0700)
		return false;
	int marker = openat(dir_fd, MARKER_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (marker < 0) {
		if (errno != ENOENT)
			return false;
		/* Crash between mkdir and the marker, or being created now. */
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		return now.tv_sec - st->st_mtim.tv_sec > UNMARKED_GRACE_SECONDS;
	}
	struct stat mst;
	bool stale = fstat(marker, &mst) == 0 && S_ISREG(mst.st_mode)
		&& mst.st_uid == geteuid()
		&& flock(marker, LOCK_EX | LOCK_NB) == 0;
	close(marker);	/* releases our probe lock */
	return stale;
}

static void cleanup_dir(int dir_fd, int depth, int* budget)
{
	int fd = dup(dir_fd);
	if (fd < 0)
		return;
	DIR* d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent* de;
	while ((de = readdir(d)) && (*budget)-- > 0) {
		const char* name = de->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		bool staging = strncmp(name, STAGING_PREFIX, STAGING_PREFIX_LEN) == 0;
		if (!staging && depth <= 0)
			continue;
		int sub = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		struct stat st;
		if (fstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (staging) {
				if (staging_is_stale(sub, &st))
					remove_staging(dir_fd, name, sub);
			} else if (name[0] != '.') {
				cleanup_dir(sub, depth - 1, budget);
			}
		}
		close(sub);
	}
	closedir(d);
}

void safe_output_cleanup_stale(char* const* dirs, int n_dirs)
{
	int budget = CLEANUP_MAX_ENTRIES;
	for (int i = 0; i < n_dirs; i++) {
		if (!dirs[i])
			continue;
		int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		cleanup_dir(fd, CLEANUP_DEPTH, &budget);
		close(fd);
	}
}
