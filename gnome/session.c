/* A GNOME session (gnome/gnome.h): one private connection to the session
 * bus, Mutter's RemoteDesktop session and its linked ScreenCast of the
 * primary monitor, the stream's frames (stream.c) and the clipboard; or the
 * desktop portal's session (portal.c), shared by the process.
 *
 * Every use of the connection holds self->mutex: a call sends and blocks
 * for its reply (bounded), then dispatches what arrived meanwhile (the
 * signals) before it lets go. A reader thread polls the socket without the
 * mutex and, when something arrived while nobody called, takes the mutex to
 * dispatch it: that is how clipboard transfers are answered while no input
 * call runs. Signals only record what they say (filter); work that needs a
 * call (a transfer's SelectionWrite) runs after the dispatch, still under
 * the mutex, never inside libdbus's callback. */
#define _GNU_SOURCE
#include "gnome/gnome.h"
#include "gnome/gnome_private.h"
#include "base/clock.h"

#include <dbus/dbus.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RD_BUS "org.gnome.Mutter.RemoteDesktop"
#define RD_PATH "/org/gnome/Mutter/RemoteDesktop"
#define RD_SESSION RD_BUS ".Session"
#define SC_BUS "org.gnome.Mutter.ScreenCast"
#define SC_PATH "/org/gnome/Mutter/ScreenCast"
#define SC_SESSION SC_BUS ".Session"
#define SC_STREAM SC_BUS ".Stream"

#define CALL_MS 2000		/* one method call's bound */
#define TRANSFER_MS 2000	/* writing the clipboard to an app's pipe */
#define TRANSFERS_MAX 8		/* requests queued by one dispatch */
#define TEXT_MAX (16u << 20)	/* a clipboard read's bound */

static const char* const TEXT_TYPES[] = {
	"text/plain;charset=utf-8", "UTF8_STRING", "text/plain", "TEXT", "STRING",
};
#define N_TEXT_TYPES (sizeof(TEXT_TYPES) / sizeof(TEXT_TYPES[0]))

struct gnome {
	DBusConnection* bus;
	/* Through the desktop portal: its session's handle, the owners
	 * (shared_mutex) and the address it was opened for. */
	bool portal;
	char portal_handle[192];
	int refs;
	char address[GNOME_ADDRESS_MAX];
	pthread_mutex_t mutex;		/* the connection and what follows */
	pthread_cond_t cond;		/* the node, the session's end */
	char rd_path[128], sc_path[128], stream_path[128];
	uint32_t node;
	bool have_node;
	atomic_bool closed;		/* the session or the bus went away */
	int width, height;
	struct gnome_stream* stream;	/* GNOME_FRAMES */
	/* The clipboard (GNOME_CLIPBOARD). */
	bool clipboard;
	char* offer;			/* what deskd offers, or NULL */
	size_t offer_len;
	bool owner;			/* the session owns the clipboard now */
	bool other_has_text;		/* another owner offers a text type */
	atomic_ulong delivered;
	uint32_t transfers[TRANSFERS_MAX];	/* serials to answer */
	size_t n_transfers;
	/* The reader thread. */
	pthread_t reader;
	bool reader_running;
	atomic_bool stopping;
	int wake[2];
	char error[256];
};

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

/* The process's portal session: one dialog for the capture, the input and
 * the tools. Held while a portal session opens, so a second open waits for
 * the person's answer to the first instead of asking again. */
static pthread_mutex_t shared_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct gnome* shared_portal;

static void threads_init(void)
{
	dbus_threads_init_default();
}

static int fail(struct gnome* self, int rc, const char* fmt, ...)
		__attribute__((format(printf, 3, 4)));

static int fail(struct gnome* self, int rc, const char* fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(self->error, sizeof(self->error), fmt, ap);
	va_end(ap);
	return rc;
}

static int64_t left_ms(int64_t deadline)
{
	int64_t l = deadline - clock_ms();
	return l < 0 ? 0 : l;
}

/* Authenticate and say Hello within the deadline: dbus_bus_register waits
 * without a bound on a bus that accepts and never answers. */
struct DBusConnection* gnome__connect(const char* address, int64_t deadline, char* err,
		size_t size)
{
	DBusError e;
	dbus_error_init(&e);
	DBusConnection* c = dbus_connection_open_private(address, &e);
	if (!c) {
		snprintf(err, size, "cannot connect to the session bus %s: %s", address, e.message);
		dbus_error_free(&e);
		return NULL;
	}
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	DBusMessage* m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
			DBUS_INTERFACE_DBUS, "Hello");
	dbus_uint32_t serial = 0;
	if (!m || !dbus_connection_send(c, m, &serial)) {
		snprintf(err, size, "out of memory");
		goto failed;
	}
	for (;;) {
		DBusMessage* r;
		while ((r = dbus_connection_pop_message(c))) {
			if (dbus_message_get_reply_serial(r) != serial) {
				dbus_message_unref(r);	/* NameAcquired */
				continue;
			}
			const char* name = NULL;
			bool ok = dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_METHOD_RETURN
					&& dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &name,
						DBUS_TYPE_INVALID)
					&& name && dbus_bus_set_unique_name(c, name);
			dbus_message_unref(r);
			if (ok) {
				dbus_message_unref(m);
				return c;
			}
			snprintf(err, size, "the session bus refused the connection");
			goto failed;
		}
		int64_t l = left_ms(deadline);
		if (l <= 0 || !dbus_connection_read_write(c, (int)(l > 100 ? 100 : l))
				|| !dbus_connection_get_is_connected(c)) {
			snprintf(err, size, l <= 0 ? "the session bus did not answer in time"
					: "the session bus closed the connection");
			goto failed;
		}
	}
failed:
	if (m)
		dbus_message_unref(m);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return NULL;
}

/* ---- signals ---- */

/* The clipboard's keys: Mutter's session and the portal's Clipboard spell
 * them differently ([portal]). */
static const char* const OWNER_KEY[2] = { "session-is-owner", "session_is_owner" };
static const char* const TYPES_KEY[2] = { "mime-types", "mime_types" };

/* Is m the clipboard's signal name for this session: Mutter's on the
 * session's path, the portal's with the session's handle first? */
