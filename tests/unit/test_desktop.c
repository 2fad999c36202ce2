/* Unit tests for the desktop helpers (desktop/): PATH lookup,
 * -displayfd parsing, --launch scripts, the ticket lock's FIFO order; the
 * doctor's file checks (no display needed). */
#include "desktop/desktop.h"
#include "desktop/desktop_private.h"
#include "server/doctor.h"
#include "base/options.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void test_find_program(void)
{
	char out[PATH_MAX];
	char dir[] = "/tmp/deskd-core-test-XXXXXX";
	TST_CHECK(mkdtemp(dir) != NULL);
	char exe[PATH_MAX], plain[PATH_MAX], path[3 * PATH_MAX];
	snprintf(exe, sizeof(exe), "%s/tool", dir);
	snprintf(plain, sizeof(plain), "%s/data", dir);
	FILE* f = fopen(exe, "w");
	TST_CHECK(f != NULL);
	fclose(f);
	chmod(exe, 0755);
	f = fopen(plain, "w");
	fclose(f);
	chmod(plain, 0644);

	snprintf(path, sizeof(path), "/nonexistent:%s:/usr/bin", dir);
	TST_EQ_INT(desktop_find_program("tool", path, out, sizeof(out)), 0);
	TST_EQ_STR(out, exe);
	/* Not executable, or a directory: not found. */
	TST_EQ_INT(desktop_find_program("data", path, out, sizeof(out)), -ENOENT);
	TST_EQ_INT(desktop_find_program("deskd-core-test-none", path, out, sizeof(out)), -ENOENT);
	/* A name with a slash is taken as is. */
	TST_EQ_INT(desktop_find_program(exe, NULL, out, sizeof(out)), 0);
	TST_EQ_STR(out, exe);
	TST_EQ_INT(desktop_find_program(plain, NULL, out, sizeof(out)), -ENOENT);
	TST_EQ_INT(desktop_find_program(dir, NULL, out, sizeof(out)), -ENOENT);
	TST_EQ_INT(desktop_find_program("", path, out, sizeof(out)), -ENOENT);
	/* Too small a buffer. */
	TST_EQ_INT(desktop_find_program("tool", path, out, 4), -ENAMETOOLONG);
	/* The default PATH finds sh. */
	TST_EQ_INT(desktop_find_program("sh", NULL, out, sizeof(out)), 0);
	/* First match wins. */
	snprintf(path, sizeof(path), "%s:%s", dir, dir);
	TST_EQ_INT(desktop_find_program("tool", path, out, sizeof(out)), 0);
	TST_EQ_STR(out, exe);

	unlink(exe);
	unlink(plain);
	rmdir(dir);
}

static void test_parse_display_number(void)
{
	TST_EQ_INT(desktop_parse_display_number("0\n", 2), 0);
	TST_EQ_INT(desktop_parse_display_number("12\n", 3), 12);
	TST_EQ_INT(desktop_parse_display_number("12\nrest", 7), 12);
	TST_EQ_INT(desktop_parse_display_number("12", 2), -EINVAL);	/* incomplete */
	TST_EQ_INT(desktop_parse_display_number("", 0), -EINVAL);
	TST_EQ_INT(desktop_parse_display_number("\n", 1), -EINVAL);
	TST_EQ_INT(desktop_parse_display_number("x1\n", 3), -EINVAL);
	TST_EQ_INT(desktop_parse_display_number("1x\n", 3), -EINVAL);
	TST_EQ_INT(desktop_parse_display_number("-1\n", 3), -EINVAL);
	TST_EQ_INT(desktop_parse_display_number("99999999999\n", 12), -EINVAL);
}

