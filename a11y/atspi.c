/* The AT-SPI client on plain libdbus: the connection pool, pipelined
 * batches with one deadline, the snapshot walk, element reads, actions and
 * the event watch. See a11y.h for the contract. */
#include "a11y/a11y.h"
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

#define REGISTRY_BUS "org.a11y.atspi.Registry"
#define ROOT_PATH "/org/a11y/atspi/accessible/root"
#define IF_ACCESSIBLE "org.a11y.atspi.Accessible"
#define IF_COMPONENT "org.a11y.atspi.Component"
#define IF_TEXT "org.a11y.atspi.Text"
#define IF_EDITABLE "org.a11y.atspi.EditableText"
#define IF_VALUE "org.a11y.atspi.Value"
#define IF_ACTION "org.a11y.atspi.Action"
#define IF_SELECTION "org.a11y.atspi.Selection"
#define IF_APPLICATION "org.a11y.atspi.Application"
#define IF_PROPS "org.freedesktop.DBus.Properties"
#define DEFAULT_DEADLINE_MS 2000
#define POOL_MAX 4

/* ---- Configuration and the pool --------------------------------------------- */

static pthread_mutex_t cfg_mutex = PTHREAD_MUTEX_INITIALIZER;
static char cfg_session[512];
static char cfg_bus[512];		/* the AT-SPI bus address, once known */
static DBusConnection* pool[POOL_MAX];
static int pool_n;
/* Registered for an event with the registry, so the apps' bridges count a
 * client and serve their cache (GetItems) and events; kept open. */
static DBusConnection* anchor;

/* Peer-to-peer connections to apps that offer them (ATK apps: GTK3,
 * Chromium, Firefox; GetApplicationBusAddress), which skip the bus daemon:
 * idle ones by app bus name, and the apps known to offer none. */
#define PEERS_MAX 8
static struct { char bus[A11Y_BUS_MAX]; DBusConnection* c; } peers[PEERS_MAX];
static int n_peers;
static char no_peer[16][A11Y_BUS_MAX];
static unsigned no_peer_next;
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

static void threads_init(void)
{
	dbus_threads_init_default();
}

static void set_err(char* err, size_t size, const char* fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_err(char* err, size_t size, const char* fmt, ...)
{
	if (!err || !size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
}

void a11y_configure(const char* session_bus_address)
{
	pthread_once(&threads_once, threads_init);
	pthread_mutex_lock(&cfg_mutex);
	snprintf(cfg_session, sizeof(cfg_session), "%s", session_bus_address ? session_bus_address : "");
	cfg_bus[0] = '\0';
	while (n_peers > 0) {
		n_peers--;
		dbus_connection_close(peers[n_peers].c);
		dbus_connection_unref(peers[n_peers].c);
	}
	memset(no_peer, 0, sizeof(no_peer));
	if (anchor) {
		dbus_connection_close(anchor);
		dbus_connection_unref(anchor);
		anchor = NULL;
	}
	while (pool_n > 0) {
		DBusConnection* c = pool[--pool_n];
		dbus_connection_close(c);
		dbus_connection_unref(c);
	}
	pthread_mutex_unlock(&cfg_mutex);
}

static void open_anchor(const char* addr);


static int64_t left_ms(int64_t deadline)
{
	int64_t l = deadline - clock_ms();
	return l < 0 ? 0 : l;
}

#define CONNECT_MS 1000		/* authentication and Hello on a new bus connection */

/* Authenticate and register (Hello) within timeout_ms. Not
 * dbus_bus_register: it waits for ever (poll without a timeout, measured)
 * on a bus that accepts the connection and never answers, as a stopped
 * dbus-daemon does. */
static bool register_bounded(DBusConnection* c, int timeout_ms, char* err, size_t size)
{
	int64_t deadline = clock_ms() + timeout_ms;
	while (!dbus_connection_get_is_authenticated(c)) {
		int64_t l = left_ms(deadline);
		if (l <= 0 || !dbus_connection_read_write(c, (int)(l > 100 ? 100 : l))
				|| !dbus_connection_get_is_connected(c)) {
			set_err(err, size, l <= 0 ? "the bus did not authenticate within %d ms"
					: "the bus closed the connection during authentication", timeout_ms);
			return false;
		}
	}
	DBusMessage* m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
			DBUS_INTERFACE_DBUS, "Hello");
	dbus_uint32_t serial = 0;
	if (!m || !dbus_connection_send(c, m, &serial)) {
		if (m)
			dbus_message_unref(m);
		set_err(err, size, "out of memory");
		return false;
	}
	dbus_message_unref(m);
	for (;;) {
		DBusMessage* r;
		while ((r = dbus_connection_pop_message(c))) {
			if (dbus_message_get_reply_serial(r) != serial) {
				dbus_message_unref(r);	/* NameAcquired */
				continue;
			}
			const char* name = NULL;
			bool ok = dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_METHOD_RETURN
					&& dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID)
					&& name && dbus_bus_set_unique_name(c, name);
			if (!ok)
				set_err(err, size, "bus registration failed: %s",
						dbus_message_get_error_name(r) ? dbus_message_get_error_name(r) : "no name");
			dbus_message_unref(r);
			return ok;
		}
		int64_t l = left_ms(deadline);
		if (l <= 0 || !dbus_connection_read_write(c, (int)(l > 100 ? 100 : l))
				|| !dbus_connection_get_is_connected(c)) {
			set_err(err, size, l <= 0 ? "the bus did not answer Hello within %d ms"
					: "the bus closed the connection", timeout_ms);
			return false;
		}
	}
}

static DBusConnection* connect_to(const char* address, int timeout_ms, char* err, size_t size)
{
	DBusError e;
	dbus_error_init(&e);
	DBusConnection* c = dbus_connection_open_private(address, &e);
	if (!c) {
		set_err(err, size, "cannot connect to %s: %s", address, e.message);
		dbus_error_free(&e);
		return NULL;
	}
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	if (!register_bounded(c, timeout_ms, err, size)) {
		dbus_connection_close(c);
		dbus_connection_unref(c);
		return NULL;
	}
	return c;
}

static void drop_connection(DBusConnection* c)
{
	if (!c)
		return;
	dbus_connection_close(c);
	dbus_connection_unref(c);
}

/* One call on a short-lived connection to the session bus. */
static DBusMessage* session_call(DBusMessage* msg, int timeout_ms, char* err, size_t size)
{
	char address[512];
	pthread_mutex_lock(&cfg_mutex);
	snprintf(address, sizeof(address), "%s", cfg_session);
	pthread_mutex_unlock(&cfg_mutex);
	if (!address[0]) {
		set_err(err, size, "no session bus (DBUS_SESSION_BUS_ADDRESS is not set)");
		dbus_message_unref(msg);
		return NULL;
	}
	DBusConnection* c = connect_to(address, timeout_ms, err, size);
	if (!c) {
		dbus_message_unref(msg);
		return NULL;
	}
	DBusError e;
	dbus_error_init(&e);
	DBusMessage* reply = dbus_connection_send_with_reply_and_block(c, msg, timeout_ms, &e);
	dbus_message_unref(msg);
	if (!reply) {
		set_err(err, size, "%s", e.message);
		dbus_error_free(&e);
	}
	drop_connection(c);
	return reply;
}

static int query_bus_address(int timeout_ms, char* out, size_t size, char* err, size_t err_size)
{
	/* Only without a session bus of our own: deskd's embedded desktop
	 * must not follow a caller's variable to another desktop's bus. */
	pthread_mutex_lock(&cfg_mutex);
	bool have_session = cfg_session[0] != '\0';
	pthread_mutex_unlock(&cfg_mutex);
	const char* env = have_session ? NULL : getenv("AT_SPI_BUS_ADDRESS");
	if (env && *env) {
		snprintf(out, size, "%s", env);
		return 0;
	}
	DBusMessage* m = dbus_message_new_method_call("org.a11y.Bus", "/org/a11y/bus",
			"org.a11y.Bus", "GetAddress");
	if (!m)
		return -ENOMEM;
	DBusMessage* r = session_call(m, timeout_ms, err, err_size);
	if (!r)
		return -ENOTCONN;
	const char* addr = NULL;
	DBusError e;
	dbus_error_init(&e);
	int rc = 0;
	if (!dbus_message_get_args(r, &e, DBUS_TYPE_STRING, &addr, DBUS_TYPE_INVALID) || !addr || !*addr) {
		set_err(err, err_size, "org.a11y.Bus.GetAddress gave no address");
		dbus_error_free(&e);
		rc = -ENOTCONN;
	} else {
		snprintf(out, size, "%s", addr);
	}
	dbus_message_unref(r);
	return rc;
}

static int set_enabled(int timeout_ms, char* err, size_t size)
{
	DBusMessage* m = dbus_message_new_method_call("org.a11y.Bus", "/org/a11y/bus",
			IF_PROPS, "Set");
	if (!m)
		return -ENOMEM;
	const char* iface = "org.a11y.Status";
	const char* prop = "IsEnabled";
	DBusMessageIter it, v;
	dbus_message_iter_init_append(m, &it);
	dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &iface);
	dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &prop);
	dbus_message_iter_open_container(&it, DBUS_TYPE_VARIANT, "b", &v);
	dbus_bool_t yes = TRUE;
	dbus_message_iter_append_basic(&v, DBUS_TYPE_BOOLEAN, &yes);
	dbus_message_iter_close_container(&it, &v);
	DBusMessage* r = session_call(m, timeout_ms, err, size);
	if (!r)
		return -ENOTCONN;
	int rc = dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_ERROR ? -EIO : 0;
	dbus_message_unref(r);
	return rc;
}

