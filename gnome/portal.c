/* The desktop portal's remote desktop (gnome_private.h), for a deskd that
 * Mutter's own API is closed to: org.freedesktop.portal.RemoteDesktop with a
 * ScreenCast source on the same session, the way a sandboxed app asks.
 *
 * Each step is a Request: the method returns a request object's path at
 * once and its answer comes later as that object's Response signal
 * (response 0 granted, 1 the person declined, 2 ended otherwise; the
 * results an a{sv}). The path is known before the call (the sender's name
 * and our handle_token), so the signal is watched before it can come.
 * Start is the step that shows the person the dialog. */
#define _GNU_SOURCE
#include "gnome/gnome.h"
#include "gnome/gnome_private.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/log.h"

#include <dbus/dbus.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REQUEST_IFACE "org.freedesktop.portal.Request"
#define SESSION_IFACE "org.freedesktop.portal.Session"
#define SC_IFACE "org.freedesktop.portal.ScreenCast"
#define CALL_MS 2000

/* The devices and sources asked for (the portal's bit values). */
#define DEVICE_KEYBOARD 1u
#define DEVICE_POINTER 2u
#define SOURCE_MONITOR 1u
#define CURSOR_HIDDEN 1u	/* deskd draws the pointer where it is asked to */
#define PERSIST_UNTIL_REVOKED 2u
#define PERSIST_VERSION 2	/* RemoteDesktop's first with persist_mode */
#define TOKEN_MAX 256		/* xdg-desktop-portal's are UUIDs (36) */

struct awaited {
	char path[192];
	DBusMessage* response;
};

