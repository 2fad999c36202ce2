#pragma once

/* a11y/: accessibility over AT-SPI, on libdbus directly (not libatspi: its
 * per-property round trips, wrong caches, 15 s waits on hung apps and lack
 * of thread safety are measured in docs/PITFALLS.md, "Accessibility").
 * Plain C structs out; no D-Bus type crosses this header.
 *
 * How it talks: every operation borrows a private connection to the AT-SPI
 * bus from a small pool, sends its calls pipelined (all of a tree level at
 * once, then the details of every kept node at once) and collects the
 * replies against ONE deadline for the whole operation, so a hung app costs
 * the deadline once, not per call, and never blocks another thread's
 * operation (each has its own connection). A connection that saw a timeout
 * is closed rather than pooled (late replies would pile up in it).
 * org.freedesktop.DBus.Properties.GetAll is never sent: it crashes Qt 5.15.
 *
 * Threads: any; operations are independent. Errors: 0 or a negative errno:
 *   -ENOTCONN   no session bus / no AT-SPI bus (a11y_unavailable_reason says why)
 *   -ETIMEDOUT  the deadline passed (a partial result says how far it got)
 *   -ESRCH      the app or element is gone (its bus name vanished, NoReply)
 *   -ENOENT     no such element, or no accessible app for that pid
 *   -ENOTSUP    the element lacks the interface (no EditableText, ...)
 *   -EINVAL     bad arguments; -EIO an app answered with an error
 * A message goes into err where a function takes one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define A11Y_MAX_NODES 5000		/* hard cap of a snapshot */
#define A11Y_DEFAULT_NODES 400
#define A11Y_MAX_DEPTH 60
#define A11Y_TREE_TEXT 200		/* text kept per node in a snapshot (characters) */
#define A11Y_TREE_TEXT_BYTES (A11Y_TREE_TEXT * 4)	/* ... and bytes, whatever the app sends */
#define A11Y_READ_TEXT_MAX (1 << 20)	/* bytes a read returns at most */
/* Bytes kept of every other string an app gives (name, description, action
 * names, placeholder): an app decides their length (a 1 MB name is one
 * call away), so each is cut on a UTF-8 character boundary and the cut is
 * flagged (name_truncated, ...). Toolkit, version and the app's name are
 * cut to their arrays the same way. */
#define A11Y_NAME_MAX 1024
#define A11Y_BUS_MAX 64
#define A11Y_PATH_MAX 256

/* AT-SPI states (AtspiStateType numbers) as bits of a uint64_t. */
enum a11y_state {
	A11Y_ACTIVE = 1, A11Y_ARMED = 2, A11Y_BUSY = 3, A11Y_CHECKED = 4,
	A11Y_COLLAPSED = 5, A11Y_DEFUNCT = 6, A11Y_EDITABLE = 7, A11Y_ENABLED = 8,
	A11Y_EXPANDABLE = 9, A11Y_EXPANDED = 10, A11Y_FOCUSABLE = 11,
	A11Y_FOCUSED = 12, A11Y_MODAL = 16, A11Y_MULTI_LINE = 17,
	A11Y_PRESSED = 20, A11Y_SELECTABLE = 22, A11Y_SELECTED = 23,
	A11Y_SENSITIVE = 24, A11Y_SHOWING = 25, A11Y_SINGLE_LINE = 26,
	A11Y_VISIBLE = 30, A11Y_MANAGES_DESCENDANTS = 31, A11Y_INDETERMINATE = 32,
	A11Y_REQUIRED = 33, A11Y_CHECKABLE = 41, A11Y_HAS_POPUP = 42,
	A11Y_READ_ONLY = 43, A11Y_STATE_COUNT = 44,
};
#define A11Y_HAS(states, s) (((states) >> (s)) & 1u)

