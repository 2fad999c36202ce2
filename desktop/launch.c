/* The launch tool's programs: checked against the policy (--allow-launch:
 * the file, by descriptor, and the env variables that load code), started
 * without a shell on the display as deskd's children, their first window
 * found by _NET_WM_PID, reaped by the watcher, listed by status and stopped
 * with deskd, with what they left in their process groups (and, through
 * xvfb.c's subreaper sweep, what left the group).
 *
 * The fork happens on a thread of its own that lives until deskd stops:
 * the children get the parent death signal, and Linux sends it when the
 * thread that forked ends, not the process (a tool call's worker thread
 * ends with the call, which would kill what it launched at once). */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "capture/capture.h"
#include "base/clock.h"
#include "base/log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAUNCH_POLL_MS 25
#define LAUNCH_OUTPUT_WAIT_MS 300	/* for an ended program's last lines to be read */
#define LAUNCH_ANCESTRY 16	/* /proc parents followed to match a window's pid */

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
/* A launched program, and whether its process group is known to be empty.
 * An entry stays while the program runs or its group has members (what it
 * started and left behind): stop signals every such group, so an entry is
 * only reused once its group is gone (TRUST R8: the list evicted an ended
 * launcher whose `sleep` lived on, and stop never signalled it). */
struct entry {
	struct desktop_launched l;
	bool group_gone;	/* ended, and its group empty: never signalled again */
};
static struct entry list[DESKTOP_LAUNCH_KEPT];
static size_t n_list;
static bool stopping;
static int spawning;	/* launches between fork and their entry */

/* The spawner thread and its one request at a time (the caller's, on its
 * stack until done). */
struct spawn_job {
	const struct desktop__spawn_args* spawn;
	pid_t result;
	bool done;
};
static pthread_t spawner;
static bool spawner_running;
static struct spawn_job* request;	/* pending, or NULL */

static int fail(char* err, size_t size, int rc, const char* fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char* err, size_t size, int rc, const char* fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return rc;
}

static void* spawner_main(void* ud)
{
	(void)ud;
	pthread_mutex_lock(&mutex);
	for (;;) {
		/* A request made before the stop is still answered: its caller
		 * waits for it. */
		if (request) {
			struct spawn_job* job = request;
			pthread_mutex_unlock(&mutex);
			pid_t pid = desktop__spawn_with(job->spawn);
			pthread_mutex_lock(&mutex);
			request = NULL;
			job->result = pid;
			job->done = true;
			pthread_cond_broadcast(&cond);
			continue;
		}
		if (stopping)
			break;
		pthread_cond_wait(&cond, &mutex);
	}
	pthread_mutex_unlock(&mutex);
	return NULL;
}

/* Run s on the spawner thread (mutex held; waits for it). */
static pid_t spawn_on_spawner(const struct desktop__spawn_args* s)
{
	if (!spawner_running) {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);	/* signals stay main's */
		int rc = pthread_create(&spawner, NULL, spawner_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rc != 0)
			return -rc;
		spawner_running = true;
	}
	while (request && !stopping)
		pthread_cond_wait(&cond, &mutex);
	if (stopping)
		return -ESHUTDOWN;
	struct spawn_job job = { .spawn = s };
	request = &job;
	pthread_cond_broadcast(&cond);
	while (!job.done)
		pthread_cond_wait(&cond, &mutex);
	return job.result;
}

/* ---- Checks (before anything starts) -------------------------------------------- */

