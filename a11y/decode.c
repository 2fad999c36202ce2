/* Decoding: AT-SPI replies (D-Bus messages) into plain values, nodes and
 * the GetItems cache. */
#include "a11y/atspi_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <dbus/dbus.h>

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


/* ---- Parsing ------------------------------------------------------------------- */

/* The first argument, stepping into a variant (Properties.Get). */
bool a11y__first_arg(DBusMessage* r, DBusMessageIter* it)
{
	if (!a11y__reply_ok(r) || !dbus_message_iter_init(r, it))
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
char* a11y__dup_cut(const char* s, size_t max, bool* cut)
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
void a11y__copy_cut(char* dst, size_t size, const char* s)
{
	size_t n = a11y_utf8_cut(s, strlen(s), size - 1);
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* The reply's string, at most max bytes (0: whole; see a11y__dup_cut). */
char* a11y__dup_string_max(DBusMessage* r, size_t max, bool* cut)
{
	if (cut)
		*cut = false;
	DBusMessageIter it;
	if (!a11y__first_arg(r, &it))
		return NULL;
	int t = dbus_message_iter_get_arg_type(&it);
	if (t != DBUS_TYPE_STRING && t != DBUS_TYPE_OBJECT_PATH)
		return NULL;
	const char* s = NULL;
	dbus_message_iter_get_basic(&it, &s);
	return a11y__dup_cut(s, max, cut);
}

/* Names, descriptions, action names: A11Y_NAME_MAX. */
char* a11y__dup_string(DBusMessage* r)
{
	return a11y__dup_string_max(r, A11Y_NAME_MAX, NULL);
}

bool a11y__get_int(DBusMessage* r, int64_t* out)
{
	DBusMessageIter it;
	if (!a11y__first_arg(r, &it))
		return false;
	switch (dbus_message_iter_get_arg_type(&it)) {
	case DBUS_TYPE_INT32: { dbus_int32_t v; dbus_message_iter_get_basic(&it, &v); *out = v; return true; }
	case DBUS_TYPE_UINT32: { dbus_uint32_t v; dbus_message_iter_get_basic(&it, &v); *out = v; return true; }
	case DBUS_TYPE_INT64: { dbus_int64_t v; dbus_message_iter_get_basic(&it, &v); *out = v; return true; }
	case DBUS_TYPE_BOOLEAN: { dbus_bool_t v; dbus_message_iter_get_basic(&it, &v); *out = v; return true; }
	default: return false;
	}
}

bool a11y__get_double(DBusMessage* r, double* out)
{
	DBusMessageIter it;
	if (!a11y__first_arg(r, &it))
		return false;
	if (dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_DOUBLE) {
		dbus_message_iter_get_basic(&it, out);
		return true;
	}
	int64_t v;
	if (a11y__get_int(r, &v)) {
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

bool a11y__get_states(DBusMessage* r, uint64_t* out)
{
	DBusMessageIter it;
	if (!a11y__first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
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

bool a11y__get_ifaces(DBusMessage* r, unsigned* out)
{
	DBusMessageIter it;
	if (!a11y__first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
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
int a11y__get_refs(DBusMessage* r, struct a11y_id** out, int max)
{
	*out = NULL;
	DBusMessageIter it, e;
	if (!a11y__first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
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

bool a11y__get_relation(DBusMessage* r, unsigned type, struct a11y_id* out)
{
	DBusMessageIter it, rel;
	if (!a11y__first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
		return false;
	dbus_message_iter_recurse(&it, &rel);
	for (; dbus_message_iter_get_arg_type(&rel) == DBUS_TYPE_STRUCT; dbus_message_iter_next(&rel)) {
		DBusMessageIter f, targets;
		dbus_uint32_t t = 0;
		dbus_message_iter_recurse(&rel, &f);
		if (dbus_message_iter_get_arg_type(&f) != DBUS_TYPE_UINT32)
			continue;
		dbus_message_iter_get_basic(&f, &t);
		dbus_message_iter_next(&f);
		if (t != type || dbus_message_iter_get_arg_type(&f) != DBUS_TYPE_ARRAY)
			continue;
		dbus_message_iter_recurse(&f, &targets);
		if (parse_ref(&targets, out))
			return true;
	}
	return false;
}

bool a11y__get_extents(DBusMessage* r, int* x, int* y, int* w, int* h)
{
	DBusMessageIter it, f;
	if (!a11y__first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_STRUCT)
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

static size_t hash_str(const char* s)
{
	size_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

struct item* a11y__items_find(struct items* t, const char* path)
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

void a11y__items_free(struct items* t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->v[i].path);
		free(t->v[i].name);
		free(t->v[i].description);
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}

void a11y__parse_items(DBusMessage* r, struct items* t)
{
	DBusMessageIter it, arr;
	if (!a11y__reply_ok(r) || !dbus_message_iter_init(r, &it)
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
				.name = a11y__dup_cut(name, A11Y_NAME_MAX, &name_cut),
				.description = a11y__dup_cut(desc, A11Y_NAME_MAX, &desc_cut),
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

/* Apply one reply to the walk; returns false when it says the app is gone. */
/* GTK 4.8 names a widget that has no label by its type ("GtkEntry",
 * "GtkDropDown"): that is no name a person knows it by. */
bool a11y__type_name(const char* s)
{
	if (strncmp(s, "Gtk", 3) != 0 || !isupper((unsigned char)s[3]))
		return false;
	for (s += 3; *s; s++)
		if (!isalnum((unsigned char)*s))
			return false;
	return true;
}

void a11y__apply(struct walk* w, struct pend* p, bool* gone)
{
	struct a11y_node* n = &w->v[p->node];
	DBusMessage* r = p->reply;
	if (!r)
		return;
	if (a11y__reply_gone(r) && p->kind == K_ROLE
			&& strcmp(dbus_message_get_error_name(r), DBUS_ERROR_UNKNOWN_OBJECT) != 0
			&& strcmp(dbus_message_get_error_name(r), DBUS_ERROR_UNKNOWN_METHOD) != 0)
		*gone = true;
	int64_t v;
	switch (p->kind) {
	case K_ROLE: if (a11y__get_int(r, &v)) n->role = (int)v; break;
	case K_STATE: a11y__get_states(r, &n->states); break;
	case K_IFACES: a11y__get_ifaces(r, &n->ifaces); break;
	case K_NAME:
		free(n->name);
		n->name = a11y__dup_string_max(r, A11Y_NAME_MAX, &n->name_truncated);
		if (n->name && a11y__type_name(n->name))
			n->name[0] = '\0';
		break;
	case K_DESC:
		free(n->description);
		n->description = a11y__dup_string_max(r, A11Y_NAME_MAX, &n->description_truncated);
		break;
	case K_CHILDREN: {
		struct a11y_id* kids;
		int k = a11y__get_refs(r, &kids, A11Y_MAX_NODES);
		if (k >= 0) {
			free(w->kids[p->node]);
			w->kids[p->node] = kids;
			w->n_kids[p->node] = k;
			n->child_count = k;
		}
		break;
	}
	case K_EXTENTS:
		n->has_bounds = a11y__get_extents(r, &n->x, &n->y, &n->width, &n->height);
		break;
	case K_CHARCOUNT: if (a11y__get_int(r, &v)) n->char_count = (int)v; break;
	case K_TEXT: {
		/* extra: the bytes to keep (the app may send more characters,
		 * or longer ones, than asked for). */
		bool cut = false;
		char* s = a11y__dup_string_max(r, (size_t)p->extra, &cut);
		if (s) {
			free(n->text);
			n->text = s;
			n->text_len = strlen(s);
			n->text_truncated |= cut;
		}
		break;
	}
	case K_VALUE: n->has_value = a11y__get_double(r, &n->value); break;
	case K_VMIN: a11y__get_double(r, &n->min_value); break;
	case K_VMAX: a11y__get_double(r, &n->max_value); break;
	case K_VSTEP: a11y__get_double(r, &n->step); break;
	case K_INDEX: if (a11y__get_int(r, &v)) n->index_in_parent = (int)v; break;
	case K_TOOLKIT: case K_VERSION: {
		char* s = a11y__dup_string(r);
		if (s)
			a11y__copy_cut(p->kind == K_TOOLKIT ? n->toolkit : n->toolkit_version,
					sizeof(n->toolkit), s);
		free(s);
		break;
	}
	case K_ATTRS: {
		/* a{ss}: only the placeholder is kept. */
		DBusMessageIter it, e, kv;
		if (!a11y__first_arg(r, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
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
				n->placeholder = a11y__dup_cut(val, A11Y_NAME_MAX, NULL);
			dbus_message_iter_next(&e);
		}
		break;
	}
	default: break;
	}
}

void a11y__apply_all(struct batch* b, struct walk* w, bool* gone)
{
	for (size_t i = 0; i < b->n; i++) {
		if (b->v[i].reply && a11y__reply_gone(b->v[i].reply)
				&& strcmp(dbus_message_get_error_name(b->v[i].reply), DBUS_ERROR_NO_REPLY) == 0)
			*gone = true;
		a11y__apply(w, &b->v[i], gone);
	}
}
