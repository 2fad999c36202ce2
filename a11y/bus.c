/* The AT-SPI transport: configuration, bounded connections to the buses,
 * the pool of private connections, peer-to-peer connections to apps, bus
 * setup and status. See a11y.h for the contract. */
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

void a11y__set_err(char* err, size_t size, const char* fmt, ...)
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


int64_t a11y__left_ms(int64_t deadline)
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
		int64_t l = a11y__left_ms(deadline);
		if (l <= 0 || !dbus_connection_read_write(c, (int)(l > 100 ? 100 : l))
				|| !dbus_connection_get_is_connected(c)) {
			a11y__set_err(err, size, l <= 0 ? "the bus did not authenticate within %d ms"
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
		a11y__set_err(err, size, "out of memory");
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
				a11y__set_err(err, size, "bus registration failed: %s",
						dbus_message_get_error_name(r) ? dbus_message_get_error_name(r) : "no name");
			dbus_message_unref(r);
			return ok;
		}
		int64_t l = a11y__left_ms(deadline);
		if (l <= 0 || !dbus_connection_read_write(c, (int)(l > 100 ? 100 : l))
				|| !dbus_connection_get_is_connected(c)) {
			a11y__set_err(err, size, l <= 0 ? "the bus did not answer Hello within %d ms"
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
		a11y__set_err(err, size, "cannot connect to %s: %s", address, e.message);
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

void a11y__drop_connection(DBusConnection* c)
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
		a11y__set_err(err, size, "no session bus (DBUS_SESSION_BUS_ADDRESS is not set)");
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
		a11y__set_err(err, size, "%s", e.message);
		dbus_error_free(&e);
	}
	a11y__drop_connection(c);
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
		a11y__set_err(err, err_size, "org.a11y.Bus.GetAddress gave no address");
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
	a11y__drop_connection(c);
}

/* A connection to the AT-SPI bus for this thread's exclusive use. */
DBusConnection* a11y__pool_get(char* err, size_t size)
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
		a11y__drop_connection(c);
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

void a11y__pool_put(DBusConnection* c, bool clean)
{
	if (!c)
		return;
	pthread_mutex_lock(&cfg_mutex);
	if (clean && pool_n < POOL_MAX && dbus_connection_get_is_connected(c)) {
		pool[pool_n++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&cfg_mutex);
	a11y__drop_connection(c);
}

/* A peer connection to the app at bus, or NULL (then use the bus). b is
 * a batch on the bus connection, used to ask for the address. */
DBusConnection* a11y__peer_get(struct batch* b, const char* bus)
{
	pthread_mutex_lock(&cfg_mutex);
	for (int i = 0; i < n_peers; i++)
		if (strcmp(peers[i].bus, bus) == 0) {
			DBusConnection* c = peers[i].c;
			peers[i] = peers[--n_peers];
			pthread_mutex_unlock(&cfg_mutex);
			if (dbus_connection_get_is_connected(c))
				return c;
			a11y__drop_connection(c);
			pthread_mutex_lock(&cfg_mutex);
			break;
		}
	for (int i = 0; i < 16; i++)
		if (strcmp(no_peer[i], bus) == 0) {
			pthread_mutex_unlock(&cfg_mutex);
			return NULL;
		}
	pthread_mutex_unlock(&cfg_mutex);
	a11y__send_simple(b, bus, ROOT_PATH, IF_APPLICATION, "GetApplicationBusAddress", 0, 0);
	a11y__batch_wait(b);
	const char* addr = NULL;
	DBusConnection* c = NULL;
	if (b->n && a11y__reply_ok(b->v[0].reply)
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
	a11y__batch_reset(b);
	if (!c && answered) {
		pthread_mutex_lock(&cfg_mutex);
		snprintf(no_peer[no_peer_next++ % 16], A11Y_BUS_MAX, "%s", bus);
		pthread_mutex_unlock(&cfg_mutex);
	}
	return c;
}

void a11y__peer_put(const char* bus, DBusConnection* c, bool clean)
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
	a11y__drop_connection(c);
}

void a11y_shutdown(void)
{
	a11y_configure(NULL);
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
		if (r && a11y__get_int(r, &v))
			out->enabled = v != 0;
		if (r)
			dbus_message_unref(r);
	}
	struct a11y_app* apps = NULL;
	size_t n = 0;
	int rc = a11y_apps(&apps, &n, clock_ms() + timeout_ms, false, err, sizeof(err));
	out->bus = rc != -ENOTCONN || !strstr(err, "connect");
	if (rc == 0) {
		out->bus = out->registry = true;
		out->apps = (int)n;
	} else {
		snprintf(out->reason, sizeof(out->reason), "%s", err);
	}
	free(apps);
}
