/* deskd's GNOME Shell extension written out for a shell (gnome/gnome.h):
 * the files of gnome/shell/, compiled into the binary. */
#include "gnome/gnome.h"
#include "gnome/gnome_private.h"
#include "base/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int write_file(const char* path, const unsigned char* data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while (size > 0) {
		ssize_t n = write(fd, data, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int rc = n < 0 ? -errno : -EIO;
			close(fd);
			return rc;
		}
		data += n;
		size -= (size_t)n;
	}
	return close(fd) == 0 ? 0 : -errno;
}

int gnome_extension_install(const char* data_dir, char* err, size_t err_size)
{
	char dir[512], path[600];
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
	for (const struct gnome_shell_file* f = gnome_shell_files; f->path; f++) {
		snprintf(path, sizeof(path), "%s%s", dir, f->path);
		if ((rc = write_file(path, f->data, f->size)) < 0) {
			snprintf(err, err_size, "cannot write %s: %s", path, strerror(-rc));
			return rc;
		}
	}
	return 0;
}
