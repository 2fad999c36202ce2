/* libFuzzer harness over the launch tool's checks of argv, env and cwd
 * (desktop_launch_check, desktop/launch.c): nothing is started. The input
 * is lines: "E:NAME=value" an env entry, "C:/dir" the cwd, anything else
 * the next argv item. Each input is checked without and with an
 * --allow-launch list in force, and with a small error buffer:
 *  - the answer is 0, -EINVAL or -EPERM, with a message on an error;
 *  - -EPERM only with the list, naming one of the env entries' variables;
 *  - the list only adds refusals: a malformed call fails the same way;
 *  - what passes is well formed (re-checked here) and, with the list, sets
 *    none of the loader's and runtimes' code-loading variables. */

#include "base/log.h"
#include "desktop/desktop.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define ITEMS_MAX 400

int LLVMFuzzerInitialize(int* argc, char*** argv)
{
	(void)argc;
	(void)argv;
	log_init(LOG_ERROR, false);
	return 0;
}

static bool name_ok(const char* s, size_t n)
{
	if (n == 0 || n > DESKTOP_LAUNCH_ENV_NAME_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

static bool is(const char* v, size_t n, const char* name)
{
	return n == strlen(name) && strncmp(v, name, n) == 0;
}

/* Some of what the list must refuse, written out independently. */
static bool code_loading(const char* v, size_t n)
{
	static const char* const names[] = { "PATH", "GCONV_PATH", "GLIBC_TUNABLES", "BASH_ENV",
		"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PERL5LIB", "PERL5OPT", "RUBYOPT",
		"NODE_OPTIONS", "GTK_MODULES", "GTK3_MODULES", "GTK_PATH", "GIO_EXTRA_MODULES",
		"GST_PLUGIN_PATH", "QT_PLUGIN_PATH", "LUA_INIT", "ENV", "SHELL", "LOCPATH",
		"NLSPATH", "GETCONF_DIR", "OPENSSL_CONF" };
	if (n >= 3 && strncmp(v, "LD_", 3) == 0)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (is(v, n, names[i]))
			return true;
	return false;
}

/* The checks' own limits, re-checked on what passed. */
static void check_well_formed(const struct desktop_launch_params* p)
{
	if (p->argc == 0 || p->argc > DESKTOP_LAUNCH_ARGS_MAX || !p->argv[0][0])
		abort();
	size_t total = 0;
	for (size_t i = 0; i < p->argc; i++) {
		if (strlen(p->argv[i]) > DESKTOP_LAUNCH_ARG_MAX)
			abort();
		total += strlen(p->argv[i]) + 1;
	}
	if (p->n_env > DESKTOP_LAUNCH_ENV_MAX)
		abort();
	for (size_t i = 0; i < p->n_env; i++) {
		const char* v = p->env[i];
		size_t n = strcspn(v, "=");
		if (!v[n] || !name_ok(v, n) || is(v, n, "DISPLAY") || strlen(v + n + 1) > DESKTOP_LAUNCH_ARG_MAX)
			abort();
		total += strlen(v) + 1;
	}
	if (total > DESKTOP_LAUNCH_TOTAL_MAX || (p->cwd && p->cwd[0] != '/'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	char* buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	char* argv[ITEMS_MAX + 1];
	char* env[ITEMS_MAX + 1];
	size_t argc = 0, n_env = 0;
	const char* cwd = NULL;
	for (char *line = buf, *next; line && argc < ITEMS_MAX && n_env < ITEMS_MAX; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else if (!*line)
			break;
		if (strncmp(line, "E:", 2) == 0)
			env[n_env++] = line + 2;
		else if (strncmp(line, "C:", 2) == 0)
			cwd = line + 2;
		else
			argv[argc++] = line;
	}
	argv[argc] = env[n_env] = NULL;
	struct desktop_launch_params p = {
		.argv = argv, .argc = argc, .env = env, .n_env = n_env, .cwd = cwd,
	};

	char err0[512] = "", err1[512] = "";
	int r0 = desktop_launch_check(&p, false, err0, sizeof(err0));
	int r1 = desktop_launch_check(&p, true, err1, sizeof(err1));
	if (r0 != 0 && r0 != -EINVAL)
		abort();
	if (r1 != 0 && r1 != -EINVAL && r1 != -EPERM)
		abort();
	if ((r0 && !err0[0]) || (r1 && !err1[0]))
		abort();
	/* The list only adds refusals, after every other check. */
	if (r0 != 0 && (r1 != r0 || strcmp(err0, err1) != 0))
		abort();
	if (r0 == 0)
		check_well_formed(&p);
	if (r1 == -EPERM) {
		/* "env may not set NAME while --allow-launch is in force: why" */
		const char* prefix = "env may not set ";
		if (strncmp(err1, prefix, strlen(prefix)) != 0 || !strstr(err1, " while --allow-launch is in force: "))
			abort();
		const char* name = err1 + strlen(prefix);
		size_t n = strcspn(name, " ");
		bool named = false;
		for (size_t i = 0; i < n_env && !named; i++)
			named = strcspn(env[i], "=") == n && strncmp(env[i], name, n) == 0;
		if (!named)
			abort();
	}
	if (r1 == 0)
		for (size_t i = 0; i < n_env; i++)
			if (code_loading(env[i], strcspn(env[i], "=")))
				abort();

	/* A small error buffer: cut, never overrun. */
	char small[12];
	size_t cut = 1 + (size ? data[0] % sizeof(small) : 0);
	int r2 = desktop_launch_check(&p, true, small, cut);
	if (r2 != r1 || (r2 && strnlen(small, cut) >= cut))
		abort();
	free(buf);
	return 0;
}
