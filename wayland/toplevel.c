/* The window list of a compositor without sway's IPC:
 * zwlr_foreign_toplevel_manager_v1, bound on one connection of the process
 * (the tracker), whose dispatching keeps a process-wide list. The list
 * lives here and not in the connection because every connection would
 * number the same windows differently (the protocol has no stable id):
 * capture/, input/ and desktop/ each have their own connection, and a
 * window id one of them hands out must mean the same window to the others.
 *
 * Threads: the tracker's events are handled on the thread that dispatches
 * it; the list and the requests are reached from any thread. One mutex
 * guards both: a handle is destroyed (on closed) only under it, so a
 * request never marshals on a freed proxy. libwayland unlocks its own
 * display lock while a listener runs, so the two locks do not nest the
 * wrong way round. */
#define _GNU_SOURCE
#include "wayland/wl_private.h"
#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOPLEVELS 1024
#define MANAGER_VERSION 3

struct entry {
	struct zwlr_foreign_toplevel_handle_v1* handle;
	struct wayland_toplevel now;	/* as of the last done */
	struct wayland_toplevel next;	/* the events since */
	struct entry* parent_next;	/* the parent event's, applied at done */
	struct entry* parent;
	bool ready;		/* the first done arrived */
};

static struct {
	pthread_mutex_t lock;
	struct wayland* tracker;	/* the connection the manager is bound on, or NULL */
	struct zwlr_foreign_toplevel_manager_v1* manager;
	struct entry* entries[MAX_TOPLEVELS];
	size_t n;
	uint32_t next_id;	/* ids are never reused in a process */
} T = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Copy a string the compositor sent, cut on a UTF-8 boundary. */
static void copy_utf8(char* dst, size_t size, const char* s)
{
	size_t n = s ? strlen(s) : 0;
	if (n >= size) {
		n = size - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, s ? s : "", n);
	dst[n] = '\0';
}

static void on_title(void* data, struct zwlr_foreign_toplevel_handle_v1* h, const char* title)
{
	struct entry* e = data;
	pthread_mutex_lock(&T.lock);
	copy_utf8(e->next.title, sizeof(e->next.title), title);
	pthread_mutex_unlock(&T.lock);
}

static void on_app_id(void* data, struct zwlr_foreign_toplevel_handle_v1* h, const char* app_id)
{
	struct entry* e = data;
	pthread_mutex_lock(&T.lock);
	copy_utf8(e->next.app_id, sizeof(e->next.app_id), app_id);
	pthread_mutex_unlock(&T.lock);
}

static void on_output(void* data, struct zwlr_foreign_toplevel_handle_v1* h, struct wl_output* o)
{
}

static void on_state(void* data, struct zwlr_foreign_toplevel_handle_v1* h, struct wl_array* states)
{
	struct entry* e = data;
	pthread_mutex_lock(&T.lock);
	struct wayland_toplevel* t = &e->next;
	t->maximized = t->minimized = t->activated = t->fullscreen = false;
	const uint32_t* s = states->data;
	for (size_t i = 0; i < states->size / sizeof(uint32_t); i++) {
		switch (s[i]) {
		case ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MAXIMIZED: t->maximized = true; break;
		case ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED: t->minimized = true; break;
		case ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED: t->activated = true; break;
		case ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_FULLSCREEN: t->fullscreen = true; break;
		default: break;	/* a state of a later version */
		}
	}
	pthread_mutex_unlock(&T.lock);
}

static void on_done(void* data, struct zwlr_foreign_toplevel_handle_v1* h)
{
	struct entry* e = data;
	pthread_mutex_lock(&T.lock);
	e->parent = e->parent_next;
	e->next.parent = e->parent ? e->parent->now.id : 0;
	e->now = e->next;
	e->ready = true;
	pthread_mutex_unlock(&T.lock);
}