static bool clipboard_signal(const struct gnome* self, DBusMessage* m, const char* name,
		const char* path)
{
	if (!self->portal)
		return dbus_message_is_signal(m, RD_SESSION, name) && !strcmp(path, self->rd_path);
	DBusMessageIter it;
	const char* session = "";
	if (!dbus_message_is_signal(m, GNOME_PORTAL_CLIPBOARD, name) || !dbus_message_iter_init(m, &it)
			|| dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_OBJECT_PATH)
		return false;
	dbus_message_iter_get_basic(&it, &session);
	return !strcmp(session, self->portal_handle);
}

/* Does a SelectionOwnerChanged's a{sv} say the session owns it, and does
 * the owner offer text? */
static void read_owner_changed(DBusMessage* m, bool portal, bool* is_owner, bool* has_text)
{
	*is_owner = *has_text = false;
	DBusMessageIter it, dict;
	if (!dbus_message_iter_init(m, &it) || (portal && !dbus_message_iter_next(&it))
			|| dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
		return;
	dbus_message_iter_recurse(&it, &dict);
	for (; dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY;
			dbus_message_iter_next(&dict)) {
		DBusMessageIter entry, value;
		const char* key;
		dbus_message_iter_recurse(&dict, &entry);
		dbus_message_iter_get_basic(&entry, &key);
		dbus_message_iter_next(&entry);
		dbus_message_iter_recurse(&entry, &value);
		if (!strcmp(key, OWNER_KEY[portal]) && dbus_message_iter_get_arg_type(&value) == DBUS_TYPE_BOOLEAN) {
			dbus_bool_t b;
			dbus_message_iter_get_basic(&value, &b);
			*is_owner = b;
		} else if (!strcmp(key, TYPES_KEY[portal])) {
			/* Mutter 43 sends "(as)", the documentation "as". */
			if (dbus_message_iter_get_arg_type(&value) == DBUS_TYPE_STRUCT) {
				DBusMessageIter inner;
				dbus_message_iter_recurse(&value, &inner);
				value = inner;
			}
			if (dbus_message_iter_get_arg_type(&value) != DBUS_TYPE_ARRAY)
				continue;
			DBusMessageIter types;
			dbus_message_iter_recurse(&value, &types);
			for (; dbus_message_iter_get_arg_type(&types) == DBUS_TYPE_STRING;
					dbus_message_iter_next(&types)) {
				const char* t;
				dbus_message_iter_get_basic(&types, &t);
				for (size_t i = 0; i < N_TEXT_TYPES; i++)
					*has_text |= !strcmp(t, TEXT_TYPES[i]);
			}
		}
	}
}

static DBusHandlerResult on_message(DBusConnection* c, DBusMessage* m, void* ud)
{
	struct gnome* self = ud;
	if (dbus_message_get_type(m) != DBUS_MESSAGE_TYPE_SIGNAL)
		return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
	const char* path = dbus_message_get_path(m);
	path = path ? path : "";
	if (dbus_message_is_signal(m, SC_STREAM, "PipeWireStreamAdded")
			&& !strcmp(path, self->stream_path)) {
		dbus_uint32_t node;
		if (dbus_message_get_args(m, NULL, DBUS_TYPE_UINT32, &node, DBUS_TYPE_INVALID)) {
			self->node = node;
			self->have_node = true;
			pthread_cond_broadcast(&self->cond);
		}
	} else if ((dbus_message_is_signal(m, RD_SESSION, "Closed") && !strcmp(path, self->rd_path))
			|| (dbus_message_is_signal(m, SC_SESSION, "Closed") && !strcmp(path, self->sc_path))
			|| (dbus_message_is_signal(m, GNOME_PORTAL_SESSION, "Closed")
				&& !strcmp(path, self->portal_handle))) {
		atomic_store(&self->closed, true);
		pthread_cond_broadcast(&self->cond);
	} else if (dbus_message_is_signal(m, DBUS_INTERFACE_DBUS, "NameOwnerChanged")) {
		const char *name, *old, *new;
		if (dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &name, DBUS_TYPE_STRING, &old,
				DBUS_TYPE_STRING, &new, DBUS_TYPE_INVALID)
				&& !strcmp(name, self->portal ? GNOME_PORTAL_BUS : RD_BUS) && !new[0]) {
			atomic_store(&self->closed, true);	/* Mutter or the portal left the bus */
			pthread_cond_broadcast(&self->cond);
		}
	} else if (clipboard_signal(self, m, "SelectionOwnerChanged", path)) {
		bool is_owner, has_text;
		read_owner_changed(m, self->portal, &is_owner, &has_text);
		self->owner = is_owner;
		self->other_has_text = !is_owner && has_text;
	} else if (clipboard_signal(self, m, "SelectionTransfer", path)) {
		DBusMessageIter it;
		const char* mime = NULL;
		dbus_uint32_t serial = 0;
		dbus_message_iter_init(m, &it);
		if (self->portal)
			dbus_message_iter_next(&it);	/* the session's handle */
		if (dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_STRING) {
			dbus_message_iter_get_basic(&it, &mime);
			dbus_message_iter_next(&it);
		}
		if (mime && dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_UINT32
				&& self->n_transfers < TRANSFERS_MAX) {
			dbus_message_iter_get_basic(&it, &serial);
			self->transfers[self->n_transfers++] = serial;
		}
	} else {
		return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
	}
	return DBUS_HANDLER_RESULT_HANDLED;
}

/* ---- calls (mutex held) ---- */

static void service(struct gnome* self);

/* Send m (consumed) and wait for its reply, bounded; NULL with the reason
 * in self->error. */
static DBusMessage* call(struct gnome* self, DBusMessage* m, int timeout_ms)
{
	if (!m) {
		fail(self, -ENOMEM, "out of memory");
		return NULL;
	}
	DBusError e;
	dbus_error_init(&e);
	DBusMessage* r = dbus_connection_send_with_reply_and_block(self->bus, m, timeout_ms, &e);
	const char* name = dbus_message_get_member(m);
	if (!r) {
		fail(self, -EIO, "%s's %s failed: %s", self->portal ? "the portal" : "Mutter",
				name ? name : "call", e.message);
		dbus_error_free(&e);
	}
	dbus_message_unref(m);
	return r;
}

