#include "base/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fs_make_dir(const char* path)
{
	if (mkdir(path, 0700) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -errno;
	/* Create the parents (e.g. ~/.local/state) as well. */
	char buf[4096];
	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (char* p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -errno;
}

int fs_open_private(const char* path, struct stat* st)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	int rc = fstat(fd, st) < 0 ? -errno : !S_ISREG(st->st_mode) ? -EINVAL
			: st->st_uid != geteuid() || (st->st_mode & 077) ? -EPERM : 0;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}
