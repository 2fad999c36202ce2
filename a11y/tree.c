/* The snapshot: the registry's apps, the frame of a window, and the walk
 * level by level into a tree. */
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


/* ---- The snapshot --------------------------------------------------------------- */

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


int a11y__walk_add(struct walk* w, const struct a11y_id* id, int parent, int depth, int index)
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

void a11y__walk_free(struct walk* w, bool nodes_too)
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
void a11y__send_props(struct batch* b, struct walk* w, int i)
{
	const char* bus = w->v[i].id.bus;
	const char* path = w->v[i].id.path;
	a11y__send_simple(b, bus, path, IF_ACCESSIBLE, "GetRole", i, K_ROLE);
	a11y__send_simple(b, bus, path, IF_ACCESSIBLE, "GetState", i, K_STATE);
	a11y__send_simple(b, bus, path, IF_ACCESSIBLE, "GetInterfaces", i, K_IFACES);
	a11y__send_get(b, bus, path, IF_ACCESSIBLE, "Name", i, K_NAME);
	a11y__send_get(b, bus, path, IF_ACCESSIBLE, "Description", i, K_DESC);
}

static void take_item(struct a11y_node* n, const struct item* it)
{
	n->name = strdup(a11y__type_name(it->name) ? "" : it->name);
	n->description = strdup(it->description);
	n->name_truncated = it->name_cut;
	n->description_truncated = it->description_cut;
	n->role = it->role;
	n->states = it->states;
	n->ifaces = it->ifaces;
	n->child_count = it->child_count;
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

/* The registry's apps and their pids; their names too when asked (in the
 * same round trip, but from the apps themselves: a hung one costs the
 * deadline). */
static int list_apps(struct batch* b, bool names, struct a11y_app** out, size_t* n_out)
{
	*out = NULL;
	*n_out = 0;
	a11y__send_simple(b, REGISTRY_BUS, ROOT_PATH, IF_ACCESSIBLE, "GetChildren", 0, K_APPS);
	a11y__batch_wait(b);
	if (b->timed_out || b->lost || !a11y__reply_ok(b->v[0].reply)) {
		a11y__batch_reset(b);
		return b->timed_out ? -ETIMEDOUT : -ENOTCONN;
	}
	struct a11y_id* ids;
	int n = a11y__get_refs(b->v[0].reply, &ids, 4096);
	a11y__batch_reset(b);
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
		DBusMessage* m = a11y__method(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS, DBUS_INTERFACE_DBUS,
				"GetConnectionUnixProcessID");
		if (m)
			dbus_message_append_args(m, DBUS_TYPE_STRING, &bus, DBUS_TYPE_INVALID);
		a11y__batch_send(b, m, i, K_PID, 0);
		if (names)
			a11y__send_get(b, bus, ROOT_PATH, IF_ACCESSIBLE, "Name", i, K_NAME);
	}
	free(ids);
	a11y__batch_wait(b);
	for (size_t i = 0; i < b->n; i++) {
		struct a11y_app* a = &apps[b->v[i].node];
		int64_t pid;
		char* name;
		if (b->v[i].kind == K_PID && a11y__get_int(b->v[i].reply, &pid))
			a->pid = (int)pid;
		else if (b->v[i].kind == K_NAME && (name = a11y__dup_string(b->v[i].reply))) {
			a11y__copy_cut(a->name, sizeof(a->name), name);
			free(name);
		}
	}
	a11y__batch_reset(b);
	*out = apps;
	*n_out = (size_t)n;
	return 0;
}

int a11y_apps(struct a11y_app** list, size_t* n, int64_t deadline_ms, bool names, char* err,
		size_t err_size)
{
	*list = NULL;
	*n = 0;
	DBusConnection* c = a11y__pool_get(err, err_size);
	if (!c)
		return -ENOTCONN;
	struct batch b = { .c = c, .deadline = deadline_ms ? deadline_ms : clock_ms() + DEFAULT_DEADLINE_MS };
	int rc = list_apps(&b, names, list, n);
	if (rc == -ETIMEDOUT)
		a11y__set_err(err, err_size, "the AT-SPI registry did not answer in time");
	else if (rc == -ENOTCONN)
		a11y__set_err(err, err_size, "the AT-SPI registry is not reachable");
	a11y__pool_put(c, !b.timed_out && !b.lost);
	a11y__batch_free(&b);
	return rc;
}