/* Some AT-SPI roles by number (AtspiRole); a11y_role_name() names all. */
enum a11y_role {
	A11Y_ROLE_CHECK_BOX = 7, A11Y_ROLE_COMBO_BOX = 11, A11Y_ROLE_DIALOG = 16,
	A11Y_ROLE_FILLER = 20, A11Y_ROLE_FRAME = 23, A11Y_ROLE_LABEL = 29,
	A11Y_ROLE_LIST = 31, A11Y_ROLE_LIST_ITEM = 32, A11Y_ROLE_MENU = 33,
	A11Y_ROLE_MENU_ITEM = 35, A11Y_ROLE_PANEL = 39, A11Y_ROLE_PASSWORD_TEXT = 40,
	A11Y_ROLE_PUSH_BUTTON = 43, A11Y_ROLE_RADIO_BUTTON = 44,
	A11Y_ROLE_SCROLL_PANE = 49, A11Y_ROLE_SLIDER = 51, A11Y_ROLE_SPIN_BUTTON = 52,
	A11Y_ROLE_TEXT = 61, A11Y_ROLE_TOGGLE_BUTTON = 62, A11Y_ROLE_VIEWPORT = 68,
	A11Y_ROLE_WINDOW = 69, A11Y_ROLE_APPLICATION = 75, A11Y_ROLE_ENTRY = 79,
	A11Y_ROLE_SECTION = 85, A11Y_ROLE_LIST_BOX = 98, A11Y_ROLE_STATIC = 116,
};

/* Interfaces an element implements. */
enum a11y_iface {
	A11Y_IF_ACTION = 1 << 0,
	A11Y_IF_COMPONENT = 1 << 1,
	A11Y_IF_TEXT = 1 << 2,
	A11Y_IF_EDITABLE_TEXT = 1 << 3,
	A11Y_IF_VALUE = 1 << 4,
	A11Y_IF_SELECTION = 1 << 5,
	A11Y_IF_DOCUMENT = 1 << 6,
	A11Y_IF_TABLE = 1 << 7,
	A11Y_IF_IMAGE = 1 << 8,
	A11Y_IF_HYPERLINK = 1 << 9,
};

/* An element's identity: the app's bus name and the object path, stable for
 * the object's lifetime in GTK, Chromium and Firefox. */
struct a11y_id {
	char bus[A11Y_BUS_MAX];
	char path[A11Y_PATH_MAX];
};

struct a11y_node {
	struct a11y_id id;
	int parent;			/* index in the tree, -1 for the root */
	int depth;
	int index_in_parent;
	int role;			/* AtspiRole number */
	char* name;			/* UTF-8, exact up to A11Y_NAME_MAX bytes; never NULL ("" none) */
	char* description;		/* the same; never NULL */
	bool name_truncated;		/* the app's name was longer: cut at A11Y_NAME_MAX */
	bool description_truncated;
	uint64_t states;		/* bits of enum a11y_state */
	unsigned ifaces;		/* enum a11y_iface */
	int child_count;		/* as the app reports it */
	/* Children the snapshot did not walk (max_nodes or max_depth cut
	 * them): kids_more of them, from child index kids_from on. A snapshot
	 * with start = this node and from_child = kids_from walks them. */
	int kids_from, kids_more;
	bool has_bounds;
	int x, y, width, height;	/* SCREEN extents as the app reports them */
	char* text;			/* Text content (up to the cap, cut on a character
					 * boundary), or NULL */
	size_t text_len;		/* bytes (text may hold NULs? never: UTF-8) */
	int char_count;			/* characters in the app, -1 unknown */
	bool text_truncated;		/* the cap cut it */
	bool has_value;
	double value, min_value, max_value, step;
	char** actions;			/* action names (a11y_read only), n_actions */
	int n_actions;
	char* placeholder;		/* the "placeholder-text" attribute (a11y_read only), or NULL */
	char toolkit[32];		/* the app's toolkit and version (a11y_read only) */
	char toolkit_version[32];
};

struct a11y_app {
	char bus[A11Y_BUS_MAX];
	int pid;			/* 0 unknown */
	char name[128];
	char toolkit[32];		/* "GTK", "Qt", "Chromium", ... */
	char version[32];
};

struct a11y_tree {
	struct a11y_node* nodes;	/* nodes[0] is the window (frame) */
	int n;
	int visited;			/* nodes fetched, kept or not */
	struct a11y_app app;
	bool truncated;			/* max_nodes or max_depth cut it */
	bool incomplete;		/* a timeout or a vanished app cut it */
	bool timed_out;			/* the deadline passed */
	bool app_gone;			/* the app exited meanwhile */
	int calls;			/* D-Bus calls sent */
	int64_t elapsed_ms;
};

