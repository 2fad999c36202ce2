/* The RECORD watcher: other clients' keymap fetches, seen on a connection
 * and a thread of its own. */
#include "input/x11_private.h"
#include "base/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- keymap fetches of other clients (RECORD) ----
 *
 * Clients translate keycodes with their own copy of the keymap, fetched
 * lazily: after a MappingNotify, at the next key they translate. Changing a
 * spare keycode again before the client that got its keys fetched it turns
 * those keys into other characters, or none. So we watch (RECORD, on a
 * connection of our own) for GetKeyboardMapping and XkbGetMap requests of
 * every client, and change a spare only once the client that got its keys
 * fetched it after our binding, however slow that client is. Without
 * RECORD, or for a client never seen fetching, a time guard (reuse_ms). */

struct fetcher* input__fetcher_for(struct input* self, XID base, bool create)
{
	struct fetcher* oldest = NULL;
	for (int i = 0; i < MAX_FETCHERS; i++) {
		struct fetcher* f = &self->fetchers[i];
		if (f->base == base)
			return f;
		if (!oldest || f->seen_ms < oldest->seen_ms)
			oldest = f;
	}
	if (!create)
		return NULL;
	memset(oldest, 0, sizeof(*oldest));
	oldest->base = base;
	return oldest;
}

static uint16_t card16(const unsigned char* p, bool swapped)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return swapped ? (uint16_t)(v >> 8 | v << 8) : v;
}

/* Runs on the RECORD thread. */
static void fetchwatch_cb(XPointer closure, XRecordInterceptData* d)
{
	struct input* self = (struct input*)closure;
	if (d->category == XRecordStartOfData) {
		pthread_mutex_lock(&self->rec_mutex);
		self->rec_started = true;
		pthread_cond_broadcast(&self->rec_cond);
		pthread_mutex_unlock(&self->rec_mutex);
	} else if (d->category == XRecordFromClient && d->data && d->data_len >= 1) {
		const unsigned char* r = d->data;
		size_t len = d->data_len * 4;
		bool ours = d->id_base == self->our_base;
		int first = -1, last = -1;
		if (r[0] == X_ChangeKeyboardMapping) {
			if (ours) {
				pthread_mutex_lock(&self->rec_mutex);
				self->binds_seen++;
				pthread_mutex_unlock(&self->rec_mutex);
			}
		} else if (ours) {
			/* our own fetches tell nothing about other clients */
		} else if (r[0] == X_GetKeyboardMapping && len >= 8) {
			first = r[4];
			last = first + r[5] - 1;
		} else if (self->xkb_major && r[0] == self->xkb_major && len >= 14
				&& r[1] == X_kbGetMap) {
			unsigned full = card16(r + 6, d->client_swapped);
			unsigned partial = card16(r + 8, d->client_swapped);
			if (full & XkbKeySymsMask) {
				first = 0;
				last = 255;
			} else if (partial & XkbKeySymsMask) {
				first = r[12];
				last = first + r[13] - 1;
			}
		} else if (self->xkb_major && r[0] == self->xkb_major
				&& r[1] == X_kbSelectEvents) {
			/* Xlib sets XKB up lazily: full GetMap, then SelectEvents.
			 * Our binds in between reach it as no MapNotify at all. */
			pthread_mutex_lock(&self->rec_mutex);
			struct fetcher* f = input__fetcher_for(self, d->id_base, true);
			f->selected = true;
			f->init_pending = false;
			pthread_cond_broadcast(&self->rec_cond);
			if (f->full_at && f->full_at < self->binds_seen) {
				f->stale_from = f->full_at;
				f->stale_to = self->binds_seen;
			}
			pthread_mutex_unlock(&self->rec_mutex);
		}
		if (first >= 0 && last >= first) {
			if (last > 255)
				last = 255;
			pthread_mutex_lock(&self->rec_mutex);
			struct fetcher* f = input__fetcher_for(self, d->id_base, true);
			f->seen_ms = clock_ms();
			f->fetches++;
			if (first == 0 && last == 255) {
				f->full_at = self->binds_seen;
				if (!f->selected && !f->no_select)
					f->init_pending = true;
			}
			for (int kc = first; kc <= last; kc++)
				f->after[kc] = self->binds_seen;
			pthread_cond_broadcast(&self->rec_cond);
			pthread_mutex_unlock(&self->rec_mutex);
		}
	}
	XRecordFreeData(d);
}