int a11y_app_pid_named(const struct a11y_app* apps, size_t n, const char* const* names,
		size_t n_names)
{
	for (size_t k = 0; k < n_names; k++) {
		int pid = 0;
		bool several = false;
		for (size_t i = 0; names[k][0] && i < n; i++)
			if (apps[i].pid > 0 && !strcmp(apps[i].name, names[k])) {
				several |= pid && pid != apps[i].pid;
				pid = apps[i].pid;
			}
		if (pid && !several)
			return pid;
	}
	return 0;
}

static int64_t overlap(int ax, int ay, int aw, int ah, int bx, int by, int bw, int bh)
{
	int x0 = ax > bx ? ax : bx, y0 = ay > by ? ay : by;
	int x1 = ax + aw < bx + bw ? ax + aw : bx + bw;
	int y1 = ay + ah < by + bh ? ay + ah : by + bh;
	return x1 > x0 && y1 > y0 ? (int64_t)(x1 - x0) * (y1 - y0) : 0;
}

/* One snapshot in progress: its batch (on the bus, then on the app's peer
 * connection when it offers one), the walk and what the steps found. */
struct snapshot {
	const struct a11y_query* q;
	struct a11y_tree* out;
	struct batch b;
	struct walk w;
	struct items items;		/* GetItems of the frame's app */
	struct a11y_app* apps;
	size_t n_apps;
	struct a11y_id* frames;		/* the windows of the pid's apps */
	int* frame_app;			/* ... and each one's app (index in apps) */
	int n_frames;
	struct a11y_id root;		/* the frame picked */
	int max_nodes, max_depth;
	bool gone;			/* the app went away */
	char* err;
	size_t err_size;
};

static void take_app_reply(struct snapshot* s, struct pend* p)
{
	struct a11y_app* a = &s->apps[p->node];
	char* str;
	switch (p->kind) {
	case K_CHILDREN: {
		struct a11y_id* ids;
		int n = a11y__get_refs(p->reply, &ids, 256);
		if (n > 0) {
			struct a11y_id* nf = realloc(s->frames, (size_t)(s->n_frames + n) * sizeof(*nf));
			int* na = realloc(s->frame_app, (size_t)(s->n_frames + n) * sizeof(*na));
			if (nf)
				s->frames = nf;
			if (na)
				s->frame_app = na;
			if (nf && na) {
				for (int j = 0; j < n; j++) {
					s->frames[s->n_frames] = ids[j];
					s->frame_app[s->n_frames++] = p->node;
				}
			}
		}
		free(ids);
		break;
	}
	case K_TOOLKIT:
		if ((str = a11y__dup_string(p->reply))) { a11y__copy_cut(a->toolkit, sizeof(a->toolkit), str); free(str); }
		break;
	case K_VERSION:
		if ((str = a11y__dup_string(p->reply))) { a11y__copy_cut(a->version, sizeof(a->version), str); free(str); }
		break;
	case K_NAME:
		if ((str = a11y__dup_string(p->reply))) { a11y__copy_cut(a->name, sizeof(a->name), str); free(str); }
		break;
	default: break;
	}
}

/* Step 1: the app(s) of the pid, their windows (frames) and identity.
 * 0, or -ENOENT / -ETIMEDOUT with err. */
static int find_frames(struct snapshot* s)
{
	struct batch* b = &s->b;
	for (size_t i = 0; i < s->n_apps; i++) {
		const char* bus = s->apps[i].bus;
		if (s->apps[i].pid != s->q->pid)
			continue;
		a11y__send_simple(b, bus, ROOT_PATH, IF_ACCESSIBLE, "GetChildren", (int)i, K_CHILDREN);
		a11y__send_get(b, bus, ROOT_PATH, IF_APPLICATION, "ToolkitName", (int)i, K_TOOLKIT);
		a11y__send_get(b, bus, ROOT_PATH, IF_APPLICATION, "Version", (int)i, K_VERSION);
		a11y__send_get(b, bus, ROOT_PATH, IF_ACCESSIBLE, "Name", (int)i, K_NAME);
	}
	if (b->n == 0) {
		a11y__set_err(s->err, s->err_size, "no accessible application has pid %d", s->q->pid);
		return -ENOENT;
	}
	a11y__batch_wait(b);
	for (size_t k = 0; k < b->n; k++)
		take_app_reply(s, &b->v[k]);
	bool timed = b->timed_out;
	a11y__batch_reset(b);
	if (s->n_frames == 0) {
		a11y__set_err(s->err, s->err_size, timed ? "the application (pid %d) did not answer in time"
				: "the application (pid %d) has no accessible window", s->q->pid);
		s->out->timed_out = timed;
		return timed ? -ETIMEDOUT : -ENOENT;
	}
	return 0;
}