static int errno_of_failure(struct gnome* self)
{
	if (!dbus_connection_get_is_connected(self->bus) || atomic_load(&self->closed))
		return -EPIPE;
	return strstr(self->error, "NoReply") || strstr(self->error, "imed out") ? -ETIMEDOUT : -EIO;
}

/* A call whose reply carries nothing deskd reads. */
static int call_void(struct gnome* self, DBusMessage* m)
{
	DBusMessage* r = call(self, m, CALL_MS);
	if (!r)
		return errno_of_failure(self);
	dbus_message_unref(r);
	return 0;
}

/* A call that returns one object path (CreateSession, RecordMonitor). */
static int call_path(struct gnome* self, DBusMessage* m, char* out, size_t size)
{
	char name[64];
	snprintf(name, sizeof(name), "%s", m && dbus_message_get_member(m) ? dbus_message_get_member(m) : "a call");
	DBusMessage* r = call(self, m, CALL_MS);
	if (!r)
		return errno_of_failure(self);
	const char* path = NULL;
	int rc = dbus_message_get_args(r, NULL, DBUS_TYPE_OBJECT_PATH, &path, DBUS_TYPE_INVALID)
			&& strlen(path) < size ? 0 : fail(self, -EPROTO, "Mutter answered %s without a path", name);
	if (rc == 0)
		snprintf(out, size, "%s", path);
	dbus_message_unref(r);
	return rc;
}

static DBusMessage* method(const char* bus, const char* path, const char* iface, const char* name)
{
	return dbus_message_new_method_call(bus, path, iface, name);
}

/* A clipboard call: on Mutter's session, or the portal's Clipboard with the
 * session's handle first. */
static DBusMessage* clipboard_method(const struct gnome* self, const char* name)
{
	if (!self->portal)
		return method(RD_BUS, self->rd_path, RD_SESSION, name);
	DBusMessage* m = method(GNOME_PORTAL_BUS, GNOME_PORTAL_PATH, GNOME_PORTAL_CLIPBOARD, name);
	const char* session = self->portal_handle;
	if (m && !dbus_message_append_args(m, DBUS_TYPE_OBJECT_PATH, &session, DBUS_TYPE_INVALID)) {
		dbus_message_unref(m);
		m = NULL;
	}
	return m;
}

bool gnome__append_dict(struct DBusMessage* m, const struct gnome__entry* entries, size_t n)
{
	DBusMessageIter it, dict;
	dbus_message_iter_init_append(m, &it);
	if (!dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &dict))
		return false;
	for (size_t i = 0; i < n; i++) {
		const struct gnome__entry* e = &entries[i];
		DBusMessageIter kv, var, arr;
		char sig[3] = { (char)e->type, 0, 0 };
		if (e->type == DBUS_TYPE_ARRAY)
			sig[1] = DBUS_TYPE_STRING;
		bool ok = dbus_message_iter_open_container(&dict, DBUS_TYPE_DICT_ENTRY, NULL, &kv)
				&& dbus_message_iter_append_basic(&kv, DBUS_TYPE_STRING, &e->key)
				&& dbus_message_iter_open_container(&kv, DBUS_TYPE_VARIANT, sig, &var);
		if (ok && e->type == DBUS_TYPE_ARRAY) {
			const char* const* strings = e->value;
			ok = dbus_message_iter_open_container(&var, DBUS_TYPE_ARRAY, "s", &arr);
			for (size_t k = 0; ok && k < e->n; k++)
				ok = dbus_message_iter_append_basic(&arr, DBUS_TYPE_STRING, &strings[k]);
			ok = ok && dbus_message_iter_close_container(&var, &arr);
		} else if (ok) {
			ok = dbus_message_iter_append_basic(&var, e->type, e->value);
		}
		if (!ok || !dbus_message_iter_close_container(&kv, &var)
				|| !dbus_message_iter_close_container(&dict, &kv))
			return false;
	}
	return dbus_message_iter_close_container(&it, &dict);
}

/* A string property of an object. */
static int get_string_property(struct gnome* self, const char* path, const char* iface,
		const char* name, char* out, size_t size)
{
	DBusMessage* m = method(RD_BUS, path, DBUS_INTERFACE_PROPERTIES, "Get");
	if (m && !dbus_message_append_args(m, DBUS_TYPE_STRING, &iface, DBUS_TYPE_STRING, &name,
			DBUS_TYPE_INVALID)) {
		dbus_message_unref(m);
		m = NULL;
	}
	DBusMessage* r = call(self, m, CALL_MS);
	if (!r)
		return errno_of_failure(self);
	DBusMessageIter it, var;
	int rc = -EPROTO;
	if (dbus_message_iter_init(r, &it) && dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_VARIANT) {
		dbus_message_iter_recurse(&it, &var);
		if (dbus_message_iter_get_arg_type(&var) == DBUS_TYPE_STRING) {
			const char* s;
			dbus_message_iter_get_basic(&var, &s);
			rc = snprintf(out, size, "%s", s) < (int)size ? 0 : -ENAMETOOLONG;
		}
	}
	dbus_message_unref(r);
	return rc < 0 ? fail(self, rc, "Mutter's %s has no %s", iface, name) : 0;
}

/* The stream's size from its Parameters property ({"size": (ii)}). */
static void read_stream_size(struct gnome* self)
{
	const char* iface = SC_STREAM;
	const char* name = "Parameters";
	DBusMessage* m = method(SC_BUS, self->stream_path, DBUS_INTERFACE_PROPERTIES, "Get");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_STRING, &iface, DBUS_TYPE_STRING, &name,
			DBUS_TYPE_INVALID)) {
		if (m)
			dbus_message_unref(m);
		return;
	}
	DBusMessage* r = call(self, m, CALL_MS);
	if (!r)
		return;
	DBusMessageIter it, var, dict;
	if (dbus_message_iter_init(r, &it) && dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_VARIANT) {
		dbus_message_iter_recurse(&it, &var);
		if (dbus_message_iter_get_arg_type(&var) == DBUS_TYPE_ARRAY) {
			dbus_message_iter_recurse(&var, &dict);
			for (; dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY;
					dbus_message_iter_next(&dict)) {
				DBusMessageIter entry, value, st;
				const char* key;
				dbus_message_iter_recurse(&dict, &entry);
				dbus_message_iter_get_basic(&entry, &key);
				dbus_message_iter_next(&entry);
				dbus_message_iter_recurse(&entry, &value);
				if (strcmp(key, "size") || dbus_message_iter_get_arg_type(&value) != DBUS_TYPE_STRUCT)
					continue;
				dbus_int32_t w = 0, h = 0;
				dbus_message_iter_recurse(&value, &st);
				dbus_message_iter_get_basic(&st, &w);
				dbus_message_iter_next(&st);
				dbus_message_iter_get_basic(&st, &h);
				self->width = w;
				self->height = h;
			}
		}
	}
	dbus_message_unref(r);
}