static DBusHandlerResult on_response(DBusConnection* c, DBusMessage* m, void* ud)
{
	(void)c;
	struct awaited* a = ud;
	const char* path = dbus_message_get_path(m);
	if (!a->response && dbus_message_is_signal(m, REQUEST_IFACE, "Response") && path
			&& !strcmp(path, a->path)) {
		a->response = dbus_message_ref(m);
		return DBUS_HANDLER_RESULT_HANDLED;
	}
	return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

/* A stop (SIGINT, SIGTERM) is pending: deskd blocks them in every thread
 * for main's sigwait, which comes only after the start. The person's
 * answer may take minutes; the stop must not. */
static bool stop_pending(void)
{
	sigset_t pending;
	return sigpending(&pending) == 0 && (sigismember(&pending, SIGTERM) == 1
			|| sigismember(&pending, SIGINT) == 1);
}

static int64_t left_ms(int64_t deadline)
{
	int64_t l = deadline - clock_ms();
	return l < 0 ? 0 : l;
}

/* The request object the portal makes for our handle_token. */
static int request_path(DBusConnection* bus, const char* token, char* out, size_t size)
{
	const char* unique = dbus_bus_get_unique_name(bus);
	if (!unique || unique[0] != ':')
		return -EPROTO;
	char sender[96];
	size_t n = 0;
	for (const char* s = unique + 1; *s && n + 1 < sizeof(sender); s++)
		sender[n++] = *s == '.' ? '_' : *s;
	sender[n] = '\0';
	int w = snprintf(out, size, GNOME_PORTAL_PATH "/request/%s/%s", sender, token);
	return w > 0 && (size_t)w < size ? 0 : -ENAMETOOLONG;
}

/* One request: iface.member(session?, parent_window?, options + handle_token),
 * then its Response within the deadline. On success *results is the
 * Response (its second argument is the results' a{sv}); unref it. */
static int request(DBusConnection* bus, const char* iface, const char* member,
		const char* session, bool with_parent, const struct gnome__entry* options, size_t n,
		int64_t deadline, DBusMessage** results, char* err, size_t size)
{
	static atomic_uint counter;
	char token[48];
	snprintf(token, sizeof(token), "deskd_%d_%u", (int)getpid(), atomic_fetch_add(&counter, 1));
	struct gnome__entry all[8];
	if (n >= sizeof(all) / sizeof(all[0]))
		return -E2BIG;
	struct awaited a = { .response = NULL };
	if (request_path(bus, token, a.path, sizeof(a.path)) < 0) {
		snprintf(err, size, "the session bus gave deskd no usable name");
		return -EPROTO;
	}
	char rule[320];
	snprintf(rule, sizeof(rule), "type='signal',interface='" REQUEST_IFACE "',member='Response',"
			"path='%s'", a.path);
	DBusError e;
	dbus_error_init(&e);
	dbus_bus_add_match(bus, rule, &e);
	if (dbus_error_is_set(&e)) {
		snprintf(err, size, "cannot watch the portal's answers: %s", e.message);
		dbus_error_free(&e);
		return -EIO;
	}
	int rc = -ENOMEM;
	const char* tokenp = token;
	all[0] = (struct gnome__entry){ "handle_token", DBUS_TYPE_STRING, &tokenp, 0 };
	if (n) /* Start has no options: memcpy's source may not be NULL */
		memcpy(all + 1, options, n * sizeof(*options));
	const char* parent = "";
	DBusMessage* m = dbus_message_new_method_call(GNOME_PORTAL_BUS, GNOME_PORTAL_PATH, iface, member);
	if (!m || (session && !dbus_message_append_args(m, DBUS_TYPE_OBJECT_PATH, &session,
			DBUS_TYPE_INVALID)) || (with_parent && !dbus_message_append_args(m,
			DBUS_TYPE_STRING, &parent, DBUS_TYPE_INVALID)) || !gnome__append_dict(m, all, n + 1)) {
		snprintf(err, size, "out of memory");
		goto done;
	}
	if (!dbus_connection_add_filter(bus, on_response, &a, NULL)) {
		snprintf(err, size, "out of memory");
		goto done;
	}
	DBusMessage* r = dbus_connection_send_with_reply_and_block(bus, m, CALL_MS, &e);
	if (!r) {
		snprintf(err, size, "the portal's %s failed: %s", member, e.message);
		rc = dbus_error_has_name(&e, DBUS_ERROR_UNKNOWN_METHOD)
				|| dbus_error_has_name(&e, DBUS_ERROR_SERVICE_UNKNOWN) ? -ENOTSUP : -EIO;
		dbus_error_free(&e);
		goto unfilter;
	}
	dbus_message_unref(r);
	/* The answer: at once for the first steps, the person's for Start. */
	while (!a.response) {
		int64_t l = left_ms(deadline);
		if (l <= 0) {
			snprintf(err, size, "the portal did not answer %s in time%s", member,
					with_parent ? " (nobody approved deskd's request in the desktop's "
					"dialog)" : "");
			rc = -ETIMEDOUT;
			goto unfilter;
		}
		if (!dbus_connection_read_write_dispatch(bus, (int)(l > 100 ? 100 : l))) {
			snprintf(err, size, "the session bus closed the connection");
			rc = -EPIPE;
			goto unfilter;
		}
		if (stop_pending()) {
			snprintf(err, size, "deskd was told to stop while it waited for the portal's "
					"answer to %s", member);
			rc = -EINTR;
			goto unfilter;
		}
	}
	dbus_uint32_t response = 2;
	DBusMessageIter it;
	if (dbus_message_iter_init(a.response, &it) && dbus_message_iter_get_arg_type(&it)
			== DBUS_TYPE_UINT32)
		dbus_message_iter_get_basic(&it, &response);
	if (response == 0) {
		*results = a.response;
		a.response = NULL;
		rc = 0;
	} else if (response == 1) {
		snprintf(err, size, "the person declined deskd's request in the desktop's dialog (%s)",
				member);
		rc = -ECANCELED;
	} else {
		snprintf(err, size, "the portal ended deskd's %s request", member);
		rc = -EACCES;
	}
unfilter:
	dbus_connection_remove_filter(bus, on_response, &a);
done:
	dbus_bus_remove_match(bus, rule, NULL);
	if (m)
		dbus_message_unref(m);
	if (a.response)
		dbus_message_unref(a.response);
	return rc;
}

/* Find key in the a{sv} at it (an array iterator); its variant's value. */
static bool find(DBusMessageIter* array, const char* key, DBusMessageIter* value)
{
	if (dbus_message_iter_get_arg_type(array) != DBUS_TYPE_ARRAY)
		return false;
	DBusMessageIter dict;
	dbus_message_iter_recurse(array, &dict);
	for (; dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY;
			dbus_message_iter_next(&dict)) {
		DBusMessageIter entry;
		const char* k;
		dbus_message_iter_recurse(&dict, &entry);
		dbus_message_iter_get_basic(&entry, &k);
		dbus_message_iter_next(&entry);
		if (!strcmp(k, key) && dbus_message_iter_get_arg_type(&entry) == DBUS_TYPE_VARIANT) {
			dbus_message_iter_recurse(&entry, value);
			return true;
		}
	}
	return false;
}

/* The results' a{sv} of a Response. */
static bool results_of(DBusMessage* response, DBusMessageIter* array)
{
	return dbus_message_iter_init(response, array) && dbus_message_iter_next(array);
}

/* Start's streams, a(ua{sv}): the first stream's node and size. */
static bool read_stream(DBusMessageIter* streams, struct gnome__portal_session* out)
{
	if (dbus_message_iter_get_arg_type(streams) != DBUS_TYPE_ARRAY)
		return false;
	DBusMessageIter list, stream, v;
	dbus_message_iter_recurse(streams, &list);
	if (dbus_message_iter_get_arg_type(&list) != DBUS_TYPE_STRUCT)
		return false;
	dbus_message_iter_recurse(&list, &stream);
	if (dbus_message_iter_get_arg_type(&stream) != DBUS_TYPE_UINT32)
		return false;
	dbus_message_iter_get_basic(&stream, &out->node);
	dbus_message_iter_next(&stream);
	if (find(&stream, "size", &v) && dbus_message_iter_get_arg_type(&v) == DBUS_TYPE_STRUCT) {
		DBusMessageIter wh;
		dbus_int32_t w = 0, h = 0;
		dbus_message_iter_recurse(&v, &wh);
		if (dbus_message_iter_get_arg_type(&wh) == DBUS_TYPE_INT32)
			dbus_message_iter_get_basic(&wh, &w);
		if (dbus_message_iter_next(&wh) && dbus_message_iter_get_arg_type(&wh) == DBUS_TYPE_INT32)
			dbus_message_iter_get_basic(&wh, &h);
		out->width = w;
		out->height = h;
	}
	return true;
}

static int open_pipewire(DBusConnection* bus, struct gnome__portal_session* out, char* err,
		size_t size)
{
	const char* session = out->handle;
	DBusMessage* m = dbus_message_new_method_call(GNOME_PORTAL_BUS, GNOME_PORTAL_PATH, SC_IFACE,
			"OpenPipeWireRemote");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_OBJECT_PATH, &session, DBUS_TYPE_INVALID)
			|| !gnome__append_dict(m, NULL, 0)) {
		if (m)
			dbus_message_unref(m);
		snprintf(err, size, "out of memory");
		return -ENOMEM;
	}
	DBusError e;
	dbus_error_init(&e);
	DBusMessage* r = dbus_connection_send_with_reply_and_block(bus, m, CALL_MS, &e);
	dbus_message_unref(m);
	int fd = -1;
	if (r && !dbus_message_get_args(r, &e, DBUS_TYPE_UNIX_FD, &fd, DBUS_TYPE_INVALID))
		fd = -1;
	if (fd < 0)
		snprintf(err, size, "the portal gave no PipeWire connection: %s",
				dbus_error_is_set(&e) ? e.message : "no file descriptor");
	dbus_error_free(&e);
	if (r)
		dbus_message_unref(r);
	out->pipewire_fd = fd;
	return fd < 0 ? -EIO : 0;
}