/* The frame that best fits the query: the title, then the rectangle, then
 * showing/active. */
static int best_frame(const struct snapshot* s)
{
	const struct a11y_query* q = s->q;
	int best = -1;
	int64_t best_score = -1;
	int64_t* score = calloc((size_t)s->n_frames, sizeof(*score));
	for (size_t k = 0; score && k < s->b.n; k++) {
		struct pend* p = &s->b.v[k];
		if (p->kind == K_NAME && q->title) {
			char* str = a11y__dup_string(p->reply);
			if (str && strcmp(str, q->title) == 0)
				score[p->node] += (int64_t)1 << 50;
			free(str);
		} else if (p->kind == K_STATE) {
			uint64_t st = 0;
			if (a11y__get_states(p->reply, &st)) {
				if (A11Y_HAS(st, A11Y_SHOWING) || A11Y_HAS(st, A11Y_VISIBLE))
					score[p->node] += (int64_t)1 << 48;
				if (A11Y_HAS(st, A11Y_ACTIVE))
					score[p->node] += (int64_t)1 << 47;
			}
		} else if (p->kind == K_ITEMS) {
			continue;
		} else if (p->kind == K_EXTENTS && q->width > 0) {
			int x, y, ww, hh;
			if (a11y__get_extents(p->reply, &x, &y, &ww, &hh))
				score[p->node] += overlap(x, y, ww, hh, q->x, q->y, q->width, q->height);
		}
	}
	for (int j = 0; score && j < s->n_frames; j++)
		if (score[j] > best_score) {
			best_score = score[j];
			best = j;
		}
	free(score);
	return best < 0 ? 0 : best;
}

/* Step 2: pick the frame, with GetItems (the properties of a whole app in
 * one call) in the same round trip for each app the frames belong to. */
static void pick_frame(struct snapshot* s)
{
	struct batch* b = &s->b;
	for (int j = 0; j < s->n_frames; j++) {
		const struct a11y_id* f = &s->frames[j];
		a11y__send_get(b, f->bus, f->path, IF_ACCESSIBLE, "Name", j, K_NAME);
		a11y__send_simple(b, f->bus, f->path, IF_ACCESSIBLE, "GetState", j, K_STATE);
		const struct a11y_app* app = &s->apps[s->frame_app[j]];
		a11y__send_extents(b, f->bus, f->path, a11y_extents_in_window(app->toolkit, app->version),
				j, K_EXTENTS);
	}
	for (size_t i = 0; i < s->n_apps; i++)
		if (s->apps[i].pid == s->q->pid)
			a11y__send_simple(b, s->apps[i].bus, "/org/a11y/atspi/cache", "org.a11y.atspi.Cache",
					"GetItems", (int)i, K_ITEMS);
	a11y__batch_wait(b);
	int best = best_frame(s);
	for (size_t k = 0; k < b->n; k++)
		if (b->v[k].kind == K_ITEMS && b->v[k].node == s->frame_app[best] && b->v[k].reply)
			a11y__parse_items(b->v[k].reply, &s->items);
	a11y__batch_reset(b);
	s->out->app = s->apps[s->frame_app[best]];
	s->root = s->frames[best];
}

