/* Pipelined batches: calls sent at once, replies collected against one
 * deadline. */
#include "a11y/atspi_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <dbus/dbus.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


/* ---- Pipelined batches -------------------------------------------------------- */


DBusMessage* a11y__method(const char* bus, const char* path, const char* iface,
		const char* name)
{
	return dbus_message_new_method_call(bus, path, iface, name);
}

/* Queue msg (consumed); false when out of memory. */
bool a11y__batch_send(struct batch* b, DBusMessage* msg, int node, int kind, int extra)
{
	if (!msg)
		return false;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct pend* v = realloc(b->v, cap * sizeof(*v));
		if (!v) {
			dbus_message_unref(msg);
			return false;
		}
		b->v = v;
		b->cap = cap;
	}
	dbus_uint32_t serial = 0;
	if (!dbus_connection_send(b->c, msg, &serial)) {
		dbus_message_unref(msg);
		return false;
	}
	dbus_message_unref(msg);
	b->v[b->n++] = (struct pend){ .serial = serial, .node = node, .kind = kind, .extra = extra };
	b->calls++;
	return true;
}

bool a11y__send_simple(struct batch* b, const char* bus, const char* path,
		const char* iface, const char* name, int node, int kind)
{
	return a11y__batch_send(b, a11y__method(bus, path, iface, name), node, kind, 0);
}

bool a11y__send_get(struct batch* b, const char* bus, const char* path,
		const char* iface, const char* prop, int node, int kind)
{
	DBusMessage* m = a11y__method(bus, path, IF_PROPS, "Get");
	if (!m)
		return false;
	dbus_message_append_args(m, DBUS_TYPE_STRING, &iface, DBUS_TYPE_STRING, &prop,
			DBUS_TYPE_INVALID);
	return a11y__batch_send(b, m, node, kind, 0);
}

bool a11y__send_extents(struct batch* b, const char* bus, const char* path, bool in_window,
		int node, int kind)
{
	DBusMessage* m = a11y__method(bus, path, IF_COMPONENT, "GetExtents");
	if (!m)
		return false;
	dbus_uint32_t type = in_window ? ATSPI_COORD_WINDOW : ATSPI_COORD_SCREEN;
	dbus_message_append_args(m, DBUS_TYPE_UINT32, &type, DBUS_TYPE_INVALID);
	return a11y__batch_send(b, m, node, kind, 0);
}

bool a11y_extents_in_window(const char* toolkit, const char* version)
{
	return strcasecmp(toolkit, "GTK") == 0 && version[0] == '4';
}

/* Collect the replies until all came or the deadline passed. */
void a11y__batch_wait(struct batch* b)
{
	while (b->done < b->n) {
		DBusMessage* m;
		while ((m = dbus_connection_pop_message(b->c))) {
			int type = dbus_message_get_type(m);
			if (type == DBUS_MESSAGE_TYPE_METHOD_RETURN || type == DBUS_MESSAGE_TYPE_ERROR) {
				dbus_uint32_t rs = dbus_message_get_reply_serial(m);
				size_t i = b->n ? (size_t)(rs - b->v[0].serial) : 0;
				if (b->n && i < b->n && b->v[i].serial == rs && !b->v[i].reply) {
					b->v[i].reply = m;
					b->done++;
					continue;
				}
			}
			dbus_message_unref(m);
		}
		if (b->done >= b->n)
			break;
		int64_t l = a11y__left_ms(b->deadline);
		if (l <= 0) {
			b->timed_out = true;
			break;
		}
		if (!dbus_connection_read_write(b->c, (int)(l > 100 ? 100 : l))
				|| !dbus_connection_get_is_connected(b->c)) {
			b->lost = true;
			break;
		}
	}
}

void a11y__batch_reset(struct batch* b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].reply)
			dbus_message_unref(b->v[i].reply);
	b->n = b->done = 0;
}

void a11y__batch_free(struct batch* b)
{
	a11y__batch_reset(b);
	free(b->v);
	b->v = NULL;
	b->cap = 0;
}

/* Reply kinds: an error that means the app (or the object) is gone. */
bool a11y__reply_gone(DBusMessage* r)
{
	if (!r || dbus_message_get_type(r) != DBUS_MESSAGE_TYPE_ERROR)
		return false;
	const char* name = dbus_message_get_error_name(r);
	return name && (strcmp(name, DBUS_ERROR_NO_REPLY) == 0
			|| strcmp(name, DBUS_ERROR_SERVICE_UNKNOWN) == 0
			|| strcmp(name, DBUS_ERROR_NAME_HAS_NO_OWNER) == 0
			|| strcmp(name, DBUS_ERROR_DISCONNECTED) == 0
			|| strcmp(name, DBUS_ERROR_UNKNOWN_OBJECT) == 0
			|| strcmp(name, DBUS_ERROR_UNKNOWN_METHOD) == 0);
}

bool a11y__reply_ok(DBusMessage* r)
{
	return r && dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_METHOD_RETURN;
}
