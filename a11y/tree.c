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
	n->name = strdup(it->name);
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

/* The registry's apps and their pids. */
static int list_apps(struct batch* b, struct a11y_app** out, size_t* n_out)
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
	}
	free(ids);
	a11y__batch_wait(b);
	for (size_t i = 0; i < b->n; i++) {
		int64_t pid;
		if (a11y__get_int(b->v[i].reply, &pid))
			apps[b->v[i].node].pid = (int)pid;
	}
	a11y__batch_reset(b);
	*out = apps;
	*n_out = (size_t)n;
	return 0;
}

int a11y_apps(struct a11y_app** list, size_t* n, int64_t deadline_ms, char* err,
		size_t err_size)
{
	*list = NULL;
	*n = 0;
	DBusConnection* c = a11y__pool_get(err, err_size);
	if (!c)
		return -ENOTCONN;
	struct batch b = { .c = c, .deadline = deadline_ms ? deadline_ms : clock_ms() + DEFAULT_DEADLINE_MS };
	int rc = list_apps(&b, list, n);
	if (rc == -ETIMEDOUT)
		a11y__set_err(err, err_size, "the AT-SPI registry did not answer in time");
	else if (rc == -ENOTCONN)
		a11y__set_err(err, err_size, "the AT-SPI registry is not reachable");
	a11y__pool_put(c, !b.timed_out && !b.lost);
	a11y__batch_free(&b);
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
	DBusConnection* c = a11y__pool_get(err, err_size);
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
		a11y__set_err(err, err_size, "the AT-SPI registry %s", rc == -ETIMEDOUT
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
		a11y__send_simple(&b, apps[i].bus, ROOT_PATH, IF_ACCESSIBLE, "GetChildren", (int)i, K_CHILDREN);
		a11y__send_get(&b, apps[i].bus, ROOT_PATH, IF_APPLICATION, "ToolkitName", (int)i, K_TOOLKIT);
		a11y__send_get(&b, apps[i].bus, ROOT_PATH, IF_APPLICATION, "Version", (int)i, K_VERSION);
		a11y__send_get(&b, apps[i].bus, ROOT_PATH, IF_ACCESSIBLE, "Name", (int)i, K_NAME);
	}
	if (b.n == 0) {
		rc = -ENOENT;
		a11y__set_err(err, err_size, "no accessible application has pid %d", q->pid);
		goto done;
	}
	a11y__batch_wait(&b);
	for (size_t k = 0; k < b.n; k++) {
		struct pend* p = &b.v[k];
		struct a11y_app* a = &apps[p->node];
		char* s;
		switch (p->kind) {
		case K_CHILDREN: {
			struct a11y_id* ids;
			int n = a11y__get_refs(p->reply, &ids, 256);
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
			if ((s = a11y__dup_string(p->reply))) { a11y__copy_cut(a->toolkit, sizeof(a->toolkit), s); free(s); }
			break;
		case K_VERSION:
			if ((s = a11y__dup_string(p->reply))) { a11y__copy_cut(a->version, sizeof(a->version), s); free(s); }
			break;
		case K_NAME:
			if ((s = a11y__dup_string(p->reply))) { a11y__copy_cut(a->name, sizeof(a->name), s); free(s); }
			break;
		default: break;
		}
	}
	bool timed = b.timed_out;
	a11y__batch_reset(&b);
	if (n_frames == 0) {
		rc = timed ? -ETIMEDOUT : -ENOENT;
		a11y__set_err(err, err_size, timed ? "the application (pid %d) did not answer in time"
				: "the application (pid %d) has no accessible window", q->pid);
		out->timed_out = timed;
		free(frames);
		free(frame_app);
		goto done;
	}
	/* Pick the frame: the title, then the rectangle, then showing/active. */
	for (int j = 0; j < n_frames; j++) {
		a11y__send_get(&b, frames[j].bus, frames[j].path, IF_ACCESSIBLE, "Name", j, K_NAME);
		a11y__send_simple(&b, frames[j].bus, frames[j].path, IF_ACCESSIBLE, "GetState", j, K_STATE);
		a11y__send_extents(&b, frames[j].bus, frames[j].path, j, K_EXTENTS);
	}
	/* GetItems (the properties of a whole app in one call) in the same
	 * round trip, for each app the frames belong to. */
	for (size_t i = 0; i < n_apps; i++)
		if (apps[i].pid == q->pid)
			a11y__send_simple(&b, apps[i].bus, "/org/a11y/atspi/cache", "org.a11y.atspi.Cache",
					"GetItems", (int)i, K_ITEMS);
	a11y__batch_wait(&b);
	int best = -1;
	int64_t best_score = -1;
	{
		int64_t* score = calloc((size_t)n_frames, sizeof(*score));
		for (size_t k = 0; score && k < b.n; k++) {
			struct pend* p = &b.v[k];
			if (p->kind == K_NAME && q->title) {
				char* s = a11y__dup_string(p->reply);
				if (s && strcmp(s, q->title) == 0)
					score[p->node] += (int64_t)1 << 50;
				free(s);
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
			a11y__parse_items(b.v[k].reply, &items);
	a11y__batch_reset(&b);
	out->app = apps[frame_app[best]];
	struct a11y_id root = frames[best];
	free(frames);
	free(frame_app);
	if (a11y__walk_add(&w, &root, -1, 0, 0) < 0) {
		rc = -ENOMEM;
		goto done;
	}
	/* The walk goes peer-to-peer when the app offers it. */
	if ((peer = a11y__peer_get(&b, root.bus))) {
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
			struct item* it = a11y__items_find(&items, w.v[i].id.path);
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
					a11y__send_simple(&b, w.v[i].id.bus, w.v[i].id.path, IF_ACCESSIBLE, "GetState", i, K_STATE);
			a11y__batch_wait(&b);
			a11y__apply_all(&b, &w, &gone);
			a11y__batch_reset(&b);
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
				a11y__send_simple(&b, bus, path, IF_ACCESSIBLE, "GetRole", i, K_ROLE);
				a11y__send_simple(&b, bus, path, IF_ACCESSIBLE, "GetInterfaces", i, K_IFACES);
				a11y__send_get(&b, bus, path, IF_ACCESSIBLE, "Name", i, K_NAME);
				a11y__send_get(&b, bus, path, IF_ACCESSIBLE, "Description", i, K_DESC);
			} else {
				a11y__send_props(&b, &w, i);
			}
			bool known_hidden = w.have_props[i] && i > 0
					&& !node_shown(&w.v[i], &out->app, q->all);
			/* A leaf by GetItems needs no GetChildren (GTK4's counts are wrong). */
			bool leaf = w.have_props[i] && w.v[i].child_count == 0 && !is_gtk4(&out->app);
			if (depth < max_depth && !known_hidden && !leaf)
				a11y__send_simple(&b, w.v[i].id.bus, w.v[i].id.path, IF_ACCESSIBLE,
						"GetChildren", i, K_CHILDREN);
		}
		a11y__batch_wait(&b);
		a11y__apply_all(&b, &w, &gone);
		a11y__batch_reset(&b);
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
				if (a11y__walk_add(&w, &w.kids[i][k], i, depth + 1, k) < 0)
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
				a11y__send_extents(&b, n->id.bus, n->id.path, i, K_EXTENTS);
			if (n->ifaces & A11Y_IF_VALUE) {
				a11y__send_get(&b, n->id.bus, n->id.path, IF_VALUE, "CurrentValue", i, K_VALUE);
				a11y__send_get(&b, n->id.bus, n->id.path, IF_VALUE, "MinimumValue", i, K_VMIN);
				a11y__send_get(&b, n->id.bus, n->id.path, IF_VALUE, "MaximumValue", i, K_VMAX);
			}
			if (wants_text(n))
				a11y__send_get(&b, n->id.bus, n->id.path, IF_TEXT, "CharacterCount", i, K_CHARCOUNT);
		}
		a11y__batch_wait(&b);
		a11y__apply_all(&b, &w, &gone);
		a11y__batch_reset(&b);
		for (int i = 0; i < w.n; i++) {
			struct a11y_node* n = &w.v[i];
			if (!w.keep[i] || !wants_text(n) || n->char_count <= 0)
				continue;
			dbus_int32_t start = 0;
			dbus_int32_t end = n->char_count > A11Y_TREE_TEXT ? A11Y_TREE_TEXT : n->char_count;
			n->text_truncated = n->char_count > A11Y_TREE_TEXT;
			DBusMessage* m = a11y__method(n->id.bus, n->id.path, IF_TEXT, "GetText");
			if (m)
				dbus_message_append_args(m, DBUS_TYPE_INT32, &start, DBUS_TYPE_INT32, &end,
						DBUS_TYPE_INVALID);
			a11y__batch_send(&b, m, i, K_TEXT, A11Y_TREE_TEXT_BYTES);
		}
		a11y__batch_wait(&b);
		a11y__apply_all(&b, &w, &gone);
		a11y__batch_reset(&b);
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
		a11y__set_err(err, err_size, "the application (pid %d) did not answer within the deadline", q->pid);
	} else if (rc == 0 && out->app_gone && out->n <= 1) {
		rc = -ESRCH;
		a11y__set_err(err, err_size, "the application (pid %d) went away during the snapshot", q->pid);
	}
done:
	out->calls = b.calls;
	out->elapsed_ms = clock_ms() - t0;
	if (peer) {
		a11y__peer_put(out->app.bus, peer, !b.timed_out && !b.lost);
		a11y__pool_put(c, bus_clean);
	} else {
		a11y__pool_put(c, !b.timed_out && !b.lost);
	}
	a11y__batch_free(&b);
	a11y__walk_free(&w, true);
	a11y__items_free(&items);
	free(apps);
	return rc;
}