/* Ask for node i's properties (those GetItems lacked) and children. */
static void send_level_node(struct snapshot* s, int depth, int i, bool states_first)
{
	struct walk* w = &s->w;
	struct batch* b = &s->b;
	const struct a11y_app* app = &s->out->app;
	if (w->have_props[i]) {
		/* from GetItems */
	} else if (states_first && i > 0 && !node_shown(&w->v[i], app, false)) {
		w->have_props[i] = true;	/* hidden: dropped below, nothing more to ask */
		return;
	} else if (states_first) {
		const char* bus = w->v[i].id.bus;
		const char* path = w->v[i].id.path;
		a11y__send_simple(b, bus, path, IF_ACCESSIBLE, "GetRole", i, K_ROLE);
		a11y__send_simple(b, bus, path, IF_ACCESSIBLE, "GetInterfaces", i, K_IFACES);
		a11y__send_get(b, bus, path, IF_ACCESSIBLE, "Name", i, K_NAME);
		a11y__send_get(b, bus, path, IF_ACCESSIBLE, "Description", i, K_DESC);
	} else {
		a11y__send_props(b, w, i);
	}
	bool known_hidden = w->have_props[i] && i > 0 && !node_shown(&w->v[i], app, s->q->all);
	/* A leaf by GetItems needs no GetChildren (GTK4's counts are wrong). */
	bool leaf = w->have_props[i] && w->v[i].child_count == 0 && !is_gtk4(app);
	if (depth < s->max_depth && !known_hidden && !leaf)
		a11y__send_simple(b, w->v[i].id.bus, w->v[i].id.path, IF_ACCESSIBLE,
				"GetChildren", i, K_CHILDREN);
}

/* The properties of a level's nodes (from GetItems where it has them) and
 * their children. false when a states-first round was cut short. */
static bool level_fetch(struct snapshot* s, int depth, int start, int end)
{
	struct walk* w = &s->w;
	struct batch* b = &s->b;
	int missing = 0;
	for (int i = start; i < end; i++) {
		struct item* it = a11y__items_find(&s->items, w->v[i].id.path);
		if (it && strcmp(w->v[i].id.bus, s->root.bus) == 0) {
			take_item(&w->v[i], it);
			w->have_props[i] = true;
		} else {
			missing++;
		}
	}
	/* Many nodes without cached properties (a long web table): their
	 * states first, then the rest only for the showing ones. */
	bool states_first = !s->q->all && missing > 32;
	if (states_first) {
		for (int i = start; i < end; i++)
			if (!w->have_props[i])
				a11y__send_simple(b, w->v[i].id.bus, w->v[i].id.path, IF_ACCESSIBLE, "GetState", i, K_STATE);
		a11y__batch_wait(b);
		a11y__apply_all(b, w, &s->gone);
		a11y__batch_reset(b);
		if (b->timed_out || b->lost || s->gone)
			return false;
	}
	for (int i = start; i < end; i++)
		send_level_node(s, depth, i, states_first);
	a11y__batch_wait(b);
	a11y__apply_all(b, w, &s->gone);
	a11y__batch_reset(b);
	return true;
}

/* Keep or drop a level's nodes, and add the children of the kept ones up
 * to max_nodes kept in all. */
static void level_expand(struct snapshot* s, int depth, int start, int end, int* kept)
{
	struct walk* w = &s->w;
	struct a11y_tree* out = s->out;
	for (int i = start; i < end; i++) {
		if (!w->v[i].name)
			w->v[i].name = strdup("");
		if (!w->v[i].description)
			w->v[i].description = strdup("");
		if ((i > 0 && !node_shown(&w->v[i], &out->app, s->q->all))
				|| (w->v[i].parent >= 0 && !w->keep[w->v[i].parent])) {
			w->keep[i] = false;
			(*kept)--;
			continue;
		}
		if (depth + 1 > s->max_depth && w->n_kids[i] > 0)
			out->truncated = true;
		if (depth >= s->max_depth && w->v[i].child_count > 0) {
			w->v[i].kids_from = 0;	/* not fetched: the whole list is left */
			w->v[i].kids_more = w->v[i].child_count;
			out->truncated = true;
		}
		/* a part of the window: the start's children from from_child on */
		int first = depth == 0 && s->q->start ? s->q->from_child : 0;
		for (int k = first; k < w->n_kids[i]; k++) {
			if (*kept >= s->max_nodes) {
				out->truncated = true;
				w->v[i].kids_from = k;
				w->v[i].kids_more = w->n_kids[i] - k;
				break;
			}
			if (a11y__walk_add(w, &w->kids[i][k], i, depth + 1, k) < 0)
				break;
			(*kept)++;
		}
		free(w->kids[i]);
		w->kids[i] = NULL;
		w->n_kids[i] = 0;
	}
}