/* ---- the clipboard's transfers (mutex held) ---- */

int gnome__write_all(int fd, const void* bytes, size_t len, int timeout_ms)
{
	const char* data = bytes;
	int64_t deadline = clock_ms() + timeout_ms;
	int flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n > 0) {
			data += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int64_t l = left_ms(deadline);
		if (l <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)l) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

static void answer_transfer(struct gnome* self, uint32_t serial)
{
	DBusMessage* m = clipboard_method(self, "SelectionWrite");
	if (m && !dbus_message_append_args(m, DBUS_TYPE_UINT32, &serial, DBUS_TYPE_INVALID)) {
		dbus_message_unref(m);
		m = NULL;
	}
	DBusMessage* r = call(self, m, CALL_MS);
	if (!r)
		return;		/* the request timed out or was cancelled */
	int fd = -1;
	dbus_bool_t ok = dbus_message_get_args(r, NULL, DBUS_TYPE_UNIX_FD, &fd, DBUS_TYPE_INVALID);
	dbus_message_unref(r);
	if (ok) {
		ok = self->offer && gnome__write_all(fd, self->offer, self->offer_len, TRANSFER_MS) == 0;
		close(fd);
	}
	if (ok)
		atomic_fetch_add(&self->delivered, 1);
	m = clipboard_method(self, "SelectionWriteDone");
	if (m && dbus_message_append_args(m, DBUS_TYPE_UINT32, &serial, DBUS_TYPE_BOOLEAN, &ok,
			DBUS_TYPE_INVALID))
		call_void(self, m);
	else if (m)
		dbus_message_unref(m);
}

/* Dispatch what arrived, then answer the transfers it asked for. */
static void service(struct gnome* self)
{
	for (;;) {
		while (dbus_connection_dispatch(self->bus) == DBUS_DISPATCH_DATA_REMAINS)
			;
		if (self->n_transfers == 0)
			break;
		uint32_t serial = self->transfers[0];
		memmove(self->transfers, self->transfers + 1, --self->n_transfers * sizeof(serial));
		answer_transfer(self, serial);
	}
	if (!dbus_connection_get_is_connected(self->bus))
		atomic_store(&self->closed, true);
}

static void lock(struct gnome* self)
{
	pthread_mutex_lock(&self->mutex);
}

static void unlock(struct gnome* self)
{
	service(self);
	pthread_mutex_unlock(&self->mutex);
}

/* ---- the reader ---- */

static void* reader_main(void* ud)
{
	struct gnome* self = ud;
	int fd = -1;
	dbus_connection_get_unix_fd(self->bus, &fd);
	while (!atomic_load(&self->stopping) && !atomic_load(&self->closed)) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = self->wake[0], .events = POLLIN } };
		int n = poll(p, 2, 1000);
		if (n < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (n == 0 && dbus_connection_get_dispatch_status(self->bus) != DBUS_DISPATCH_DATA_REMAINS)
			continue;
		lock(self);
		dbus_connection_read_write(self->bus, 0);
		unlock(self);
	}
	return NULL;
}

/* ---- public ---- */

bool gnome_reachable(const char* address, int timeout_ms)
{
	struct gnome_address a;
	if (gnome_address_parse(address, &a) < 0)
		return false;
	pthread_once(&threads_once, threads_init);
	char err[256];
	DBusConnection* c = gnome__connect(a.bus, clock_ms() + timeout_ms, err, sizeof(err));
	if (!c)
		return false;
	if (a.portal[0]) {
		/* activatable: the bus starts it for the question */
		bool answers = gnome__portal_version(c, GNOME_PORTAL_RD, timeout_ms) >= 1;
		dbus_connection_close(c);
		dbus_connection_unref(c);
		return answers;
	}
	const char* name = RD_BUS;
	DBusMessage* m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
			DBUS_INTERFACE_DBUS, "NameHasOwner");
	bool owned = false;
	if (m && dbus_message_append_args(m, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID)) {
		DBusMessage* r = dbus_connection_send_with_reply_and_block(c, m, timeout_ms, NULL);
		dbus_bool_t b = FALSE;
		if (r && dbus_message_get_args(r, NULL, DBUS_TYPE_BOOLEAN, &b, DBUS_TYPE_INVALID))
			owned = b;
		if (r)
			dbus_message_unref(r);
	}
	if (m)
		dbus_message_unref(m);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return owned;
}