int a11y_bus_setup(bool enable, int timeout_ms, char* out, size_t size, char* err,
		size_t err_size)
{
	pthread_once(&threads_once, threads_init);
	char addr[512];
	int rc = query_bus_address(timeout_ms, addr, sizeof(addr), err, err_size);
	if (rc < 0)
		return rc;
	if (enable && (rc = set_enabled(timeout_ms, err, err_size)) < 0)
		return rc;
	pthread_mutex_lock(&cfg_mutex);
	snprintf(cfg_bus, sizeof(cfg_bus), "%s", addr);
	pthread_mutex_unlock(&cfg_mutex);
	if (out)
		snprintf(out, size, "%s", addr);
	open_anchor(addr);
	return 0;
}

static void open_anchor(const char* addr)
{
	pthread_once(&threads_once, threads_init);
	DBusConnection* c = connect_to(addr, CONNECT_MS, NULL, 0);
	if (!c)
		return;
	DBusMessage* m = dbus_message_new_method_call(REGISTRY_BUS, "/org/a11y/atspi/registry",
			"org.a11y.atspi.Registry", "RegisterEvent");
	if (m) {
		const char* event = "object:children-changed";
		const char* app = "";
		DBusMessageIter it, arr;
		dbus_message_iter_init_append(m, &it);
		dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &event);
		dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "s", &arr);
		dbus_message_iter_close_container(&it, &arr);
		dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &app);
		DBusMessage* r = dbus_connection_send_with_reply_and_block(c, m, 1000, NULL);
		dbus_message_unref(m);
		if (r)
			dbus_message_unref(r);
	}
	pthread_mutex_lock(&cfg_mutex);
	if (!anchor) {
		anchor = c;
		c = NULL;
	}
	pthread_mutex_unlock(&cfg_mutex);
	drop_connection(c);
}

/* A connection to the AT-SPI bus for this thread's exclusive use. */
static DBusConnection* pool_get(char* err, size_t size)
{
	pthread_mutex_lock(&cfg_mutex);
	bool need_anchor = !anchor && cfg_bus[0];
	char anchor_addr[512];
	snprintf(anchor_addr, sizeof(anchor_addr), "%s", cfg_bus);
	pthread_mutex_unlock(&cfg_mutex);
	if (need_anchor)
		open_anchor(anchor_addr);
	pthread_once(&threads_once, threads_init);
	pthread_mutex_lock(&cfg_mutex);
	while (pool_n > 0) {
		DBusConnection* c = pool[--pool_n];
		if (dbus_connection_get_is_connected(c)) {
			pthread_mutex_unlock(&cfg_mutex);
			return c;
		}
		drop_connection(c);
	}
	char addr[512];
	snprintf(addr, sizeof(addr), "%s", cfg_bus);
	pthread_mutex_unlock(&cfg_mutex);
	if (addr[0]) {
		DBusConnection* c = connect_to(addr, CONNECT_MS, NULL, 0);
		if (c)
			return c;
	}
	/* Unknown yet, or the launcher restarted on a new address. */
	if (query_bus_address(1000, addr, sizeof(addr), err, size) < 0)
		return NULL;
	DBusConnection* c = connect_to(addr, CONNECT_MS, err, size);
	if (c) {
		pthread_mutex_lock(&cfg_mutex);
		snprintf(cfg_bus, sizeof(cfg_bus), "%s", addr);
		pthread_mutex_unlock(&cfg_mutex);
	}
	return c;
}

static void pool_put(DBusConnection* c, bool clean)
{
	if (!c)
		return;
	pthread_mutex_lock(&cfg_mutex);
	if (clean && pool_n < POOL_MAX && dbus_connection_get_is_connected(c)) {
		pool[pool_n++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&cfg_mutex);
	drop_connection(c);
}

/* A peer connection to the app at bus, or NULL (then use the bus). b is
 * a batch on the bus connection, used to ask for the address. */
struct batch;
static DBusConnection* peer_get(struct batch* b, const char* bus);
static void peer_put(const char* bus, DBusConnection* c, bool clean)
{
	if (!c)
		return;
	pthread_mutex_lock(&cfg_mutex);
	if (clean && n_peers < PEERS_MAX && dbus_connection_get_is_connected(c)) {
		snprintf(peers[n_peers].bus, sizeof(peers[n_peers].bus), "%s", bus);
		peers[n_peers++].c = c;
		c = NULL;
	}
	pthread_mutex_unlock(&cfg_mutex);
	drop_connection(c);
}

void a11y_shutdown(void)
{
	a11y_configure(NULL);
}

/* ---- Pipelined batches -------------------------------------------------------- */

struct pend {
	dbus_uint32_t serial;
	DBusMessage* reply;	/* NULL until it came */
	int node, kind, extra;
};

struct batch {
	DBusConnection* c;
	struct pend* v;
	size_t n, cap, done;
	int64_t deadline;
	bool timed_out;		/* some reply missed the deadline */
	bool lost;		/* the connection dropped */
	int calls;
};

static DBusMessage* method(const char* bus, const char* path, const char* iface,
		const char* name)
{
	return dbus_message_new_method_call(bus, path, iface, name);
}

/* Queue msg (consumed); false when out of memory. */
static bool batch_send(struct batch* b, DBusMessage* msg, int node, int kind, int extra)
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

static bool send_simple(struct batch* b, const char* bus, const char* path,
		const char* iface, const char* name, int node, int kind)
{
	return batch_send(b, method(bus, path, iface, name), node, kind, 0);
}

static bool send_get(struct batch* b, const char* bus, const char* path,
		const char* iface, const char* prop, int node, int kind)
{
	DBusMessage* m = method(bus, path, IF_PROPS, "Get");
	if (!m)
		return false;
	dbus_message_append_args(m, DBUS_TYPE_STRING, &iface, DBUS_TYPE_STRING, &prop,
			DBUS_TYPE_INVALID);
	return batch_send(b, m, node, kind, 0);
}

static bool send_extents(struct batch* b, const char* bus, const char* path, int node, int kind)
{
	DBusMessage* m = method(bus, path, IF_COMPONENT, "GetExtents");
	if (!m)
		return false;
	dbus_uint32_t screen = 0;
	dbus_message_append_args(m, DBUS_TYPE_UINT32, &screen, DBUS_TYPE_INVALID);
	return batch_send(b, m, node, kind, 0);
}

static void batch_wait(struct batch* b);
static void batch_reset(struct batch* b);
static bool reply_ok(DBusMessage* r);

static DBusConnection* peer_get(struct batch* b, const char* bus)
{
	pthread_mutex_lock(&cfg_mutex);
	for (int i = 0; i < n_peers; i++)
		if (strcmp(peers[i].bus, bus) == 0) {
			DBusConnection* c = peers[i].c;
			peers[i] = peers[--n_peers];
			pthread_mutex_unlock(&cfg_mutex);
			if (dbus_connection_get_is_connected(c))
				return c;
			drop_connection(c);
			pthread_mutex_lock(&cfg_mutex);
			break;
		}
	for (int i = 0; i < 16; i++)
		if (strcmp(no_peer[i], bus) == 0) {
			pthread_mutex_unlock(&cfg_mutex);
			return NULL;
		}
	pthread_mutex_unlock(&cfg_mutex);
	send_simple(b, bus, ROOT_PATH, IF_APPLICATION, "GetApplicationBusAddress", 0, 0);
	batch_wait(b);
	const char* addr = NULL;
	DBusConnection* c = NULL;
	if (b->n && reply_ok(b->v[0].reply)
			&& dbus_message_get_args(b->v[0].reply, NULL, DBUS_TYPE_STRING, &addr, DBUS_TYPE_INVALID)
			&& addr && *addr) {
		DBusError e;
		dbus_error_init(&e);
		c = dbus_connection_open_private(addr, &e);
		dbus_error_free(&e);
		if (c)
			dbus_connection_set_exit_on_disconnect(c, FALSE);
	}
	bool answered = b->n && b->v[0].reply;
	batch_reset(b);
	if (!c && answered) {
		pthread_mutex_lock(&cfg_mutex);
		snprintf(no_peer[no_peer_next++ % 16], A11Y_BUS_MAX, "%s", bus);
		pthread_mutex_unlock(&cfg_mutex);
	}
	return c;
}

/* Collect the replies until all came or the deadline passed. */
static void batch_wait(struct batch* b)
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
		int64_t l = left_ms(b->deadline);
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

static void batch_reset(struct batch* b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].reply)
			dbus_message_unref(b->v[i].reply);
	b->n = b->done = 0;
}

static void batch_free(struct batch* b)
{
	batch_reset(b);
	free(b->v);
	b->v = NULL;
	b->cap = 0;
}

/* Reply kinds: an error that means the app (or the object) is gone. */
static bool reply_gone(DBusMessage* r)
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

static bool reply_ok(DBusMessage* r)
{
	return r && dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_METHOD_RETURN;
}

/* ---- Parsing ------------------------------------------------------------------- */

