/* The window calls of deskd's GNOME Shell extension (gnome/shell/
 * extension.js): dev.deskd.Shell at /dev/deskd/Shell on org.gnome.Shell,
 * called on the session's connection (session.c's gnome__call). */
#include "gnome/gnome.h"
#include "gnome/gnome_private.h"

#include <dbus/dbus.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHELL_BUS "org.gnome.Shell"
#define SHELL_PATH "/dev/deskd/Shell"
#define SHELL_IFACE "dev.deskd.Shell"
#define SHELL_CALL_MS 2000
/* The list's element: id, title, wm_class, app id, pid, frame, buffer,
 * flags, transient_for (extension.js's List). */
#define WINDOW_SIGNATURE "(tsssuiiiiiiiiut)"

/* A call's outcome: the extension missing is -ENOTSUP. */
static DBusMessage* shell_call(struct gnome* self, DBusMessage* m, int* rc)
{
	DBusMessage* r = gnome__call(self, m, SHELL_CALL_MS, rc);
	if (!r && *rc == -EIO && (strstr(gnome_error(self), "UnknownObject")
			|| strstr(gnome_error(self), "UnknownMethod")
			|| strstr(gnome_error(self), "ServiceUnknown")
			|| strstr(gnome_error(self), "No such interface")))
		*rc = -ENOTSUP;
	return r;
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

int gnome_windows(struct gnome* self, struct gnome_window** out, size_t* n)
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
	return 0;
}

/* A call on one window with more arguments after its id (a DBus type list). */
static int window_call(struct gnome* self, const char* name, uint64_t id, int first_type, ...)
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
	if (!r)
		return rc == -EIO && strstr(gnome_error(self), "no window") ? -ENOENT : rc;
	dbus_message_unref(r);
	return 0;
}

int gnome_window_activate(struct gnome* self, uint64_t id)
{
	return window_call(self, "Activate", id, DBUS_TYPE_INVALID);
}

int gnome_window_move_resize(struct gnome* self, uint64_t id, int x, int y, int width, int height)
{
	dbus_int32_t v[4] = { x, y, width, height };
	return window_call(self, "MoveResize", id, DBUS_TYPE_INT32, &v[0], DBUS_TYPE_INT32, &v[1],
			DBUS_TYPE_INT32, &v[2], DBUS_TYPE_INT32, &v[3], DBUS_TYPE_INVALID);
}

int gnome_window_state(struct gnome* self, uint64_t id, const char* state)
{
	return window_call(self, "SetState", id, DBUS_TYPE_STRING, &state, DBUS_TYPE_INVALID);
}

int gnome_window_close(struct gnome* self, uint64_t id)
{
	return window_call(self, "Close", id, DBUS_TYPE_INVALID);
}