int gnome_activation_environment(const char* address, int timeout_ms, char* err,
		size_t err_size)
{
	struct gnome_address a;
	if (gnome_address_parse(address, &a) < 0 || !a.wayland[0]) {
		snprintf(err, err_size, "the address names no Wayland socket");
		return -EINVAL;
	}
	pthread_once(&threads_once, threads_init);
	DBusConnection* c = gnome__connect(a.bus, clock_ms() + timeout_ms, err, err_size);
	if (!c)
		return -ECONNREFUSED;
	const char* const VARS[][2] = {
		{ "WAYLAND_DISPLAY", a.wayland },
		{ "XDG_SESSION_TYPE", "wayland" },
		{ "XDG_CURRENT_DESKTOP", "GNOME" },
	};
	DBusMessage* m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
			DBUS_INTERFACE_DBUS, "UpdateActivationEnvironment");
	DBusMessageIter it, dict, kv;
	bool ok = m != NULL;
	if (ok) {
		dbus_message_iter_init_append(m, &it);
		ok = dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{ss}", &dict);
	}
	for (size_t i = 0; ok && i < sizeof(VARS) / sizeof(VARS[0]); i++)
		ok = dbus_message_iter_open_container(&dict, DBUS_TYPE_DICT_ENTRY, NULL, &kv)
				&& dbus_message_iter_append_basic(&kv, DBUS_TYPE_STRING, &VARS[i][0])
				&& dbus_message_iter_append_basic(&kv, DBUS_TYPE_STRING, &VARS[i][1])
				&& dbus_message_iter_close_container(&dict, &kv);
	ok = ok && dbus_message_iter_close_container(&it, &dict);
	int rc = ok ? 0 : -ENOMEM;
	if (ok) {
		DBusError e;
		dbus_error_init(&e);
		DBusMessage* r = dbus_connection_send_with_reply_and_block(c, m, timeout_ms, &e);
		if (r) {
			dbus_message_unref(r);
		} else {
			snprintf(err, err_size, "the bus refused UpdateActivationEnvironment: %s", e.message);
			dbus_error_free(&e);
			rc = -EIO;
		}
	} else {
		snprintf(err, err_size, "out of memory");
	}
	if (m)
		dbus_message_unref(m);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return rc;
}

static int add_match(struct gnome* self, const char* rule)
{
	DBusError e;
	dbus_error_init(&e);
	dbus_bus_add_match(self->bus, rule, &e);
	if (dbus_error_is_set(&e)) {
		int rc = fail(self, -EIO, "cannot watch Mutter's signals: %s", e.message);
		dbus_error_free(&e);
		return rc;
	}
	return 0;
}

/* The portal's session: its node, size and PipeWire connection (mutex
 * held; nobody else dispatches the connection yet). */
static int start_portal(struct gnome* self, int64_t deadline, int* pipewire_fd)
{
	struct gnome__portal_session ps;
	int rc = gnome__portal_start(self->bus, deadline, &ps, self->error, sizeof(self->error));
	if (rc < 0)
		return rc;
	snprintf(self->portal_handle, sizeof(self->portal_handle), "%s", ps.handle);
	self->node = ps.node;
	self->have_node = true;
	self->width = ps.width;
	self->height = ps.height;
	self->clipboard = ps.clipboard;
	*pipewire_fd = ps.pipewire_fd;
	char rule[400];
	snprintf(rule, sizeof(rule), "type='signal',interface='" GNOME_PORTAL_SESSION "',"
			"member='Closed',path='%s'", self->portal_handle);
	if ((rc = add_match(self, rule)) == 0)
		rc = add_match(self, "type='signal',sender='" DBUS_SERVICE_DBUS "',"
				"member='NameOwnerChanged',arg0='" GNOME_PORTAL_BUS "'");
	if (rc == 0 && self->clipboard)
		rc = add_match(self, "type='signal',interface='" GNOME_PORTAL_CLIPBOARD "',"
				"path='" GNOME_PORTAL_PATH "'");
	return rc;
}

/* The sessions, the stream's node and size (mutex held). */
static int start_sessions(struct gnome* self, int64_t deadline)
{
	int rc = call_path(self, method(RD_BUS, RD_PATH, RD_BUS, "CreateSession"),
			self->rd_path, sizeof(self->rd_path));
	char id[128];
	if (rc == 0)
		rc = get_string_property(self, self->rd_path, RD_SESSION, "SessionId", id, sizeof(id));
	if (rc < 0)
		return rc;
	DBusMessage* m = method(SC_BUS, SC_PATH, SC_BUS, "CreateSession");
	const char* idp = id;
	struct gnome__entry link = { "remote-desktop-session-id", DBUS_TYPE_STRING, &idp, 0 };
	if (m && !gnome__append_dict(m, &link, 1)) {
		dbus_message_unref(m);
		m = NULL;
	}
	if ((rc = call_path(self, m, self->sc_path, sizeof(self->sc_path))) < 0)
		return rc;
	/* The primary monitor (""), without the pointer in the frames: deskd
	 * draws it itself where it is asked to. */
	m = method(SC_BUS, self->sc_path, SC_SESSION, "RecordMonitor");
	const char* connector = "";
	dbus_uint32_t cursor_hidden = 0;
	struct gnome__entry props = { "cursor-mode", DBUS_TYPE_UINT32, &cursor_hidden, 0 };
	if (m && (!dbus_message_append_args(m, DBUS_TYPE_STRING, &connector, DBUS_TYPE_INVALID)
			|| !gnome__append_dict(m, &props, 1))) {
		dbus_message_unref(m);
		m = NULL;
	}
	if ((rc = call_path(self, m, self->stream_path, sizeof(self->stream_path))) < 0)
		return rc;
	char rule[512];
	snprintf(rule, sizeof(rule), "type='signal',sender='" SC_BUS "',path='%s'", self->stream_path);
	if ((rc = add_match(self, rule)) < 0)
		return rc;
	snprintf(rule, sizeof(rule), "type='signal',sender='" RD_BUS "',path='%s'", self->rd_path);
	if ((rc = add_match(self, rule)) < 0)
		return rc;
	snprintf(rule, sizeof(rule), "type='signal',sender='" SC_BUS "',path='%s'", self->sc_path);
	if ((rc = add_match(self, rule)) < 0)
		return rc;
	if ((rc = add_match(self, "type='signal',sender='" DBUS_SERVICE_DBUS "',member='NameOwnerChanged',"
			"arg0='" RD_BUS "'")) < 0)
		return rc;
	if ((rc = call_void(self, method(RD_BUS, self->rd_path, RD_SESSION, "Start"))) < 0)
		return rc;
	/* The node comes as a signal, soon after Start. */
	while (!self->have_node && !atomic_load(&self->closed)) {
		int64_t l = left_ms(deadline);
		if (l <= 0)
			return fail(self, -ETIMEDOUT, "Mutter started the screen cast but named no "
					"PipeWire stream in time");
		if (!dbus_connection_read_write_dispatch(self->bus, (int)(l > 100 ? 100 : l)))
			return fail(self, -EPIPE, "the session bus closed the connection");
	}
	if (atomic_load(&self->closed))
		return fail(self, -EPIPE, "Mutter closed the session as it started");
	read_stream_size(self);
	return 0;
}