/* Remove entry i (lock held): its handle goes, and so do the links to it. */
static void drop(size_t i)
{
	struct entry* e = T.entries[i];
	for (size_t j = 0; j < T.n; j++) {
		if (T.entries[j]->parent == e)
			T.entries[j]->parent = NULL;
		if (T.entries[j]->parent_next == e)
			T.entries[j]->parent_next = NULL;
	}
	zwlr_foreign_toplevel_handle_v1_destroy(e->handle);
	free(e);
	T.entries[i] = T.entries[--T.n];
}

static void on_closed(void* data, struct zwlr_foreign_toplevel_handle_v1* h)
{
	struct entry* e = data;
	pthread_mutex_lock(&T.lock);
	for (size_t i = 0; i < T.n; i++) {
		if (T.entries[i] == e) {
			drop(i);
			break;
		}
	}
	pthread_mutex_unlock(&T.lock);
}

static void on_parent(void* data, struct zwlr_foreign_toplevel_handle_v1* h,
		struct zwlr_foreign_toplevel_handle_v1* parent)
{
	struct entry* e = data;
	pthread_mutex_lock(&T.lock);
	e->parent_next = parent ? zwlr_foreign_toplevel_handle_v1_get_user_data(parent) : NULL;
	pthread_mutex_unlock(&T.lock);
}

static const struct zwlr_foreign_toplevel_handle_v1_listener handle_listener = {
	.title = on_title,
	.app_id = on_app_id,
	.output_enter = on_output,
	.output_leave = on_output,
	.state = on_state,
	.done = on_done,
	.closed = on_closed,
	.parent = on_parent,
};

static void on_toplevel(void* data, struct zwlr_foreign_toplevel_manager_v1* m,
		struct zwlr_foreign_toplevel_handle_v1* handle)
{
	pthread_mutex_lock(&T.lock);
	struct entry* e = T.n < MAX_TOPLEVELS ? calloc(1, sizeof(*e)) : NULL;
	if (!e) {
		pthread_mutex_unlock(&T.lock);
		log_warn("wayland: more than %d toplevels (or no memory); one is not listed",
				MAX_TOPLEVELS);
		zwlr_foreign_toplevel_handle_v1_destroy(handle);
		return;
	}
	e->handle = handle;
	e->next.id = e->now.id = ++T.next_id;
	T.entries[T.n++] = e;
	zwlr_foreign_toplevel_handle_v1_add_listener(handle, &handle_listener, e);
	pthread_mutex_unlock(&T.lock);
}

static void on_finished(void* data, struct zwlr_foreign_toplevel_manager_v1* m)
{
	log_info("wayland: the compositor stopped sending its window list");
}

static const struct zwlr_foreign_toplevel_manager_v1_listener manager_listener = {
	.toplevel = on_toplevel,
	.finished = on_finished,
};

int wayland_toplevels_track(struct wayland* self, int timeout_ms)
{
	if (!self->toplevel_global)
		return -ENOTSUP;
	pthread_mutex_lock(&T.lock);
	bool busy = T.tracker != NULL;
	if (!busy) {
		T.manager = wl_registry_bind(self->registry, self->toplevel_global,
				&zwlr_foreign_toplevel_manager_v1_interface,
				self->toplevel_version < MANAGER_VERSION ? self->toplevel_version
						: MANAGER_VERSION);
		if (T.manager) {
			zwlr_foreign_toplevel_manager_v1_add_listener(T.manager, &manager_listener, NULL);
			T.tracker = self;
		}
	}
	bool bound = T.tracker == self;
	pthread_mutex_unlock(&T.lock);
	if (busy)
		return -EBUSY;
	if (!bound)
		return -ENOMEM;
	/* one round trip for the toplevel events, one for their first done */
	int rc = wayland_sync(self, timeout_ms);
	return rc < 0 ? rc : wayland_sync(self, timeout_ms);
}

void wl__toplevels_forget(struct wayland* self)
{
	pthread_mutex_lock(&T.lock);
	if (T.tracker == self) {
		while (T.n)
			drop(T.n - 1);
		zwlr_foreign_toplevel_manager_v1_destroy(T.manager);
		T.manager = NULL;
		T.tracker = NULL;
	}
	pthread_mutex_unlock(&T.lock);
}

