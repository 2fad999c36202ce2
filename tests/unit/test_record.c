/* Unit tests for record/: the safe-output library (DESIGN.md section 8),
 * and the recorder on a private Xvfb (when there is one). */
#define _GNU_SOURCE
#include "record/record.h"
#include "record/record_private.h"
#include "tests/unit/tst.h"
#include "tests/unit/xvfb.h"

#include <X11/Xlib.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[256];	/* canonical temp dir of this run */

#define pathf(out, fmt, a) snprintf(out, PATH_MAX, fmt, base, a)

static void write_file(const char* path, const char* text)
{
	FILE* f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static bool file_equals(const char* path, const char* text)
{
	char buf[256] = "";
	FILE* f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strcmp(buf, text) == 0;
}

/* How many .deskd-staging-* entries are in dir? */
static int count_staging(const char* dir)
{
	DIR* d = opendir(dir);
	int n = 0;
	if (!d)
		return -1;
	struct dirent* de;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, ".deskd-staging-", 15) == 0)
			n++;
	closedir(d);
	return n;
}

static void rm_rf(const char* path)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", path);
}

static void test_publish(void)
{
	char root[PATH_MAX], out[PATH_MAX], err[512];
	char* roots[] = { root };
	struct safe_output* so = NULL;
	struct stat st;

	pathf(root, "%s/root%s", "");
	mkdir(root, 0755);
	pathf(out, "%s/root/a%s.mp4", "");

	mode_t old = umask(0);	/* the mode must not depend on the umask */
	TST_EQ_INT(safe_output_open(out, roots, 1, &so, err, sizeof(err)), 0);
	umask(old);
	TST_CHECK(so != NULL);
	if (!so)
		return;
	TST_EQ_STR(safe_output_path(so), out);
	const char* staging = safe_output_staging_path(so);
	TST_CHECK(strncmp(staging, root, strlen(root)) == 0);
	TST_CHECK(strstr(staging, "/.deskd-staging-") != NULL);
	TST_EQ_INT(lstat(staging, &st), 0);
	TST_EQ_INT(st.st_mode & 07777, 0600);
	TST_CHECK(S_ISREG(st.st_mode));
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", staging);
	*strrchr(dir, '/') = '\0';
	TST_EQ_INT(lstat(dir, &st), 0);
	TST_EQ_INT(st.st_mode & 07777, 0700);
	TST_EQ_INT(count_staging(root), 1);
	TST_EQ_INT(safe_output_write(so, "hello ", 6), 0);
	TST_EQ_INT(safe_output_write(so, "world", 5), 0);
	TST_CHECK(lstat(out, &st) < 0 && errno == ENOENT);	/* nothing before publish */
	TST_EQ_INT(safe_output_publish(so), 0);
	TST_EQ_INT(lstat(out, &st), 0);
	TST_CHECK(S_ISREG(st.st_mode));
	TST_EQ_INT(st.st_mode & 07777, 0600);
	TST_EQ_INT(st.st_nlink, 1);
	TST_CHECK(file_equals(out, "hello world"));
	TST_EQ_INT(count_staging(root), 0);

	/* With a strict umask too. */
	pathf(out, "%s/root/b%s.png", "");
	old = umask(077);
	TST_EQ_INT(safe_output_open(out, roots, 1, &so, err, sizeof(err)), 0);
	umask(old);
	TST_EQ_INT(safe_output_write(so, "x", 1), 0);
	TST_EQ_INT(safe_output_publish(so), 0);
	TST_EQ_INT(lstat(out, &st), 0);
	TST_EQ_INT(st.st_mode & 07777, 0600);

	/* libav writes through the staging path: that must work too. */
	pathf(out, "%s/root/c%s.mp4", "");
	TST_EQ_INT(safe_output_open(out, roots, 1, &so, err, sizeof(err)), 0);
	write_file(safe_output_staging_path(so), "via path");
	TST_EQ_INT(safe_output_publish(so), 0);
	TST_CHECK(file_equals(out, "via path"));
	TST_EQ_INT(lstat(out, &st), 0);
	TST_EQ_INT(st.st_mode & 07777, 0600);

	/* Abort leaves nothing. */
	pathf(out, "%s/root/d%s.mp4", "");
	TST_EQ_INT(safe_output_open(out, roots, 1, &so, err, sizeof(err)), 0);
	TST_EQ_INT(safe_output_write(so, "zzz", 3), 0);
	safe_output_abort(so);
	TST_CHECK(lstat(out, &st) < 0 && errno == ENOENT);
	TST_EQ_INT(count_staging(root), 0);
	safe_output_abort(NULL);

	/* A subdirectory of a root is fine; a root of "/" allows anything. */
	char sub[PATH_MAX];
	pathf(sub, "%s/root/sub%s", "");
	mkdir(sub, 0700);
	pathf(out, "%s/root/sub/e%s.mp4", "");
	TST_EQ_INT(safe_output_open(out, roots, 1, &so, err, sizeof(err)), 0);
	TST_EQ_INT(count_staging(sub), 1);
	TST_EQ_INT(safe_output_publish(so), 0);
	TST_EQ_INT(count_staging(sub), 0);
	char* slash[] = { (char*)"/" };
	pathf(out, "%s/root/sub/f%s.mp4", "");
	TST_EQ_INT(safe_output_open(out, slash, 1, &so, err, sizeof(err)), 0);
	safe_output_abort(so);
}