/* The first argument, stepping into a variant (Properties.Get). */
static bool first_arg(DBusMessage* r, DBusMessageIter* it)
{
	if (!reply_ok(r) || !dbus_message_iter_init(r, it))
		return false;
	if (dbus_message_iter_get_arg_type(it) == DBUS_TYPE_VARIANT) {
		DBusMessageIter v;
		dbus_message_iter_recurse(it, &v);
		*it = v;
	}
	return true;
}

/* A copy of s cut at max bytes on a character boundary (0: whole); *cut
 * (may be NULL) says whether it was. */
static char* dup_cut(const char* s, size_t max, bool* cut)
{
	if (!s)
		s = "";
	size_t len = strlen(s);
	size_t n = max ? a11y_utf8_cut(s, len, max) : len;
	if (cut)
		*cut = n < len;
	char* out = malloc(n + 1);
	if (out) {
		memcpy(out, s, n);
		out[n] = '\0';
	}
	return out;
}

/* s into a fixed array, cut on a character boundary. */
static void copy_cut(char* dst, size_t size, const char* s)
{
	size_t n = a11y_utf8_cut(s, strlen(s), size - 1);
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* The reply's string, at most max bytes (0: whole; see dup_cut). */
static char* dup_string_max(DBusMessage* r, size_t max, bool* cut)
{
	if (cut)
		*cut = false;
	DBusMessageIter it;
	if (!first_arg(r, &it))
		return NULL;
	int t = dbus_message_iter_get_arg_type(&it);
	if (t != DBUS_TYPE_STRING && t != DBUS_TYPE_OBJECT_PATH)
		return NULL;
	const char* s = NULL;
	dbus_message_iter_get_basic(&it, &s);
	return dup_cut(s, max, cut);
}

/* Names, descriptions, action names: A11Y_NAME_MAX. */
static char* dup_string(DBusMessage* r)
{
	return dup_string_max(r, A11Y_NAME_MAX, NULL);
}

static bool get_int(DBusMessage* r, int64_t* out)
{
	DBusMessageIter it;
	if (!first_arg(r, &it))
		return false;
	switch (dbus_message_iter_get_arg_type(&it)) {
	case DBUS_TYPE_INT32: { dbus_int32_t v; dbus_message_iter_get_basic(&it, &v); *out = v; return true; }
	case DBUS_TYPE_UINT32: { dbus_uint32_t v; dbus_message_iter_get_basic(&it, &v); *out = v; return true; }
	case DBUS_TYPE_INT64: { dbus_int64_t v; dbus_message_iter_get_basic(&it, &v); *out = v; return true; }
	case DBUS_TYPE_BOOLEAN: { dbus_bool_t v; dbus_message_iter_get_basic(&it, &v); *out = v; return true; }
	default: return false;
	}
}

static bool get_double(DBusMessage* r, double* out)
{
	DBusMessageIter it;
	if (!first_arg(r, &it))
		return false;
	if (dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_DOUBLE) {
		dbus_message_iter_get_basic(&it, out);
		return true;
	}
	int64_t v;
	if (get_int(r, &v)) {
		*out = (double)v;
		return true;
	}
	return false;
}

static uint64_t parse_states(DBusMessageIter* arr)
{
	DBusMessageIter e;
	dbus_message_iter_recurse(arr, &e);
	uint64_t out = 0;
	for (int w = 0; w < 2 && dbus_message_iter_get_arg_type(&e) == DBUS_TYPE_UINT32; w++) {
		dbus_uint32_t v;
		dbus_message_iter_get_basic(&e, &v);
		out |= (uint64_t)v << (32 * w);
		dbus_message_iter_next(&e);
	}
	return out;
}

static bool get_states(DBusMessage* r, uint64_t* out)
{
	DBusMessageIter it;
	if (!first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
		return false;
	*out = parse_states(&it);
	return true;
}

static unsigned iface_bit(const char* name)
{
	static const struct { const char* n; unsigned bit; } map[] = {
		{ IF_ACTION, A11Y_IF_ACTION }, { IF_COMPONENT, A11Y_IF_COMPONENT },
		{ IF_TEXT, A11Y_IF_TEXT }, { IF_EDITABLE, A11Y_IF_EDITABLE_TEXT },
		{ IF_VALUE, A11Y_IF_VALUE }, { IF_SELECTION, A11Y_IF_SELECTION },
		{ "org.a11y.atspi.Document", A11Y_IF_DOCUMENT },
		{ "org.a11y.atspi.Table", A11Y_IF_TABLE },
		{ "org.a11y.atspi.Image", A11Y_IF_IMAGE },
		{ "org.a11y.atspi.Hyperlink", A11Y_IF_HYPERLINK },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(name, map[i].n) == 0)
			return map[i].bit;
	return 0;
}

static unsigned parse_ifaces(DBusMessageIter* arr)
{
	DBusMessageIter e;
	dbus_message_iter_recurse(arr, &e);
	unsigned out = 0;
	while (dbus_message_iter_get_arg_type(&e) == DBUS_TYPE_STRING) {
		const char* s;
		dbus_message_iter_get_basic(&e, &s);
		out |= iface_bit(s);
		dbus_message_iter_next(&e);
	}
	return out;
}

static bool get_ifaces(DBusMessage* r, unsigned* out)
{
	DBusMessageIter it;
	if (!first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
		return false;
	*out = parse_ifaces(&it);
	return true;
}

static bool parse_ref(DBusMessageIter* st, struct a11y_id* out)
{
	if (dbus_message_iter_get_arg_type(st) != DBUS_TYPE_STRUCT)
		return false;
	DBusMessageIter f;
	dbus_message_iter_recurse(st, &f);
	const char* bus = NULL;
	const char* path = NULL;
	if (dbus_message_iter_get_arg_type(&f) != DBUS_TYPE_STRING)
		return false;
	dbus_message_iter_get_basic(&f, &bus);
	dbus_message_iter_next(&f);
	if (dbus_message_iter_get_arg_type(&f) != DBUS_TYPE_OBJECT_PATH)
		return false;
	dbus_message_iter_get_basic(&f, &path);
	if (strlen(bus) >= sizeof(out->bus) || strlen(path) >= sizeof(out->path))
		return false;
	snprintf(out->bus, sizeof(out->bus), "%s", bus);
	snprintf(out->path, sizeof(out->path), "%s", path);
	return true;
}

/* a(so): children. *out malloc'd. */
static int get_refs(DBusMessage* r, struct a11y_id** out, int max)
{
	*out = NULL;
	DBusMessageIter it, e;
	if (!first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
		return -1;
	dbus_message_iter_recurse(&it, &e);
	int n = 0, cap = 0;
	struct a11y_id* v = NULL;
	while (dbus_message_iter_get_arg_type(&e) == DBUS_TYPE_STRUCT && n < max) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct a11y_id* nv = realloc(v, (size_t)cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		if (parse_ref(&e, &v[n]) && strcmp(v[n].path, "/org/a11y/atspi/null") != 0)
			n++;
		dbus_message_iter_next(&e);
	}
	*out = v;
	return n;
}

static bool get_extents(DBusMessage* r, int* x, int* y, int* w, int* h)
{
	DBusMessageIter it, f;
	if (!first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_STRUCT)
		return false;
	dbus_message_iter_recurse(&it, &f);
	int* outs[4] = { x, y, w, h };
	for (int i = 0; i < 4; i++) {
		if (dbus_message_iter_get_arg_type(&f) != DBUS_TYPE_INT32)
			return false;
		dbus_int32_t v;
		dbus_message_iter_get_basic(&f, &v);
		*outs[i] = v;
		dbus_message_iter_next(&f);
	}
	return true;
}

/* ---- Nodes ---------------------------------------------------------------------- */

void a11y_node_clear(struct a11y_node* self)
{
	if (!self)
		return;
	free(self->name);
	free(self->description);
	free(self->text);
	free(self->placeholder);
	for (int i = 0; i < self->n_actions; i++)
		free(self->actions[i]);
	free(self->actions);
	memset(self, 0, sizeof(*self));
}

void a11y_tree_free(struct a11y_tree* self)
{
	if (!self)
		return;
	for (int i = 0; i < self->n; i++)
		a11y_node_clear(&self->nodes[i]);
	free(self->nodes);
	self->nodes = NULL;
	self->n = 0;
}

/* Text worth reading in a snapshot: editable fields and text roles (labels
 * carry their text as the name). */
static bool wants_text(const struct a11y_node* n)
{
	if (!(n->ifaces & A11Y_IF_TEXT) || n->role == A11Y_ROLE_PASSWORD_TEXT)
		return false;
	return (n->ifaces & A11Y_IF_EDITABLE_TEXT) || n->role == A11Y_ROLE_ENTRY
			|| n->role == A11Y_ROLE_TEXT || n->role == A11Y_ROLE_SPIN_BUTTON
			|| n->role == 60 /* terminal */ || n->role == 94 /* document text */;
}

/* GetItems: properties of every cached object of an app, keyed by path.
 * Only properties are trusted (its structure is wrong in GTK3/GTK4). */
struct item {
	char* path;
	char* name;		/* cut at A11Y_NAME_MAX */
	char* description;
	bool name_cut, description_cut;
	int role;
	uint64_t states;
	unsigned ifaces;
	int child_count;
};

struct items {
	struct item* v;
	size_t n, cap;		/* open addressing, cap a power of two */
};

static size_t hash_str(const char* s)
{
	size_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static struct item* items_find(struct items* t, const char* path)
{
	if (!t->cap)
		return NULL;
	for (size_t i = hash_str(path) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (!t->v[i].path)
			return NULL;
		if (strcmp(t->v[i].path, path) == 0)
			return &t->v[i];
	}
}

static void items_free(struct items* t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->v[i].path);
		free(t->v[i].name);
		free(t->v[i].description);
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static void parse_items(DBusMessage* r, struct items* t)
{
	DBusMessageIter it, arr;
	if (!reply_ok(r) || !dbus_message_iter_init(r, &it)
			|| strcmp(dbus_message_get_signature(r), "a((so)(so)(so)iiassusau)") != 0) {
		log_debug("a11y: GetItems answered %s %s", dbus_message_get_signature(r),
				dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_ERROR ? dbus_message_get_error_name(r) : "");
		return;
	}
	size_t count = (size_t)dbus_message_iter_get_element_count(&it);
	if (count == 0 || count > 200000)
		return;
	size_t cap = 64;
	while (cap < count * 2)
		cap *= 2;
	if (!(t->v = calloc(cap, sizeof(*t->v))))
		return;
	t->cap = cap;
	dbus_message_iter_recurse(&it, &arr);
	while (dbus_message_iter_get_arg_type(&arr) == DBUS_TYPE_STRUCT) {
		DBusMessageIter f;
		dbus_message_iter_recurse(&arr, &f);
		struct a11y_id obj;
		if (!parse_ref(&f, &obj))
			goto next;
		dbus_message_iter_next(&f);	/* app */
		dbus_message_iter_next(&f);	/* parent */
		dbus_message_iter_next(&f);
		dbus_message_iter_next(&f);	/* index in parent */
		dbus_int32_t cc;
		dbus_message_iter_get_basic(&f, &cc);
		dbus_message_iter_next(&f);
		unsigned ifaces = parse_ifaces(&f);
		dbus_message_iter_next(&f);
		const char* name;
		dbus_message_iter_get_basic(&f, &name);
		dbus_message_iter_next(&f);
		dbus_uint32_t role;
		dbus_message_iter_get_basic(&f, &role);
		dbus_message_iter_next(&f);
		const char* desc;
		dbus_message_iter_get_basic(&f, &desc);
		dbus_message_iter_next(&f);
		uint64_t states = parse_states(&f);
		size_t i = hash_str(obj.path) & (cap - 1);
		while (t->v[i].path && strcmp(t->v[i].path, obj.path) != 0)
			i = (i + 1) & (cap - 1);
		if (!t->v[i].path) {
			bool name_cut, desc_cut;
			t->v[i] = (struct item){ .path = strdup(obj.path),
				.name = dup_cut(name, A11Y_NAME_MAX, &name_cut),
				.description = dup_cut(desc, A11Y_NAME_MAX, &desc_cut),
				.role = (int)role, .states = states,
				.ifaces = ifaces, .child_count = cc };
			t->v[i].name_cut = name_cut;
			t->v[i].description_cut = desc_cut;
			if (!t->v[i].path || !t->v[i].name || !t->v[i].description) {
				free(t->v[i].path);
				free(t->v[i].name);
				free(t->v[i].description);
				memset(&t->v[i], 0, sizeof(t->v[i]));
			} else {
				t->n++;
			}
		}
next:
		dbus_message_iter_next(&arr);
	}
}

/* ---- The snapshot --------------------------------------------------------------- */

enum kind {
	K_ROLE, K_STATE, K_IFACES, K_NAME, K_DESC, K_CHILDREN, K_EXTENTS,
	K_CHARCOUNT, K_TEXT, K_VALUE, K_VMIN, K_VMAX, K_VSTEP, K_INDEX,
	K_PID, K_APPS, K_TOOLKIT, K_VERSION, K_ITEMS, K_NACTIONS, K_ACTNAME,
	K_ATTRS, K_OTHER,
};

struct walk {
	struct a11y_node* v;
	int n, cap;
	bool* keep;		/* per node: kept in the result */
	bool* have_props;	/* per node: role, states, ... known */
	struct a11y_id** kids;	/* per node: children (GetChildren), or NULL */
	int* n_kids;
};

static int walk_add(struct walk* w, const struct a11y_id* id, int parent, int depth, int index)
{
	if (w->n == w->cap) {
		int cap = w->cap ? w->cap * 2 : 128;
		struct a11y_node* v = realloc(w->v, (size_t)cap * sizeof(*v));
		bool* keep = v ? realloc(w->keep, (size_t)cap) : NULL;
		if (v)
			w->v = v;
		if (keep)
			w->keep = keep;
		bool* hp = keep ? realloc(w->have_props, (size_t)cap) : NULL;
		if (hp)
			w->have_props = hp;
		struct a11y_id** kids = hp ? realloc(w->kids, (size_t)cap * sizeof(*kids)) : NULL;
		if (kids)
			w->kids = kids;
		int* nk = kids ? realloc(w->n_kids, (size_t)cap * sizeof(*nk)) : NULL;
		if (!nk)
			return -ENOMEM;
		w->n_kids = nk;
		w->cap = cap;
	}
	struct a11y_node* n = &w->v[w->n];
	memset(n, 0, sizeof(*n));
	n->id = *id;
	n->parent = parent;
	n->depth = depth;
	n->index_in_parent = index;
	n->char_count = -1;
	w->keep[w->n] = true;
	w->have_props[w->n] = false;
	w->kids[w->n] = NULL;
	w->n_kids[w->n] = 0;
	return w->n++;
}

static void walk_free(struct walk* w, bool nodes_too)
{
	if (nodes_too && w->v)
		for (int i = 0; i < w->n; i++)
			a11y_node_clear(&w->v[i]);
	for (int i = 0; i < w->n; i++)
		free(w->kids[i]);
	if (nodes_too)
		free(w->v);
	free(w->keep);
	free(w->have_props);
	free(w->kids);
	free(w->n_kids);
}

/* Send the property calls of node i. */
static void send_props(struct batch* b, struct walk* w, int i)
{
	const char* bus = w->v[i].id.bus;
	const char* path = w->v[i].id.path;
	send_simple(b, bus, path, IF_ACCESSIBLE, "GetRole", i, K_ROLE);
	send_simple(b, bus, path, IF_ACCESSIBLE, "GetState", i, K_STATE);
	send_simple(b, bus, path, IF_ACCESSIBLE, "GetInterfaces", i, K_IFACES);
	send_get(b, bus, path, IF_ACCESSIBLE, "Name", i, K_NAME);
	send_get(b, bus, path, IF_ACCESSIBLE, "Description", i, K_DESC);
}

static void take_item(struct a11y_node* n, const struct item* it)
{
	n->name = strdup(it->name);
	n->description = strdup(it->description);
	n->name_truncated = it->name_cut;
	n->description_truncated = it->description_cut;
	n->role = it->role;
	n->states = it->states;
	n->ifaces = it->ifaces;
	n->child_count = it->child_count;
}

/* Apply one reply to the walk; returns false when it says the app is gone. */
static void apply(struct walk* w, struct pend* p, bool* gone)
{
	struct a11y_node* n = &w->v[p->node];
	DBusMessage* r = p->reply;
	if (!r)
		return;
	if (reply_gone(r) && p->kind == K_ROLE
			&& strcmp(dbus_message_get_error_name(r), DBUS_ERROR_UNKNOWN_OBJECT) != 0
			&& strcmp(dbus_message_get_error_name(r), DBUS_ERROR_UNKNOWN_METHOD) != 0)
		*gone = true;
	int64_t v;
	switch (p->kind) {
	case K_ROLE: if (get_int(r, &v)) n->role = (int)v; break;
	case K_STATE: get_states(r, &n->states); break;
	case K_IFACES: get_ifaces(r, &n->ifaces); break;
	case K_NAME:
		free(n->name);
		n->name = dup_string_max(r, A11Y_NAME_MAX, &n->name_truncated);
		break;
	case K_DESC:
		free(n->description);
		n->description = dup_string_max(r, A11Y_NAME_MAX, &n->description_truncated);
		break;
	case K_CHILDREN: {
		struct a11y_id* kids;
		int k = get_refs(r, &kids, A11Y_MAX_NODES);
		if (k >= 0) {
			free(w->kids[p->node]);
			w->kids[p->node] = kids;
			w->n_kids[p->node] = k;
			n->child_count = k;
		}
		break;
	}
	case K_EXTENTS:
		n->has_bounds = get_extents(r, &n->x, &n->y, &n->width, &n->height);
		break;
	case K_CHARCOUNT: if (get_int(r, &v)) n->char_count = (int)v; break;
	case K_TEXT: {
		/* extra: the bytes to keep (the app may send more characters,
		 * or longer ones, than asked for). */
		bool cut = false;
		char* s = dup_string_max(r, (size_t)p->extra, &cut);
		if (s) {
			free(n->text);
			n->text = s;
			n->text_len = strlen(s);
			n->text_truncated |= cut;
		}
		break;
	}
	case K_VALUE: n->has_value = get_double(r, &n->value); break;
	case K_VMIN: get_double(r, &n->min_value); break;
	case K_VMAX: get_double(r, &n->max_value); break;
	case K_VSTEP: get_double(r, &n->step); break;
	case K_INDEX: if (get_int(r, &v)) n->index_in_parent = (int)v; break;
	case K_TOOLKIT: case K_VERSION: {
		char* s = dup_string(r);
		if (s)
			copy_cut(p->kind == K_TOOLKIT ? n->toolkit : n->toolkit_version,
					sizeof(n->toolkit), s);
		free(s);
		break;
	}
	case K_ATTRS: {
		/* a{ss}: only the placeholder is kept. */
		DBusMessageIter it, e, kv;
		if (!first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
			break;
		dbus_message_iter_recurse(&it, &e);
		while (dbus_message_iter_get_arg_type(&e) == DBUS_TYPE_DICT_ENTRY) {
			dbus_message_iter_recurse(&e, &kv);
			const char* k = NULL;
			const char* val = NULL;
			if (dbus_message_iter_get_arg_type(&kv) == DBUS_TYPE_STRING) {
				dbus_message_iter_get_basic(&kv, &k);
				dbus_message_iter_next(&kv);
				if (dbus_message_iter_get_arg_type(&kv) == DBUS_TYPE_STRING)
					dbus_message_iter_get_basic(&kv, &val);
			}
			if (k && val && strcmp(k, "placeholder-text") == 0 && !n->placeholder)
				n->placeholder = dup_cut(val, A11Y_NAME_MAX, NULL);
			dbus_message_iter_next(&e);
		}
		break;
	}
	default: break;
	}
}

static void apply_all(struct batch* b, struct walk* w, bool* gone)
{
	for (size_t i = 0; i < b->n; i++) {
		if (b->v[i].reply && reply_gone(b->v[i].reply)
				&& strcmp(dbus_message_get_error_name(b->v[i].reply), DBUS_ERROR_NO_REPLY) == 0)
			*gone = true;
		apply(w, &b->v[i], gone);
	}
}

static bool is_gtk4(const struct a11y_app* app)
{
	return strcasecmp(app->toolkit, "GTK") == 0 && app->version[0] == '4';
}

/* Kept in the result: showing (GTK4 marks only frames showing, so there:
 * visible), or everything when asked. */
static bool node_shown(const struct a11y_node* n, const struct a11y_app* app, bool all)
{
	if (all)
		return true;
	if (A11Y_HAS(n->states, A11Y_SHOWING))
		return true;
	return is_gtk4(app) && A11Y_HAS(n->states, A11Y_VISIBLE);
}

/* Pre-order (parents before children, siblings in order) of the kept nodes. */
static int reorder(struct walk* w, struct a11y_tree* out)
{
	int* first = malloc((size_t)w->n * sizeof(int));
	int* next = malloc((size_t)w->n * sizeof(int));
	int* last = malloc((size_t)w->n * sizeof(int));
	int* map = malloc((size_t)w->n * sizeof(int));
	int* stack = malloc((size_t)(w->n + 1) * sizeof(int));
	out->nodes = calloc((size_t)w->n + 1, sizeof(*out->nodes));
	if (!first || !next || !last || !map || !stack || !out->nodes) {
		free(first); free(next); free(last); free(map); free(stack);
		free(out->nodes);
		out->nodes = NULL;
		return -ENOMEM;
	}
	for (int i = 0; i < w->n; i++)
		first[i] = next[i] = last[i] = -1;
	/* BFS order puts siblings in order already. */
	for (int i = 1; i < w->n; i++) {
		int p = w->v[i].parent;
		if (!w->keep[i] || p < 0)
			continue;
		if (last[p] < 0)
			first[p] = i;
		else
			next[last[p]] = i;
		last[p] = i;
	}
	int sp = 0, o = 0;
	stack[sp++] = 0;
	while (sp > 0) {
		int i = stack[--sp];
		map[i] = o;
		out->nodes[o] = w->v[i];
		out->nodes[o].parent = w->v[i].parent >= 0 ? map[w->v[i].parent] : -1;
		memset(&w->v[i], 0, sizeof(w->v[i]));
		o++;
		/* Push children in reverse so the first pops first. */
		int count = 0;
		for (int c = first[i]; c >= 0; c = next[c])
			count++;
		int base = sp;
		sp += count;
		int k = sp - 1;
		for (int c = first[i]; c >= 0; c = next[c])
			stack[k--] = c;
		(void)base;
	}
	out->n = o;
	for (int i = 0; i < w->n; i++)
		a11y_node_clear(&w->v[i]);	/* the dropped ones */
	free(w->v);
	w->v = NULL;
	free(first); free(next); free(last); free(map); free(stack);
	return 0;
}

/* The registry's apps and their pids. */
static int list_apps(struct batch* b, struct a11y_app** out, size_t* n_out)
{
	*out = NULL;
	*n_out = 0;
	send_simple(b, REGISTRY_BUS, ROOT_PATH, IF_ACCESSIBLE, "GetChildren", 0, K_APPS);
	batch_wait(b);
	if (b->timed_out || b->lost || !reply_ok(b->v[0].reply)) {
		batch_reset(b);
		return b->timed_out ? -ETIMEDOUT : -ENOTCONN;
	}
	struct a11y_id* ids;
	int n = get_refs(b->v[0].reply, &ids, 4096);
	batch_reset(b);
	if (n <= 0) {
		free(ids);
		return 0;
	}
	struct a11y_app* apps = calloc((size_t)n, sizeof(*apps));
	if (!apps) {
		free(ids);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		snprintf(apps[i].bus, sizeof(apps[i].bus), "%s", ids[i].bus);
		const char* bus = ids[i].bus;
		DBusMessage* m = method(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS, DBUS_INTERFACE_DBUS,
				"GetConnectionUnixProcessID");
		if (m)
			dbus_message_append_args(m, DBUS_TYPE_STRING, &bus, DBUS_TYPE_INVALID);
		batch_send(b, m, i, K_PID, 0);
	}
	free(ids);
	batch_wait(b);
	for (size_t i = 0; i < b->n; i++) {
		int64_t pid;
		if (get_int(b->v[i].reply, &pid))
			apps[b->v[i].node].pid = (int)pid;
	}
	batch_reset(b);
	*out = apps;
	*n_out = (size_t)n;
	return 0;
}

int a11y_apps(struct a11y_app** list, size_t* n, int64_t deadline_ms, char* err,
		size_t err_size)
{
	*list = NULL;
	*n = 0;
	DBusConnection* c = pool_get(err, err_size);
	if (!c)
		return -ENOTCONN;
	struct batch b = { .c = c, .deadline = deadline_ms ? deadline_ms : clock_ms() + DEFAULT_DEADLINE_MS };
	int rc = list_apps(&b, list, n);
	if (rc == -ETIMEDOUT)
		set_err(err, err_size, "the AT-SPI registry did not answer in time");
	else if (rc == -ENOTCONN)
		set_err(err, err_size, "the AT-SPI registry is not reachable");
	pool_put(c, !b.timed_out && !b.lost);
	batch_free(&b);
	return rc;
}

static int64_t overlap(int ax, int ay, int aw, int ah, int bx, int by, int bw, int bh)
{
	int x0 = ax > bx ? ax : bx, y0 = ay > by ? ay : by;
	int x1 = ax + aw < bx + bw ? ax + aw : bx + bw;
	int y1 = ay + ah < by + bh ? ay + ah : by + bh;
	return x1 > x0 && y1 > y0 ? (int64_t)(x1 - x0) * (y1 - y0) : 0;
}

int a11y_snapshot(const struct a11y_query* q, struct a11y_tree* out, char* err, size_t err_size)
{
	memset(out, 0, sizeof(*out));
	int64_t t0 = clock_ms();
	int max_nodes = q->max_nodes > 0 ? q->max_nodes : A11Y_DEFAULT_NODES;
	if (max_nodes > A11Y_MAX_NODES)
		max_nodes = A11Y_MAX_NODES;
	int max_depth = q->max_depth > 0 ? q->max_depth : A11Y_MAX_DEPTH;
	DBusConnection* c = pool_get(err, err_size);
	if (!c)
		return -ENOTCONN;
	struct batch b = { .c = c, .deadline = q->deadline_ms ? q->deadline_ms : t0 + DEFAULT_DEADLINE_MS };
	struct walk w = { 0 };
	struct items items = { 0 };
	struct a11y_app* apps = NULL;
	size_t n_apps = 0;
	DBusConnection* peer = NULL;
	bool bus_clean = true;
	int rc = list_apps(&b, &apps, &n_apps);
	if (rc < 0) {
		set_err(err, err_size, "the AT-SPI registry %s", rc == -ETIMEDOUT
				? "did not answer in time" : "is not reachable");
		goto done;
	}
	/* The app(s) of this pid: their windows (frames) and identity. */
	struct a11y_id* frames = NULL;
	int n_frames = 0;
	int* frame_app = NULL;
	for (size_t i = 0; i < n_apps; i++) {
		if (apps[i].pid != q->pid)
			continue;
		send_simple(&b, apps[i].bus, ROOT_PATH, IF_ACCESSIBLE, "GetChildren", (int)i, K_CHILDREN);
		send_get(&b, apps[i].bus, ROOT_PATH, IF_APPLICATION, "ToolkitName", (int)i, K_TOOLKIT);
		send_get(&b, apps[i].bus, ROOT_PATH, IF_APPLICATION, "Version", (int)i, K_VERSION);
		send_get(&b, apps[i].bus, ROOT_PATH, IF_ACCESSIBLE, "Name", (int)i, K_NAME);
	}
	if (b.n == 0) {
		rc = -ENOENT;
		set_err(err, err_size, "no accessible application has pid %d", q->pid);
		goto done;
	}
	batch_wait(&b);
	for (size_t k = 0; k < b.n; k++) {
		struct pend* p = &b.v[k];
		struct a11y_app* a = &apps[p->node];
		char* s;
		switch (p->kind) {
		case K_CHILDREN: {
			struct a11y_id* ids;
			int n = get_refs(p->reply, &ids, 256);
			if (n > 0) {
				struct a11y_id* nf = realloc(frames, (size_t)(n_frames + n) * sizeof(*nf));
				int* na = realloc(frame_app, (size_t)(n_frames + n) * sizeof(*na));
				if (nf)
					frames = nf;
				if (na)
					frame_app = na;
				if (nf && na) {
					for (int j = 0; j < n; j++) {
						frames[n_frames] = ids[j];
						frame_app[n_frames++] = p->node;
					}
				}
			}
			free(ids);
			break;
		}
		case K_TOOLKIT:
			if ((s = dup_string(p->reply))) { copy_cut(a->toolkit, sizeof(a->toolkit), s); free(s); }
			break;
		case K_VERSION:
			if ((s = dup_string(p->reply))) { copy_cut(a->version, sizeof(a->version), s); free(s); }
			break;
		case K_NAME:
			if ((s = dup_string(p->reply))) { copy_cut(a->name, sizeof(a->name), s); free(s); }
			break;
		default: break;
		}
	}
	bool timed = b.timed_out;
	batch_reset(&b);
	if (n_frames == 0) {
		rc = timed ? -ETIMEDOUT : -ENOENT;
		set_err(err, err_size, timed ? "the application (pid %d) did not answer in time"
				: "the application (pid %d) has no accessible window", q->pid);
		out->timed_out = timed;
		free(frames);
		free(frame_app);
		goto done;
	}
	/* Pick the frame: the title, then the rectangle, then showing/active. */
	for (int j = 0; j < n_frames; j++) {
		send_get(&b, frames[j].bus, frames[j].path, IF_ACCESSIBLE, "Name", j, K_NAME);
		send_simple(&b, frames[j].bus, frames[j].path, IF_ACCESSIBLE, "GetState", j, K_STATE);
		send_extents(&b, frames[j].bus, frames[j].path, j, K_EXTENTS);
	}
	/* GetItems (the properties of a whole app in one call) in the same
	 * round trip, for each app the frames belong to. */
	for (size_t i = 0; i < n_apps; i++)
		if (apps[i].pid == q->pid)
			send_simple(&b, apps[i].bus, "/org/a11y/atspi/cache", "org.a11y.atspi.Cache",
					"GetItems", (int)i, K_ITEMS);
	batch_wait(&b);
	int best = -1;
	int64_t best_score = -1;
	{
		int64_t* score = calloc((size_t)n_frames, sizeof(*score));
		for (size_t k = 0; score && k < b.n; k++) {
			struct pend* p = &b.v[k];
			if (p->kind == K_NAME && q->title) {
				char* s = dup_string(p->reply);
				if (s && strcmp(s, q->title) == 0)
					score[p->node] += (int64_t)1 << 50;
				free(s);
			} else if (p->kind == K_STATE) {
				uint64_t st = 0;
				if (get_states(p->reply, &st)) {
					if (A11Y_HAS(st, A11Y_SHOWING) || A11Y_HAS(st, A11Y_VISIBLE))
						score[p->node] += (int64_t)1 << 48;
					if (A11Y_HAS(st, A11Y_ACTIVE))
						score[p->node] += (int64_t)1 << 47;
				}
			} else if (p->kind == K_ITEMS) {
				continue;
			} else if (p->kind == K_EXTENTS && q->width > 0) {
				int x, y, ww, hh;
				if (get_extents(p->reply, &x, &y, &ww, &hh))
					score[p->node] += overlap(x, y, ww, hh, q->x, q->y, q->width, q->height);
			}
		}
		for (int j = 0; score && j < n_frames; j++)
			if (score[j] > best_score) {
				best_score = score[j];
				best = j;
			}
		free(score);
	}
	if (best < 0)
		best = 0;
	for (size_t k = 0; k < b.n; k++)
		if (b.v[k].kind == K_ITEMS && b.v[k].node == frame_app[best] && b.v[k].reply)
			parse_items(b.v[k].reply, &items);
	batch_reset(&b);
	out->app = apps[frame_app[best]];
	struct a11y_id root = frames[best];
	free(frames);
	free(frame_app);
	if (walk_add(&w, &root, -1, 0, 0) < 0) {
		rc = -ENOMEM;
		goto done;
	}
	/* The walk goes peer-to-peer when the app offers it. */
	if ((peer = peer_get(&b, root.bus))) {
		bus_clean = !b.timed_out && !b.lost;
		b.c = peer;
	}

	/* Level by level: properties where GetItems lacked them, and children. */
	bool gone = false;
	int kept = 1;
	int level_start = 0, level_end = 1;
	for (int depth = 0; level_start < level_end && !b.timed_out && !b.lost && !gone; depth++) {
		/* Many nodes without cached properties (a long web table): their
		 * states first, then the rest only for the showing ones. */
		int missing = 0;
		for (int i = level_start; i < level_end; i++) {
			struct item* it = items_find(&items, w.v[i].id.path);
			if (it && strcmp(w.v[i].id.bus, root.bus) == 0) {
				take_item(&w.v[i], it);
				w.have_props[i] = true;
			} else {
				missing++;
			}
		}
		bool states_first = !q->all && missing > 32;
		if (states_first) {
			for (int i = level_start; i < level_end; i++)
				if (!w.have_props[i])
					send_simple(&b, w.v[i].id.bus, w.v[i].id.path, IF_ACCESSIBLE, "GetState", i, K_STATE);
			batch_wait(&b);
			apply_all(&b, &w, &gone);
			batch_reset(&b);
			if (b.timed_out || b.lost || gone)
				break;
		}
		for (int i = level_start; i < level_end; i++) {
			if (w.have_props[i]) {
				/* from GetItems */
			} else if (states_first && i > 0 && !node_shown(&w.v[i], &out->app, false)) {
				w.have_props[i] = true;	/* hidden: dropped below, nothing more to ask */
				continue;
			} else if (states_first) {
				const char* bus = w.v[i].id.bus;
				const char* path = w.v[i].id.path;
				send_simple(&b, bus, path, IF_ACCESSIBLE, "GetRole", i, K_ROLE);
				send_simple(&b, bus, path, IF_ACCESSIBLE, "GetInterfaces", i, K_IFACES);
				send_get(&b, bus, path, IF_ACCESSIBLE, "Name", i, K_NAME);
				send_get(&b, bus, path, IF_ACCESSIBLE, "Description", i, K_DESC);
			} else {
				send_props(&b, &w, i);
			}
			bool known_hidden = w.have_props[i] && i > 0
					&& !node_shown(&w.v[i], &out->app, q->all);
			/* A leaf by GetItems needs no GetChildren (GTK4's counts are wrong). */
			bool leaf = w.have_props[i] && w.v[i].child_count == 0 && !is_gtk4(&out->app);
			if (depth < max_depth && !known_hidden && !leaf)
				send_simple(&b, w.v[i].id.bus, w.v[i].id.path, IF_ACCESSIBLE,
						"GetChildren", i, K_CHILDREN);
		}
		batch_wait(&b);
		apply_all(&b, &w, &gone);
		batch_reset(&b);
		int next_end = w.n;
		for (int i = level_start; i < level_end; i++) {
			if (!w.v[i].name)
				w.v[i].name = strdup("");
			if (!w.v[i].description)
				w.v[i].description = strdup("");
			if (i > 0 && !node_shown(&w.v[i], &out->app, q->all)) {
				w.keep[i] = false;
				kept--;
				continue;
			}
			if (w.v[i].parent >= 0 && !w.keep[w.v[i].parent]) {
				w.keep[i] = false;
				kept--;
				continue;
			}
			if (depth + 1 > max_depth && w.n_kids[i] > 0)
				out->truncated = true;
			for (int k = 0; k < w.n_kids[i]; k++) {
				if (kept >= max_nodes) {
					out->truncated = true;
					break;
				}
				if (walk_add(&w, &w.kids[i][k], i, depth + 1, k) < 0)
					break;
				kept++;
			}
			free(w.kids[i]);
			w.kids[i] = NULL;
			w.n_kids[i] = 0;
		}
		out->visited = w.n;
		level_start = level_end;
		level_end = w.n;
		(void)next_end;
	}
	/* Children fetched for the last level were never visited. */
	if (level_start < level_end && (b.timed_out || b.lost || gone)) {
		for (int i = level_start; i < level_end; i++)
			w.keep[i] = false;
	}
	for (int i = 0; i < w.n; i++) {
		if (!w.v[i].name)
			w.v[i].name = strdup("");
		if (!w.v[i].description)
			w.v[i].description = strdup("");
	}
	/* Details of the kept nodes, all at once; then the texts. */
	if (!b.timed_out && !b.lost && !gone) {
		for (int i = 0; i < w.n; i++) {
			if (!w.keep[i])
				continue;
			struct a11y_node* n = &w.v[i];
			if (n->ifaces & A11Y_IF_COMPONENT)
				send_extents(&b, n->id.bus, n->id.path, i, K_EXTENTS);
			if (n->ifaces & A11Y_IF_VALUE) {
				send_get(&b, n->id.bus, n->id.path, IF_VALUE, "CurrentValue", i, K_VALUE);
				send_get(&b, n->id.bus, n->id.path, IF_VALUE, "MinimumValue", i, K_VMIN);
				send_get(&b, n->id.bus, n->id.path, IF_VALUE, "MaximumValue", i, K_VMAX);
			}
			if (wants_text(n))
				send_get(&b, n->id.bus, n->id.path, IF_TEXT, "CharacterCount", i, K_CHARCOUNT);
		}
		batch_wait(&b);
		apply_all(&b, &w, &gone);
		batch_reset(&b);
		for (int i = 0; i < w.n; i++) {
			struct a11y_node* n = &w.v[i];
			if (!w.keep[i] || !wants_text(n) || n->char_count <= 0)
				continue;
			dbus_int32_t start = 0;
			dbus_int32_t end = n->char_count > A11Y_TREE_TEXT ? A11Y_TREE_TEXT : n->char_count;
			n->text_truncated = n->char_count > A11Y_TREE_TEXT;
			DBusMessage* m = method(n->id.bus, n->id.path, IF_TEXT, "GetText");
			if (m)
				dbus_message_append_args(m, DBUS_TYPE_INT32, &start, DBUS_TYPE_INT32, &end,
						DBUS_TYPE_INVALID);
			batch_send(&b, m, i, K_TEXT, A11Y_TREE_TEXT_BYTES);
		}
		batch_wait(&b);
		apply_all(&b, &w, &gone);
		batch_reset(&b);
		for (int i = 0; i < w.n; i++)
			if (w.keep[i] && wants_text(&w.v[i]) && w.v[i].char_count == 0 && !w.v[i].text) {
				w.v[i].text = strdup("");
				w.v[i].text_len = 0;
			}
	}
	out->timed_out = b.timed_out;
	out->app_gone = gone || b.lost;
	out->incomplete = out->timed_out || out->app_gone;
	rc = reorder(&w, out);
	if (rc == 0 && out->n == 0)
		rc = -ESRCH;
	if (rc == 0 && out->timed_out && out->n <= 1) {
		rc = -ETIMEDOUT;
		set_err(err, err_size, "the application (pid %d) did not answer within the deadline", q->pid);
	} else if (rc == 0 && out->app_gone && out->n <= 1) {
		rc = -ESRCH;
		set_err(err, err_size, "the application (pid %d) went away during the snapshot", q->pid);
	}
done:
	out->calls = b.calls;
	out->elapsed_ms = clock_ms() - t0;
	if (peer) {
		peer_put(out->app.bus, peer, !b.timed_out && !b.lost);
		pool_put(c, bus_clean);
	} else {
		pool_put(c, !b.timed_out && !b.lost);
	}
	batch_free(&b);
	walk_free(&w, true);
	items_free(&items);
	free(apps);
	return rc;
}

/* ---- One element ------------------------------------------------------------------ */

static int finish_single(struct batch* b, char* err, size_t size, const char* what)
{
	if (b->timed_out) {
		set_err(err, size, "the application did not answer %s in time", what);
		return -ETIMEDOUT;
	}
	if (b->lost) {
		set_err(err, size, "the AT-SPI bus connection was lost");
		return -ENOTCONN;
	}
	return 0;
}

int a11y_read(const struct a11y_id* id, size_t max_text, int64_t deadline_ms,
		struct a11y_node* out, char* err, size_t err_size)
{
	memset(out, 0, sizeof(*out));
	out->id = *id;
	out->parent = -1;
	out->char_count = -1;
	DBusConnection* c = pool_get(err, err_size);
	if (!c)
		return -ENOTCONN;
	struct batch b = { .c = c, .deadline = deadline_ms ? deadline_ms : clock_ms() + DEFAULT_DEADLINE_MS };
	struct walk w = { .v = out, .n = 1, .cap = 1 };
	bool keep = true, hp = false;
	struct a11y_id* kids = NULL;
	int nk = 0;
	w.keep = &keep;
	w.have_props = &hp;
	w.kids = &kids;
	w.n_kids = &nk;
	bool gone = false;
	send_props(&b, &w, 0);
	send_get(&b, id->bus, id->path, IF_ACCESSIBLE, "ChildCount", 0, K_OTHER);
	send_simple(&b, id->bus, id->path, IF_ACCESSIBLE, "GetIndexInParent", 0, K_INDEX);
	send_simple(&b, id->bus, id->path, IF_ACCESSIBLE, "GetAttributes", 0, K_ATTRS);
	send_get(&b, id->bus, ROOT_PATH, IF_APPLICATION, "ToolkitName", 0, K_TOOLKIT);
	send_get(&b, id->bus, ROOT_PATH, IF_APPLICATION, "Version", 0, K_VERSION);
	batch_wait(&b);
	int rc = finish_single(&b, err, err_size, "the read");
	if (rc == 0 && (!b.v[0].reply || reply_gone(b.v[0].reply) || !reply_ok(b.v[0].reply))) {
		set_err(err, err_size, "the element is gone");
		rc = -ESRCH;
	}
	if (rc == 0) {
		apply_all(&b, &w, &gone);
		int64_t cc;
		if (get_int(b.v[5].reply, &cc))
			out->child_count = (int)cc;
	}
	batch_reset(&b);
	if (rc == 0) {
		if (out->ifaces & A11Y_IF_COMPONENT)
			send_extents(&b, id->bus, id->path, 0, K_EXTENTS);
		if (out->ifaces & A11Y_IF_VALUE) {
			send_get(&b, id->bus, id->path, IF_VALUE, "CurrentValue", 0, K_VALUE);
			send_get(&b, id->bus, id->path, IF_VALUE, "MinimumValue", 0, K_VMIN);
			send_get(&b, id->bus, id->path, IF_VALUE, "MaximumValue", 0, K_VMAX);
			send_get(&b, id->bus, id->path, IF_VALUE, "MinimumIncrement", 0, K_VSTEP);
		}
		if ((out->ifaces & A11Y_IF_TEXT) && out->role != A11Y_ROLE_PASSWORD_TEXT)
			send_get(&b, id->bus, id->path, IF_TEXT, "CharacterCount", 0, K_CHARCOUNT);
		if (out->ifaces & A11Y_IF_ACTION)
			send_get(&b, id->bus, id->path, IF_ACTION, "NActions", 0, K_NACTIONS);
		batch_wait(&b);
		rc = finish_single(&b, err, err_size, "the read");
		int64_t na = 0;
		for (size_t k = 0; k < b.n; k++)
			if (b.v[k].kind == K_NACTIONS)
				get_int(b.v[k].reply, &na);
		apply_all(&b, &w, &gone);
		batch_reset(&b);
		if (na > 32)
			na = 32;
		if (rc == 0 && na > 0) {
			out->actions = calloc((size_t)na, sizeof(char*));
			for (dbus_int32_t i = 0; out->actions && i < na; i++) {
				DBusMessage* m = method(id->bus, id->path, IF_ACTION, "GetName");
				if (m)
					dbus_message_append_args(m, DBUS_TYPE_INT32, &i, DBUS_TYPE_INVALID);
				batch_send(&b, m, 0, K_ACTNAME, i);
			}
		}
		if (rc == 0 && out->char_count > 0) {
			/* At most cap characters (a character is 1 to 4 bytes); the
			 * reply is then cut to cap bytes on a character boundary. */
			size_t cap = max_text && max_text < A11Y_READ_TEXT_MAX ? max_text : A11Y_READ_TEXT_MAX;
			dbus_int32_t start = 0, end = out->char_count;
			if ((size_t)end > cap)
				end = (dbus_int32_t)cap;
			DBusMessage* m = method(id->bus, id->path, IF_TEXT, "GetText");
			if (m)
				dbus_message_append_args(m, DBUS_TYPE_INT32, &start, DBUS_TYPE_INT32, &end,
						DBUS_TYPE_INVALID);
			batch_send(&b, m, 0, K_TEXT, (int)cap);
			out->text_truncated = (size_t)out->char_count > cap;
		}
		if (b.n) {
			batch_wait(&b);
			rc = finish_single(&b, err, err_size, "the read");
			for (size_t k = 0; k < b.n; k++) {
				if (b.v[k].kind == K_ACTNAME && out->actions) {
					char* s = dup_string(b.v[k].reply);
					out->actions[b.v[k].extra] = s ? s : strdup("");
					if (b.v[k].extra + 1 > out->n_actions)
						out->n_actions = b.v[k].extra + 1;
				} else {
					apply(&w, &b.v[k], &gone);
				}
			}
			for (int i = 0; i < out->n_actions; i++)
				if (!out->actions[i])
					out->actions[i] = strdup("");
			batch_reset(&b);
		}
		if (out->char_count == 0 && !out->text && (out->ifaces & A11Y_IF_TEXT)
				&& out->role != A11Y_ROLE_PASSWORD_TEXT)
			out->text = strdup("");
	}
	if (!out->name)
		out->name = strdup("");
	if (!out->description)
		out->description = strdup("");
	free(kids);
	pool_put(c, !b.timed_out && !b.lost);
	batch_free(&b);
	return rc;
}

int a11y_children(const struct a11y_id* id, int max, int64_t deadline_ms,
		struct a11y_node** out, int* n_out, char* err, size_t err_size)
{
	*out = NULL;
	*n_out = 0;
	DBusConnection* c = pool_get(err, err_size);
	if (!c)
		return -ENOTCONN;
	struct batch b = { .c = c, .deadline = deadline_ms ? deadline_ms : clock_ms() + DEFAULT_DEADLINE_MS };
	struct walk w = { 0 };
	int rc = walk_add(&w, id, -1, 0, 0);
	bool gone = false;
	if (rc >= 0) {
		send_simple(&b, id->bus, id->path, IF_ACCESSIBLE, "GetChildren", 0, K_CHILDREN);
		batch_wait(&b);
		rc = finish_single(&b, err, err_size, "the children");
		if (rc == 0 && !reply_ok(b.v[0].reply)) {
			set_err(err, err_size, "the element is gone");
			rc = -ESRCH;
		}
		if (rc == 0)
			apply_all(&b, &w, &gone);
		batch_reset(&b);
	}
	int k = rc == 0 ? (w.n_kids[0] < max ? w.n_kids[0] : max) : 0;
	for (int i = 0; i < k; i++)
		if (walk_add(&w, &w.kids[0][i], 0, 1, i) < 0)
			break;
	if (w.n > 1) {
		for (int i = 1; i < w.n; i++)
			send_props(&b, &w, i);
		batch_wait(&b);
		rc = finish_single(&b, err, err_size, "the children");
		apply_all(&b, &w, &gone);
		batch_reset(&b);
	}
	if (rc == 0 && w.n > 1) {
		*out = calloc((size_t)(w.n - 1), sizeof(**out));
		if (*out) {
			for (int i = 1; i < w.n; i++) {
				(*out)[i - 1] = w.v[i];
				if (!(*out)[i - 1].name)
					(*out)[i - 1].name = strdup("");
				if (!(*out)[i - 1].description)
					(*out)[i - 1].description = strdup("");
				(*out)[i - 1].parent = -1;
				memset(&w.v[i], 0, sizeof(w.v[i]));
			}
			*n_out = w.n - 1;
		} else {
			rc = -ENOMEM;
		}
	}
	pool_put(c, !b.timed_out && !b.lost);
	batch_free(&b);
	walk_free(&w, true);
	return rc;
}

int a11y_act(const struct a11y_id* id, const struct a11y_act* act, int64_t deadline_ms,
		bool* ok, char* err, size_t err_size)
{
	*ok = false;
	DBusMessage* m = NULL;
	dbus_int32_t i32 = act->index;
	const char* text = act->text ? act->text : "";
	switch (act->op) {
	case A11Y_DO_ACTION:
		if ((m = method(id->bus, id->path, IF_ACTION, "DoAction")))
			dbus_message_append_args(m, DBUS_TYPE_INT32, &i32, DBUS_TYPE_INVALID);
		break;
	case A11Y_SET_TEXT:
		if ((m = method(id->bus, id->path, IF_EDITABLE, "SetTextContents")))
			dbus_message_append_args(m, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID);
		break;
	case A11Y_INSERT_TEXT: {
		dbus_int32_t pos = act->position, len = (dbus_int32_t)strlen(text);
		if ((m = method(id->bus, id->path, IF_EDITABLE, "InsertText")))
			dbus_message_append_args(m, DBUS_TYPE_INT32, &pos, DBUS_TYPE_STRING, &text,
					DBUS_TYPE_INT32, &len, DBUS_TYPE_INVALID);
		break;
	}
	case A11Y_SET_VALUE: {
		if (!(m = method(id->bus, id->path, IF_PROPS, "Set")))
			break;
		const char* iface = IF_VALUE;
		const char* prop = "CurrentValue";
		DBusMessageIter it, v;
		dbus_message_iter_init_append(m, &it);
		dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &iface);
		dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &prop);
		dbus_message_iter_open_container(&it, DBUS_TYPE_VARIANT, "d", &v);
		double d = act->value;
		dbus_message_iter_append_basic(&v, DBUS_TYPE_DOUBLE, &d);
		dbus_message_iter_close_container(&it, &v);
		break;
	}
	case A11Y_SELECT_CHILD:
		if ((m = method(id->bus, id->path, IF_SELECTION, "SelectChild")))
			dbus_message_append_args(m, DBUS_TYPE_INT32, &i32, DBUS_TYPE_INVALID);
		break;
	case A11Y_GRAB_FOCUS:
		m = method(id->bus, id->path, IF_COMPONENT, "GrabFocus");
		break;
	case A11Y_SCROLL_TO: {
		dbus_uint32_t anywhere = 6;
		if ((m = method(id->bus, id->path, IF_COMPONENT, "ScrollTo")))
			dbus_message_append_args(m, DBUS_TYPE_UINT32, &anywhere, DBUS_TYPE_INVALID);
		break;
	}
	case A11Y_SET_CARET: {
		dbus_int32_t pos = act->position;
		if ((m = method(id->bus, id->path, IF_TEXT, "SetCaretOffset")))
			dbus_message_append_args(m, DBUS_TYPE_INT32, &pos, DBUS_TYPE_INVALID);
		break;
	}
	default:
		return -EINVAL;
	}
	if (!m)
		return -ENOMEM;
	DBusConnection* c = pool_get(err, err_size);
	if (!c) {
		dbus_message_unref(m);
		return -ENOTCONN;
	}
	struct batch b = { .c = c, .deadline = deadline_ms ? deadline_ms : clock_ms() + DEFAULT_DEADLINE_MS };
	batch_send(&b, m, 0, K_OTHER, 0);
	batch_wait(&b);
	int rc = finish_single(&b, err, err_size, "the action");
	if (rc == 0) {
		DBusMessage* r = b.v[0].reply;
		if (dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_ERROR) {
			const char* name = dbus_message_get_error_name(r);
			const char* msg = NULL;
			dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &msg, DBUS_TYPE_INVALID);
			set_err(err, err_size, "%s%s%s", name, msg ? ": " : "", msg ? msg : "");
			if (strcmp(name, DBUS_ERROR_UNKNOWN_METHOD) == 0
					|| strcmp(name, DBUS_ERROR_NOT_SUPPORTED) == 0
					|| strcmp(name, DBUS_ERROR_UNKNOWN_INTERFACE) == 0
					|| strcmp(name, DBUS_ERROR_UNKNOWN_PROPERTY) == 0)
				rc = -ENOTSUP;
			else if (reply_gone(r))
				rc = -ESRCH;
			else
				rc = -EIO;
		} else {
			int64_t v = 1;	/* Properties.Set answers nothing */
			get_int(r, &v);
			*ok = v != 0;
		}
	}
	pool_put(c, !b.timed_out && !b.lost);
	batch_free(&b);
	return rc;
}

/* ---- Status ------------------------------------------------------------------------ */

void a11y_status(struct a11y_status* out, int timeout_ms)
{
	memset(out, 0, sizeof(*out));
	pthread_once(&threads_once, threads_init);
	pthread_mutex_lock(&cfg_mutex);
	snprintf(out->session_address, sizeof(out->session_address), "%s", cfg_session);
	pthread_mutex_unlock(&cfg_mutex);
	char err[256] = "";
	char addr[512];
	if (query_bus_address(timeout_ms, addr, sizeof(addr), err, sizeof(err)) < 0) {
		out->session_bus = out->session_address[0] && strstr(err, "GetAddress");
		snprintf(out->reason, sizeof(out->reason), "%s", err);
		return;
	}
	out->session_bus = out->session_address[0] != '\0';
	snprintf(out->bus_address, sizeof(out->bus_address), "%s", addr);
	/* IsEnabled, through the session bus. */
	DBusMessage* m = dbus_message_new_method_call("org.a11y.Bus", "/org/a11y/bus", IF_PROPS, "Get");
	if (m) {
		const char* iface = "org.a11y.Status";
		const char* prop = "IsEnabled";
		dbus_message_append_args(m, DBUS_TYPE_STRING, &iface, DBUS_TYPE_STRING, &prop,
				DBUS_TYPE_INVALID);
		DBusMessage* r = session_call(m, timeout_ms, NULL, 0);
		int64_t v = 0;
		if (r && get_int(r, &v))
			out->enabled = v != 0;
		if (r)
			dbus_message_unref(r);
	}
	struct a11y_app* apps = NULL;
	size_t n = 0;
	int rc = a11y_apps(&apps, &n, clock_ms() + timeout_ms, err, sizeof(err));
	out->bus = rc != -ENOTCONN || !strstr(err, "connect");
	if (rc == 0) {
		out->bus = out->registry = true;
		out->apps = (int)n;
	} else {
		snprintf(out->reason, sizeof(out->reason), "%s", err);
	}
	free(apps);
}

/* ---- Events ------------------------------------------------------------------------- */

struct a11y_watch {
	DBusConnection* c;
};

struct a11y_watch* a11y_watch_open(char* err, size_t err_size)
{
	DBusConnection* c = pool_get(err, err_size);
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
		drop_connection(c);
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
	drop_connection(self->c);	/* its match rules go with it */
	free(self);
}