static bool env_name_ok(const char* s, size_t n)
{
	if (n == 0 || n > DESKTOP_LAUNCH_ENV_NAME_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* The variables env may not set while --allow-launch is in force: each makes
 * a program load or run code that the variable names (a library, a module, a
 * script, another program), whatever the allowed program is: the dynamic
 * loader and libc, the shells, the language runtimes, the toolkits' and
 * drivers' module loaders, and the programs other programs run by name.
 * A name ending in '*' is a prefix.
 *
 * Only under an allow-list: without one the agent may launch any program,
 * `env LD_PRELOAD=... prog` or `sh -c` included, so refusing the variables
 * would protect nothing and would break honest uses (PYTHONPATH for a
 * script, PATH for a toolchain). With one, they would turn an allowed
 * program into any code the agent can put on disk (file_upload).
 *
 * Not refused: what changes a program's data but runs nothing it names
 * (HOSTALIASES, TZ, LANG, LC_*, XMODIFIERS, a theme name), and a program's
 * own configuration (HOME, XDG_*, its own variables): like its arguments,
 * that is the allowed program's business, so allow only programs that are
 * safe with any arguments. A table like this cannot be complete; it covers
 * the loaders most programs share (docs/DESIGN.md, launch). */
static const struct env_rule {
	const char* name;
	const char* why;
} env_refused[] = {
	{ "LD_*", "the dynamic loader loads the libraries it names (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT)" },
	{ "GLIBC_TUNABLES", "it tunes glibc's loader and malloc" },
	{ "MALLOC_*", "it tunes glibc's malloc" },
	{ "GCONV_PATH", "iconv loads its conversion modules from there" },
	{ "GETCONF_DIR", "getconf runs the programs it finds there" },
	{ "LOCPATH", "glibc reads its locale data from there" },
	{ "NLSPATH", "catgets reads message catalogs (format strings) from there" },
	{ "PATH", "programs that run others by name (execvp, system) find them there" },
	{ "SHELL", "terminals and programs that start a shell run it" },
	{ "ENV", "sh runs that file when it starts" },
	{ "BASH*", "bash runs or loads what BASH_ENV and BASH_LOADABLES_PATH name" },
	{ "SHELLOPTS", "it turns on bash's xtrace, which runs PS4" },
	{ "PS1", "the shell runs the commands in it" },
	{ "PS2", "the shell runs the commands in it" },
	{ "PS4", "the shell runs the commands in it" },
	{ "PROMPT_COMMAND", "bash runs it" },
	{ "ZDOTDIR", "zsh runs its startup files from there" },
	{ "FPATH", "ksh and zsh load functions from there" },
	{ "EDITOR", "programs that open an editor run it" },
	{ "VISUAL", "programs that open an editor run it" },
	{ "PAGER", "programs that show text in a pager run it" },
	{ "BROWSER", "programs that open a web page (xdg-open) run it" },
	{ "SSH_ASKPASS", "programs that ask for a password run it" },
	{ "SUDO_ASKPASS", "programs that ask for a password run it" },
	{ "PYTHON*", "Python runs or imports what they name (PYTHONSTARTUP, PYTHONPATH, PYTHONHOME, PYTHONUSERBASE)" },
	{ "PERL*", "Perl loads the modules and options they name (PERL5LIB, PERL5OPT)" },
	{ "RUBY*", "Ruby loads the libraries and options they name (RUBYLIB, RUBYOPT)" },
	{ "NODE_*", "Node.js loads the modules and options they name (NODE_OPTIONS, NODE_PATH)" },
	{ "LUA_*", "Lua runs or loads what they name (LUA_INIT, LUA_PATH, LUA_CPATH)" },
	{ "JAVA_TOOL_OPTIONS", "the JVM takes options (-javaagent) from it" },
	{ "_JAVA_OPTIONS", "the JVM takes options (-javaagent) from it" },
	{ "JDK_JAVA_OPTIONS", "the JVM takes options (-javaagent) from it" },
	{ "CLASSPATH", "Java loads classes from there" },
	{ "TCLLIBPATH", "Tcl loads packages from there" },
	{ "GUILE_*", "Guile loads code from there" },
	{ "GTK*", "GTK loads the modules they name (GTK_MODULES, GTK3_MODULES, GTK_PATH, GTK_IM_MODULE_FILE, GTK2_RC_FILES)" },
	{ "GIO_*", "GIO loads modules from there (GIO_EXTRA_MODULES, GIO_MODULE_DIR)" },
	{ "GDK_PIXBUF_*", "gdk-pixbuf loads the image loaders they name" },
	{ "GST_*", "GStreamer loads plugins from there (GST_PLUGIN_PATH)" },
	{ "QT_PLUGIN_PATH", "Qt loads plugins from there" },
	{ "QT_QPA_PLATFORM_PLUGIN_PATH", "Qt loads its platform plugin from there" },
	{ "QML_IMPORT_PATH", "Qt Quick imports code from there" },
	{ "QML2_IMPORT_PATH", "Qt Quick imports code from there" },
	{ "XLOCALEDIR", "Xlib loads the input method modules its locale files name" },
	{ "LIBGL_*", "Mesa loads GL drivers from there (LIBGL_DRIVERS_PATH)" },
	{ "MESA_LOADER_DRIVER_OVERRIDE", "Mesa loads the driver it names" },
	{ "__EGL_*", "libglvnd loads the vendor libraries they name" },
	{ "__GLX_*", "libglvnd loads the vendor library it names" },
	{ "GBM_BACKENDS_PATH", "libgbm loads backends from there" },
	{ "VK_*", "the Vulkan loader loads the drivers and layers they name" },
	{ "LIBVA_*", "libva loads the driver they name" },
	{ "VDPAU_*", "libvdpau loads the driver they name" },
	{ "OPENSSL_*", "OpenSSL loads the configuration, engines and providers they name" },
};

/* The rule that refuses the variable name[0..n), or NULL. */
static const struct env_rule* env_rule_for(const char* name, size_t n)
{
	for (size_t i = 0; i < sizeof(env_refused) / sizeof(env_refused[0]); i++) {
		const char* r = env_refused[i].name;
		size_t len = strlen(r);
		if (r[len - 1] == '*' ? n >= len - 1 && strncmp(name, r, len - 1) == 0
				: n == len && strncmp(name, r, len) == 0)
			return &env_refused[i];
	}
	return NULL;
}

/* Is an --allow-launch list in force? */
static bool restricted(void)
{
	const struct desktop_config* o = desktop__config();
	return o->n_allow_launch > 0;
}

int desktop_launch_check(const struct desktop_launch_params* p, bool allow_list, char* err,
		size_t size)
{
	if (p->argc == 0 || !p->argv || !p->argv[0] || !p->argv[0][0])
		return fail(err, size, -EINVAL, "argv must name a program: [\"xterm\", ...]");
	if (p->argc > DESKTOP_LAUNCH_ARGS_MAX)
		return fail(err, size, -EINVAL, "argv has %zu items; at most %d", p->argc,
				DESKTOP_LAUNCH_ARGS_MAX);
	size_t total = 0;
	for (size_t i = 0; i < p->argc; i++) {
		if (!p->argv[i])
			return fail(err, size, -EINVAL, "argv[%zu] is missing", i);
		size_t n = strlen(p->argv[i]);
		if (n > DESKTOP_LAUNCH_ARG_MAX)
			return fail(err, size, -EINVAL, "argv[%zu] is %zu bytes; at most %d", i, n,
					DESKTOP_LAUNCH_ARG_MAX);
		total += n + 1;
	}
	if (p->n_env > DESKTOP_LAUNCH_ENV_MAX)
		return fail(err, size, -EINVAL, "env has %zu variables; at most %d", p->n_env,
				DESKTOP_LAUNCH_ENV_MAX);
	for (size_t i = 0; i < p->n_env; i++) {
		const char* v = p->env[i];
		if (!v)
			return fail(err, size, -EINVAL, "env[%zu] is missing", i);
		size_t n = strcspn(v, "=");
		if (!v[n] || !env_name_ok(v, n))
			return fail(err, size, -EINVAL, "env: '%.*s' is not a variable name "
					"(letters, digits and _, not starting with a digit, at most %d)",
					(int)(n > 64 ? 64 : n), v, DESKTOP_LAUNCH_ENV_NAME_MAX);
		if (n == 7 && strncmp(v, "DISPLAY", 7) == 0)
			return fail(err, size, -EINVAL, "env may not set DISPLAY: programs start on "
					"deskd's display");
		if (strlen(v + n + 1) > DESKTOP_LAUNCH_ARG_MAX)
			return fail(err, size, -EINVAL, "env: the value of %.*s is over %d bytes",
					(int)n, v, DESKTOP_LAUNCH_ARG_MAX);
		total += strlen(v) + 1;
	}
	if (total > DESKTOP_LAUNCH_TOTAL_MAX)
		return fail(err, size, -EINVAL, "argv and env are %zu bytes together; at most %d",
				total, DESKTOP_LAUNCH_TOTAL_MAX);
	if (p->cwd) {
		struct stat st;
		if (p->cwd[0] != '/')
			return fail(err, size, -EINVAL, "cwd must be an absolute path");
		if (strlen(p->cwd) >= PATH_MAX)
			return fail(err, size, -EINVAL, "cwd is too long");
		if (stat(p->cwd, &st) != 0)
			return fail(err, size, -EINVAL, "cwd %s: %s", p->cwd, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return fail(err, size, -EINVAL, "cwd %s is not a directory", p->cwd);
	}
	/* Last: a malformed call says what is malformed first. */
	for (size_t i = 0; allow_list && i < p->n_env; i++) {
		const char* v = p->env[i];
		size_t n = strcspn(v, "=");
		const struct env_rule* r = env_rule_for(v, n);
		if (r)
			return fail(err, size, -EPERM, "env may not set %.*s while --allow-launch is "
					"in force: %s%s%s%s", (int)n, v, r->why,
					strchr(r->name, '*') ? "; every " : "",
					strchr(r->name, '*') ? r->name : "",
					strchr(r->name, '*') ? " variable is refused" : "");
	}
	return 0;
}

static const char* base_name(const char* path)
{
	const char* slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* The allow-list check of the program open at fd (found as path): the same
 * file, by identity (st_dev, st_ino), as an entry of --allow-launch. */
static int allowed_fd(const struct desktop_config* o, int fd, const char* path, char* err, size_t size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return fail(err, size, -EPERM, "%s is not allowed: it cannot be resolved", path);
	/* Files, not names: a name allows what it finds on deskd's own PATH,
	 * so neither another directory nor the caller's env PATH widens it. */
	for (int i = 0; i < o->n_allow_launch; i++) {
		const char* a = o->allow_launch[i];
		char found[PATH_MAX];
		struct stat ast;
		if (!strchr(a, '/')) {
			if (desktop_find_program(a, getenv("PATH"), found, sizeof(found)) < 0)
				continue;
			a = found;
		}
		if (stat(a, &ast) == 0 && ast.st_dev == st.st_dev && ast.st_ino == st.st_ino)
			return 0;
	}
	return fail(err, size, -EPERM, "%s is not allowed: --allow-launch lists what may be "
			"launched", path);
}

/* No allow-list: anything on the embedded desktop, nothing on an external
 * display. 1 when the list decides. */
static int without_list(const struct desktop_config* o, const char* path, char* err, size_t size)
{
	if (o->n_allow_launch > 0)
		return 1;
	if (desktop_is_embedded())
		return 0;
	return fail(err, size, -EPERM, "launching programs on an external display (%s) "
			"is off; start deskd with --allow-launch %s to allow it", desktop_is_gnome()
			? "--gnome-bus" : desktop_is_wayland() ? "--wayland-display" : "--display",
			base_name(path));
}

int desktop_launch_allowed(const char* path, char* err, size_t size)
{
	const struct desktop_config* o = desktop__config();
	int rc = without_list(o, path, err, size);
	if (rc <= 0)
		return rc;
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return fail(err, size, -EPERM, "%s is not allowed: it cannot be resolved", path);
	rc = allowed_fd(o, fd, path, err, size);
	close(fd);
	return rc;
}

/* May the program found at path run? With an allow-list, *fd is that
 * program opened once (O_PATH), checked, and what the child executes: an
 * exec by path would run whatever the path names by then (TRUST R7: a
 * symlink flipped between the check and the exec ran /bin/sh). Without
 * one, *fd is -1 and the child executes path: any program may run, and a
 * #! script keeps its path as $0 (by descriptor it is /dev/fd/N). */
static int check_program(const char* path, int* fd, char* err, size_t size)
{
	*fd = -1;
	const struct desktop_config* o = desktop__config();
	int rc = without_list(o, path, err, size);
	if (rc <= 0)
		return rc;
	int f = open(path, O_PATH | O_CLOEXEC);
	struct stat st;
	if (f < 0 || fstat(f, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
		if (f >= 0)
			close(f);
		return fail(err, size, -ENOENT, "%s is not an executable file", path);
	}
	if ((rc = allowed_fd(o, f, path, err, size)) < 0) {
		close(f);
		return rc;
	}
	*fd = f;
	return 0;
}

/* ---- The registry ------------------------------------------------------------------ */

static void describe_exit(int status, struct desktop_launched* l)
{
	l->running = false;
	l->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	l->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	l->ended = time(NULL);
}

/* Does the process group of a launched program (its pid) still have
 * members? A program that ended can leave the ones it started (a launcher);
 * Linux does not reuse a pid while a group of that id exists, so this is
 * ours (and once seen empty, the entry never asks again: the pid may be
 * reused later). EPERM: a member that changed its user; still there. */
static bool group_alive(long pid)
{
	return kill(-(pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Running, or ended with members left in its group (mutex held). */
static bool live(const struct entry* e)
{
	return e->l.running || !e->group_gone;
}

/* Reap the running ones that exited, and notice the groups that emptied
 * (mutex held). */
static void reap_locked(void)
{
	for (size_t i = 0; i < n_list; i++) {
		struct desktop_launched* l = &list[i].l;
		if (!l->running) {
			if (!list[i].group_gone && !group_alive(l->pid))
				list[i].group_gone = true;
			continue;
		}
		int status = 0;
		pid_t r = waitpid((pid_t)l->pid, &status, WNOHANG);
		if (r == (pid_t)l->pid) {
			describe_exit(status, l);
			if (l->signal)
				log_info("launched %s (pid %ld) ended by signal %s", l->program,
						l->pid, strsignal(l->signal));
			else
				log_info("launched %s (pid %ld) exited (exit code %d)", l->program,
						l->pid, l->exit_code);
		} else if (r < 0 && errno == ECHILD) {
			l->running = false;
			l->exit_code = -1;
			l->ended = time(NULL);
		}
		if (!l->running && !group_alive(l->pid))
			list[i].group_gone = true;
	}
}

void launch__reap(void)
{
	pthread_mutex_lock(&mutex);
	reap_locked();
	pthread_mutex_unlock(&mutex);
}

bool launch__tracked(pid_t pid)
{
	pthread_mutex_lock(&mutex);
	/* A program that exits between its fork and its entry is ours too:
	 * the orphan reaper waits for the next round. */
	bool found = spawning > 0;
	for (size_t i = 0; i < n_list && !found; i++)
		found = list[i].l.running && list[i].l.pid == (long)pid;
	pthread_mutex_unlock(&mutex);
	return found;
}

/* A slot for a new entry (mutex held): a free one, else that of the one
 * that ended first among those whose group is gone; NULL when every entry
 * runs or has members left. */
static struct entry* new_slot(void)
{
	if (n_list < DESKTOP_LAUNCH_KEPT)
		return &list[n_list++];
	struct entry* oldest = NULL;
	for (size_t i = 0; i < n_list; i++)
		if (!live(&list[i]) && (!oldest || list[i].l.ended < oldest->l.ended))
			oldest = &list[i];
	return oldest;
}

static struct desktop_launched* find_locked(long pid)
{
	for (size_t i = 0; i < n_list; i++)
		if (list[i].l.pid == pid)
			return &list[i].l;
	return NULL;
}

/* Running first, then the most recently ended. */
static int by_state(const void* a, const void* b)
{
	const struct desktop_launched *x = a, *y = b;
	if (x->running != y->running)
		return x->running ? -1 : 1;
	time_t tx = x->running ? x->started : x->ended, ty = y->running ? y->started : y->ended;
	return tx > ty ? -1 : tx < ty;
}

int desktop_launched_list(struct desktop_launched** out, size_t* n)
{
	pthread_mutex_lock(&mutex);
	reap_locked();
	*out = calloc(n_list ? n_list : 1, sizeof(**out));
	if (!*out) {
		pthread_mutex_unlock(&mutex);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_list; i++)
		(*out)[i] = list[i].l;
	*n = n_list;
	pthread_mutex_unlock(&mutex);
	qsort(*out, *n, sizeof(**out), by_state);
	return 0;
}

/* SIGTERM or SIGKILL to every launched program's group that is still there
 * (mutex held). */
static void signal_groups(int sig)
{
	for (size_t i = 0; i < n_list; i++) {
		const struct desktop_launched* l = &list[i].l;
		if (live(&list[i]) && kill(-(pid_t)l->pid, sig) != 0 && l->running)
			kill((pid_t)l->pid, sig);
	}
}

void launch__stop(int grace_ms)
{
	pthread_mutex_lock(&mutex);
	stopping = true;
	pthread_cond_broadcast(&cond);
	bool joined = spawner_running;
	pthread_mutex_unlock(&mutex);
	if (joined)
		pthread_join(spawner, NULL);

	pthread_mutex_lock(&mutex);
	spawner_running = false;
	reap_locked();
	for (size_t i = 0; i < n_list; i++)
		if (live(&list[i]))
			log_debug("stopping launched %s (pid %ld%s)", list[i].l.program, list[i].l.pid,
					list[i].l.running ? "" : ", ended; its process group");
	signal_groups(SIGTERM);
	int64_t end = clock_ms() + grace_ms;
	for (;;) {
		reap_locked();
		bool left = false;
		for (size_t i = 0; i < n_list && !left; i++)
			left = live(&list[i]);
		if (!left || clock_ms() >= end)
			break;
		pthread_mutex_unlock(&mutex);
		clock_sleep_ms(10);
		pthread_mutex_lock(&mutex);
	}
	for (size_t i = 0; i < n_list; i++)
		if (list[i].l.running)
			log_warn("launched %s (pid %ld) ignored SIGTERM; killing it", list[i].l.program,
					list[i].l.pid);
	signal_groups(SIGKILL);
	for (size_t i = 0; i < n_list; i++) {
		struct desktop_launched* l = &list[i].l;
		if (!l->running)
			continue;
		int status = 0;
		if (waitpid((pid_t)l->pid, &status, 0) == (pid_t)l->pid)
			describe_exit(status, l);
		else
			l->running = false;
	}
	pthread_mutex_unlock(&mutex);
}

void launch__terminate(void)
{
	pthread_mutex_lock(&mutex);
	signal_groups(SIGTERM);
	pthread_mutex_unlock(&mutex);
}

/* ---- The first window ----------------------------------------------------------------- */

/* Is pid the process `ancestor`, one of its descendants, or in its process
 * group (a launcher that forked the program and exited)? (/proc) */
static bool descends_from(long pid, long ancestor)
{
	for (int depth = 0; pid > 1 && depth < LAUNCH_ANCESTRY; depth++) {
		if (pid == ancestor)
			return true;
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		FILE* f = fopen(path, "r");
		if (!f)
			return false;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		const char* p = strrchr(buf, ')');
		long parent, group;
		if (!p || sscanf(p + 1, " %*c %ld %ld", &parent, &group) != 2)
			return false;
		if (group == ancestor)
			return true;
		pid = parent;
	}
	return false;
}

/* A mapped top-level window of pid (or of a process it started): 1 with
 * *window, 0 none yet, -errno. */
static int find_window(struct desktop_capture* dc, long pid, uint32_t* window)
{
	struct capture_window_info* wins;
	size_t n;
	int rc = capture_list_windows(desktop_capture_backend(dc), &wins, &n);
	if (rc < 0)
		return rc;
	int found = 0;
	for (size_t i = 0; i < n && !found; i++)
		if (wins[i].mapped && wins[i].pid > 0 && descends_from(wins[i].pid, pid)) {
			*window = wins[i].id;
			found = 1;
		}
	free(wins);
	return found;
}

static int wait_window(const struct desktop_launch_params* p, struct desktop_launch_result* out,
		char* err, size_t size)
{
	char cerr[256];
	struct desktop_capture* dc = desktop_capture_get(cerr, sizeof(cerr));
	if (!dc)
		return fail(err, size, -ECONNRESET, "started %s (pid %ld), but cannot look for its "
				"window: %s", out->program, out->pid, cerr);
	int64_t start = clock_ms(), end = start + p->timeout_ms;
	if (p->deadline_ms > 0 && p->deadline_ms < end)
		end = p->deadline_ms;
	int rc = 0;
	for (;;) {
		rc = find_window(dc, out->pid, &out->window);
		if (rc != 0)
			break;
		pthread_mutex_lock(&mutex);
		reap_locked();
		struct desktop_launched* l = find_locked(out->pid);
		bool ended = false;
		if (l && !l->running) {
			out->exited = true;
			out->exit_code = l->exit_code;
			out->signal = l->signal;
			/* A launcher that started the program and exited 0: wait on
			 * while its process group lives. */
			ended = l->exit_code != 0 || kill(-(pid_t)out->pid, 0) != 0;
		}
		pthread_mutex_unlock(&mutex);
		if (ended || clock_ms() >= end || (p->cancelled && atomic_load(p->cancelled)))
			break;
		clock_sleep_ms(LAUNCH_POLL_MS);
	}
	desktop_capture_put(dc);
	out->waited_ms = clock_ms() - start;
	if (rc < 0)
		return fail(err, size, rc, "started %s (pid %ld), but the window list failed",
				out->program, out->pid);
	if (rc == 1)
		out->exited = false;	/* its window came (from the program it started) */
	out->timed_out = rc == 0 && !out->exited;
	if (out->exited)	/* what it said on its way out (its pipe closes a moment later) */
		childlog_tail(out->pid, LAUNCH_OUTPUT_WAIT_MS, out->output, sizeof(out->output));
	return 0;
}

static int start(const struct desktop_launch_params* p, int fd, struct desktop_launch_result* out,
		char* err, size_t size);

int desktop_launch(const struct desktop_launch_params* p, struct desktop_launch_result* out,
		char* err, size_t size)
{
	memset(out, 0, sizeof(*out));
	int rc = desktop_launch_check(p, restricted(), err, size);
	if (rc < 0)
		return rc;
	const char* name = p->argv[0];
	if (strchr(name, '/') && name[0] != '/')
		return fail(err, size, -EINVAL, "argv[0] must be a program name (found on PATH) "
				"or an absolute path, not '%s'", name);
	/* PATH of the program's environment when env sets one (as execvp in
	 * the child would), else deskd's. */
	const char* path_var = getenv("PATH");
	for (size_t i = 0; i < p->n_env; i++)
		if (strncmp(p->env[i], "PATH=", 5) == 0)
			path_var = p->env[i] + 5;
	rc = desktop_find_program(name, path_var, out->path, sizeof(out->path));
	if (rc < 0)
		return fail(err, size, -ENOENT, strchr(name, '/') ? "%s is not an executable file"
				: "%s: no such program on PATH", name);
	snprintf(out->program, sizeof(out->program), "%.63s", base_name(out->path));
	int fd;
	if ((rc = check_program(out->path, &fd, err, size)) < 0)
		return rc;
	rc = start(p, fd, out, err, size);
	if (fd >= 0)
		close(fd);
	if (rc < 0 || !p->wait_for_window)
		return rc;
	if (desktop_is_gnome() && !desktop_gnome_shell()) {
		desktop__gnome_unsupported("windows", out->note, sizeof(out->note));
		return 0;	/* started; no list to find its window in */
	}
	return wait_window(p, out, err, size);
}

static int full(char* err, size_t size)
{
	return fail(err, size, -EMFILE, "%d launched programs, or what they started in their "
			"process groups, are still running; stop one first", DESKTOP_LAUNCH_KEPT);
}

/* Start the checked program (fd, or -1: by path) and list it. */
static int start(const struct desktop_launch_params* p, int fd, struct desktop_launch_result* out,
		char* err, size_t size)
{
	if (!desktop_available())
		return fail(err, size, -ECONNRESET, "the display is not available: nothing was started");

	pthread_mutex_lock(&mutex);
	if (stopping) {
		pthread_mutex_unlock(&mutex);
		return fail(err, size, -ESHUTDOWN, "deskd is stopping: nothing was started");
	}
	reap_locked();
	size_t n_live = 0;
	for (size_t i = 0; i < n_list; i++)
		n_live += live(&list[i]);
	if (n_live >= DESKTOP_LAUNCH_KEPT) {
		pthread_mutex_unlock(&mutex);
		return full(err, size);
	}
	/* argv as given, NULL-ended: the spawn reads it on the spawner thread
	 * while this one waits. */
	char** argv = calloc(p->argc + 1, sizeof(*argv));
	if (!argv) {
		pthread_mutex_unlock(&mutex);
		return fail(err, size, -ENOMEM, "out of memory");
	}
	memcpy(argv, p->argv, p->argc * sizeof(*argv));
	struct desktop__spawn_args s = {
		.path = out->path, .by_fd = fd >= 0, .exec_fd = fd,
		.argv = argv, .display = desktop_display_name(),
		.env = p->env, .n_env = p->n_env, .cwd = p->cwd, .fd3 = -1,
		.program = out->program, .level = LOG_INFO,
	};
	spawning++;
	pid_t pid = spawn_on_spawner(&s);
	free(argv);
	if (pid < 0) {
		spawning--;
		pthread_mutex_unlock(&mutex);
		if (pid == -ESHUTDOWN)
			return fail(err, size, -ESHUTDOWN, "deskd is stopping: nothing was started");
		return fail(err, size, pid == -ENOENT || pid == -EACCES || pid == -ENOEXEC ? -ENOEXEC : pid,
				"cannot start %s: %s", out->path, strerror((int)-pid));
	}
	/* Others may have launched while the spawn ran (the mutex was free). */
	struct entry* e = new_slot();
	spawning--;
	if (!e) {
		kill(-pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pthread_mutex_unlock(&mutex);
		return full(err, size);
	}
	memset(e, 0, sizeof(*e));
	struct desktop_launched* slot = &e->l;
	slot->pid = (long)pid;
	slot->running = true;
	slot->started = time(NULL);
	snprintf(slot->program, sizeof(slot->program), "%.63s", out->program);
	snprintf(slot->path, sizeof(slot->path), "%s", out->path);
	pthread_mutex_unlock(&mutex);
	out->pid = (long)pid;
	log_info("launched %s (pid %ld)", out->path, out->pid);
	return 0;
}
