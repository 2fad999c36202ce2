/* The window calls of deskd's GNOME Shell extension (gnome/shell/
 * extension.js): dev.deskd.Shell at /dev/deskd/Shell on org.gnome.Shell,
 * on a connection of their own (no Mutter session: listing windows costs
 * one round trip), used under a mutex by any thread. */
#include "gnome/gnome.h"
#include "gnome/gnome_private.h"
#include "base/clock.h"

#include <dbus/dbus.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHELL_BUS "org.gnome.Shell"
#define SHELL_PATH "/dev/deskd/Shell"
#define SHELL_IFACE "dev.deskd.Shell"
#define SHELL_CALL_MS 2000
#define FOCUS_POLL_MS 10
/* The list's element: id, title, wm_class, app id, pid, frame, buffer,
 * flags, transient_for (extension.js's List). */
#define WINDOW_SIGNATURE "(tsssuiiiiiiiiut)"

struct gnome_shell {
	DBusConnection* bus;
	pthread_mutex_t mutex;
	int shell_pid;		/* org.gnome.Shell's process, 0 not known yet */
	char error[256];
};

struct gnome_shell* gnome_shell_open(const char* address, int timeout_ms, char* err,
		size_t err_size)
{
	struct gnome_address a;
	if (gnome_address_parse(address, &a) < 0) {
		snprintf(err, err_size, "'%s' is not a GNOME desktop's address", address ? address : "");
		return NULL;
	}
	struct gnome_shell* self = calloc(1, sizeof(*self));
	if (!self) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	self->bus = gnome__connect(a.bus, clock_ms() + timeout_ms, err, err_size);
	if (!self->bus) {
		free(self);
		return NULL;
	}
	pthread_mutex_init(&self->mutex, NULL);
	return self;
}

void gnome_shell_close(struct gnome_shell* self)
{
	if (!self)
		return;
	dbus_connection_close(self->bus);
	dbus_connection_unref(self->bus);
	pthread_mutex_destroy(&self->mutex);
	free(self);
}

bool gnome_shell_alive(struct gnome_shell* self)
{
	return dbus_connection_get_is_connected(self->bus);
}

const char* gnome_shell_error(const struct gnome_shell* self)
{
	return self->error[0] ? self->error : "no error";
}

/* Send m (consumed) and wait for the reply; NULL with *rc: -ENOTSUP when
 * the shell or the extension is not there, -ENOENT for a window it does
 * not know, -EPIPE when the bus is gone, -EIO else. */
static DBusMessage* shell_call(struct gnome_shell* self, DBusMessage* m, int* rc)
{
	if (!m) {
		*rc = -ENOMEM;
		snprintf(self->error, sizeof(self->error), "out of memory");
		return NULL;
	}
	DBusError e;
	dbus_error_init(&e);
	pthread_mutex_lock(&self->mutex);
	DBusMessage* r = dbus_connection_send_with_reply_and_block(self->bus, m, SHELL_CALL_MS, &e);
	/* Nothing is subscribed: what else arrived (NameAcquired) is dropped. */
	DBusMessage* other;
	while ((other = dbus_connection_pop_message(self->bus)))
		dbus_message_unref(other);
	bool connected = dbus_connection_get_is_connected(self->bus);
	pthread_mutex_unlock(&self->mutex);
	dbus_message_unref(m);
	*rc = 0;
	if (r)
		return r;
	static const char* const missing[] = { DBUS_ERROR_UNKNOWN_OBJECT, DBUS_ERROR_UNKNOWN_METHOD,
		DBUS_ERROR_SERVICE_UNKNOWN, DBUS_ERROR_UNKNOWN_INTERFACE, DBUS_ERROR_NAME_HAS_NO_OWNER };
	*rc = connected ? -EIO : -EPIPE;
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++)
		if (e.name && !strcmp(e.name, missing[i]))
			*rc = -ENOTSUP;
	if (e.name && !strcmp(e.name, DBUS_ERROR_INVALID_ARGS) && strstr(e.message, "no window"))
		*rc = -ENOENT;
	if (e.name && !strcmp(e.name, DBUS_ERROR_NO_REPLY))
		*rc = -ETIMEDOUT;
	snprintf(self->error, sizeof(self->error), *rc == -ENOTSUP ? "GNOME Shell with deskd's "
			"extension is not there (%s)" : "GNOME Shell: %s", e.message);
	dbus_error_free(&e);
	return NULL;
}