static void expect_refusal(const char* out, char* const* roots, int n_roots,
		int expected, const char* needle, int line)
{
	char err[512] = "";
	struct safe_output* so = (struct safe_output*)1;
	int rc = safe_output_open(out, roots, n_roots, &so, err, sizeof(err));
	if (rc != expected || so != NULL || (needle && !strstr(err, needle))) {
		tst_failed++;
		fprintf(stderr, "line %d: %s: rc %d (want %d), err '%s' (want '%s')\n",
				line, out, rc, expected, err, needle ? needle : "");
		if (rc == 0 && so)
			safe_output_abort(so);
	} else {
		tst_passed++;
	}
}

#define REFUSE(out, expected, needle) \
	expect_refusal(out, roots, 1, expected, needle, __LINE__)

static void test_refusals(void)
{
	char root[PATH_MAX], p[PATH_MAX], target[PATH_MAX];
	char* roots[] = { root };
	struct stat st;

	pathf(root, "%s/r%s", "");
	mkdir(root, 0755);

	/* An existing file is never replaced, nor touched. */
	pathf(p, "%s/r/exists%s.mp4", "");
	write_file(p, "original");
	REFUSE(p, -EEXIST, "already exists");
	TST_CHECK(file_equals(p, "original"));

	/* A symlink to a file, and a dangling symlink. */
	pathf(target, "%s/r/target%s", "");
	write_file(target, "target");
	pathf(p, "%s/r/link%s.mp4", "");
	TST_EQ_INT(symlink(target, p), 0);
	REFUSE(p, -EEXIST, "already exists");
	TST_EQ_INT(lstat(p, &st), 0);
	TST_CHECK(S_ISLNK(st.st_mode));
	TST_CHECK(file_equals(target, "target"));
	pathf(p, "%s/r/dangling%s.mp4", "");
	TST_EQ_INT(symlink("/nonexistent/deskd-nowhere", p), 0);
	REFUSE(p, -EEXIST, "already exists");
	TST_EQ_INT(lstat(p, &st), 0);
	TST_CHECK(S_ISLNK(st.st_mode));
	TST_CHECK(lstat("/nonexistent/deskd-nowhere", &st) < 0);

	/* A symlinked parent, '..', '.', '//', relative paths. */
	char real[PATH_MAX], link[PATH_MAX];
	pathf(real, "%s/r/real%s", "");
	mkdir(real, 0755);
	pathf(link, "%s/r/linkdir%s", "");
	TST_EQ_INT(symlink(real, link), 0);
	pathf(p, "%s/r/linkdir/x%s.mp4", "");
	REFUSE(p, -EINVAL, "not canonical");
	TST_CHECK(lstat(p, &st) < 0);
	pathf(p, "%s/r/real/../x%s.mp4", "");
	REFUSE(p, -EINVAL, "not canonical");
	pathf(p, "%s/r/./x%s.mp4", "");
	REFUSE(p, -EINVAL, "not canonical");
	pathf(p, "%s/r//x%s.mp4", "");
	REFUSE(p, -EINVAL, "not canonical");
	REFUSE("x.mp4", -EINVAL, "absolute");
	REFUSE("r/x.mp4", -EINVAL, "absolute");
	REFUSE("", -EINVAL, "empty");
	REFUSE(NULL, -EINVAL, "empty");
	pathf(p, "%s/r/%s", "");
	REFUSE(p, -EINVAL, "must name a file");
	pathf(p, "%s/r/%s..", "");
	REFUSE(p, -EINVAL, "must name a file");
	pathf(p, "%s/r/.deskd-staging-%s", "abc");
	REFUSE(p, -EINVAL, "reserved");

	/* The parent must exist and be a directory. */
	pathf(p, "%s/r/nodir/x%s.mp4", "");
	REFUSE(p, -EINVAL, "does not exist");
	pathf(p, "%s/r/exists.mp4/x%s.mp4", "");
	REFUSE(p, -EINVAL, "not a directory");

	/* Outside the roots; the prefix trick /r2 vs /r. */
	pathf(p, "%s/outside%s", "");
	mkdir(p, 0755);
	pathf(p, "%s/outside/x%s.mp4", "");
	REFUSE(p, -EINVAL, "not under an output root");
	pathf(p, "%s/r2%s", "");
	mkdir(p, 0755);
	pathf(p, "%s/r2/x%s.mp4", "");
	REFUSE(p, -EINVAL, "not under an output root");
	pathf(p, "%s/rx%s.mp4", "");	/* a sibling file sharing the prefix */
	REFUSE(p, -EINVAL, "not under an output root");
	REFUSE("/etc/deskd-x.mp4", -EINVAL, "not under an output root");
	expect_refusal("/tmp/x.mp4", roots, 0, -EINVAL, "not under an output root", __LINE__);

	/* A root given through a symlink or with a trailing slash still works
	 * (roots are compared canonically); a missing root matches nothing. */
	char via[PATH_MAX], slashed[PATH_MAX];
	pathf(via, "%s/rootlink%s", "");
	pathf(target, "%s/r%s", "");
	TST_EQ_INT(symlink(target, via), 0);
	pathf(slashed, "%s/r/%s", "");
	char missing[] = "/nonexistent/deskd-root";
	char* alt[] = { missing, via, slashed };
	struct safe_output* so = NULL;
	char err[512];
	pathf(p, "%s/r/ok%s.mp4", "");
	TST_EQ_INT(safe_output_open(p, alt + 1, 1, &so, err, sizeof(err)), 0);
	safe_output_abort(so);
	TST_EQ_INT(safe_output_open(p, alt + 2, 1, &so, err, sizeof(err)), 0);
	safe_output_abort(so);
	TST_EQ_INT(safe_output_open(p, alt, 1, &so, err, sizeof(err)), -EINVAL);
	TST_EQ_INT(count_staging(root), 0);
}

