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
#include "base/text.h"

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
	long long max_bytes;	/* writes past it fail (0: no limit) */
	long long written;
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

/* Names deskd creates or serves look like what they are: no control, no
 * bidirectional formatting character, valid UTF-8 (base/text.h). The
 * message names the code point and never quotes the name itself. */
static int check_name_text(const char* s, size_t len, const char* what, char* err,
		size_t err_size)
{
	size_t at;
	uint32_t cp;
	enum text_name_problem p = text_name_check(s, len, &at, &cp);
	if (p == TEXT_NAME_OK)
		return 0;
	char why[64];
	record__set_err(err, err_size, "%s has %s at byte %zu; deskd refuses control "
			"characters (U+0000-U+001F, U+007F-U+009F, U+2028, U+2029), bidirectional "
			"controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and invalid "
			"UTF-8 in file names, which could show one name as another", what,
			text_name_problem_describe(p, cp, why, sizeof(why)), at);
	return -EINVAL;
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
	if (check_name_text(base, strlen(base), "the file name in out", err, err_size) < 0)
		return -EINVAL;
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

/* The staging directory, its marker and the staging file for self->name,
 * in the directory self->parent_fd (shown as `where` in messages). */
static int stage(struct safe_output* self, const char* where, char* err, size_t err_size)
{
	int rc;
	/* mkdtemp, relative to the directory we checked. */
	memcpy(self->staging_name, STAGING_PREFIX, STAGING_PREFIX_LEN);
	for (int tries = 0;; tries++) {
		random_suffix(self->staging_name + STAGING_PREFIX_LEN, 12);
		if (mkdirat(self->parent_fd, self->staging_name, 0700) == 0)
			break;
		if (errno != EEXIST || tries > 100) {
			rc = -errno;
			record__set_err(err, err_size, "cannot create a staging directory in %s: %s",
					where, strerror(-rc));
			return rc;
		}
	}
	self->staging_fd = openat(self->parent_fd, self->staging_name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (self->staging_fd < 0) {
		rc = -errno;
		unlinkat(self->parent_fd, self->staging_name, AT_REMOVEDIR);
		record__set_err(err, err_size, "cannot open the staging directory: %s", strerror(-rc));
		return rc;
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
	size_t slen = strlen(where) + 1 + strlen(self->staging_name) + 1 + strlen(self->name) + 1;
	self->staging_path = malloc(slen);
	if (!self->staging_path) {
		rc = -ENOMEM;
		goto staging_failure;
	}
	snprintf(self->staging_path, slen, "%s%s%s/%s", where,
			strcmp(where, "/") == 0 ? "" : "/", self->staging_name, self->name);
	return 0;

staging_failure:
	if (err && err_size && !err[0])
		record__set_err(err, err_size, "cannot create the staging file next to %s: %s",
				self->path, strerror(-rc));
	if (self->fd >= 0) {
		close(self->fd);
		self->fd = -1;
	}
	remove_staging(self->parent_fd, self->staging_name, self->staging_fd);
	return rc;
}

static struct safe_output* safe_output_new(const char* path, const char* name)
{
	struct safe_output* self = calloc(1, sizeof(*self));
	if (!self)
		return NULL;
	self->fd = self->parent_fd = self->staging_fd = self->marker_fd = -1;
	self->path = strdup(path);
	if (!self->path) {
		free(self);
		return NULL;
	}
	self->name = self->path + (name - path);
	return self;
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

	struct safe_output* self = safe_output_new(path, base);
	if (!self)
		return -ENOMEM;
	self->parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (self->parent_fd < 0) {
		rc = -errno;
		record__set_err(err, err_size, "cannot open the directory %s: %s", parent, strerror(-rc));
		destroy(self);
		return rc;
	}
	rc = stage(self, parent, err, err_size);
	if (rc < 0) {
		destroy(self);
		return rc;
	}
	*out = self;
	return 0;
}

/* ---- Files under a root ------------------------------------------------------
 * A relative path of plain components, walked from the root's descriptor
 * with O_NOFOLLOW at every step: a symlink anywhere (a directory or the
 * file) is refused, so nothing outside the root is ever reached, whatever
 * the path's text says and whatever changes on the disk meanwhile. */

/* Check rel's text: names people can read (no control or bidirectional
 * character, valid UTF-8), relative, no empty, '.' or '..' component, no
 * reserved name. dir: rel names a directory ("" = the root, a trailing '/'
 * allowed). */
static int check_rel(const char* rel, bool dir, char* err, size_t err_size)
{
	size_t len = strlen(rel);
	/* First, so that no message below quotes such a name. */
	if (check_name_text(rel, len, "the path", err, err_size) < 0)
		return -EINVAL;
	if (!len && !dir) {
		record__set_err(err, err_size, "the path is empty: give a file name like "
				"\"notes.txt\" or \"dir/notes.txt\"");
		return -EINVAL;
	}
	if (rel[0] == '/') {
		record__set_err(err, err_size, "'%s' is absolute: give a path relative to the "
				"files root, like \"notes.txt\"", rel);
		return -EINVAL;
	}
	if (len >= PATH_MAX) {
		record__set_err(err, err_size, "the path is too long (%zu bytes)", len);
		return -EINVAL;
	}
	if (len && rel[len - 1] == '/') {
		if (!dir) {
			record__set_err(err, err_size, "'%s' ends in '/': name a file", rel);
			return -EINVAL;
		}
		len--;
	}
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && rel[j] != '/')
			j++;
		size_t n = j - i;
		const char* c = rel + i;
		if (n == 0) {
			record__set_err(err, err_size, "'%s' has an empty component ('//' or a "
					"trailing '/')", rel);
			return -EINVAL;
		}
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) {
			record__set_err(err, err_size, "'%s' has a '%.*s' component: paths are plain "
					"names below the files root", rel, (int)n, c);
			return -EINVAL;
		}
		if (n > NAME_MAX) {
			record__set_err(err, err_size, "a name in '%s' is longer than %d bytes", rel,
					NAME_MAX);
			return -EINVAL;
		}
		if ((n >= STAGING_PREFIX_LEN && strncmp(c, STAGING_PREFIX, STAGING_PREFIX_LEN) == 0)
				|| (n == strlen(MARKER_NAME) && strncmp(c, MARKER_NAME, n) == 0)) {
			record__set_err(err, err_size, "the name '%.*s' is reserved for deskd's staging",
					(int)n, c);
			return -EINVAL;
		}
		i = j + 1;
	}
	return 0;
}