static void test_launch_script(void)
{
	char out[64];
	TST_EQ_INT(desktop_launch_script("xterm", out, sizeof(out)), 1);
	TST_EQ_STR(out, "exec xterm");
	TST_EQ_INT(desktop_launch_script("xterm -geometry 80x24 -e top", out, sizeof(out)), 1);
	TST_EQ_STR(out, "exec xterm -geometry 80x24 -e top");
	TST_EQ_INT(desktop_launch_script("sleep 1; xterm", out, sizeof(out)), 0);
	TST_EQ_STR(out, "sleep 1; xterm");
	TST_EQ_INT(desktop_launch_script("a && b", out, sizeof(out)), 0);
	TST_EQ_INT(desktop_launch_script("xterm -title 'a b'", out, sizeof(out)), 0);
	TST_EQ_INT(desktop_launch_script("FOO=1 app", out, sizeof(out)), 0);
	TST_EQ_INT(desktop_launch_script("app > log", out, sizeof(out)), 0);
	TST_EQ_INT(desktop_launch_script("echo $HOME", out, sizeof(out)), 0);
	TST_EQ_INT(desktop_launch_script("  ", out, sizeof(out)), 0);
	TST_EQ_INT(desktop_launch_script("xterm", out, 6), -ENAMETOOLONG);
}

/* The ticket lock: waiters get the lock in the order they asked for it. */
#define LOCK_THREADS 8
static int order[LOCK_THREADS], n_order;
static pthread_mutex_t order_mutex = PTHREAD_MUTEX_INITIALIZER;

static void* lock_worker(void* ud)
{
	int id = (int)(long)ud;
	desktop_lock();
	order[n_order++] = id;	/* under the desktop lock */
	desktop_unlock();
	return NULL;
}

/* --allow-launch: a path allows that file, a name the file it finds on
 * PATH (after symlinks), nothing else of that name; none given on a
 * display deskd did not start: nothing. */
static void test_launch_allowed(void)
{
	char err[256], dir[] = "/tmp/deskd-launch-test-XXXXXX", exe[PATH_MAX], link_path[PATH_MAX];
	TST_CHECK(mkdtemp(dir) != NULL);
	snprintf(exe, sizeof(exe), "%s/prog", dir);
	snprintf(link_path, sizeof(link_path), "%s/alias", dir);
	FILE* f = fopen(exe, "w");
	TST_CHECK(f != NULL);
	fclose(f);
	chmod(exe, 0755);
	TST_EQ_INT(symlink(exe, link_path), 0);

	desktop_configure(&(struct desktop_config){ 0 });
	/* Not started: not embedded, so nothing without --allow-launch. */
	TST_EQ_INT(desktop_launch_allowed(exe, err, sizeof(err)), -EPERM);
	TST_CHECK(strstr(err, "--allow-launch prog") != NULL);

	/* A second directory with another file of the same name. */
	char other_dir[PATH_MAX], other[PATH_MAX + 8], sh_copy[PATH_MAX];
	snprintf(other_dir, sizeof(other_dir), "%s/other", dir);
	snprintf(other, sizeof(other), "%s/prog", other_dir);
	snprintf(sh_copy, sizeof(sh_copy), "%s/sh", dir);
	TST_EQ_INT(mkdir(other_dir, 0700), 0);
	f = fopen(other, "w");
	TST_CHECK(f != NULL);
	fclose(f);
	chmod(other, 0755);
	char* saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	setenv("PATH", dir, 1);
	char* allow[] = { (char*)"prog", (char*)"/bin/sh" };
	desktop_configure(&(struct desktop_config){ .allow_launch = allow, .n_allow_launch = 2 });
	TST_EQ_INT(desktop_launch_allowed(exe, err, sizeof(err)), 0);	/* found on PATH */
	TST_EQ_INT(desktop_launch_allowed(link_path, err, sizeof(err)), 0);	/* the same file */
	TST_EQ_INT(desktop_launch_allowed(other, err, sizeof(err)), -EPERM);	/* same name only */
	TST_CHECK(strstr(err, "other/prog is not allowed") != NULL);
	TST_EQ_INT(desktop_launch_allowed("/bin/sh", err, sizeof(err)), 0);
	TST_EQ_INT(desktop_launch_allowed("/usr/bin/env", err, sizeof(err)), -EPERM);
	TST_EQ_INT(desktop_launch_allowed(sh_copy, err, sizeof(err)), -EPERM);	/* does not exist */
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	desktop_configure(&(struct desktop_config){ 0 });
	unlink(other);
	rmdir(other_dir);
	unlink(link_path);
	unlink(exe);
	rmdir(dir);
}