/* A boolean or unsigned property, as a number; -1 when it cannot be read. */
static long long get_property(DBusConnection* c, const char* path, const char* iface,
		const char* name, int timeout_ms)
{
	DBusMessage* m = dbus_message_new_method_call(SHELL_BUS, path, DBUS_INTERFACE_PROPERTIES, "Get");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_STRING, &iface, DBUS_TYPE_STRING, &name,
			DBUS_TYPE_INVALID)) {
		if (m)
			dbus_message_unref(m);
		return -1;
	}
	DBusMessage* r = dbus_connection_send_with_reply_and_block(c, m, timeout_ms, NULL);
	dbus_message_unref(m);
	long long v = -1;
	DBusMessageIter it, var;
	if (r && dbus_message_iter_init(r, &it) && dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_VARIANT) {
		dbus_message_iter_recurse(&it, &var);
		int type = dbus_message_iter_get_arg_type(&var);
		if (type == DBUS_TYPE_BOOLEAN) {
			dbus_bool_t b;
			dbus_message_iter_get_basic(&var, &b);
			v = b;
		} else if (type == DBUS_TYPE_UINT32) {
			dbus_uint32_t u;
			dbus_message_iter_get_basic(&var, &u);
			v = u;
		}
	}
	if (r)
		dbus_message_unref(r);
	return v;
}

bool gnome_shell_ready(const char* address, int timeout_ms)
{
	struct gnome_address a;
	char err[256];
	if (gnome_address_parse(address, &a) < 0)
		return false;
	DBusConnection* c = gnome__connect(a.bus, clock_ms() + timeout_ms, err, sizeof(err));
	if (!c)
		return false;
	bool ready = get_property(c, SHELL_PATH, SHELL_IFACE, "Version", timeout_ms) >= 1
			&& get_property(c, "/org/gnome/Shell", "org.gnome.Shell", "OverviewActive",
				timeout_ms) == 0;
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return ready;
}

static void copy_string(DBusMessageIter* it, char* out, size_t size)
{
	const char* s = "";
	if (dbus_message_iter_get_arg_type(it) == DBUS_TYPE_STRING)
		dbus_message_iter_get_basic(it, &s);
	snprintf(out, size, "%s", s);
	/* snprintf may cut inside a UTF-8 sequence: drop a torn tail */
	size_t len = strlen(out), k = len;
	while (k > 0 && ((unsigned char)out[k - 1] & 0xc0) == 0x80)
		k--;
	if (k > 0 && (unsigned char)out[k - 1] >= 0xc0) {
		unsigned char lead = (unsigned char)out[k - 1];
		size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
		if (len - (k - 1) < want)
			out[k - 1] = '\0';
	}
	dbus_message_iter_next(it);
}

static int next_int(DBusMessageIter* it)
{
	dbus_int32_t v = 0;
	dbus_message_iter_get_basic(it, &v);
	dbus_message_iter_next(it);
	return v;
}

static bool read_window(DBusMessageIter* st, struct gnome_window* w)
{
	if (dbus_message_iter_get_arg_type(st) != DBUS_TYPE_UINT64)
		return false;
	dbus_uint64_t id;
	dbus_message_iter_get_basic(st, &id);
	w->id = id;
	dbus_message_iter_next(st);
	copy_string(st, w->title, sizeof(w->title));
	copy_string(st, w->wm_class, sizeof(w->wm_class));
	copy_string(st, w->app_id, sizeof(w->app_id));
	w->pid = next_int(st);	/* u, read as its bits */
	w->x = next_int(st);
	w->y = next_int(st);
	w->width = next_int(st);
	w->height = next_int(st);
	w->buffer_x = next_int(st);
	w->buffer_y = next_int(st);
	w->buffer_width = next_int(st);
	w->buffer_height = next_int(st);
	w->flags = (unsigned)next_int(st);
	dbus_uint64_t parent = 0;
	if (dbus_message_iter_get_arg_type(st) == DBUS_TYPE_UINT64)
		dbus_message_iter_get_basic(st, &parent);
	w->transient_for = parent;
	return true;
}

/* The shell's own pid (its bus name's owner, asked once), or 0. */
static int shell_pid(struct gnome_shell* self)
{
	pthread_mutex_lock(&self->mutex);
	int known = self->shell_pid;
	pthread_mutex_unlock(&self->mutex);
	if (known > 0)
		return known;
	const char* name = SHELL_BUS;
	DBusMessage* m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
			DBUS_INTERFACE_DBUS, "GetConnectionUnixProcessID");
	if (m && !dbus_message_append_args(m, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID)) {
		dbus_message_unref(m);
		m = NULL;
	}
	int rc;
	DBusMessage* r = shell_call(self, m, &rc);
	dbus_uint32_t pid = 0;
	if (r && !dbus_message_get_args(r, NULL, DBUS_TYPE_UINT32, &pid, DBUS_TYPE_INVALID))
		pid = 0;
	if (r)
		dbus_message_unref(r);
	pthread_mutex_lock(&self->mutex);
	self->shell_pid = (int)pid;
	pthread_mutex_unlock(&self->mutex);
	return (int)pid;
}

