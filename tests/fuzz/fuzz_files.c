/* libFuzzer harness over the file tools' path rules (record/safe_output.c):
 * an untrusted relative path is read, listed and written under a root that
 * holds a file, a directory, a symlink out of the root, a dangling one and
 * a hard link to the outside file.
 * Whatever the path, nothing outside the root is opened or created, an
 * opened file is a regular file with one link inside the root, and nothing
 * is replaced: a descriptor's real path and link count are checked, and the
 * outside file's content; and a name with a control or bidirectional
 * character or invalid UTF-8 (base/text.h) is never opened, listed or
 * created. */

#include "base/log.h"
#include "base/text.h"
#include "record/record.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static char base[PATH_MAX], root[PATH_MAX], outside[PATH_MAX];

static void write_file(const char* path, const char* text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		abort();
	close(fd);
}

int LLVMFuzzerInitialize(int* argc, char*** argv)
{
	(void)argc;
	(void)argv;
	log_init(LOG_ERROR, false);
	snprintf(base, sizeof(base), "/tmp/deskd-fuzz-files-XXXXXX");
	if (!mkdtemp(base))
		abort();
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	char p[PATH_MAX + 64];
	if (mkdir(root, 0700) < 0 || mkdir(outside, 0700) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/secret", outside);
	write_file(p, "secret");
	snprintf(p, sizeof(p), "%s/file.txt", root);
	write_file(p, "inside");
	snprintf(p, sizeof(p), "%s/dir", root);
	if (mkdir(p, 0700) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/dir/inner", root);
	write_file(p, "inner");
	snprintf(p, sizeof(p), "%s/out", root);
	if (symlink(outside, p) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/secret-link", root);
	char target[PATH_MAX + 16];
	snprintf(target, sizeof(target), "%s/secret", outside);
	if (symlink(target, p) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/dangling", root);
	if (symlink("/nonexistent/deskd-fuzz", p) < 0)
		abort();
	/* A hard link to the outside file: never opened (TRUST R9). */
	snprintf(p, sizeof(p), "%s/hard", root);
	if (link(target, p) < 0)
		abort();
	return 0;
}

/* The descriptor's file must be inside the root. */
static void check_inside(int fd)
{
	char link[64], real[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, real, sizeof(real) - 1);
	if (n < 0)
		abort();
	real[n] = '\0';
	size_t r = strlen(root);
	if (strncmp(real, root, r) != 0 || real[r] != '/')
		abort();
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)
		abort();
}

static void check_outside_untouched(void)
{
	char p[PATH_MAX + 16], buf[16] = "";
	snprintf(p, sizeof(p), "%s/secret", outside);
	int fd = open(p, O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) != 6 || memcmp(buf, "secret", 6) != 0)
		abort();
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	if (size > 4096)
		return 0;
	char* rel = malloc(size + 1);
	if (!rel)
		return 0;
	memcpy(rel, data, size);
	rel[size] = '\0';
	char err[512];

	/* A name people would misread is never opened, listed or created. */
	size_t at;
	uint32_t cp;
	bool readable_name = text_name_check(rel, strlen(rel), &at, &cp) == TEXT_NAME_OK;

	long long bytes = 0;
	int fd = safe_input_open(root, rel, 1 << 20, &bytes, err, sizeof(err));
	if (fd >= 0) {
		if (!readable_name)
			abort();
		check_inside(fd);
		close(fd);
	}

	struct safe_entry* entries = NULL;
	size_t n = 0;
	bool truncated = false;
	if (safe_dir_list(root, rel, 64, &entries, &n, &truncated, err, sizeof(err)) == 0) {
		if (!readable_name)
			abort();
		free(entries);
	}

	struct safe_output* out = NULL;
	if (safe_output_open_under(root, rel, 16, &out, err, sizeof(err)) == 0) {
		/* A new file, inside the root: then take it away again, so the
		 * next input sees the same tree. */
		if (!readable_name)
			abort();
		check_inside(safe_output_fd(out));
		safe_output_abort(out);
	}
	check_outside_untouched();
	free(rel);
	return 0;
}