/* Open the directory component `name` of rel below dir_fd, refusing
 * symlinks and non-directories by name. */
static int open_subdir(int dir_fd, const char* name, const char* rel, char* err, size_t err_size)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	int e = errno;
	struct stat st;
	if (e == ENOENT) {
		record__set_err(err, err_size, "the directory '%s' in '%s' does not exist under the "
				"files root", name, rel);
		return -ENOENT;
	}
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
		record__set_err(err, err_size, "'%s' in '%s' is a symlink; deskd follows none under "
				"the files root", name, rel);
		return -ELOOP;
	}
	if (e == ENOTDIR) {
		record__set_err(err, err_size, "'%s' in '%s' is not a directory", name, rel);
		return -ENOTDIR;
	}
	record__set_err(err, err_size, "cannot open '%s' in '%s': %s", name, rel, strerror(e));
	return -e;
}

/* Walk rel from root: *dir_fd is the directory holding the last component
 * (every component when whole_is_dir), *last its name in name_buf ("" when
 * whole_is_dir). */
static int walk(const char* root, const char* rel, bool whole_is_dir, int* dir_fd,
		char* name_buf, size_t name_size, char* err, size_t err_size)
{
	*dir_fd = -1;
	name_buf[0] = '\0';
	int rc = check_rel(rel, whole_is_dir, err, err_size);
	if (rc < 0)
		return rc;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		record__set_err(err, err_size, "cannot open the files root %s: %s", root, strerror(e));
		return e == ENOENT ? -ENXIO : -e;
	}
	const char* p = rel;
	for (;;) {
		const char* slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (!slash && !whole_is_dir) {
			snprintf(name_buf, name_size, "%.*s", (int)n, p);
			break;
		}
		if (n == 0)
			break;	/* the root, or a trailing '/' */
		char name[NAME_MAX + 1];
		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		int sub = open_subdir(fd, name, rel, err, err_size);
		close(fd);
		if (sub < 0)
			return sub;
		fd = sub;
		if (!slash)
			break;
		p = slash + 1;
	}
	*dir_fd = fd;
	return 0;
}

int safe_output_open_under(const char* root, const char* rel, long long max_bytes,
		struct safe_output** out, char* err, size_t err_size)
{
	*out = NULL;
	if (err && err_size)
		err[0] = '\0';
	int dir_fd;
	char name[NAME_MAX + 1];
	int rc = walk(root, rel, false, &dir_fd, name, sizeof(name), err, err_size);
	if (rc < 0)
		return rc;
	struct stat st;
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		const char* what = S_ISLNK(st.st_mode) ? "a symlink" : S_ISDIR(st.st_mode)
			? "a directory" : S_ISREG(st.st_mode) ? "a file" : "something";
		record__set_err(err, err_size, "'%s' already exists (%s); deskd never replaces "
				"anything: pick a new name", rel, what);
		close(dir_fd);
		return -EEXIST;
	}
	char full[PATH_MAX * 2];
	snprintf(full, sizeof(full), "%s/%s", root, rel);
	struct safe_output* self = safe_output_new(full, strrchr(full, '/') + 1);
	if (!self) {
		close(dir_fd);
		return -ENOMEM;
	}
	self->parent_fd = dir_fd;
	self->max_bytes = max_bytes;
	rc = stage(self, root, err, err_size);
	if (rc < 0) {
		destroy(self);
		return rc;
	}
	*out = self;
	return 0;
}