int gnome_windows(struct gnome_shell* self, struct gnome_window** out, size_t* n)
{
	*out = NULL;
	*n = 0;
	int rc;
	DBusMessage* r = shell_call(self, dbus_message_new_method_call(SHELL_BUS, SHELL_PATH,
			SHELL_IFACE, "List"), &rc);
	if (!r)
		return rc;
	DBusMessageIter it, arr;
	if (!dbus_message_has_signature(r, "a" WINDOW_SIGNATURE)) {
		dbus_message_unref(r);
		return -EPROTO;	/* another version of the extension */
	}
	dbus_message_iter_init(r, &it);
	dbus_message_iter_recurse(&it, &arr);
	size_t cap = 0;
	for (; dbus_message_iter_get_arg_type(&arr) == DBUS_TYPE_STRUCT; dbus_message_iter_next(&arr)) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			struct gnome_window* grown = realloc(*out, cap * sizeof(**out));
			if (!grown) {
				free(*out);
				*out = NULL;
				*n = 0;
				dbus_message_unref(r);
				return -ENOMEM;
			}
			*out = grown;
		}
		DBusMessageIter st;
		dbus_message_iter_recurse(&arr, &st);
		memset(&(*out)[*n], 0, sizeof(**out));
		if (read_window(&st, &(*out)[*n]))
			(*n)++;
	}
	dbus_message_unref(r);
	/* Mutter's service channel (GNOME 46 on: the portal's dialogs) gives
	 * its clients a socket of the shell's own, so their windows carry the
	 * shell's pid: not theirs, so not said. */
	int own = *n ? shell_pid(self) : 0;
	for (size_t i = 0; i < *n && own > 0; i++)
		if ((*out)[i].pid == own)
			(*out)[i].pid = 0;
	return 0;
}

/* A call on one window with more arguments after its id (a DBus type list). */
static int window_call(struct gnome_shell* self, const char* name, uint64_t id, int first_type, ...)
{
	DBusMessage* m = dbus_message_new_method_call(SHELL_BUS, SHELL_PATH, SHELL_IFACE, name);
	dbus_uint64_t wid = id;
	if (m && !dbus_message_append_args(m, DBUS_TYPE_UINT64, &wid, DBUS_TYPE_INVALID)) {
		dbus_message_unref(m);
		m = NULL;
	}
	va_list ap;
	va_start(ap, first_type);
	if (m && first_type != DBUS_TYPE_INVALID && !dbus_message_append_args_valist(m, first_type, ap)) {
		dbus_message_unref(m);
		m = NULL;
	}
	va_end(ap);
	int rc;
	DBusMessage* r = shell_call(self, m, &rc);
	if (r)
		dbus_message_unref(r);
	return rc;
}

int gnome_window_activate(struct gnome_shell* self, uint64_t id)
{
	return window_call(self, "Activate", id, DBUS_TYPE_INVALID);
}

int gnome_window_move_resize(struct gnome_shell* self, uint64_t id, int x, int y, int width, int height)
{
	dbus_int32_t v[4] = { x, y, width, height };
	return window_call(self, "MoveResize", id, DBUS_TYPE_INT32, &v[0], DBUS_TYPE_INT32, &v[1],
			DBUS_TYPE_INT32, &v[2], DBUS_TYPE_INT32, &v[3], DBUS_TYPE_INVALID);
}

int gnome_window_state(struct gnome_shell* self, uint64_t id, const char* state)
{
	return window_call(self, "SetState", id, DBUS_TYPE_STRING, &state, DBUS_TYPE_INVALID);
}

/* Is deskd's window focused? Mutter's id in *id; -ENOENT when not listed. */
static int window_focused(struct gnome_shell* self, uint32_t window, uint64_t* id, bool* focused)
{
	struct gnome_window* ws;
	size_t n;
	int rc = gnome_windows(self, &ws, &n);
	if (rc < 0)
		return rc;
	*id = 0;
	for (size_t i = 0; i < n; i++)
		if ((uint32_t)ws[i].id == window) {
			*id = ws[i].id;
			*focused = ws[i].flags & GNOME_WINDOW_FOCUSED;
		}
	free(ws);
	return *id ? 0 : -ENOENT;
}

int gnome_window_focus(struct gnome_shell* self, uint32_t window, int timeout_ms)
{
	int64_t deadline = clock_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	uint64_t id;
	bool focused = false;
	int rc = window_focused(self, window, &id, &focused);
	if (rc == 0 && !focused)
		rc = gnome_window_activate(self, id);
	while (rc == 0 && !focused) {
		if (clock_ms() >= deadline)
			return -ETIMEDOUT;
		clock_sleep_ms(FOCUS_POLL_MS);
		rc = window_focused(self, window, &id, &focused);
	}
	return rc;
}

int gnome_window_close(struct gnome_shell* self, uint64_t id)
{
	return window_call(self, "Close", id, DBUS_TYPE_INVALID);
}
