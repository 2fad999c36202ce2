/* The environment of the programs deskd starts on the display: its own,
 * with DISPLAY (or WAYLAND_DISPLAY) pointing at the desktop, plus variables other parts of the
 * desktop publish (the session and accessibility buses) and, for launch,
 * the caller's. Private to desktop/ (desktop_private.h). */
#include "desktop/desktop_private.h"
#include "wayland/wayland.h"
#include "gnome/gnome.h"

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

/* Where a program finds its display: never inherited (a child of deskd on
 * the embedded desktop must not open on the caller's session), always set
 * from the desktop's address (display_vars). */
static const char* const DISPLAY_VARS[] = { "DISPLAY", "WAYLAND_DISPLAY", "SWAYSOCK" };

static bool is_display_var(const char* entry)
{
	for (size_t i = 0; i < sizeof(DISPLAY_VARS) / sizeof(DISPLAY_VARS[0]); i++)
		if (same_name(entry, DISPLAY_VARS[i]))
			return true;
	return false;
}

static char* make_var(const char* name, const char* value)
{
	size_t nl = strlen(name), vl = strlen(value);
	char* v = malloc(nl + vl + 2);
	if (v) {
		memcpy(v, name, nl);
		v[nl] = '=';
		memcpy(v + nl + 1, value, vl + 1);
	}
	return v;
}

/* On GNOME (Mutter without Xwayland) the toolkits must not try X11: what
 * deskd sets unless the caller's extra does (an inherited one is dropped). */
static const char* const GNOME_VARS[][2] = {
	{ "GDK_BACKEND", "wayland" },
	{ "QT_QPA_PLATFORM", "wayland" },
};
#define N_GNOME_VARS (sizeof(GNOME_VARS) / sizeof(GNOME_VARS[0]))

static bool is_gnome_var(const char* entry)
{
	for (size_t i = 0; i < N_GNOME_VARS; i++)
		if (same_name(entry, GNOME_VARS[i][0]))
			return true;
	return false;
}

/* GNOME: WAYLAND_DISPLAY (the socket's path) and GNOME_VARS; the bus and
 * XDG_RUNTIME_DIR are published by buses.c. */
static bool gnome_vars(const char* display, char* const* extra, size_t n_extra,
		char** env, size_t* o)
{
	struct gnome_address a;
	if (gnome_address_parse(display, &a) < 0)
		return true;
	if (a.wayland[0] && !(env[(*o)++] = make_var("WAYLAND_DISPLAY", a.wayland)))
		return false;
	for (size_t i = 0; i < N_GNOME_VARS; i++)
		if (!in_list(GNOME_VARS[i][0], extra, n_extra)
				&& !(env[(*o)++] = make_var(GNOME_VARS[i][0], GNOME_VARS[i][1])))
			return false;
	return true;
}

/* X11 ":N": DISPLAY ("": none, for the compositor's own processes).
 * Wayland: WAYLAND_DISPLAY (the socket's absolute path, which libwayland
 * takes as is), SWAYSOCK when there is sway's IPC, and DISPLAY when
 * Xwayland runs. GNOME: gnome_vars. Adds at most 3 entries; false on
 * -ENOMEM. */
static bool display_vars(const char* display, char* const* extra, size_t n_extra,
		char** env, size_t* o)
{
	if (gnome_is_address(display))
		return gnome_vars(display, extra, n_extra, env, o);
	if (!display[0])
		return true;
	if (!wayland_is_address(display))
		return (env[(*o)++] = make_var("DISPLAY", display)) != NULL;
	char sock[WAYLAND_ADDRESS_MAX], ipc[WAYLAND_ADDRESS_MAX], x[64];
	if (wayland_address_parse(display, sock, sizeof(sock), ipc, sizeof(ipc)) < 0)
		return true;
	if (!(env[(*o)++] = make_var("WAYLAND_DISPLAY", sock)))
		return false;
	if (ipc[0] && !(env[(*o)++] = make_var("SWAYSOCK", ipc)))
		return false;
	if (desktop__xwayland_display(x, sizeof(x)) && !(env[(*o)++] = make_var("DISPLAY", x)))
		return false;
	return true;
}

char** desktop__env_build(const char* display, char* const* extra, size_t n_extra)
{
	size_t n = 0;
	for (char** e = environ; e && *e; e++)
		n++;
	char** env = calloc(n + ENV_SLOTS + n_extra + 4, sizeof(*env));
	if (!env)
		return NULL;
	size_t o = 0;
	bool ok = true;
	bool gnome = gnome_is_address(display);
	pthread_mutex_lock(&env_mutex);
	for (char** e = environ; ok && e && *e; e++) {
		if (is_display_var(*e) || in_list(*e, published, ENV_SLOTS)
				|| in_list(*e, extra, n_extra) || (gnome && is_gnome_var(*e)))
			continue;
		ok = (env[o++] = strdup(*e)) != NULL;
	}
	for (int i = 0; ok && i < ENV_SLOTS; i++)
		if (published[i] && strchr(published[i], '=') && !in_list(published[i], extra, n_extra))
			ok = (env[o++] = strdup(published[i])) != NULL;
	pthread_mutex_unlock(&env_mutex);
	for (size_t i = 0; ok && i < n_extra; i++)
		if (!is_display_var(extra[i]))
			ok = (env[o++] = strdup(extra[i])) != NULL;
	if (ok)
		ok = display_vars(display, extra, n_extra, env, &o);
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