static void test_publish_race(void)
{
	char root[PATH_MAX], out[PATH_MAX], err[512];
	char* roots[] = { root };
	struct safe_output* so = NULL;
	struct stat st;

	pathf(root, "%s/race%s", "");
	mkdir(root, 0755);

	/* A file appears between open and publish. */
	pathf(out, "%s/race/a%s.mp4", "");
	TST_EQ_INT(safe_output_open(out, roots, 1, &so, err, sizeof(err)), 0);
	TST_EQ_INT(safe_output_write(so, "ours", 4), 0);
	write_file(out, "theirs");
	TST_EQ_INT(safe_output_publish(so), -EEXIST);
	TST_CHECK(file_equals(out, "theirs"));
	TST_EQ_INT(count_staging(root), 0);

	/* A dangling symlink appears: still not replaced, nothing written through it. */
	char nowhere[PATH_MAX];
	pathf(nowhere, "%s/race/nowhere%s", "");
	pathf(out, "%s/race/b%s.mp4", "");
	TST_EQ_INT(safe_output_open(out, roots, 1, &so, err, sizeof(err)), 0);
	TST_EQ_INT(safe_output_write(so, "ours", 4), 0);
	TST_EQ_INT(symlink(nowhere, out), 0);
	TST_EQ_INT(safe_output_publish(so), -EEXIST);
	TST_EQ_INT(lstat(out, &st), 0);
	TST_CHECK(S_ISLNK(st.st_mode));
	TST_CHECK(lstat(nowhere, &st) < 0 && errno == ENOENT);
	TST_EQ_INT(count_staging(root), 0);

	/* Two writers for one destination: the first to publish wins. */
	struct safe_output* so2 = NULL;
	pathf(out, "%s/race/c%s.mp4", "");
	TST_EQ_INT(safe_output_open(out, roots, 1, &so, err, sizeof(err)), 0);
	TST_EQ_INT(safe_output_open(out, roots, 1, &so2, err, sizeof(err)), 0);
	TST_EQ_INT(count_staging(root), 2);
	TST_EQ_INT(safe_output_write(so, "first", 5), 0);
	TST_EQ_INT(safe_output_write(so2, "second", 6), 0);
	TST_EQ_INT(safe_output_publish(so2), 0);
	TST_EQ_INT(safe_output_publish(so), -EEXIST);
	TST_CHECK(file_equals(out, "second"));
	TST_EQ_INT(count_staging(root), 0);
}