struct a11y_query {
	int pid;			/* the app's process; required */
	const char* title;		/* the window's title (picks the frame), or NULL */
	int x, y, width, height;	/* the window's screen rectangle (picks the frame) */
	int max_nodes;			/* 0 = A11Y_DEFAULT_NODES; capped at A11Y_MAX_NODES */
	int max_depth;			/* 0 = A11Y_MAX_DEPTH */
	bool all;			/* also descend into non-showing subtrees */
	int64_t deadline_ms;		/* clock_ms() deadline; 0 = 2 s from now */
	/* A part of the window: the subtree of this element (NULL: the whole
	 * window), and of its children those from index from_child on. */
	const struct a11y_id* start;
	int from_child;
};

/* ---- Setup ---------------------------------------------------------------- */

/** Which session bus to find the AT-SPI bus on (copied; NULL or "" = none:
 *  then only $AT_SPI_BUS_ADDRESS works). Call before other functions, or
 *  again when the desktop's bus changes. */
void a11y_configure(const char* session_bus_address);
/** Ask the session bus for the AT-SPI bus (org.a11y.Bus.GetAddress, which
 *  starts at-spi-bus-launcher on demand) and, when enable, set
 *  org.a11y.Status.IsEnabled = true (Chromium and Firefox publish their
 *  trees only when it was true at their start). The address in out.
 *  0, -ENOTCONN, -ETIMEDOUT. */
int a11y_bus_setup(bool enable, int timeout_ms, char* out, size_t size,
		char* err, size_t err_size);

struct a11y_status {
	bool session_bus;		/* a session bus is configured and answers */
	bool bus;			/* the AT-SPI bus answers */
	bool enabled;			/* org.a11y.Status.IsEnabled */
	bool registry;			/* the registry answers */
	int apps;			/* registered applications */
	char session_address[512];
	char bus_address[512];
	char reason[256];		/* why something is false */
};
/** For doctor and status; bounded by timeout_ms. */
void a11y_status(struct a11y_status* out, int timeout_ms);
/** Free idle pooled connections (at shutdown). */
void a11y_shutdown(void);

/* ---- Reading -------------------------------------------------------------- */

/** The registered applications with pids (from the bus daemon, which
 *  answers for hung apps), toolkit left "" and name too unless names (then
 *  each app's root is asked in the same round trip, and a hung app costs
 *  the deadline). *list is malloc'd. */
int a11y_apps(struct a11y_app** list, size_t* n, int64_t deadline_ms, bool names,
		char* err, size_t err_size);
/** Are this toolkit's extents in window coordinates, counted from the
 *  window's frame? GTK 4's: it has no screen coordinates (4.8 answers
 *  window ones and warns; 4.18 on Wayland answers 0,0 for every element:
 *  docs/PITFALLS.md 91), so a11y/ asks it in window coordinates. The rest
 *  answer in screen coordinates. */
bool a11y_extents_in_window(const char* toolkit, const char* version);
/** The pid of the one app (of a11y_apps with names) named names[0], else
 *  of the one named names[1], ...; 0 when no name picks a single pid. For
 *  a window whose own pid is not known: its instance and class name it as
 *  GTK and Qt name their apps' roots. */
int a11y_app_pid_named(const struct a11y_app* apps, size_t n, const char* const* names,
		size_t n_names);
/** Snapshot one window of the app with q->pid. 0 with a tree (maybe
 *  incomplete: see its flags), -ENOENT (no accessible app for the pid, or
 *  it has no window), -ENOTCONN, -ETIMEDOUT (nothing at all came back in
 *  time: out holds what did). Free with a11y_tree_free() in every case. */
int a11y_snapshot(const struct a11y_query* q, struct a11y_tree* out, char* err,
		size_t err_size);
void a11y_tree_free(struct a11y_tree* self);