/* launch's env rule: code-loading variables refused only with an
 * allow-list, naming the variable; malformed calls fail the same either way. */
static void test_launch_check(void)
{
	char err[512];
	char* argv[] = { (char*)"xclock", NULL };
	char* env[4] = { NULL };
	struct desktop_launch_params p = { .argv = argv, .argc = 1, .env = env };
	const char* refused[] = { "LD_PRELOAD=/x.so", "LD_=1", "PATH=/tmp", "PYTHONPATH=/x",
		"GTK3_MODULES=x", "GLIBC_TUNABLES=x", "NODE_OPTIONS=-r x", "BASH_ENV=/x",
		"__EGL_VENDOR_LIBRARY_DIRS=/x", "OPENSSL_CONF=/x" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		env[0] = (char*)"LANG=C";
		env[1] = (char*)refused[i];
		p.n_env = 2;
		TST_EQ_INT(desktop_launch_check(&p, false, err, sizeof(err)), 0);
		TST_EQ_INT(desktop_launch_check(&p, true, err, sizeof(err)), -EPERM);
		char want[128];
		snprintf(want, sizeof(want), "env may not set %.*s while --allow-launch is in force: ",
				(int)strcspn(refused[i], "="), refused[i]);
		TST_CHECK(strncmp(err, want, strlen(want)) == 0);
	}
	const char* passed[] = { "LD=1", "LDX_A=1", "HOSTALIASES=/h", "TZ=UTC", "HOME=/tmp",
		"XDG_CONFIG_HOME=/tmp", "GDK_SCALE=2", "QT_SCALE_FACTOR=2", "PATHS=1", "MYPATH=/x" };
	for (size_t i = 0; i < sizeof(passed) / sizeof(passed[0]); i++) {
		env[0] = (char*)passed[i];
		p.n_env = 1;
		TST_EQ_INT(desktop_launch_check(&p, true, err, sizeof(err)), 0);
	}
	/* Malformed first, whatever the list. */
	env[0] = (char*)"LD_PRELOAD=/x.so";
	env[1] = (char*)"DISPLAY=:9";
	p.n_env = 2;
	TST_EQ_INT(desktop_launch_check(&p, true, err, sizeof(err)), -EINVAL);
	TST_CHECK(strstr(err, "DISPLAY") != NULL);
	p.n_env = 0;
	p.argc = 0;
	TST_EQ_INT(desktop_launch_check(&p, true, err, sizeof(err)), -EINVAL);
}