/* Step 3: level by level from the frame down. */
static void walk_levels(struct snapshot* s)
{
	struct batch* b = &s->b;
	int kept = 1;
	int level_start = 0, level_end = 1;
	for (int depth = 0; level_start < level_end && !b->timed_out && !b->lost && !s->gone; depth++) {
		if (!level_fetch(s, depth, level_start, level_end))
			break;
		level_expand(s, depth, level_start, level_end, &kept);
		s->out->visited = s->w.n;
		level_start = level_end;
		level_end = s->w.n;
	}
	/* Children fetched for the last level were never visited. */
	if (level_start < level_end && (b->timed_out || b->lost || s->gone)) {
		for (int i = level_start; i < level_end; i++)
			s->w.keep[i] = false;
	}
	for (int i = 0; i < s->w.n; i++) {
		if (!s->w.v[i].name)
			s->w.v[i].name = strdup("");
		if (!s->w.v[i].description)
			s->w.v[i].description = strdup("");
	}
}

/* Step 4: the details of the kept nodes, all at once; then the texts. */
static void fetch_details(struct snapshot* s)
{
	struct walk* w = &s->w;
	struct batch* b = &s->b;
	bool in_window = a11y_extents_in_window(s->out->app.toolkit, s->out->app.version);
	for (int i = 0; i < w->n; i++) {
		if (!w->keep[i])
			continue;
		struct a11y_node* n = &w->v[i];
		if (n->ifaces & A11Y_IF_COMPONENT)
			a11y__send_extents(b, n->id.bus, n->id.path, in_window, i, K_EXTENTS);
		if (n->ifaces & A11Y_IF_VALUE) {
			a11y__send_get(b, n->id.bus, n->id.path, IF_VALUE, "CurrentValue", i, K_VALUE);
			a11y__send_get(b, n->id.bus, n->id.path, IF_VALUE, "MinimumValue", i, K_VMIN);
			a11y__send_get(b, n->id.bus, n->id.path, IF_VALUE, "MaximumValue", i, K_VMAX);
		}
		if (wants_text(n))
			a11y__send_get(b, n->id.bus, n->id.path, IF_TEXT, "CharacterCount", i, K_CHARCOUNT);
	}
	a11y__batch_wait(b);
	a11y__apply_all(b, w, &s->gone);
	a11y__batch_reset(b);
	for (int i = 0; i < w->n; i++) {
		struct a11y_node* n = &w->v[i];
		if (!w->keep[i] || !wants_text(n) || n->char_count <= 0)
			continue;
		dbus_int32_t start = 0;
		dbus_int32_t end = n->char_count > A11Y_TREE_TEXT ? A11Y_TREE_TEXT : n->char_count;
		n->text_truncated = n->char_count > A11Y_TREE_TEXT;
		DBusMessage* m = a11y__method(n->id.bus, n->id.path, IF_TEXT, "GetText");
		if (m)
			dbus_message_append_args(m, DBUS_TYPE_INT32, &start, DBUS_TYPE_INT32, &end,
					DBUS_TYPE_INVALID);
		a11y__batch_send(b, m, i, K_TEXT, A11Y_TREE_TEXT_BYTES);
	}
	a11y__batch_wait(b);
	a11y__apply_all(b, w, &s->gone);
	a11y__batch_reset(b);
	for (int i = 0; i < w->n; i++)
		if (w->keep[i] && wants_text(&w->v[i]) && w->v[i].char_count == 0 && !w->v[i].text) {
			w->v[i].text = strdup("");
			w->v[i].text_len = 0;
		}
}

/* ---- Closed popups and combos named by their value --------------------------- */

static bool popup_role(int role)
{
	return role == A11Y_ROLE_MENU || role == A11Y_ROLE_LIST || role == A11Y_ROLE_LIST_BOX
			|| role == 41 /* popup menu */;
}

static bool inside(const struct a11y_node* n, const struct a11y_node* f)
{
	return n->x >= f->x && n->y >= f->y && n->x + n->width <= f->x + f->width
			&& n->y + n->height <= f->y + f->height;
}

/* The first kept child of node i, or -1 (children come after their parent). */
static int first_child(const struct walk* w, int i)
{
	for (int k = i + 1; k < w->n; k++)
		if (w->v[k].parent == i && w->keep[k])
			return k;
	return -1;
}

/* The popup list of a combo box that is not open: Chromium's says
 * collapsed, Qt's (no such state) keeps its items "showing" at the popup's
 * last place, outside the window. */