static int enable_clipboard(struct gnome* self)
{
	DBusMessage* m = method(RD_BUS, self->rd_path, RD_SESSION, "EnableClipboard");
	if (m && !gnome__append_dict(m, NULL, 0)) {
		dbus_message_unref(m);
		m = NULL;
	}
	int rc = call_void(self, m);
	self->clipboard = rc == 0;
	return rc;
}

static void close_session(struct gnome* self);

static struct gnome* open_session(const struct gnome_address* address, const char* text,
		unsigned want, int timeout_ms, char* err, size_t err_size)
{
	const struct gnome_address a = *address;
	int64_t deadline = clock_ms() + timeout_ms;
	struct gnome* self = calloc(1, sizeof(*self));
	if (!self) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	self->portal = a.portal[0] != '\0';
	snprintf(self->address, sizeof(self->address), "%s", text);
	pthread_mutex_init(&self->mutex, NULL);
	pthread_cond_init(&self->cond, NULL);
	self->wake[0] = self->wake[1] = -1;
	self->bus = gnome__connect(a.bus, deadline, err, err_size);
	if (!self->bus)
		goto failed_early;
	if (!dbus_connection_add_filter(self->bus, on_message, self, NULL)) {
		snprintf(err, err_size, "out of memory");
		goto failed_early;
	}
	lock(self);
	int pipewire_fd = -1;
	int rc = self->portal ? start_portal(self, deadline, &pipewire_fd) : start_sessions(self, deadline);
	if (rc == 0 && (want & GNOME_CLIPBOARD))
		rc = enable_clipboard(self);
	pthread_mutex_unlock(&self->mutex);
	if (rc == 0 && (want & GNOME_FRAMES)) {
		self->stream = gnome__stream_open(a.pipewire, pipewire_fd, self->node, self->error,
				sizeof(self->error));
		pipewire_fd = -1;
		rc = self->stream ? 0 : -EIO;
		if (self->stream && (self->width <= 0 || self->height <= 0)) {
			uint64_t seq;
			if (gnome__stream_wait(self->stream, 0, (int)left_ms(deadline), &seq) == 0)
				gnome__stream_size(self->stream, &self->width, &self->height);
		}
	}
	if (rc == 0 && pipe2(self->wake, O_CLOEXEC) != 0)
		rc = fail(self, -errno, "cannot make a pipe: %s", strerror(errno));
	if (rc == 0) {
		rc = -pthread_create(&self->reader, NULL, reader_main, self);
		self->reader_running = rc == 0;
		if (rc < 0)
			fail(self, rc, "cannot start the bus reader: %s", strerror(-rc));
	}
	if (pipewire_fd >= 0)
		close(pipewire_fd);
	if (rc < 0) {
		snprintf(err, err_size, "%s", self->error);
		close_session(self);
		return NULL;
	}
	return self;
failed_early:
	if (self->bus) {
		dbus_connection_close(self->bus);
		dbus_connection_unref(self->bus);
	}
	pthread_cond_destroy(&self->cond);
	pthread_mutex_destroy(&self->mutex);
	free(self);
	return NULL;
}

struct gnome* gnome_open(const char* address, unsigned want, int timeout_ms, char* err,
		size_t err_size)
{
	struct gnome_address a;
	if (gnome_address_parse(address, &a) < 0) {
		snprintf(err, err_size, "'%s' is not a GNOME desktop's address", address ? address : "");
		return NULL;
	}
	pthread_once(&threads_once, threads_init);
	if (!a.portal[0])
		return open_session(&a, address, want, timeout_ms, err, err_size);
	pthread_mutex_lock(&shared_mutex);
	struct gnome* self = shared_portal;
	if (self && gnome_alive(self) && !strcmp(self->address, address)) {
		self->refs++;
	} else {
		/* A session that ended stays its owners' until they close it. The
		 * clipboard is the portal's to give at Start (start_portal). */
		self = open_session(&a, address, (want & ~GNOME_CLIPBOARD) | GNOME_FRAMES, timeout_ms,
				err, err_size);
		if (self) {
			self->refs = 1;
			shared_portal = self;
		}
	}
	pthread_mutex_unlock(&shared_mutex);
	if (self && (want & GNOME_CLIPBOARD) && !self->clipboard) {
		snprintf(err, err_size, "%s", GNOME_PORTAL_NO_CLIPBOARD);
		gnome_close(self);
		return NULL;
	}
	return self;
}

static void close_session(struct gnome* self)
{
	atomic_store(&self->stopping, true);
	if (self->reader_running) {
		if (write(self->wake[1], "x", 1) < 0) {
			/* the reader's 1 s poll ends it anyway */
		}
		pthread_join(self->reader, NULL);
	}
	for (int i = 0; i < 2; i++)
		if (self->wake[i] >= 0)
			close(self->wake[i]);
	gnome__stream_close(self->stream);
	if (self->portal_handle[0] && !atomic_load(&self->closed))
		gnome__portal_stop(self->bus, self->portal_handle);
	if (self->rd_path[0] && !atomic_load(&self->closed)) {
		/* Stop says so at once; closing the connection would too, later. */
		DBusMessage* m = method(RD_BUS, self->rd_path, RD_SESSION, "Stop");
		if (m) {
			DBusMessage* r = dbus_connection_send_with_reply_and_block(self->bus, m, 500, NULL);
			if (r)
				dbus_message_unref(r);
			dbus_message_unref(m);
		}
	}
	dbus_connection_remove_filter(self->bus, on_message, self);
	dbus_connection_close(self->bus);
	dbus_connection_unref(self->bus);
	free(self->offer);
	pthread_cond_destroy(&self->cond);
	pthread_mutex_destroy(&self->mutex);
	free(self);
}

void gnome_close(struct gnome* self)
{
	if (!self)
		return;
	if (self->portal) {
		pthread_mutex_lock(&shared_mutex);
		bool last = --self->refs == 0;
		if (last && shared_portal == self)
			shared_portal = NULL;
		pthread_mutex_unlock(&shared_mutex);
		if (!last)
			return;
	}
	close_session(self);
}