bool wayland_toplevels_tracked(void)
{
	pthread_mutex_lock(&T.lock);
	bool tracked = T.tracker != NULL;
	pthread_mutex_unlock(&T.lock);
	return tracked;
}

int wayland_toplevels(struct wayland_toplevel** out, size_t* n)
{
	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&T.lock);
	if (!T.tracker) {
		pthread_mutex_unlock(&T.lock);
		return -ENODATA;
	}
	struct wayland_toplevel* list = calloc(T.n ? T.n : 1, sizeof(*list));
	if (!list) {
		pthread_mutex_unlock(&T.lock);
		return -ENOMEM;
	}
	/* in the order they appeared (ids grow), whatever drop() reordered */
	size_t count = 0;
	for (size_t i = 0; i < T.n; i++)
		if (T.entries[i]->ready)
			list[count++] = T.entries[i]->now;
	pthread_mutex_unlock(&T.lock);
	for (size_t i = 1; i < count; i++)
		for (size_t j = i; j > 0 && list[j - 1].id > list[j].id; j--) {
			struct wayland_toplevel t = list[j];
			list[j] = list[j - 1];
			list[j - 1] = t;
		}
	*out = list;
	*n = count;
	return 0;
}

int wayland_toplevel_get(uint32_t id, struct wayland_toplevel* out)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&T.lock);
	if (!T.tracker)
		rc = -ENODATA;
	for (size_t i = 0; i < T.n && rc == -ENOENT; i++) {
		if (T.entries[i]->ready && T.entries[i]->now.id == id) {
			*out = T.entries[i]->now;
			rc = 0;
		}
	}
	pthread_mutex_unlock(&T.lock);
	return rc;
}

int wayland_toplevel_request(uint32_t id, enum wayland_toplevel_request request)
{
	pthread_mutex_lock(&T.lock);
	int rc = T.tracker ? -ENOENT : -ENODATA;
	struct entry* e = NULL;
	for (size_t i = 0; i < T.n && !e; i++)
		if (T.entries[i]->ready && T.entries[i]->now.id == id)
			e = T.entries[i];
	bool has_fullscreen = e && zwlr_foreign_toplevel_handle_v1_get_version(e->handle) >= 2;
	if (e) {
		rc = 0;
		struct zwlr_foreign_toplevel_handle_v1* h = e->handle;
		switch (request) {
		case WAYLAND_TOPLEVEL_ACTIVATE:
			if (T.tracker->seat)
				zwlr_foreign_toplevel_handle_v1_activate(h, T.tracker->seat);
			else
				rc = -ENOTSUP;
			break;
		case WAYLAND_TOPLEVEL_CLOSE: zwlr_foreign_toplevel_handle_v1_close(h); break;
		case WAYLAND_TOPLEVEL_MAXIMIZE: zwlr_foreign_toplevel_handle_v1_set_maximized(h); break;
		case WAYLAND_TOPLEVEL_UNMAXIMIZE: zwlr_foreign_toplevel_handle_v1_unset_maximized(h); break;
		case WAYLAND_TOPLEVEL_MINIMIZE: zwlr_foreign_toplevel_handle_v1_set_minimized(h); break;
		case WAYLAND_TOPLEVEL_UNMINIMIZE: zwlr_foreign_toplevel_handle_v1_unset_minimized(h); break;
		case WAYLAND_TOPLEVEL_FULLSCREEN:
			if (has_fullscreen)
				zwlr_foreign_toplevel_handle_v1_set_fullscreen(h, NULL);
			else
				rc = -ENOTSUP;
			break;
		case WAYLAND_TOPLEVEL_UNFULLSCREEN:
			if (has_fullscreen)
				zwlr_foreign_toplevel_handle_v1_unset_fullscreen(h);
			else
				rc = -ENOTSUP;
			break;
		default: rc = -EINVAL; break;
		}
		if (rc == 0 && wl_display_flush(T.tracker->display) < 0 && errno != EAGAIN)
			rc = -EPIPE;
	}
	pthread_mutex_unlock(&T.lock);
	return rc;
}