static void* fetchwatch_main(void* data)
{
	struct input* self = data;
	XRecordEnableContext(self->rec.dpy, self->rec_ctx, fetchwatch_cb, (XPointer)self);
	pthread_mutex_lock(&self->rec_mutex);
	self->rec_dead = true;
	pthread_cond_broadcast(&self->rec_cond);
	pthread_mutex_unlock(&self->rec_mutex);
	return NULL;
}

/* Start watching keymap fetches; on any failure input falls back to the
 * time guard. */
void input__fetchwatch_start(struct input* self, const char* display_name)
{
	int major, minor, op, ev, er;
	if (!XRecordQueryVersion(self->x.dpy, &major, &minor))
		return;
	if (XQueryExtension(self->x.dpy, "XKEYBOARD", &op, &ev, &er))
		self->xkb_major = op;
	self->our_base = self->x.dpy->resource_base;
	/* Its errors are trapped and never read; losing it ends the thread. */
	if (!x11_open(&self->rec, display_name))
		return;

	XRecordRange* ranges[2] = { XRecordAllocRange(), XRecordAllocRange() };
	if (!ranges[0] || !ranges[1])
		goto range_failure;
	ranges[0]->core_requests.first = X_ChangeKeyboardMapping;
	ranges[0]->core_requests.last = X_GetKeyboardMapping;
	if (self->xkb_major) {
		ranges[1]->ext_requests.ext_major.first = (unsigned char)self->xkb_major;
		ranges[1]->ext_requests.ext_major.last = (unsigned char)self->xkb_major;
		ranges[1]->ext_requests.ext_minor.first = X_kbSelectEvents;
		ranges[1]->ext_requests.ext_minor.last = X_kbGetMap;
	}
	XRecordClientSpec all = XRecordAllClients;
	self->rec_ctx = XRecordCreateContext(self->x.dpy, 0, &all, 1, ranges,
			self->xkb_major ? 2 : 1);
	if (!self->rec_ctx || input__sync(self) < 0)
		goto range_failure;
	XFree(ranges[0]);
	XFree(ranges[1]);
	if (pthread_create(&self->rec_thread, NULL, fetchwatch_main, self) != 0)
		goto thread_failure;
	pthread_mutex_lock(&self->rec_mutex);
	int64_t end = clock_ms() + 1000;
	while (!self->rec_started && !self->rec_dead && clock_ms() < end) {
		int64_t t = clock_ms() + 10;
		struct timespec ts = { .tv_sec = t / 1000, .tv_nsec = (t % 1000) * 1000000 };
		pthread_cond_timedwait(&self->rec_cond, &self->rec_mutex, &ts);
	}
	bool started = self->rec_started && !self->rec_dead;
	pthread_mutex_unlock(&self->rec_mutex);
	if (started) {
		self->rec_on = true;
		return;
	}
	XRecordDisableContext(self->x.dpy, self->rec_ctx);
	XSync(self->x.dpy, False);
	pthread_join(self->rec_thread, NULL);
	goto thread_failure;

range_failure:
	if (ranges[0])
		XFree(ranges[0]);
	if (ranges[1])
		XFree(ranges[1]);
thread_failure:
	if (self->rec_ctx)
		XRecordFreeContext(self->x.dpy, self->rec_ctx);
	self->rec_ctx = 0;
	x11_close(&self->rec);
	input__sync(self);
}

void input__fetchwatch_stop(struct input* self)
{
	if (!self->rec_on)
		return;
	if (!x11_lost(&self->x)) {
		XRecordDisableContext(self->x.dpy, self->rec_ctx);
		XSync(self->x.dpy, False);
	}
	pthread_join(self->rec_thread, NULL);
	if (!x11_lost(&self->x))
		XRecordFreeContext(self->x.dpy, self->rec_ctx);
	x11_close(&self->rec);
	self->rec_on = false;
}

/* The client that gets key events now: the focus window's owner, or (focus
 * on the root, PointerRoot) the owner of the deepest window under the
 * pointer. 0 when unknown. */
XID input__focus_client(struct input* self)
{
	Window focus, root, child;
	int revert, rx, ry, wx, wy;
	unsigned mask;
	XGetInputFocus(self->x.dpy, &focus, &revert);
	if (focus == PointerRoot || focus == None || focus == self->root) {
		Window w = self->root;
		focus = None;
		for (int depth = 0; depth < 32; depth++) {
			if (!XQueryPointer(self->x.dpy, w, &root, &child, &rx, &ry, &wx, &wy, &mask)
					|| child == None)
				break;
			focus = w = child;
		}
	}
	if (x11_lost(&self->x) || focus == None || focus == PointerRoot)
		return 0;
	return focus & ~self->x.dpy->resource_mask;
}