bool gnome_alive(struct gnome* self)
{
	return !atomic_load(&self->closed) && dbus_connection_get_is_connected(self->bus)
			&& !(self->stream && gnome__stream_broken(self->stream));
}

void gnome_size(const struct gnome* self, int* width, int* height)
{
	*width = self->width;
	*height = self->height;
}

const char* gnome_error(const struct gnome* self)
{
	return self->error[0] ? self->error : "no error";
}

/* ---- frames ---- */

uint64_t gnome_frame_seq(struct gnome* self)
{
	return self->stream ? gnome__stream_seq(self->stream) : 0;
}

int gnome_frame_wait(struct gnome* self, uint64_t after, int timeout_ms, uint64_t* seq)
{
	if (!self->stream)
		return fail(self, -ENOTSUP, "this session has no frames");
	return gnome__stream_wait(self->stream, after, timeout_ms, seq);
}

int gnome_frame_fd(struct gnome* self)
{
	return self->stream ? gnome__stream_fd(self->stream) : -1;
}

void gnome_frame_release(struct gnome* self)
{
	if (self && self->stream)
		gnome__stream_release(self->stream);
}

int gnome_frame_read(struct gnome* self, int x, int y, int width, int height, uint8_t* dst,
		int dst_stride, uint64_t* seq)
{
	if (!self->stream)
		return fail(self, -ENOTSUP, "this session has no frames");
	return gnome__stream_read(self->stream, x, y, width, height, dst, dst_stride, seq);
}

/* ---- input ---- */

/* One Notify call with the given arguments (a DBus type list). */
static int notify(struct gnome* self, const char* name, int first_type, ...)
{
	if (atomic_load(&self->closed))
		return fail(self, -EPIPE, "Mutter closed the session");
	/* The portal's methods take the session and an a{sv} first. */
	const char* session = self->portal_handle;
	DBusMessage* m = self->portal
			? method(GNOME_PORTAL_BUS, GNOME_PORTAL_PATH, GNOME_PORTAL_RD, name)
			: method(RD_BUS, self->rd_path, RD_SESSION, name);
	if (m && self->portal && (!dbus_message_append_args(m, DBUS_TYPE_OBJECT_PATH, &session,
			DBUS_TYPE_INVALID) || !gnome__append_dict(m, NULL, 0))) {
		dbus_message_unref(m);
		m = NULL;
	}
	va_list ap;
	va_start(ap, first_type);
	if (m && !dbus_message_append_args_valist(m, first_type, ap)) {
		dbus_message_unref(m);
		m = NULL;
	}
	va_end(ap);
	if (!m)
		return fail(self, -ENOMEM, "out of memory");
	if (self->portal) {
		/* One at a time: xdg-desktop-portal runs each call on a thread of
		 * its own and passes it on from there, so events sent together
		 * reach Mutter out of order (typing "portal" gave "portl" and
		 * an 'a' later, a release after its key's repeat, measured). Its
		 * reply says it has passed the event on. */
		lock(self);
		int rc = call_void(self, m);
		unlock(self);
		return rc;
	}
	/* Sent without waiting: a reply per event cost a round trip each, and
	 * one that came while Mutter painted took 40 ms (p95, measured);
	 * gnome_input_flush waits for them all at once. */
	dbus_message_set_no_reply(m, TRUE);
	lock(self);
	bool sent = dbus_connection_send(self->bus, m, NULL);
	unlock(self);
	dbus_message_unref(m);
	return sent ? 0 : fail(self, -ENOMEM, "out of memory");
}

int gnome_input_flush(struct gnome* self)
{
	if (atomic_load(&self->closed))
		return fail(self, -EPIPE, "Mutter closed the session");
	/* A property of the session: Mutter answers it on the loop that runs
	 * the events, after the ones sent before. The portal passes the
	 * events on without waiting for its backend, so its answer says only
	 * that it has sent them on, in order. */
	char id[128];
	lock(self);
	int rc = self->portal ? gnome__portal_version(self->bus, GNOME_PORTAL_RD, CALL_MS)
			: get_string_property(self, self->rd_path, RD_SESSION, "SessionId", id, sizeof(id));
	unlock(self);
	if (self->portal && rc < 0)
		return fail(self, errno_of_failure(self), "the portal did not answer");
	return rc < 0 ? rc : 0;
}

int gnome_input_warm(struct gnome* self, int settle_ms)
{
	double none = 0;
	const uint32_t shift = 0xffe1;	/* Shift_L: a key that types nothing */
	int rc = notify(self, self->portal ? "NotifyPointerMotion" : "NotifyPointerMotionRelative",
			DBUS_TYPE_DOUBLE, &none, DBUS_TYPE_DOUBLE, &none, DBUS_TYPE_INVALID);
	if (rc == 0)
		rc = gnome_key_keysym(self, shift, true);
	if (rc == 0)
		rc = gnome_key_keysym(self, shift, false);
	if (rc == 0)
		rc = gnome_input_flush(self);
	if (rc == 0)
		clock_sleep_ms(settle_ms);
	return rc;
}

/* The portal says a key's or a button's state as a u (1 pressed), its codes
 * as i; Mutter as a b and u. */
int gnome_pointer_move(struct gnome* self, double x, double y)
{
	const char* stream = self->stream_path;
	if (self->portal)
		return notify(self, "NotifyPointerMotionAbsolute", DBUS_TYPE_UINT32, &self->node,
				DBUS_TYPE_DOUBLE, &x, DBUS_TYPE_DOUBLE, &y, DBUS_TYPE_INVALID);
	return notify(self, "NotifyPointerMotionAbsolute", DBUS_TYPE_STRING, &stream,
			DBUS_TYPE_DOUBLE, &x, DBUS_TYPE_DOUBLE, &y, DBUS_TYPE_INVALID);
}