static void test_cleanup_stale(void)
{
	char root[PATH_MAX], out[PATH_MAX], nested[PATH_MAX], p[PATH_MAX], err[512];
	char* roots[] = { root };
	struct safe_output* live = NULL;

	pathf(root, "%s/stale%s", "");
	mkdir(root, 0755);
	pathf(nested, "%s/stale/a%s", "");
	mkdir(nested, 0755);
	pathf(p, "%s/stale/a/b%s", "");
	mkdir(p, 0755);

	/* Crashed writers: a child opens stagings and dies without cleaning up
	 * (like kill -9: the kernel drops its lock). */
	pid_t pid = fork();
	if (pid == 0) {
		struct safe_output* a = NULL;
		struct safe_output* b = NULL;
		char e[256];
		char o1[PATH_MAX], o2[PATH_MAX];
		pathf(o1, "%s/stale/crash%s.mp4", "");
		pathf(o2, "%s/stale/a/b/crash%s.mp4", "");
		if (safe_output_open(o1, roots, 1, &a, e, sizeof(e)) < 0
				|| safe_output_open(o2, roots, 1, &b, e, sizeof(e)) < 0
				|| safe_output_write(a, "partial", 7) < 0)
			_exit(1);
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	TST_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	TST_EQ_INT(count_staging(root), 1);
	TST_EQ_INT(count_staging(p), 1);

	/* A live staging of ours must survive. */
	pathf(out, "%s/stale/live%s.mp4", "");
	TST_EQ_INT(safe_output_open(out, roots, 1, &live, err, sizeof(err)), 0);
	TST_EQ_INT(count_staging(root), 2);

	/* Look-alikes that are not ours: wrong mode; a subdirectory inside;
	 * a symlink named like a staging; an unmarked fresh one (being created). */
	char fake[PATH_MAX];
	pathf(fake, "%s/stale/.deskd-staging-%s", "mode755");
	mkdir(fake, 0755);
	chmod(fake, 0755);
	pathf(fake, "%s/stale/.deskd-staging-%s", "withdir");
	mkdir(fake, 0700);
	char inner[PATH_MAX + 16];
	snprintf(inner, sizeof(inner), "%s/keep", fake);
	mkdir(inner, 0700);
	pathf(fake, "%s/stale/.deskd-staging-%s", "symlink");
	TST_EQ_INT(symlink(nested, fake), 0);
	pathf(fake, "%s/stale/.deskd-staging-%s", "fresh");
	mkdir(fake, 0700);
	TST_EQ_INT(count_staging(root), 6);

	safe_output_cleanup_stale(roots, 1);
	TST_EQ_INT(count_staging(root), 5);	/* only the crashed one went */
	TST_EQ_INT(count_staging(p), 0);	/* nested crash removed too */
	TST_CHECK(access(inner, F_OK) == 0);
	struct stat st;
	TST_EQ_INT(lstat(nested, &st), 0);
	TST_CHECK(S_ISDIR(st.st_mode));
	pathf(p, "%s/stale/crash%s.mp4", "");
	TST_CHECK(lstat(p, &st) < 0);	/* never published */

	/* The live one still publishes. */
	TST_EQ_INT(safe_output_write(live, "live", 4), 0);
	TST_EQ_INT(safe_output_publish(live), 0);
	TST_CHECK(file_equals(out, "live"));
	TST_EQ_INT(count_staging(root), 4);
	safe_output_cleanup_stale(NULL, 0);
}

/* The recorder's argument and display checks (no X server needed). */
static void test_recorder_refusals(void)
{
	char root[PATH_MAX], out[PATH_MAX], err[512];
	char* roots[] = { root };
	struct recorder* rec = (struct recorder*)1;
	pathf(root, "%s/rec%s", "");
	mkdir(root, 0755);
	pathf(out, "%s/rec/x%s.mp4", "");
	struct record_params p = {
		.display = "no-such-display", .window = 0x200001, .path = out,
		.roots = roots, .n_roots = 1, .fps = 30,
	};
	p.fps = 61;
	TST_EQ_INT(record_start(&p, &rec, err, sizeof(err)), -EINVAL);
	TST_CHECK(rec == NULL);
	p.fps = 30;
	p.max_seconds = -1;
	TST_EQ_INT(record_start(&p, &rec, err, sizeof(err)), -EINVAL);
	p.max_seconds = 0;
	/* A display name that cannot parse: nothing is contacted. */
	TST_EQ_INT(record_start(&p, &rec, err, sizeof(err)), -ECONNREFUSED);
	TST_CHECK(strstr(err, "no-such-display") != NULL);
	TST_CHECK(rec == NULL);
	TST_EQ_INT(count_staging(root), 0);
	struct stat st;
	TST_CHECK(lstat(out, &st) < 0);
	record_destroy(NULL);
}

/* A stop right after the start (before the thread reached its first frame
 * slot) still gives a published video of the picture taken at the start:
 * no recording ends with no frame (it once failed with "no frame was
 * recorded", a 500 from record_stop under load). */
static void test_stop_at_once(const char* display)
{
	Display* dpy = XOpenDisplay(display);
	TST_CHECK(dpy != NULL);
	if (!dpy)
		return;
	Window w = XCreateSimpleWindow(dpy, DefaultRootWindow(dpy), 10, 10, 160, 120, 0, 0,
			0x3366cc);
	XSelectInput(dpy, w, StructureNotifyMask);
	XMapWindow(dpy, w);
	for (XEvent ev;;) {
		XNextEvent(dpy, &ev);
		if (ev.type == MapNotify)
			break;
	}
	XSync(dpy, False);
	char root[PATH_MAX], out[PATH_MAX + 16], err[512];
	char* roots[] = { root };
	pathf(root, "%s/at-once%s", "");
	mkdir(root, 0700);
	int failed = 0;
	for (int i = 0; i < 12; i++) {
		snprintf(out, sizeof(out), "%s/%d.mp4", root, i);
		struct record_params p = { .display = display, .window = (uint32_t)w, .path = out,
			.roots = roots, .n_roots = 1, .fps = 30 };
		struct recorder* rec = NULL;
		int rc = record_start(&p, &rec, err, sizeof(err));
		TST_EQ_INT(rc, 0);
		if (rc < 0) {
			fprintf(stderr, "record_start: %s\n", err);
			break;
		}
		struct record_stats st;
		rc = record_stop(rec, &st);
		if (rc != 0 || st.frames < 1 || st.state != RECORD_FINISHED) {
			if (!failed++)
				fprintf(stderr, "stop at once, round %d: %d, %llu frames: %s\n", i, rc,
						st.frames, st.message);
		}
		struct stat fs;
		if (rc == 0 && (stat(out, &fs) < 0 || fs.st_size == 0))
			failed++;
		record_destroy(rec);
		unlink(out);
	}
	TST_EQ_INT(failed, 0);
	TST_EQ_INT(count_staging(root), 0);
	XDestroyWindow(dpy, w);
	XCloseDisplay(dpy);
}

/* The libav versions for status: five named entries; the libraries as
 * major.minor.micro. */
static void test_versions(void)
{
	struct record_version v[RECORD_VERSIONS];
	memset(v, 0, sizeof(v));
	record_versions(v);
	TST_EQ_STR(v[0].library, "ffmpeg");
	TST_CHECK(v[0].version[0] != '\0');
	TST_EQ_STR(v[1].library, "libavcodec");
	TST_EQ_STR(v[4].library, "libavutil");
	for (int i = 1; i < RECORD_VERSIONS; i++) {
		unsigned a, b, c;
		char end;
		TST_EQ_INT(sscanf(v[i].version, "%u.%u.%u%c", &a, &b, &c, &end), 3);
	}
}

/* Files under a root: the walk refuses every way out, and nothing changes. */
static void test_under_root(void)
{
	char root[PATH_MAX], p[PATH_MAX], q[PATH_MAX], err[512];
	pathf(root, "%s/%s", "files-root");
	TST_EQ_INT(mkdir(root, 0700), 0);
	pathf(p, "%s/%s", "files-root/sub");
	TST_EQ_INT(mkdir(p, 0700), 0);
	pathf(p, "%s/%s", "outside.txt");
	write_file(p, "outside");
	pathf(q, "%s/%s", "files-root/link");
	TST_EQ_INT(symlink(p, q), 0);
	pathf(q, "%s/%s", "files-root/linkdir");
	TST_EQ_INT(symlink(base, q), 0);

	struct safe_output* so = NULL;
	TST_EQ_INT(safe_output_open_under(root, "sub/new.txt", 4, &so, err, sizeof(err)), 0);
	TST_EQ_INT(safe_output_write(so, "abcd", 4), 0);
	TST_EQ_INT(safe_output_write(so, "e", 1), -EFBIG);	/* past max_bytes */
	TST_EQ_INT(safe_output_publish(so), 0);
	pathf(p, "%s/%s", "files-root/sub/new.txt");
	TST_CHECK(file_equals(p, "abcd"));
	struct stat st;
	TST_EQ_INT(stat(p, &st), 0);
	TST_EQ_INT(st.st_mode & 0777, 0600);
	pathf(p, "%s/%s", "files-root/sub");
	TST_EQ_INT(count_staging(p), 0);

	static const struct { const char* rel; int rc; } refused[] = {
		{ "sub/new.txt", -EEXIST }, { "link", -EEXIST }, { "sub", -EEXIST },
		{ "linkdir/x", -ELOOP }, { "../x", -EINVAL }, { "/x", -EINVAL }, { "", -EINVAL },
		{ "a//b", -EINVAL }, { "x/", -EINVAL }, { "./x", -EINVAL }, { "nodir/x", -ENOENT },
		{ "sub/new.txt/x", -ENOTDIR }, { ".deskd-staging-x", -EINVAL },
		/* Names people would misread (TRUST R10). */
		{ "a\nb", -EINVAL }, { "sub/\xe2\x80\xaetxt.exe", -EINVAL }, { "x\x1b[2J", -EINVAL },
		{ "\xff", -EINVAL }, { "sub\xc2\x85/x", -EINVAL }, { "\xe2\x81\xa6x", -EINVAL },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		so = (struct safe_output*)1;
		err[0] = '\0';
		int rc = safe_output_open_under(root, refused[i].rel, 0, &so, err, sizeof(err));
		if (rc != refused[i].rc || so || !err[0]) {
			tst_failed++;
			fprintf(stderr, "%s:%d: '%s': %d (want %d), '%s'\n", __FILE__, __LINE__,
					refused[i].rel, rc, refused[i].rc, err);
		} else {
			tst_passed++;
		}
	}
	TST_EQ_INT(count_staging(root), 0);

	long long size = 0;
	int fd = safe_input_open(root, "sub/new.txt", 0, &size, err, sizeof(err));
	TST_CHECK(fd >= 0);
	TST_EQ_INT(size, 4);
	if (fd >= 0)
		close(fd);
	TST_EQ_INT(safe_input_open(root, "sub/new.txt", 3, &size, err, sizeof(err)), -EFBIG);
	TST_EQ_INT(safe_input_open(root, "link", 0, &size, err, sizeof(err)), -ELOOP);
	TST_EQ_INT(safe_input_open(root, "linkdir/outside.txt", 0, &size, err, sizeof(err)), -ELOOP);
	TST_EQ_INT(safe_input_open(root, "sub", 0, &size, err, sizeof(err)), -EISDIR);
	TST_EQ_INT(safe_input_open(root, "nope", 0, &size, err, sizeof(err)), -ENOENT);
	TST_EQ_INT(safe_input_open(root, "a\nb", 0, &size, err, sizeof(err)), -EINVAL);
	TST_CHECK(strstr(err, "U+000A (a control character) at byte 1") != NULL);
	TST_CHECK(strchr(err, '\n') == NULL);	/* the name is not quoted */
	/* An out path for screenshots and recordings: the same rule for the
	 * name it creates. */
	char* roots[] = { root };
	pathf(p, "%s/%s", "files-root/sub/\xe2\x80\xae" "fdp.exe");
	so = (struct safe_output*)1;
	TST_EQ_INT(safe_output_open(p, roots, 1, &so, err, sizeof(err)), -EINVAL);
	TST_CHECK(strstr(err, "U+202E") != NULL);

	struct safe_entry* list = NULL;
	size_t n = 0;
	bool truncated = true;
	TST_EQ_INT(safe_dir_list(root, "", 100, &list, &n, &truncated, err, sizeof(err)), 0);
	TST_EQ_INT(n, 3);
	TST_CHECK(!truncated);
	if (n == 3) {
		TST_EQ_STR(list[0].name, "link");
		TST_EQ_INT(list[0].type, SAFE_ENTRY_SYMLINK);
		TST_EQ_STR(list[2].name, "sub");
		TST_EQ_INT(list[2].type, SAFE_ENTRY_DIR);
	}
	free(list);
	TST_EQ_INT(safe_dir_list(root, "sub/", 100, &list, &n, &truncated, err, sizeof(err)), 0);
	TST_EQ_INT(n, 1);
	TST_EQ_INT(list[0].size, 4);
	free(list);
	TST_EQ_INT(safe_dir_list(root, "", 2, &list, &n, &truncated, err, sizeof(err)), 0);
	TST_EQ_INT(n, 2);
	TST_CHECK(truncated);
	free(list);
	TST_EQ_INT(safe_dir_list(root, "linkdir", 100, &list, &n, &truncated, err, sizeof(err)),
			-ELOOP);

	/* A published file has one link (the staging name is gone). A hard
	 * link planted in the root to a file outside is not served, and an
	 * upload onto its name replaces nothing (TRUST R9). */
	pathf(p, "%s/%s", "files-root/sub/new.txt");
	TST_EQ_INT(stat(p, &st), 0);
	TST_EQ_INT(st.st_nlink, 1);
	pathf(p, "%s/%s", "outside.txt");
	pathf(q, "%s/%s", "files-root/sub/hard");
	TST_EQ_INT(link(p, q), 0);
	err[0] = '\0';
	TST_EQ_INT(safe_input_open(root, "sub/hard", 0, &size, err, sizeof(err)), -EMLINK);
	TST_CHECK(strstr(err, "has other hard links") != NULL);
	so = (struct safe_output*)1;
	TST_EQ_INT(safe_output_open_under(root, "sub/hard", 0, &so, err, sizeof(err)), -EEXIST);
	TST_CHECK(so == NULL);
	TST_EQ_INT(unlink(q), 0);
	TST_CHECK(file_equals(p, "outside"));
}

/* The hand-written BGRX -> I420 against BT.709 limited range in doubles:
 * Y within 1 of the exact value, U and V of the 2x2 block's mean within 1;
 * black, white and grey exact. */
static void test_bgrx_to_i420(void)
{
	enum { W = 70, H = 34, STRIDE = 4 * W + 12 };
	static uint8_t src[STRIDE * H], y[W * H], u[W * H / 4], v[W * H / 4];
	unsigned seed = 12345;
	for (size_t i = 0; i < sizeof(src); i++) {
		seed = seed * 1103515245u + 12345u;
		src[i] = (uint8_t)(seed >> 16);
	}
	/* corners: black, white, mid grey, pure blue (2x2 blocks each) */
	const uint8_t px[4][3] = { { 0, 0, 0 }, { 255, 255, 255 }, { 128, 128, 128 }, { 255, 0, 0 } };
	for (int k = 0; k < 4; k++)
		for (int j = 0; j < 2; j++)
			for (int i = 0; i < 2; i++)
				memcpy(src + (size_t)j * STRIDE + 4 * (size_t)(2 * k + i), px[k], 3);
	uint8_t* dst[3] = { y, u, v };
	int ls[3] = { W, W / 2, W / 2 };
	record__bgrx_to_i420(src, STRIDE, W, H, dst, ls);
	const double kr = 0.2126, kb = 0.0722, kg = 1 - kr - kb;
	double worst_y = 0, worst_c = 0;
	for (int j = 0; j < H; j++) {
		for (int i = 0; i < W; i++) {
			const uint8_t* p = src + (size_t)j * STRIDE + 4 * (size_t)i;
			double ey = 16 + 219.0 / 255 * (kr * p[2] + kg * p[1] + kb * p[0]);
			worst_y = fmax(worst_y, fabs(y[j * W + i] - ey));
		}
	}
	for (int j = 0; j < H / 2; j++) {
		for (int i = 0; i < W / 2; i++) {
			double c[3] = { 0, 0, 0 };
			for (int dy = 0; dy < 2; dy++)
				for (int dx = 0; dx < 2; dx++)
					for (int k = 0; k < 3; k++)
						c[k] += src[(size_t)(2 * j + dy) * STRIDE + 4 * (size_t)(2 * i + dx) + (size_t)k] / 4.0;
			double ly = kr * c[2] + kg * c[1] + kb * c[0];
			double eu = 128 + 224.0 / 255 * (c[0] - ly) / (2 * (1 - kb));
			double ev = 128 + 224.0 / 255 * (c[2] - ly) / (2 * (1 - kr));
			worst_c = fmax(worst_c, fabs(u[j * W / 2 + i] - eu));
			worst_c = fmax(worst_c, fabs(v[j * W / 2 + i] - ev));
		}
	}
	TST_CHECK(worst_y <= 1.0);
	TST_CHECK(worst_c <= 1.0);
	TST_EQ_INT(y[0], 16);
	TST_EQ_INT(u[0], 128);
	TST_EQ_INT(v[0], 128);
	TST_EQ_INT(y[2], 235);
	TST_EQ_INT(u[1], 128);
	TST_EQ_INT(v[1], 128);
	TST_EQ_INT(u[2], 128);
	TST_EQ_INT(v[2], 128);
	TST_EQ_INT(u[3], 240);
	if (worst_y > 1.0 || worst_c > 1.0)
		printf("bgrx_to_i420: worst Y error %.2f, chroma %.2f\n", worst_y, worst_c);
}

int main(void)
{
	char tmpl[] = "/tmp/deskd-test-record-XXXXXX";
	char canon[PATH_MAX];
	if (!mkdtemp(tmpl) || !realpath(tmpl, canon) || strlen(canon) >= sizeof(base)) {
		perror("mkdtemp");
		return 1;
	}
	memcpy(base, canon, strlen(canon) + 1);
	test_publish();
	test_refusals();
	test_publish_race();
	test_cleanup_stale();
	test_recorder_refusals();
	test_versions();
	test_under_root();
	test_bgrx_to_i420();
	char display[32];
	if (xvfb_start(display, sizeof(display)) == 0) {
		test_stop_at_once(display);
		xvfb_kill(SIGTERM);
	} else {
		printf("Xvfb did not start: the recorder checks that need a display did not run\n");
	}
	rm_rf(base);
	TST_END();
}