/** Read one element fully: role, name, states, interfaces, bounds, action
 *  names, value, and its text up to max_text bytes (exactly, no trimming;
 *  never for password text). 0, -ESRCH (gone), -ETIMEDOUT, -ENOTCONN. */
int a11y_read(const struct a11y_id* id, size_t max_text, int64_t deadline_ms,
		struct a11y_node* out, char* err, size_t err_size);
void a11y_node_clear(struct a11y_node* self);
/** The direct children of an element (role, name, states, interfaces, at
 *  most max of them): *out malloc'd, free each with a11y_node_clear. */
int a11y_children(const struct a11y_id* id, int max, int64_t deadline_ms,
		struct a11y_node** out, int* n, char* err, size_t err_size);

/* ---- Acting --------------------------------------------------------------- */

enum a11y_op {
	A11Y_DO_ACTION,		/* Action.DoAction(index) */
	A11Y_SET_TEXT,		/* EditableText.SetTextContents(text) */
	A11Y_INSERT_TEXT,	/* EditableText.InsertText(position, text) */
	A11Y_SET_VALUE,		/* Value.CurrentValue = value */
	A11Y_SELECT_CHILD,	/* Selection.SelectChild(index) */
	A11Y_GRAB_FOCUS,	/* Component.GrabFocus */
	A11Y_SCROLL_TO,		/* Component.ScrollTo(ANYWHERE) */
	A11Y_SET_CARET,		/* Text.SetCaretOffset(position) */
};

struct a11y_act {
	enum a11y_op op;
	int index;		/* action or child index */
	int position;		/* text offset (-1 = the end) */
	const char* text;	/* UTF-8 */
	double value;
};

/** Run one operation; *ok is the app's boolean answer (TRUE does not mean
 *  it happened: read back). 0, -ENOTSUP, -ESRCH, -ETIMEDOUT, -EIO. */
int a11y_act(const struct a11y_id* id, const struct a11y_act* act,
		int64_t deadline_ms, bool* ok, char* err, size_t err_size);

/** Action.DoAction(index) for a press that may open a modal dialog whose
 *  loop the app runs inside the call (a menu item's Save...): on a
 *  connection of its own, waiting at most wait_ms for the answer, then a
 *  probe on the same connection. *busy when either did not come: the press
 *  was delivered and the app is busy with what it opened; later calls on
 *  other connections still reach it. 0, -ENOTSUP, -ESRCH, -EIO, -ENOTCONN. */
int a11y_press(const struct a11y_id* id, int index, int wait_ms, bool* ok, bool* busy,
		char* err, size_t err_size);

/* ---- Events --------------------------------------------------------------- */

struct a11y_watch;
/** Listen to the apps' object and window events (state, children, name,
 *  text, value, focus; never bounds-changed). NULL with err. */
struct a11y_watch* a11y_watch_open(char* err, size_t err_size);
/** Wait up to timeout_ms for an event from bus (NULL: any app). 1 event,
 *  0 none, -ENOTCONN (the bus went away). */
int a11y_watch_wait(struct a11y_watch* self, const char* bus, int timeout_ms);
void a11y_watch_close(struct a11y_watch* self);

/* ---- Helpers (pure) ------------------------------------------------------- */

/** "push button", "check box", ... ("unknown" past the table). */
const char* a11y_role_name(int role);
/** The role number for a name (spaces or underscores), or -1. */
int a11y_role_lookup(const char* name);
/** "checked", "focused", ... or NULL for states deskd does not name. */
const char* a11y_state_name(int state);
/** Names equal but for white space around them (mousepad's menu items pad
 *  their names with the accelerator's column: "Save      "). */
bool a11y_name_eq(const char* a, const char* b);
/** Where s ends without its trailing white space (an offset); *start (may
 *  be NULL) where it starts without its leading white space. */
size_t a11y_name_trim(const char* s, size_t* start);
/** How many bytes of s[0..len) to keep at most max of them without
 *  splitting a UTF-8 character: len when it fits, else the last character
 *  boundary at or before max (continuation bytes 10xxxxxx are stepped over;
 *  s is UTF-8, as D-Bus strings are). */
size_t a11y_utf8_cut(const char* s, size_t len, size_t max);