int gnome_pointer_button(struct gnome* self, int button, bool down)
{
	/* Linux's input codes: BTN_LEFT, BTN_MIDDLE, BTN_RIGHT, BTN_SIDE, BTN_EXTRA. */
	static const dbus_int32_t codes[10] = { [1] = 0x110, [2] = 0x112, [3] = 0x111,
		[8] = 0x113, [9] = 0x114 };
	if (button < 1 || button > 9 || !codes[button])
		return fail(self, -EINVAL, "no button %d on GNOME", button);
	dbus_int32_t b = codes[button];
	dbus_bool_t d = down;
	dbus_uint32_t state = down;
	if (self->portal)
		return notify(self, "NotifyPointerButton", DBUS_TYPE_INT32, &b, DBUS_TYPE_UINT32, &state,
				DBUS_TYPE_INVALID);
	return notify(self, "NotifyPointerButton", DBUS_TYPE_INT32, &b, DBUS_TYPE_BOOLEAN, &d,
			DBUS_TYPE_INVALID);
}

int gnome_pointer_scroll(struct gnome* self, unsigned axis, int steps)
{
	dbus_uint32_t a = axis;
	dbus_int32_t s = steps;
	return notify(self, "NotifyPointerAxisDiscrete", DBUS_TYPE_UINT32, &a, DBUS_TYPE_INT32, &s,
			DBUS_TYPE_INVALID);
}

int gnome_key_keycode(struct gnome* self, uint32_t evdev_keycode, bool down)
{
	dbus_uint32_t k = evdev_keycode;
	dbus_bool_t d = down;
	dbus_int32_t code = (dbus_int32_t)evdev_keycode;
	dbus_uint32_t state = down;
	if (self->portal)
		return notify(self, "NotifyKeyboardKeycode", DBUS_TYPE_INT32, &code, DBUS_TYPE_UINT32,
				&state, DBUS_TYPE_INVALID);
	return notify(self, "NotifyKeyboardKeycode", DBUS_TYPE_UINT32, &k, DBUS_TYPE_BOOLEAN, &d,
			DBUS_TYPE_INVALID);
}

int gnome_key_keysym(struct gnome* self, uint32_t keysym, bool down)
{
	dbus_uint32_t k = keysym;
	dbus_bool_t d = down;
	dbus_int32_t sym = (dbus_int32_t)keysym;
	dbus_uint32_t state = down;
	if (self->portal)
		return notify(self, "NotifyKeyboardKeysym", DBUS_TYPE_INT32, &sym, DBUS_TYPE_UINT32,
				&state, DBUS_TYPE_INVALID);
	return notify(self, "NotifyKeyboardKeysym", DBUS_TYPE_UINT32, &k, DBUS_TYPE_BOOLEAN, &d,
			DBUS_TYPE_INVALID);
}

bool gnome_keysym_typable(struct gnome* self, uint32_t keysym)
{
	/* Mutter's default layout (us): printable ASCII, and the function
	 * keys' block (Return, Tab, arrows, F-keys, modifiers). */
	return (keysym >= 0x20 && keysym <= 0x7e) || (keysym >= 0xff00 && keysym <= 0xffff);
}

/* ---- the clipboard ---- */

int gnome_clipboard_offer(struct gnome* self, const char* text, size_t len)
{
	if (!self->clipboard)
		return fail(self, -ENOTSUP, "this session has no clipboard");
	char* copy = malloc(len + 1);
	if (!copy)
		return fail(self, -ENOMEM, "out of memory");
	memcpy(copy, text, len);
	copy[len] = '\0';
	DBusMessage* m = clipboard_method(self, "SetSelection");
	struct gnome__entry types = { TYPES_KEY[self->portal], DBUS_TYPE_ARRAY, TEXT_TYPES, N_TEXT_TYPES };
	if (m && !gnome__append_dict(m, &types, 1)) {
		dbus_message_unref(m);
		m = NULL;
	}
	lock(self);
	free(self->offer);
	self->offer = copy;
	self->offer_len = len;
	int rc = call_void(self, m);
	if (rc == 0)
		self->owner = true;
	unlock(self);
	return rc;
}

unsigned long gnome_clipboard_delivered(struct gnome* self)
{
	return atomic_load(&self->delivered);
}

/* Read a pipe to its end, bounded. */
static int read_all(int fd, int timeout_ms, char** out, size_t* len)
{
	int64_t deadline = clock_ms() + timeout_ms;
	size_t cap = 4096, n = 0;
	char* buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	int flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	for (;;) {
		if (n == cap) {
			if (cap >= TEXT_MAX) {
				free(buf);
				return -EFBIG;
			}
			char* bigger = realloc(buf, cap * 2 + 1);
			if (!bigger) {
				free(buf);
				return -ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
		ssize_t got = read(fd, buf + n, cap - n);
		if (got > 0) {
			n += (size_t)got;
			continue;
		}
		if (got == 0)
			break;
		if (errno != EAGAIN && errno != EINTR) {
			int rc = -errno;
			free(buf);
			return rc;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t l = left_ms(deadline);
		if (l <= 0) {
			free(buf);
			return -ETIMEDOUT;
		}
		poll(&p, 1, (int)l);
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int gnome_clipboard_read(struct gnome* self, int timeout_ms, char** text, size_t* len)
{
	if (!self->clipboard)
		return fail(self, -ENOTSUP, "this session has no clipboard");
	lock(self);
	service(self);		/* the latest owner change */
	if (self->owner && self->offer) {
		*text = malloc(self->offer_len + 1);
		int rc = *text ? 0 : -ENOMEM;
		if (rc == 0) {
			memcpy(*text, self->offer, self->offer_len + 1);
			*len = self->offer_len;
		}
		unlock(self);
		return rc;
	}
	int rc = -ENOENT;
	int fd = -1;
	for (size_t i = 0; i < N_TEXT_TYPES && fd < 0 && self->other_has_text; i++) {
		DBusMessage* m = clipboard_method(self, "SelectionRead");
		const char* type = TEXT_TYPES[i];
		if (m && !dbus_message_append_args(m, DBUS_TYPE_STRING, &type, DBUS_TYPE_INVALID)) {
			dbus_message_unref(m);
			m = NULL;
		}
		DBusMessage* r = call(self, m, CALL_MS);
		if (r && !dbus_message_get_args(r, NULL, DBUS_TYPE_UNIX_FD, &fd, DBUS_TYPE_INVALID))
			fd = -1;
		if (r)
			dbus_message_unref(r);
	}
	unlock(self);
	if (fd >= 0) {
		rc = read_all(fd, timeout_ms, text, len);
		close(fd);
	}
	return rc;
}