static bool closed_popup(const struct walk* w, int i)
{
	const struct a11y_node* n = &w->v[i];
	int p = n->parent;
	if (p < 0 || w->v[p].role != A11Y_ROLE_COMBO_BOX || A11Y_HAS(w->v[p].states, A11Y_EXPANDED)
			|| !popup_role(n->role))
		return false;
	if (A11Y_HAS(w->v[p].states, A11Y_COLLAPSED))
		return true;
	int k = first_child(w, i);
	return k >= 0 && w->v[k].has_bounds && w->v[0].has_bounds && !inside(&w->v[k], &w->v[0]);
}

/* Qt names a combo box by its current option: a person knows it by its
 * label, so the snapshot does too and keeps the option as its text
 * ("combo box "Size" value="Small""). Only when the name is one of the
 * combo's own options (walked: its popup's items). */
static bool named_by_option(const struct walk* w, int i)
{
	int list = first_child(w, i);
	for (int k = list + 1; list >= 0 && k < w->n; k++)
		if (w->v[k].parent == list && w->v[k].name && strcmp(w->v[k].name, w->v[i].name) == 0)
			return true;
	return false;
}

/* The label of combo i: the walked node its labelled-by relation names
 * (label, when one came), else the kept label just before it among its
 * siblings; -1 none. */
static int combo_label(const struct walk* w, int i, const struct a11y_id* label)
{
	for (int k = 0; label && k < w->n; k++)
		if (w->keep[k] && strcmp(w->v[k].id.path, label->path) == 0
				&& strcmp(w->v[k].id.bus, label->bus) == 0)
			return k;
	for (int k = i - 1; k >= 0; k--)
		if (w->v[k].parent == w->v[i].parent && w->keep[k])
			return w->v[k].role == A11Y_ROLE_LABEL || w->v[k].role == A11Y_ROLE_STATIC ? k : -1;
	return -1;
}

/* A form field with no name of its own (a GTK 4 entry or drop-down without
 * an accessible label) is named by its label, as a person reads the form. */
static bool unnamed_field(const struct a11y_node* n)
{
	return n->name && !n->name[0] && (n->role == A11Y_ROLE_COMBO_BOX || n->role == A11Y_ROLE_TEXT
			|| n->role == A11Y_ROLE_ENTRY || n->role == A11Y_ROLE_PASSWORD_TEXT
			|| n->role == A11Y_ROLE_SPIN_BUTTON || n->role == A11Y_ROLE_SLIDER);
}

static void name_by_label(struct walk* w, int i, const struct a11y_id* label)
{
	struct a11y_node* n = &w->v[i];
	int k = combo_label(w, i, label);
	if (unnamed_field(n)) {
		char* name = k >= 0 && w->v[k].name && w->v[k].name[0] ? strdup(w->v[k].name) : NULL;
		if (name) {
			free(n->name);
			n->name = name;
		}
		return;
	}
	if (k < 0 || n->text || !w->v[k].name || !w->v[k].name[0])
		return;
	char* name = strdup(w->v[k].name);
	if (!name)
		return;
	n->text = n->name;
	n->text_len = strlen(n->text);
	n->char_count = -1;
	n->name = name;
}

/* The combos named by an option and the unnamed fields, renamed; their relations in one round
 * (Qt's label buddy), asked only while the deadline leaves time for it. */
static void name_combos(struct snapshot* s)
{
	struct walk* w = &s->w;
	struct batch* b = &s->b;
	for (int i = 1; i < w->n; i++)
		if (w->keep[i] && ((w->v[i].role == A11Y_ROLE_COMBO_BOX && w->v[i].name && named_by_option(w, i))
				|| unnamed_field(&w->v[i])) && a11y__left_ms(b->deadline) > 200)
			a11y__send_simple(b, w->v[i].id.bus, w->v[i].id.path, IF_ACCESSIBLE, "GetRelationSet",
					i, K_OTHER);
	size_t sent = b->n;
	if (sent)
		a11y__batch_wait(b);
	for (size_t k = 0; k < sent; k++) {
		struct a11y_id label;
		bool have = b->v[k].reply && a11y__get_relation(b->v[k].reply, A11Y_RELATION_LABELLED_BY, &label);
		name_by_label(w, b->v[k].node, have ? &label : NULL);
	}
	a11y__batch_reset(b);
}

/* After the details: combos named by their labels, closed popups left out
 * (all: true keeps them). Parents come before children in the walk. */
