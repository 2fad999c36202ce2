/* One element: read it, list its children, act on it. */
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


/* ---- One element ------------------------------------------------------------------ */

static int finish_single(struct batch* b, char* err, size_t size, const char* what)
{
	if (b->timed_out) {
		a11y__set_err(err, size, "the application did not answer %s in time", what);
		return -ETIMEDOUT;
	}
	if (b->lost) {
		a11y__set_err(err, size, "the AT-SPI bus connection was lost");
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
	DBusConnection* c = a11y__pool_get(err, err_size);
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
	a11y__send_props(&b, &w, 0);
	a11y__send_get(&b, id->bus, id->path, IF_ACCESSIBLE, "ChildCount", 0, K_OTHER);
	a11y__send_simple(&b, id->bus, id->path, IF_ACCESSIBLE, "GetIndexInParent", 0, K_INDEX);
	a11y__send_simple(&b, id->bus, id->path, IF_ACCESSIBLE, "GetAttributes", 0, K_ATTRS);
	a11y__send_get(&b, id->bus, ROOT_PATH, IF_APPLICATION, "ToolkitName", 0, K_TOOLKIT);
	a11y__send_get(&b, id->bus, ROOT_PATH, IF_APPLICATION, "Version", 0, K_VERSION);
	a11y__batch_wait(&b);
	int rc = finish_single(&b, err, err_size, "the read");
	if (rc == 0 && (!b.v[0].reply || a11y__reply_gone(b.v[0].reply) || !a11y__reply_ok(b.v[0].reply))) {
		a11y__set_err(err, err_size, "the element is gone");
		rc = -ESRCH;
	}
	if (rc == 0) {
		a11y__apply_all(&b, &w, &gone);
		int64_t cc;
		if (a11y__get_int(b.v[5].reply, &cc))
			out->child_count = (int)cc;
	}
	a11y__batch_reset(&b);
	if (rc == 0) {
		if (out->ifaces & A11Y_IF_COMPONENT)
			a11y__send_extents(&b, id->bus, id->path,
					a11y_extents_in_window(out->toolkit, out->toolkit_version), 0, K_EXTENTS);
		if (out->ifaces & A11Y_IF_VALUE) {
			a11y__send_get(&b, id->bus, id->path, IF_VALUE, "CurrentValue", 0, K_VALUE);
			a11y__send_get(&b, id->bus, id->path, IF_VALUE, "MinimumValue", 0, K_VMIN);
			a11y__send_get(&b, id->bus, id->path, IF_VALUE, "MaximumValue", 0, K_VMAX);
			a11y__send_get(&b, id->bus, id->path, IF_VALUE, "MinimumIncrement", 0, K_VSTEP);
		}
		if ((out->ifaces & A11Y_IF_TEXT) && out->role != A11Y_ROLE_PASSWORD_TEXT)
			a11y__send_get(&b, id->bus, id->path, IF_TEXT, "CharacterCount", 0, K_CHARCOUNT);
		if (out->ifaces & A11Y_IF_ACTION)
			a11y__send_get(&b, id->bus, id->path, IF_ACTION, "NActions", 0, K_NACTIONS);
		a11y__batch_wait(&b);
		rc = finish_single(&b, err, err_size, "the read");
		int64_t na = 0;
		for (size_t k = 0; k < b.n; k++)
			if (b.v[k].kind == K_NACTIONS)
				a11y__get_int(b.v[k].reply, &na);
		a11y__apply_all(&b, &w, &gone);
		a11y__batch_reset(&b);
		if (na > 32)
			na = 32;
		if (rc == 0 && na > 0) {
			out->actions = calloc((size_t)na, sizeof(char*));
			for (dbus_int32_t i = 0; out->actions && i < na; i++) {
				DBusMessage* m = a11y__method(id->bus, id->path, IF_ACTION, "GetName");
				if (m)
					dbus_message_append_args(m, DBUS_TYPE_INT32, &i, DBUS_TYPE_INVALID);
				a11y__batch_send(&b, m, 0, K_ACTNAME, i);
			}
		}
		if (rc == 0 && out->char_count > 0) {
			/* At most cap characters (a character is 1 to 4 bytes); the
			 * reply is then cut to cap bytes on a character boundary. */
			size_t cap = max_text && max_text < A11Y_READ_TEXT_MAX ? max_text : A11Y_READ_TEXT_MAX;
			dbus_int32_t start = 0, end = out->char_count;
			if ((size_t)end > cap)
				end = (dbus_int32_t)cap;
			DBusMessage* m = a11y__method(id->bus, id->path, IF_TEXT, "GetText");
			if (m)
				dbus_message_append_args(m, DBUS_TYPE_INT32, &start, DBUS_TYPE_INT32, &end,
						DBUS_TYPE_INVALID);
			a11y__batch_send(&b, m, 0, K_TEXT, (int)cap);
			out->text_truncated = (size_t)out->char_count > cap;
		}
		if (b.n) {
			a11y__batch_wait(&b);
			rc = finish_single(&b, err, err_size, "the read");
			for (size_t k = 0; k < b.n; k++) {
				if (b.v[k].kind == K_ACTNAME && out->actions) {
					char* s = a11y__dup_string(b.v[k].reply);
					out->actions[b.v[k].extra] = s ? s : strdup("");
					if (b.v[k].extra + 1 > out->n_actions)
						out->n_actions = b.v[k].extra + 1;
				} else {
					a11y__apply(&w, &b.v[k], &gone);
				}
			}
			for (int i = 0; i < out->n_actions; i++)
				if (!out->actions[i])
					out->actions[i] = strdup("");
			a11y__batch_reset(&b);
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
	a11y__pool_put(c, !b.timed_out && !b.lost);
	a11y__batch_free(&b);
	return rc;
}

int a11y_children(const struct a11y_id* id, int max, int64_t deadline_ms,
		struct a11y_node** out, int* n_out, char* err, size_t err_size)
{
	*out = NULL;
	*n_out = 0;
	DBusConnection* c = a11y__pool_get(err, err_size);
	if (!c)
		return -ENOTCONN;
	struct batch b = { .c = c, .deadline = deadline_ms ? deadline_ms : clock_ms() + DEFAULT_DEADLINE_MS };
	struct walk w = { 0 };
	int rc = a11y__walk_add(&w, id, -1, 0, 0);
	bool gone = false;
	if (rc >= 0) {
		a11y__send_simple(&b, id->bus, id->path, IF_ACCESSIBLE, "GetChildren", 0, K_CHILDREN);
		a11y__batch_wait(&b);
		rc = finish_single(&b, err, err_size, "the children");
		if (rc == 0 && !a11y__reply_ok(b.v[0].reply)) {
			a11y__set_err(err, err_size, "the element is gone");
			rc = -ESRCH;
		}
		if (rc == 0)
			a11y__apply_all(&b, &w, &gone);
		a11y__batch_reset(&b);
	}
	int k = rc == 0 ? (w.n_kids[0] < max ? w.n_kids[0] : max) : 0;
	for (int i = 0; i < k; i++)
		if (a11y__walk_add(&w, &w.kids[0][i], 0, 1, i) < 0)
			break;
	if (w.n > 1) {
		for (int i = 1; i < w.n; i++)
			a11y__send_props(&b, &w, i);
		a11y__batch_wait(&b);
		rc = finish_single(&b, err, err_size, "the children");
		a11y__apply_all(&b, &w, &gone);
		a11y__batch_reset(&b);
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
	a11y__pool_put(c, !b.timed_out && !b.lost);
	a11y__batch_free(&b);
	a11y__walk_free(&w, true);
	return rc;
}

/* An action's reply: 0 with *ok the app's boolean, or its error as
 * -ENOTSUP (no such method, interface or property), -ESRCH (gone), -EIO. */
static int action_reply(DBusMessage* r, bool* ok, char* err, size_t err_size)
{
	if (dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_ERROR) {
		const char* name = dbus_message_get_error_name(r);
		const char* msg = NULL;
		dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &msg, DBUS_TYPE_INVALID);
		a11y__set_err(err, err_size, "%s%s%s", name, msg ? ": " : "", msg ? msg : "");
		if (strcmp(name, DBUS_ERROR_UNKNOWN_METHOD) == 0
				|| strcmp(name, DBUS_ERROR_NOT_SUPPORTED) == 0
				|| strcmp(name, DBUS_ERROR_UNKNOWN_INTERFACE) == 0
				|| strcmp(name, DBUS_ERROR_UNKNOWN_PROPERTY) == 0)
			return -ENOTSUP;
		return a11y__reply_gone(r) ? -ESRCH : -EIO;
	}
	int64_t v = 1;	/* Properties.Set answers nothing */
	a11y__get_int(r, &v);
	*ok = v != 0;
	return 0;
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
		if ((m = a11y__method(id->bus, id->path, IF_ACTION, "DoAction")))
			dbus_message_append_args(m, DBUS_TYPE_INT32, &i32, DBUS_TYPE_INVALID);
		break;
	case A11Y_SET_TEXT:
		if ((m = a11y__method(id->bus, id->path, IF_EDITABLE, "SetTextContents")))
			dbus_message_append_args(m, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID);
		break;
	case A11Y_INSERT_TEXT: {
		dbus_int32_t pos = act->position, len = (dbus_int32_t)strlen(text);
		if ((m = a11y__method(id->bus, id->path, IF_EDITABLE, "InsertText")))
			dbus_message_append_args(m, DBUS_TYPE_INT32, &pos, DBUS_TYPE_STRING, &text,
					DBUS_TYPE_INT32, &len, DBUS_TYPE_INVALID);
		break;
	}
	case A11Y_SET_VALUE: {
		if (!(m = a11y__method(id->bus, id->path, IF_PROPS, "Set")))
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
		if ((m = a11y__method(id->bus, id->path, IF_SELECTION, "SelectChild")))
			dbus_message_append_args(m, DBUS_TYPE_INT32, &i32, DBUS_TYPE_INVALID);
		break;
	case A11Y_GRAB_FOCUS:
		m = a11y__method(id->bus, id->path, IF_COMPONENT, "GrabFocus");
		break;
	case A11Y_SCROLL_TO: {
		dbus_uint32_t anywhere = 6;
		if ((m = a11y__method(id->bus, id->path, IF_COMPONENT, "ScrollTo")))
			dbus_message_append_args(m, DBUS_TYPE_UINT32, &anywhere, DBUS_TYPE_INVALID);
		break;
	}
	case A11Y_SET_CARET: {
		dbus_int32_t pos = act->position;
		if ((m = a11y__method(id->bus, id->path, IF_TEXT, "SetCaretOffset")))
			dbus_message_append_args(m, DBUS_TYPE_INT32, &pos, DBUS_TYPE_INVALID);
		break;
	}
	default:
		return -EINVAL;
	}
	if (!m)
		return -ENOMEM;
	DBusConnection* c = a11y__pool_get(err, err_size);
	if (!c) {
		dbus_message_unref(m);
		return -ENOTCONN;
	}
	struct batch b = { .c = c, .deadline = deadline_ms ? deadline_ms : clock_ms() + DEFAULT_DEADLINE_MS };
	a11y__batch_send(&b, m, 0, K_OTHER, 0);
	a11y__batch_wait(&b);
	int rc = finish_single(&b, err, err_size, "the action");
	if (rc == 0)
		rc = action_reply(b.v[0].reply, ok, err, err_size);
	a11y__pool_put(c, !b.timed_out && !b.lost);
	a11y__batch_free(&b);
	return rc;
}

#define PRESS_PROBE_MS 500	/* how long the app may take to answer again after a press */

/* The call runs on a connection of its own: the app's peer one when it
 * offers one (GTK3 answers DoAction first, then runs the handler, and a
 * dialog's run() inside it keeps that connection's dispatch busy until the
 * dialog closes, so no other call may share it), else a bus connection
 * that is closed when the app did not answer (late replies would pile up
 * in it). A probe on the same connection tells a busy app from a done one. */
int a11y_press(const struct a11y_id* id, int index, int wait_ms, bool* ok, bool* busy,
		char* err, size_t err_size)
{
	*ok = *busy = false;
	DBusMessage* m = a11y__method(id->bus, id->path, IF_ACTION, "DoAction");
	dbus_int32_t i32 = index;
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_INT32, &i32, DBUS_TYPE_INVALID)) {
		if (m)
			dbus_message_unref(m);
		return -ENOMEM;
	}
	DBusConnection* c = a11y__pool_get(err, err_size);
	if (!c) {
		dbus_message_unref(m);
		return -ENOTCONN;
	}
	struct batch b = { .c = c, .deadline = clock_ms() + wait_ms };
	DBusConnection* peer = a11y__peer_get(&b, id->bus);
	bool bus_clean = !b.timed_out && !b.lost;
	if (peer)
		b.c = peer;
	b.timed_out = false;
	b.deadline = clock_ms() + wait_ms;
	a11y__batch_send(&b, m, 0, K_OTHER, 0);
	a11y__batch_wait(&b);
	int rc = 0;
	if (b.lost) {
		a11y__set_err(err, err_size, "the connection to the application was lost");
		rc = -ENOTCONN;
	} else if (!b.n || !b.v[0].reply) {
		*busy = *ok = true;	/* delivered; the app is in what it opened */
	} else {
		rc = action_reply(b.v[0].reply, ok, err, err_size);
	}
	if (rc == 0 && !*busy) {
		a11y__batch_reset(&b);
		b.deadline = clock_ms() + PRESS_PROBE_MS;
		a11y__send_simple(&b, id->bus, id->path, IF_ACCESSIBLE, "GetRole", 0, K_ROLE);
		a11y__batch_wait(&b);
		*busy = !b.lost && b.n && !b.v[0].reply;
	}
	bool clean = !*busy && !b.lost && !b.timed_out;
	if (peer) {
		a11y__peer_put(id->bus, peer, clean);
		a11y__pool_put(c, bus_clean);
	} else {
		a11y__pool_put(c, clean);
	}
	a11y__batch_free(&b);
	return rc;
}
