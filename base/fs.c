#include "base/fs.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

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