/* Clipboard.RequestClipboard: a plain call (no Request), before Start. */
static void request_clipboard(DBusConnection* bus, const char* session)
{
	DBusMessage* m = dbus_message_new_method_call(GNOME_PORTAL_BUS, GNOME_PORTAL_PATH,
			GNOME_PORTAL_CLIPBOARD, "RequestClipboard");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_OBJECT_PATH, &session, DBUS_TYPE_INVALID)
			|| !gnome__append_dict(m, NULL, 0)) {
		if (m)
			dbus_message_unref(m);
		return;
	}
	DBusError e;
	dbus_error_init(&e);
	DBusMessage* r = dbus_connection_send_with_reply_and_block(bus, m, CALL_MS, &e);
	dbus_message_unref(m);
	if (r)
		dbus_message_unref(r);
	else
		log_info("gnome: the portal's RequestClipboard failed (%s): no clipboard, so text off "
				"the layout cannot be typed", e.message);
	dbus_error_free(&e);
}

/* ---- the grant kept between runs: the restore token ---- */

static char token_file[PATH_MAX];

void gnome_portal_token_file(const char* path)
{
	snprintf(token_file, sizeof(token_file), "%s", path ? path : "");
}

/* A token as the portal makes them: printable ASCII without spaces, so the
 * file can hold nothing that would mean something else. */
