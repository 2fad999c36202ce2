/* Events: the apps' object and window signals. */
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


/* ---- Events ------------------------------------------------------------------------- */

struct a11y_watch {
	DBusConnection* c;
};

struct a11y_watch* a11y_watch_open(char* err, size_t err_size)
{
	DBusConnection* c = a11y__pool_get(err, err_size);
	if (!c)
		return NULL;
	static const char* const rules[] = {
		"type='signal',interface='org.a11y.atspi.Event.Object',member='StateChanged'",
		"type='signal',interface='org.a11y.atspi.Event.Object',member='ChildrenChanged'",
		"type='signal',interface='org.a11y.atspi.Event.Object',member='PropertyChange'",
		"type='signal',interface='org.a11y.atspi.Event.Object',member='TextChanged'",
		"type='signal',interface='org.a11y.atspi.Event.Object',member='ValueChanged'",
		"type='signal',interface='org.a11y.atspi.Event.Object',member='SelectionChanged'",
		"type='signal',interface='org.a11y.atspi.Event.Window'",
		"type='signal',interface='org.a11y.atspi.Event.Focus'",
	};
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		dbus_bus_add_match(c, rules[i], NULL);	/* no reply awaited */
	dbus_connection_flush(c);
	struct a11y_watch* w = calloc(1, sizeof(*w));
	if (!w) {
		a11y__drop_connection(c);
		return NULL;
	}
	w->c = c;
	return w;
}

int a11y_watch_wait(struct a11y_watch* self, const char* bus, int timeout_ms)
{
	int64_t end = clock_ms() + timeout_ms;
	for (;;) {
		DBusMessage* m;
		while ((m = dbus_connection_pop_message(self->c))) {
			bool hit = dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_SIGNAL
					&& strncmp(dbus_message_get_interface(m) ? dbus_message_get_interface(m) : "",
						"org.a11y.atspi.Event.", 21) == 0
					&& (!bus || (dbus_message_get_sender(m)
						&& strcmp(dbus_message_get_sender(m), bus) == 0));
			dbus_message_unref(m);
			if (hit)
				return 1;
		}
		int64_t l = end - clock_ms();
		if (l <= 0)
			return 0;
		if (!dbus_connection_read_write(self->c, (int)l) || !dbus_connection_get_is_connected(self->c))
			return -ENOTCONN;
	}
}

void a11y_watch_close(struct a11y_watch* self)
{
	if (!self)
		return;
	a11y__drop_connection(self->c);	/* its match rules go with it */
	free(self);
}
