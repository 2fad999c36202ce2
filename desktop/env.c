/* The environment of the programs deskd starts on the display: its own,
 * with DISPLAY pointing at the desktop, plus variables other parts of the
 * desktop publish (the session and accessibility buses) and, for launch,
 * the caller's. Private to desktop/ (desktop_private.h). */
#include "desktop/desktop_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern char** environ;

#define ENV_SLOTS 16

static pthread_mutex_t env_mutex = PTHREAD_MUTEX_INITIALIZER;
static char* published[ENV_SLOTS];	/* "NAME=value", set by desktop__env_set */

/* Does entry ("NAME=..." or "NAME") name the variable of var ("NAME=...")? */
static bool same_name(const char* entry, const char* var)
{
	size_t n = strcspn(var, "=");
	return strncmp(entry, var, n) == 0 && (entry[n] == '=' || entry[n] == '\0');
}

static int publish(const char* name, const char* value, bool drop);

int desktop__env_set(const char* name, const char* value)
{
	return publish(name, value, false);
}

int desktop__env_unset(const char* name)
{
	return publish(name, NULL, true);
}

/* drop: publish a bare "NAME", which hides the inherited one and adds
 * nothing. */
static int publish(const char* name, const char* value, bool drop)
{
	size_t nl = strlen(name);
	if (!nl || strchr(name, '='))
		return -EINVAL;
	char* var = NULL;
	if (drop) {
		if (!(var = strdup(name)))
			return -ENOMEM;
	} else if (value) {
		size_t vl = strlen(value);
		if (!(var = malloc(nl + vl + 2)))
			return -ENOMEM;
		memcpy(var, name, nl);
		var[nl] = '=';
		memcpy(var + nl + 1, value, vl + 1);
	}
	int rc = -ENOSPC;
	pthread_mutex_lock(&env_mutex);
	for (int i = 0; i < ENV_SLOTS; i++)
		if (published[i] && same_name(name, published[i])) {
			free(published[i]);
			published[i] = NULL;
		}
	if (!var)
		rc = 0;
	for (int i = 0; var && i < ENV_SLOTS; i++)
		if (!published[i]) {
			published[i] = var;
			var = NULL;
			rc = 0;
		}
	pthread_mutex_unlock(&env_mutex);
	free(var);
	return rc;
}

/* Is var overridden by one of list (n entries)? */
static bool in_list(const char* var, char* const* list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] && same_name(var, list[i]))
			return true;
	return false;
}

char** desktop__env_build(const char* display, char* const* extra, size_t n_extra)
{
	size_t n = 0;
	for (char** e = environ; e && *e; e++)
		n++;
	char** env = calloc(n + ENV_SLOTS + n_extra + 2, sizeof(*env));
	if (!env)
		return NULL;
	size_t o = 0;
	bool ok = true;
	pthread_mutex_lock(&env_mutex);
	for (char** e = environ; ok && e && *e; e++) {
		if (strncmp(*e, "DISPLAY=", 8) == 0 || in_list(*e, published, ENV_SLOTS)
				|| in_list(*e, extra, n_extra))
			continue;
		ok = (env[o++] = strdup(*e)) != NULL;
	}
	for (int i = 0; ok && i < ENV_SLOTS; i++)
		if (published[i] && strchr(published[i], '=') && !in_list(published[i], extra, n_extra))
			ok = (env[o++] = strdup(published[i])) != NULL;
	pthread_mutex_unlock(&env_mutex);
	for (size_t i = 0; ok && i < n_extra; i++)
		if (!same_name("DISPLAY", extra[i]))
			ok = (env[o++] = strdup(extra[i])) != NULL;
	if (ok) {
		size_t dl = strlen(display);
		if ((env[o] = malloc(dl + 9))) {
			memcpy(env[o], "DISPLAY=", 8);
			memcpy(env[o] + 8, display, dl + 1);
			o++;
		} else {
			ok = false;
		}
	}
	env[o] = NULL;
	if (!ok) {
		desktop__env_free(env);
		return NULL;
	}
	return env;
}

void desktop__env_free(char** env)
{
	for (char** e = env; e && *e; e++)
		free(*e);
	free(env);
}

void desktop__env_reset(void)
{
	pthread_mutex_lock(&env_mutex);
	for (int i = 0; i < ENV_SLOTS; i++) {
		free(published[i]);
		published[i] = NULL;
	}
	pthread_mutex_unlock(&env_mutex);
}