static bool token_valid(const char* t)
{
	size_t n = strlen(t);
	for (size_t i = 0; i < n; i++)
		if (t[i] <= ' ' || t[i] > '~')
			return false;
	return n > 0 && n < TOKEN_MAX;
}

/* The kept token into out ("" none kept). A file someone else could read or
 * write is refused: the token skips the person's dialog. */
static int read_token(char out[TOKEN_MAX], char* err, size_t size)
{
	out[0] = '\0';
	struct stat st;
	int fd = fs_open_private(token_file, &st);
	if (fd == -ENOENT)
		return 0;
	if (fd == -ELOOP || fd == -EINVAL || fd == -EPERM) {
		snprintf(err, size, "the portal's restore token %s is not a file only deskd's user "
				"can read and write (mode 0600): remove it, and the person is asked again",
				token_file);
		return -EPERM;
	}
	if (fd < 0) {
		snprintf(err, size, "cannot read the portal's restore token %s: %s", token_file,
				strerror(-fd));
		return fd;
	}
	ssize_t n = read(fd, out, TOKEN_MAX);
	int read_errno = errno;
	close(fd);
	while (n > 0 && out[n - 1] == '\n')
		n--;
	if (n < 0 || n >= TOKEN_MAX) {
		snprintf(err, size, "cannot read the portal's restore token %s: %s", token_file,
				n < 0 ? strerror(read_errno) : "too long");
		out[0] = '\0';
		return n < 0 ? -read_errno : -EINVAL;
	}
	out[n] = '\0';
	if (n && !token_valid(out)) {
		snprintf(err, size, "%s holds no restore token (printable ASCII): remove it",
				token_file);
		out[0] = '\0';
		return -EINVAL;
	}
	return 0;
}

/* Keep token (written whole and renamed, 0600), or none: a token is good
 * once, so one that was sent and not replaced is removed. */
static void keep_token(const char* token)
{
	if (!token[0]) {
		if (unlink(token_file) < 0 && errno != ENOENT)
			log_warn("gnome: cannot remove the portal's restore token %s: %s", token_file,
					strerror(errno));
		return;
	}
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.new", token_file);
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	size_t n = strlen(token);
	bool done = fd >= 0 && write(fd, token, n) == (ssize_t)n && write(fd, "\n", 1) == 1
			&& fsync(fd) == 0;
	int saved = errno;
	if (fd >= 0 && close(fd) < 0 && done) {
		done = false;
		saved = errno;
	}
	if (done && rename(tmp, token_file) < 0) {
		done = false;
		saved = errno;
	}
	if (done)
		return;
	log_warn("gnome: cannot keep the portal's restore token in %s: %s (the person is "
			"asked again next time)", token_file, strerror(saved));
	unlink(tmp);
}

