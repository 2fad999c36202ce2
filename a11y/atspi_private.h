#pragma once

/* Private to a11y/: what the AT-SPI client's files share, named a11y__*.
 * The transport (bus.c: the pool, connections, peers; batch.c: pipelined
 * calls against one deadline), the decoding of replies (decode.c), the
 * snapshot walk (tree.c), one element's operations (element.c) and the
 * event watch (watch.c). */

#include "a11y/a11y.h"

#include <dbus/dbus.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* AtspiCoordType: GetExtents' frame of reference. */
#define ATSPI_COORD_SCREEN 0u
#define ATSPI_COORD_WINDOW 1u

/* ---- Transport (bus.c) ------------------------------------------------------- */

struct batch;

/** Format into err (NULL or size 0: nothing). */
void a11y__set_err(char* err, size_t size, const char* fmt, ...)
	__attribute__((format(printf, 3, 4)));
/** Milliseconds until deadline (clock_ms()), 0 when past. */
int64_t a11y__left_ms(int64_t deadline);
/** Close and release a private connection (NULL-safe). */
void a11y__drop_connection(DBusConnection* c);
/** A connection to the AT-SPI bus for this thread's exclusive use, or NULL. */
DBusConnection* a11y__pool_get(char* err, size_t size);
/** Give c back: pooled when clean (no timeout, still connected), else closed. */
void a11y__pool_put(DBusConnection* c, bool clean);
/** A peer connection to the app at bus, or NULL (then use the bus). b is
 *  a batch on the bus connection, used to ask for the address. */
DBusConnection* a11y__peer_get(struct batch* b, const char* bus);
/** Give a peer connection back (kept when clean, else closed). */
void a11y__peer_put(const char* bus, DBusConnection* c, bool clean);

/* ---- Pipelined batches (batch.c) ---------------------------------------------- */

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

DBusMessage* a11y__method(const char* bus, const char* path, const char* iface,
		const char* name);
/** Queue msg (consumed); false when out of memory. */
bool a11y__batch_send(struct batch* b, DBusMessage* msg, int node, int kind, int extra);
bool a11y__send_simple(struct batch* b, const char* bus, const char* path,
		const char* iface, const char* name, int node, int kind);
/** Properties.Get(iface, prop). */
bool a11y__send_get(struct batch* b, const char* bus, const char* path,
		const char* iface, const char* prop, int node, int kind);
/** Component.GetExtents, in window coordinates when in_window (GTK 4:
 *  a11y_extents_in_window), else the screen's. */
bool a11y__send_extents(struct batch* b, const char* bus, const char* path, bool in_window,
		int node, int kind);
/** Collect the replies until all came or the deadline passed. */
void a11y__batch_wait(struct batch* b);
/** Drop the calls and replies (the counters and the deadline stay). */
void a11y__batch_reset(struct batch* b);
void a11y__batch_free(struct batch* b);
/** An error that means the app (or the object) is gone. */
bool a11y__reply_gone(DBusMessage* r);
bool a11y__reply_ok(DBusMessage* r);

/* ---- Decoding (decode.c) ------------------------------------------------------- */

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


/** The first argument, stepping into a variant (Properties.Get). */
bool a11y__first_arg(DBusMessage* r, DBusMessageIter* it);
/** A copy of s cut at max bytes on a character boundary (0: whole); *cut
 *  (may be NULL) says whether it was. */
char* a11y__dup_cut(const char* s, size_t max, bool* cut);
/** s into a fixed array, cut on a character boundary. */
void a11y__copy_cut(char* dst, size_t size, const char* s);
/** The reply's string, at most max bytes (0: whole; see a11y__dup_cut). */
char* a11y__dup_string_max(DBusMessage* r, size_t max, bool* cut);
/* GTK 4.8's fallback name for a widget without a label: its type ("GtkEntry"). */
bool a11y__type_name(const char* s);
/** Names, descriptions, action names: A11Y_NAME_MAX. */
char* a11y__dup_string(DBusMessage* r);
bool a11y__get_int(DBusMessage* r, int64_t* out);
bool a11y__get_double(DBusMessage* r, double* out);
bool a11y__get_states(DBusMessage* r, uint64_t* out);
bool a11y__get_ifaces(DBusMessage* r, unsigned* out);
/** a(so): children, at most max. *out malloc'd; -1 when not an array. */
int a11y__get_refs(DBusMessage* r, struct a11y_id** out, int max);
bool a11y__get_extents(DBusMessage* r, int* x, int* y, int* w, int* h);
#define A11Y_RELATION_LABELLED_BY 2	/* AtspiRelationType */
/** GetRelationSet's reply, a(ua(so)): the first target of a relation of
 *  that type into out; false when there is none. */
bool a11y__get_relation(DBusMessage* r, unsigned type, struct a11y_id* out);
/** GetItems's reply into t (empty when it is not one). */
void a11y__parse_items(DBusMessage* r, struct items* t);
struct item* a11y__items_find(struct items* t, const char* path);
void a11y__items_free(struct items* t);
/** Apply one reply to the walk; *gone when it says the app is gone. */
void a11y__apply(struct walk* w, struct pend* p, bool* gone);
/** a11y__apply() every reply of the batch. */
void a11y__apply_all(struct batch* b, struct walk* w, bool* gone);

/* ---- The walk (tree.c) ----------------------------------------------------------- */

/** Add a node; its index, or -ENOMEM. */
int a11y__walk_add(struct walk* w, const struct a11y_id* id, int parent, int depth, int index);
/** Free the per-node arrays (and the nodes when nodes_too). */
void a11y__walk_free(struct walk* w, bool nodes_too);
/** Send the property calls of node i. */
void a11y__send_props(struct batch* b, struct walk* w, int i);