static void test_ticket_lock(void)
{
	pthread_t threads[LOCK_THREADS];
	desktop_lock();
	for (int i = 0; i < LOCK_THREADS; i++) {
		pthread_create(&threads[i], NULL, lock_worker, (void*)(long)i);
		/* Let thread i take its ticket before thread i+1 starts. */
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	desktop_unlock();
	for (int i = 0; i < LOCK_THREADS; i++)
		pthread_join(threads[i], NULL);
	pthread_mutex_lock(&order_mutex);
	TST_EQ_INT(n_order, LOCK_THREADS);
	for (int i = 0; i < LOCK_THREADS; i++)
		TST_EQ_INT(order[i], i);
	pthread_mutex_unlock(&order_mutex);

	/* Many threads hammering: mutual exclusion holds. */
	n_order = 0;
	pthread_t more[LOCK_THREADS];
	for (int i = 0; i < LOCK_THREADS; i++)
		pthread_create(&more[i], NULL, lock_worker, (void*)(long)i);
	for (int i = 0; i < LOCK_THREADS; i++)
		pthread_join(more[i], NULL);
	TST_EQ_INT(n_order, LOCK_THREADS);
}

static void test_not_started(void)
{
	int w = -1, h = -1;
	TST_EQ_STR(desktop_display_name(), "");
	TST_CHECK(!desktop_available());
	desktop_screen_size(&w, &h);
	TST_EQ_INT(w, 0);
	TST_EQ_INT(h, 0);
	desktop_stop();	/* idempotent before start */
}

static json_t* find_check(json_t* report, const char* name)
{
	size_t i;
	json_t* c;
	json_array_foreach(json_object_get(report, "checks"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
			return c;
	return NULL;
}

static bool check_ok(json_t* report, const char* name)
{
	json_t* c = find_check(report, name);
	return c && json_is_true(json_object_get(c, "ok"));
}

static void test_doctor_files(void)
{
	struct options o;
	char err[256];
	char dir[] = "/tmp/deskd-core-doctor-XXXXXX";
	TST_CHECK(mkdtemp(dir) != NULL);
	char** argv = (char**)(const char*[]){ "deskd", "doctor", "--listen", "127.0.0.1:0",
		"--data-dir", dir, NULL };
	TST_EQ_INT(options_parse(&o, 6, argv, err, sizeof(err)), 0);

	json_t* r = doctor_run(&o, NULL, false);
	TST_CHECK(r != NULL);
	TST_CHECK(json_is_false(json_object_get(r, "healthy")));	/* no display */
	TST_CHECK(!check_ok(r, "display"));
	TST_CHECK(!check_ok(r, "XTEST"));
	TST_CHECK(check_ok(r, "listen port"));
	TST_CHECK(check_ok(r, "data dir"));
	TST_CHECK(check_ok(r, "token file"));	/* absent: generated later */
	json_decref(r);

	/* A group-writable data dir and a readable token file fail. */
	char token[PATH_MAX];
	snprintf(token, sizeof(token), "%s/token", dir);
	int fd = open(token, O_WRONLY | O_CREAT | O_EXCL, 0600);
	TST_CHECK(fd >= 0);
	close(fd);
	chmod(token, 0640);
	chmod(dir, 0770);
	r = doctor_run(&o, NULL, false);
	TST_CHECK(!check_ok(r, "data dir"));
	TST_CHECK(!check_ok(r, "token file"));
	json_decref(r);

	/* 0755 is only a note; 0600 is fine. */
	chmod(token, 0600);
	chmod(dir, 0755);
	r = doctor_run(&o, NULL, false);
	TST_CHECK(check_ok(r, "data dir"));
	TST_CHECK(strstr(json_string_value(json_object_get(find_check(r, "data dir"), "detail")),
			"0700 recommended") != NULL);
	TST_CHECK(check_ok(r, "token file"));
	json_decref(r);

	/* A data dir that does not exist yet is creatable under a writable parent. */
	char sub[PATH_MAX];
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	free(o.data_dir);
	o.data_dir = strdup(sub);
	r = doctor_run(&o, NULL, false);
	TST_CHECK(check_ok(r, "data dir"));
	json_decref(r);

	/* A file in the way is not a directory. */
	free(o.data_dir);
	o.data_dir = strdup(token);
	r = doctor_run(&o, NULL, false);
	TST_CHECK(!check_ok(r, "data dir"));
	json_decref(r);

	unlink(token);
	rmdir(dir);
	options_deinit(&o);
}

/* The one mapping rule, both ways: floor, also left of or above a target. */
static void test_coordinates(void)
{
	/* Round trips are exact at scale 1. */
	for (int v = -5; v < 5; v++) {
		TST_EQ_INT(desktop_map(v, 1280, 1280), v);
		TST_EQ_INT(desktop_unmap(v, 1280, 1280), v);
	}
	/* 1280 -> 640: two desktop pixels per image pixel. */
	TST_EQ_INT(desktop_map(100, 1280, 640), 200);
	TST_EQ_INT(desktop_unmap(201, 1280, 640), 100);
	TST_EQ_INT(desktop_unmap(-1, 1280, 640), -1);
	TST_EQ_INT(desktop_unmap(-2, 1280, 640), -1);
	TST_EQ_INT(desktop_unmap(-3, 1280, 640), -2);
	/* 1920 -> 1280 (2/3): image pixel v lands on floor(1.5 v). */
	TST_EQ_INT(desktop_map(3, 1920, 1280), 4);
	TST_EQ_INT(desktop_unmap(4, 1920, 1280), 3);
	TST_EQ_INT(desktop_unmap(5, 1920, 1280), 3);	/* between 4 and 6 */
	TST_EQ_INT(desktop_map(-1, 1920, 1280), -2);
	TST_EQ_INT(desktop_unmap(-2, 1920, 1280), -1);
	TST_EQ_INT(desktop_unmap(-1, 1920, 1280), -1);
	/* The inverse is exact: a click at v reports its cursor at v, at any
	 * scale, also left of and above the target. */
	const int sizes[][2] = { { 1280, 474 }, { 1920, 1280 }, { 1366, 1365 }, { 7, 3 } };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int v = -600; v < 600; v++)
			TST_EQ_INT(desktop_unmap(desktop_map(v, sizes[s][0], sizes[s][1]),
					sizes[s][0], sizes[s][1]), v);
	int w, h;
	desktop_scaled_size(1920, 1080, 1280, &w, &h);
	TST_EQ_INT(w, 1280);
	TST_EQ_INT(h, 720);
}

static const char* env_get(char** env, const char* name)
{
	size_t n = strlen(name);
	for (char** e = env; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* A program on a GNOME desktop: the socket's path, Wayland toolkits (an
 * inherited GDK_BACKEND dropped, the caller's own kept), no DISPLAY; the
 * compositor's own processes (display "") get no DISPLAY either. */
static void test_env_gnome(void)
{
	setenv("DISPLAY", ":77", 1);
	setenv("GDK_BACKEND", "x11", 1);
	const char* addr = "gnome:unix:path=/tmp/r/bus?pipewire=/tmp/r/pipewire-0&wayland=/tmp/r/wl";
	char** env = desktop__env_build(addr, NULL, 0);
	TST_CHECK(env != NULL);
	TST_EQ_STR(env_get(env, "WAYLAND_DISPLAY"), "/tmp/r/wl");
	TST_EQ_STR(env_get(env, "GDK_BACKEND"), "wayland");
	TST_EQ_STR(env_get(env, "QT_QPA_PLATFORM"), "wayland");
	TST_CHECK(env_get(env, "DISPLAY") == NULL);
	desktop__env_free(env);
	char* extra[] = { (char*)"GDK_BACKEND=x11,wayland" };
	env = desktop__env_build(addr, extra, 1);
	TST_EQ_STR(env_get(env, "GDK_BACKEND"), "x11,wayland");
	desktop__env_free(env);
	env = desktop__env_build("", NULL, 0);
	TST_CHECK(env_get(env, "DISPLAY") == NULL);
	TST_EQ_STR(env_get(env, "GDK_BACKEND"), "x11");	/* only GNOME's programs lose it */
	desktop__env_free(env);
	env = desktop__env_build(":5", NULL, 0);
	TST_EQ_STR(env_get(env, "DISPLAY"), ":5");
	desktop__env_free(env);
	unsetenv("DISPLAY");
	unsetenv("GDK_BACKEND");
}

int main(void)
{
	test_env_gnome();
	test_coordinates();
	test_not_started();
	test_find_program();
	test_parse_display_number();
	test_launch_script();
	test_launch_allowed();
	test_launch_check();
	test_ticket_lock();
	test_doctor_files();
	TST_END();
}