int gnome__portal_start(struct DBusConnection* bus, int64_t deadline,
		struct gnome__portal_session* out, char* err, size_t size)
{
	memset(out, 0, sizeof(*out));
	out->pipewire_fd = -1;
	if (!dbus_connection_can_send_type(bus, DBUS_TYPE_UNIX_FD)) {
		snprintf(err, size, "the session bus passes no file descriptors (PipeWire's needs one)");
		return -ENOTSUP;
	}
	DBusMessage* r = NULL;
	DBusMessageIter results, v;
	char token[48];
	snprintf(token, sizeof(token), "deskd_%d", (int)getpid());
	const char* tokenp = token;
	struct gnome__entry create = { "session_handle_token", DBUS_TYPE_STRING, &tokenp, 0 };
	int rc = request(bus, GNOME_PORTAL_RD, "CreateSession", NULL, false, &create, 1, deadline,
			&r, err, size);
	if (rc < 0)
		return rc;
	const char* handle = NULL;
	if (results_of(r, &results) && find(&results, "session_handle", &v)
			&& dbus_message_iter_get_arg_type(&v) == DBUS_TYPE_STRING)
		dbus_message_iter_get_basic(&v, &handle);
	if (!handle || strlen(handle) >= sizeof(out->handle)) {
		dbus_message_unref(r);
		snprintf(err, size, "the portal made a session without naming it");
		return -EPROTO;
	}
	snprintf(out->handle, sizeof(out->handle), "%s", handle);
	dbus_message_unref(r);

	/* Where the portal can keep the person's grant (version 2 on), ask it to
	 * until they revoke it, and offer the one kept from the last run. */
	char restore[TOKEN_MAX] = "";
	bool persist = token_file[0]
			&& gnome__portal_version(bus, GNOME_PORTAL_RD, CALL_MS) >= PERSIST_VERSION;
	if (persist && (rc = read_token(restore, err, size)) < 0)
		goto failed;
	const char* restorep = restore;
	dbus_uint32_t devices = DEVICE_KEYBOARD | DEVICE_POINTER, mode = PERSIST_UNTIL_REVOKED;
	const struct gnome__entry select_devices[] = {
		{ "types", DBUS_TYPE_UINT32, &devices, 0 },
		{ "persist_mode", DBUS_TYPE_UINT32, &mode, 0 },
		{ "restore_token", DBUS_TYPE_STRING, &restorep, 0 },
	};
	rc = request(bus, GNOME_PORTAL_RD, "SelectDevices", out->handle, false, select_devices,
			!persist ? 1 : restore[0] ? 3 : 2, deadline, &r, err, size);
	if (rc < 0)
		goto failed;
	dbus_message_unref(r);
	dbus_uint32_t sources = SOURCE_MONITOR, cursor = CURSOR_HIDDEN;
	dbus_bool_t multiple = FALSE;
	const struct gnome__entry select_sources[] = {
		{ "types", DBUS_TYPE_UINT32, &sources, 0 },
		{ "multiple", DBUS_TYPE_BOOLEAN, &multiple, 0 },
		{ "cursor_mode", DBUS_TYPE_UINT32, &cursor, 0 },
	};
	rc = request(bus, SC_IFACE, "SelectSources", out->handle, false, select_sources, 3,
			deadline, &r, err, size);
	if (rc < 0)
		goto failed;
	dbus_message_unref(r);
	/* The clipboard, where the portal has one: text off the layout is typed
	 * by a paste. Without it the session still serves the rest. */
	if (gnome__portal_version(bus, GNOME_PORTAL_CLIPBOARD, CALL_MS) >= 1)
		request_clipboard(bus, out->handle);
	/* The dialog: the person's time, not the caller's. */
	rc = request(bus, GNOME_PORTAL_RD, "Start", out->handle, true, NULL, 0,
			clock_ms() + GNOME_CONSENT_MS, &r, err, size);
	if (rc < 0) {
		if (restore[0])
			keep_token("");	/* spent, or revoked: it was offered */
		goto failed;
	}
	dbus_uint32_t granted = 0;
	bool have_results = results_of(r, &results);
	if (have_results && find(&results, "devices", &v)
			&& dbus_message_iter_get_arg_type(&v) == DBUS_TYPE_UINT32)
		dbus_message_iter_get_basic(&v, &granted);
	const char* renewed = "";
	if (have_results && find(&results, "restore_token", &v)
			&& dbus_message_iter_get_arg_type(&v) == DBUS_TYPE_STRING)
		dbus_message_iter_get_basic(&v, &renewed);
	if (persist && (restore[0] || renewed[0])) {
		keep_token(token_valid(renewed) ? renewed : "");
		log_info("gnome: the portal %s; %s", restore[0] ? "was offered the person's kept grant"
				: "was asked to keep the person's grant", renewed[0] ? "its new restore "
				"token is kept for the next start" : "it gave no restore token (the person "
				"did not let it remember), so the next start asks again");
	}
	dbus_bool_t clipboard = FALSE;
	if (have_results && find(&results, "clipboard_enabled", &v)
			&& dbus_message_iter_get_arg_type(&v) == DBUS_TYPE_BOOLEAN)
		dbus_message_iter_get_basic(&v, &clipboard);
	out->clipboard = clipboard;
	bool have_stream = have_results && find(&results, "streams", &v) && read_stream(&v, out);
	dbus_message_unref(r);
	if ((granted & devices) != devices) {
		snprintf(err, size, "the person shared the screen without remote interaction (the "
				"dialog's 'Allow remote interaction' was off): deskd needs the pointer and "
				"the keyboard");
		rc = -EACCES;
		goto failed;
	}
	if (!have_stream) {
		snprintf(err, size, "the portal started the session without a screen stream");
		rc = -EPROTO;
		goto failed;
	}
	if ((rc = open_pipewire(bus, out, err, size)) < 0)
		goto failed;
	return 0;
failed:
	gnome__portal_stop(bus, out->handle);
	out->handle[0] = '\0';
	return rc;
}