int safe_input_open(const char* root, const char* rel, long long max_bytes,
		long long* size, char* err, size_t err_size)
{
	if (err && err_size)
		err[0] = '\0';
	int dir_fd;
	char name[NAME_MAX + 1];
	int rc = walk(root, rel, false, &dir_fd, name, sizeof(name), err, err_size);
	if (rc < 0)
		return rc;
	/* O_NONBLOCK: a FIFO planted under the root must not hang the open. */
	int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int e = errno;
	struct stat st;
	if (fd < 0) {
		if (e == ENOENT)
			record__set_err(err, err_size, "'%s' does not exist under the files root", rel);
		else if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			record__set_err(err, err_size, "'%s' is a symlink; deskd follows none under "
					"the files root", rel);
		else
			record__set_err(err, err_size, "cannot open '%s': %s", rel, strerror(e));
		close(dir_fd);
		return e == ELOOP ? -ELOOP : -e;
	}
	close(dir_fd);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		bool is_dir = S_ISDIR(st.st_mode);
		record__set_err(err, err_size, is_dir ? "'%s' is a directory: list it instead"
				: "'%s' is not a regular file", rel);
		close(fd);
		return is_dir ? -EISDIR : -EINVAL;
	}
	/* A hard link planted under the root may be a file from anywhere on
	 * the same filesystem: the name says nothing about where the data
	 * lives. Checked on the descriptor, so a swap after the walk cannot
	 * slip one through. */
	if (st.st_nlink > 1) {
		record__set_err(err, err_size, "'%s' has other hard links (%ju links); deskd serves "
				"only files with one link (the other name may be outside the files root)",
				rel, (uintmax_t)st.st_nlink);
		close(fd);
		return -EMLINK;
	}
	if (max_bytes > 0 && st.st_size > max_bytes) {
		record__set_err(err, err_size, "'%s' is %lld bytes, over the limit of %lld bytes "
				"(--max-file-size)", rel, (long long)st.st_size, max_bytes);
		close(fd);
		return -EFBIG;
	}
	/* Reads block normally from here (a regular file never waits). */
	int flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	*size = st.st_size;
	return fd;
}

static int entry_cmp(const void* a, const void* b)
{
	return strcmp(((const struct safe_entry*)a)->name, ((const struct safe_entry*)b)->name);
}

int safe_dir_list(const char* root, const char* rel, size_t max, struct safe_entry** out,
		size_t* n_out, bool* truncated, char* err, size_t err_size)
{
	*out = NULL;
	*n_out = 0;
	*truncated = false;
	if (err && err_size)
		err[0] = '\0';
	int dir_fd;
	char name[NAME_MAX + 1];
	int rc = walk(root, rel, true, &dir_fd, name, sizeof(name), err, err_size);
	if (rc < 0)
		return rc;
	int fd = dup(dir_fd);
	DIR* d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		close(dir_fd);
		record__set_err(err, err_size, "cannot list '%s': %s", rel, strerror(-rc));
		return rc;
	}
	size_t cap = 64, n = 0;
	struct safe_entry* list = malloc(cap * sizeof(*list));
	struct dirent* de;
	while (list && (de = readdir(d))) {
		const char* nm = de->d_name;
		if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0
				|| strncmp(nm, STAGING_PREFIX, STAGING_PREFIX_LEN) == 0)
			continue;
		if (n == max) {
			*truncated = true;
			break;
		}
		if (n == cap) {
			struct safe_entry* grown = realloc(list, cap * 2 * sizeof(*list));
			if (!grown) {
				free(list);
				list = NULL;
				break;
			}
			list = grown;
			cap *= 2;
		}
		struct safe_entry* e = &list[n];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", nm);
		struct stat st;
		if (fstatat(dir_fd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;	/* gone meanwhile */
		e->type = S_ISREG(st.st_mode) ? SAFE_ENTRY_FILE : S_ISDIR(st.st_mode)
			? SAFE_ENTRY_DIR : S_ISLNK(st.st_mode) ? SAFE_ENTRY_SYMLINK : SAFE_ENTRY_OTHER;
		e->size = S_ISREG(st.st_mode) ? (long long)st.st_size : 0;
		e->mode = st.st_mode & 07777;
		e->mtime = (long long)st.st_mtim.tv_sec;
		n++;
	}
	closedir(d);
	close(dir_fd);
	if (!list) {
		record__set_err(err, err_size, "out of memory");
		return -ENOMEM;
	}
	qsort(list, n, sizeof(*list), entry_cmp);
	*out = list;
	*n_out = n;
	return 0;
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
	if (self->max_bytes > 0 && (long long)len > self->max_bytes - self->written)
		return -EFBIG;
	self->written += (long long)len;
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
	} else {
		/* The staging name goes at once: the file has one link again
		 * (safe_input_open refuses files with more). */
		unlinkat(self->staging_fd, self->name, 0);
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