static void tidy_popups(struct snapshot* s)
{
	struct walk* w = &s->w;
	name_combos(s);
	for (int i = 1; i < w->n; i++)
		if (w->keep[i] && (!w->keep[w->v[i].parent] || (!s->q->all && closed_popup(w, i))))
			w->keep[i] = false;
}

/* Step 5: the flags, the tree in pre-order, and what a (nearly) empty
 * result means. */
static int finish(struct snapshot* s)
{
	struct a11y_tree* out = s->out;
	out->timed_out = s->b.timed_out;
	out->app_gone = s->gone || s->b.lost;
	out->incomplete = out->timed_out || out->app_gone;
	int rc = reorder(&s->w, out);
	if (rc == 0 && out->n == 0)
		rc = -ESRCH;
	if (rc == 0 && out->timed_out && out->n <= 1) {
		rc = -ETIMEDOUT;
		a11y__set_err(s->err, s->err_size, "the application (pid %d) did not answer within the deadline",
				s->q->pid);
	} else if (rc == 0 && out->app_gone && out->n <= 1) {
		rc = -ESRCH;
		a11y__set_err(s->err, s->err_size, "the application (pid %d) went away during the snapshot",
				s->q->pid);
	}
	return rc;
}

/* The steps on one pooled connection (and the app's peer one, for the
 * walk). */
static int snapshot_run(struct snapshot* s, DBusConnection** peer, bool* bus_clean)
{
	int rc = list_apps(&s->b, false, &s->apps, &s->n_apps);
	if (rc < 0) {
		a11y__set_err(s->err, s->err_size, "the AT-SPI registry %s", rc == -ETIMEDOUT
				? "did not answer in time" : "is not reachable");
		return rc;
	}
	if ((rc = find_frames(s)) < 0)
		return rc;
	pick_frame(s);
	if (s->q->start) {
		/* the part asked for; the frame still named the app */
		if (strcmp(s->q->start->bus, s->root.bus) != 0) {
			a11y__set_err(s->err, s->err_size, "the element is not in this application's tree");
			return -ENOENT;
		}
		s->root = *s->q->start;
	}
	if (a11y__walk_add(&s->w, &s->root, -1, 0, 0) < 0)
		return -ENOMEM;
	/* The walk goes peer-to-peer when the app offers it. */
	if ((*peer = a11y__peer_get(&s->b, s->root.bus))) {
		*bus_clean = !s->b.timed_out && !s->b.lost;
		s->b.c = *peer;
	}
	walk_levels(s);
	if (!s->b.timed_out && !s->b.lost && !s->gone) {
		fetch_details(s);
		tidy_popups(s);
	}
	return finish(s);
}

int a11y_snapshot(const struct a11y_query* q, struct a11y_tree* out, char* err, size_t err_size)
{
	memset(out, 0, sizeof(*out));
	int64_t t0 = clock_ms();
	struct snapshot s = { .q = q, .out = out, .err = err, .err_size = err_size };
	s.max_nodes = q->max_nodes > 0 ? q->max_nodes : A11Y_DEFAULT_NODES;
	if (s.max_nodes > A11Y_MAX_NODES)
		s.max_nodes = A11Y_MAX_NODES;
	s.max_depth = q->max_depth > 0 ? q->max_depth : A11Y_MAX_DEPTH;
	DBusConnection* c = a11y__pool_get(err, err_size);
	if (!c)
		return -ENOTCONN;
	s.b = (struct batch){ .c = c, .deadline = q->deadline_ms ? q->deadline_ms : t0 + DEFAULT_DEADLINE_MS };
	DBusConnection* peer = NULL;
	bool bus_clean = true;
	int rc = snapshot_run(&s, &peer, &bus_clean);
	out->calls = s.b.calls;
	out->elapsed_ms = clock_ms() - t0;
	if (peer) {
		a11y__peer_put(out->app.bus, peer, !s.b.timed_out && !s.b.lost);
		a11y__pool_put(c, bus_clean);
	} else {
		a11y__pool_put(c, !s.b.timed_out && !s.b.lost);
	}
	a11y__batch_free(&s.b);
	a11y__walk_free(&s.w, true);
	a11y__items_free(&s.items);
	free(s.frames);
	free(s.frame_app);
	free(s.apps);
	return rc;
}