void gnome__portal_stop(struct DBusConnection* bus, const char* handle)
{
	if (!handle || !handle[0])
		return;
	DBusMessage* m = dbus_message_new_method_call(GNOME_PORTAL_BUS, handle, SESSION_IFACE, "Close");
	if (!m)
		return;
	DBusMessage* r = dbus_connection_send_with_reply_and_block(bus, m, 500, NULL);
	if (r)
		dbus_message_unref(r);
	dbus_message_unref(m);
}

int gnome__portal_version(struct DBusConnection* bus, const char* iface, int timeout_ms)
{
	const char* name = "version";
	DBusMessage* m = dbus_message_new_method_call(GNOME_PORTAL_BUS, GNOME_PORTAL_PATH,
			DBUS_INTERFACE_PROPERTIES, "Get");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_STRING, &iface, DBUS_TYPE_STRING, &name,
			DBUS_TYPE_INVALID)) {
		if (m)
			dbus_message_unref(m);
		return -ENOMEM;
	}
	DBusMessage* r = dbus_connection_send_with_reply_and_block(bus, m, timeout_ms, NULL);
	dbus_message_unref(m);
	if (!r)
		return -EIO;
	int version = -EPROTO;
	DBusMessageIter it, v;
	if (dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_METHOD_RETURN
			&& dbus_message_iter_init(r, &it)
			&& dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_VARIANT) {
		dbus_message_iter_recurse(&it, &v);
		if (dbus_message_iter_get_arg_type(&v) == DBUS_TYPE_UINT32) {
			dbus_uint32_t u;
			dbus_message_iter_get_basic(&v, &u);
			version = (int)u;
		}
	}
	dbus_message_unref(r);
	return version;
}
