/* XTest pointer and keyboard on our own X connection.
 *
 * Errors: every X error on this connection goes to wire_error() through the
 * per-display error vector (XESetWireToError for all codes), so it never
 * reaches the process-wide handler, let alone Xlib's default one that
 * exits. A lost connection sets self->dead through the per-display IO exit
 * handler instead of exiting. */
#include "input/input.h"
#include "base/clock.h"

#include <X11/Xlib.h>
#include <X11/Xlibint.h>
#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <X11/extensions/XTest.h>
#include <X11/extensions/record.h>
#include <X11/extensions/XKB.h>
#include <X11/keysym.h>
#include <xkbcommon/xkbcommon.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SPARES 64
#define MAX_DISPLAYS 16
#define DRAG_STEP_PX 16
#define FOCUS_POLL_MS 2
#define MAX_FETCHERS 16
#define FETCH_TIMEOUT_MS 2000
#define LAGGING_TIMEOUT_MS 10000
#define SAFE_POLL_MS 1
#define INIT_WAIT_MS 1000
#define CONFIRM_WAIT_MS 3000
#define CONFIRM_TRIES 5
#define RESTORE_AFTER_MS 1000

struct spare {
	KeyCode keycode;
	KeySym sym;		/* NoSymbol when unbound */
	int64_t used_ms;	/* last key event sent on it (server-synced); 0 never */
	uint64_t gen;		/* binds_sent right after its binding was sent */
	XID client;		/* resource base of the client that got its keys; 0 unknown */
};

/* A client seen fetching the keymap (through RECORD): for each keycode,
 * how many of our binds the server had processed when the client's last
 * fetch covering that keycode arrived. */
struct fetcher {
	XID base;
	bool silent;		/* once timed out: use the time guard for it */
	int64_t seen_ms;
	uint64_t full_at;	/* binds seen at its last full fetch */
	/* It set up XKB (full fetch, then SelectEvents) around some of our
	 * binds: it gets no MapNotify for binds in (stale_from, stale_to]. */
	uint64_t stale_from, stale_to;
	/* Xlib's lazy XKB setup: a full fetch not yet followed by its
	 * SelectEvents (sent when the client next flushes). Binds meanwhile
	 * would be missed: wait for the select. */
	bool selected, init_pending, no_select;
	uint64_t fetches;	/* how many fetches seen */
	uint64_t after[256];
};

struct input {
	pthread_mutex_t mutex;
	Display* dpy;
	Window root;
	int width, height;
	bool dead;
	int error;		/* first trapped X error code since the last check */
	int error_request;

	int min_kc, max_kc, per;
	KeySym* map;		/* (max_kc - min_kc + 1) * per */
	KeyCode shift_kc;
	bool pool[256];		/* keycode is a spare */
	struct spare spares[MAX_SPARES];
	int n_spares;
	int bind_wait_ms, reuse_ms;
	pthread_cond_t cond;	/* wakes the restorer */
	pthread_t restorer;
	bool stop;

	/* Keymap fetches of other clients, through RECORD: a spare keycode is
	 * safe to change once the client that got its keys fetched it. */
	Display* rec_dpy;
	XRecordContext rec_ctx;
	pthread_t rec_thread;
	bool rec_on, rec_started, rec_dead;
	int xkb_major;
	XID our_base;
	uint64_t binds_sent;		/* our ChangeKeyboardMapping requests (self->mutex) */
	pthread_mutex_t rec_mutex;	/* guards what follows */
	pthread_cond_t rec_cond;
	uint64_t binds_seen;		/* of ours, processed by the server */
	struct fetcher* fetchers;	/* MAX_FETCHERS */
	XID cur_client;			/* client of the focus, for this call */

	bool keys_down[256];
	bool buttons_down[16];
};

/* ---- error trapping, per connection ---- */

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct {
	Display* dpy;
	struct input* self;
} registry[MAX_DISPLAYS];

static struct input* registry_find(Display* dpy)
{
	struct input* self = NULL;
	pthread_mutex_lock(&registry_mutex);
	for (int i = 0; i < MAX_DISPLAYS; i++)
		if (registry[i].dpy == dpy)
			self = registry[i].self;
	pthread_mutex_unlock(&registry_mutex);
	return self;
}

static int registry_set(Display* dpy, struct input* self)
{
	int rc = -ENOSPC;
	pthread_mutex_lock(&registry_mutex);
	for (int i = 0; i < MAX_DISPLAYS; i++) {
		if (registry[i].dpy == (self ? NULL : dpy)) {
			registry[i].dpy = self ? dpy : NULL;
			registry[i].self = self;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&registry_mutex);
	return rc;
}

/* Returning False tells Xlib the error is handled: the process-wide
 * handler is not called. Runs on the thread that holds self->mutex. */
static Bool wire_error(Display* dpy, XErrorEvent* event, xError* wire)
{
	(void)event;
	struct input* self = registry_find(dpy);
	if (self && !self->error) {
		self->error = wire->errorCode;
		self->error_request = wire->majorCode;
	}
	return False;
}

/* Xlib's _XIOError takes the display's user lock (XLockDisplay) for the
 * exit it expects; returning would leave it held by this thread, and the
 * XCloseDisplay of another thread would wait for it forever. */
static void io_exit(Display* dpy, void* data)
{
	struct input* self = data;
	self->dead = true;
	XUnlockDisplay(dpy);
}

static void fake_button(struct input* self, int button, bool down)
{
	XTestFakeButtonEvent(self->dpy, (unsigned)button, down, CurrentTime);
	self->buttons_down[button] = down;
}

static void input__fake_key(struct input* self, KeyCode kc, bool down)
{
	XTestFakeKeyEvent(self->dpy, kc, down, CurrentTime);
	self->keys_down[kc] = down;
}

/* Wait for the server to process everything sent; report trapped errors. */
static int input__sync(struct input* self)
{
	if (self->dead)
		return -EPIPE;
	XSync(self->dpy, False);
	if (self->dead)
		return -EPIPE;
	int code = self->error;
	self->error = 0;
	switch (code) {
	case 0: return 0;
	case BadWindow: return -ENOENT;
	case BadValue: return -EINVAL;
	case BadMatch: return -EINVAL;
	case BadAlloc: return -ENOMEM;
	default: return -EIO;
	}
}

/* ---- keymap ---- */

static KeySym map_at(struct input* self, int kc, int col)
{
	if (kc < self->min_kc || kc > self->max_kc || col >= self->per)
		return NoSymbol;
	return self->map[(kc - self->min_kc) * self->per + col];
}

static int input__load_keymap(struct input* self)
{
	if (self->map)
		XFree(self->map);
	self->map = XGetKeyboardMapping(self->dpy, (KeyCode)self->min_kc,
			self->max_kc - self->min_kc + 1, &self->per);
	if (!self->map || self->dead)
		return self->dead ? -EPIPE : -EIO;
	self->shift_kc = 0;
	for (int kc = self->min_kc; kc <= self->max_kc && !self->shift_kc; kc++)
		if (!self->pool[kc] && map_at(self, kc, 0) == XK_Shift_L)
			self->shift_kc = (KeyCode)kc;
	return 0;
}

/* Another client (setxkbmap, xmodmap) may change the keymap: reload when a
 * MappingNotify arrived. Our own remaps arrive here too, harmlessly. */
static int input__refresh_keymap(struct input* self)
{
	bool stale = false;
	while (!self->dead && XPending(self->dpy)) {
		XEvent ev;
		XNextEvent(self->dpy, &ev);
		if (ev.type == MappingNotify && ev.xmapping.request != MappingPointer)
			stale = true;
	}
	if (self->dead)
		return -EPIPE;
	return stale ? input__load_keymap(self) : 0;
}

/* Find sym on the keymap (group 1, levels 1 and 2; spares excluded). */
static bool input__find_key(struct input* self, KeySym sym, KeyCode* kc, bool* shift)
{
	int shifted = 0;
	for (int k = self->min_kc; k <= self->max_kc; k++) {
		if (self->pool[k])
			continue;
		KeySym s0 = map_at(self, k, 0), s1 = map_at(self, k, 1);
		if (s0 == sym) {
			*kc = (KeyCode)k;
			*shift = false;
			return true;
		}
		if (!shifted && s0 != NoSymbol) {
			if (s1 == NoSymbol) {
				KeySym lower, upper;
				XConvertCase(s0, &lower, &upper);
				if (lower != upper && upper == sym)
					shifted = k;
			} else if (s1 == sym) {
				shifted = k;
			}
		}
	}
	if (shifted && self->shift_kc) {
		*kc = (KeyCode)shifted;
		*shift = true;
		return true;
	}
	return false;
}

/* Is the key's level chosen by Caps Lock (a letter with two cases)? */
static bool input__key_is_alpha(struct input* self, KeyCode kc)
{
	KeySym lower, upper;
	XConvertCase(map_at(self, kc, 0), &lower, &upper);
	return lower != upper;
}

/* The key a symbol goes on: a letter with two cases binds {lower, upper}
 * (upper with Shift, as on a real keyboard: both levels bound, so no
 * case folding, and one spare serves both cases); others bind {sym, sym}. */
static KeySym input__pair_lower(KeySym sym, KeySym* upper)
{
	KeySym lo, up;
	XConvertCase(sym, &lo, &up);
	if (lo != up && (sym == lo || sym == up)) {
		*upper = up;
		return lo;
	}
	*upper = sym;
	return sym;
}

/* ---- spare keycodes ---- */

static void input__find_spares(struct input* self)
{
	XModifierKeymap* mods = XGetModifierMapping(self->dpy);
	bool is_mod[256] = { false };
	if (mods) {
		for (int i = 0; i < 8 * mods->max_keypermod; i++)
			is_mod[mods->modifiermap[i]] = true;
		XFreeModifiermap(mods);
	}
	self->n_spares = 0;
	/* Keycode 8 is skipped: some clients treat the lowest keycode specially. */
	for (int kc = self->max_kc; kc > self->min_kc && kc > 8; kc--) {
		if (is_mod[kc] || self->n_spares >= MAX_SPARES)
			continue;
		bool empty = true;
		for (int c = 0; c < self->per; c++)
			if (map_at(self, kc, c) != NoSymbol)
				empty = false;
		if (!empty)
			continue;
		self->pool[kc] = true;
		self->spares[self->n_spares++] = (struct spare){ .keycode = (KeyCode)kc };
	}
}

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

static struct fetcher* input__fetcher_for(struct input* self, XID base, bool create)
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
	XRecordEnableContext(self->rec_dpy, self->rec_ctx, fetchwatch_cb, (XPointer)self);
	pthread_mutex_lock(&self->rec_mutex);
	self->rec_dead = true;
	pthread_cond_broadcast(&self->rec_cond);
	pthread_mutex_unlock(&self->rec_mutex);
	return NULL;
}

static Bool wire_error_ignore(Display* dpy, XErrorEvent* event, xError* wire)
{
	(void)dpy;
	(void)event;
	(void)wire;
	return False;
}

/* As io_exit: the RECORD thread hits the error, another closes rec_dpy. */
static void rec_io_exit(Display* dpy, void* data)
{
	(void)data;
	XUnlockDisplay(dpy);
}

/* Start watching keymap fetches; on any failure input falls back to the
 * time guard. */
static void input__fetchwatch_start(struct input* self, const char* display_name)
{
	int major, minor, op, ev, er;
	if (!XRecordQueryVersion(self->dpy, &major, &minor))
		return;
	if (XQueryExtension(self->dpy, "XKEYBOARD", &op, &ev, &er))
		self->xkb_major = op;
	self->our_base = self->dpy->resource_base;
	self->rec_dpy = XOpenDisplay(display_name);
	if (!self->rec_dpy)
		return;
	for (int code = 1; code < 256; code++)
		XESetWireToError(self->rec_dpy, code, wire_error_ignore);
	XSetIOErrorExitHandler(self->rec_dpy, rec_io_exit, self);

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
	self->rec_ctx = XRecordCreateContext(self->dpy, 0, &all, 1, ranges,
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
	XRecordDisableContext(self->dpy, self->rec_ctx);
	XSync(self->dpy, False);
	pthread_join(self->rec_thread, NULL);
	goto thread_failure;

range_failure:
	if (ranges[0])
		XFree(ranges[0]);
	if (ranges[1])
		XFree(ranges[1]);
thread_failure:
	if (self->rec_ctx)
		XRecordFreeContext(self->dpy, self->rec_ctx);
	self->rec_ctx = 0;
	XCloseDisplay(self->rec_dpy);
	self->rec_dpy = NULL;
	input__sync(self);
}

static void input__fetchwatch_stop(struct input* self)
{
	if (!self->rec_on)
		return;
	if (!self->dead) {
		XRecordDisableContext(self->dpy, self->rec_ctx);
		XSync(self->dpy, False);
	}
	pthread_join(self->rec_thread, NULL);
	if (!self->dead)
		XRecordFreeContext(self->dpy, self->rec_ctx);
	XCloseDisplay(self->rec_dpy);
	self->rec_dpy = NULL;
	self->rec_on = false;
}

/* The client that gets key events now: the focus window's owner, or (focus
 * on the root, PointerRoot) the owner of the deepest window under the
 * pointer. 0 when unknown. */
static XID input__focus_client(struct input* self)
{
	Window focus, root, child;
	int revert, rx, ry, wx, wy;
	unsigned mask;
	XGetInputFocus(self->dpy, &focus, &revert);
	if (focus == PointerRoot || focus == None || focus == self->root) {
		Window w = self->root;
		focus = None;
		for (int depth = 0; depth < 32; depth++) {
			if (!XQueryPointer(self->dpy, w, &root, &child, &rx, &ry, &wx, &wy, &mask)
					|| child == None)
				break;
			focus = w = child;
		}
	}
	if (self->dead || focus == None || focus == PointerRoot)
		return 0;
	return focus & ~self->dpy->resource_mask;
}

enum safety { UNSAFE, SAFE, SAFE_TIMEOUT };

/* May the spare's binding change now? Only reuse_ms after its last key
 * (the brief's guard), and, when we can see it, only once the client that
 * got its keys fetched the binding. The fetch alone is not enough: Xlib
 * reads ahead, so a client may fetch while keys of the old binding are
 * still queued in it; the time covers that. */
static enum safety spare_safe(struct input* self, const struct spare* sp, int64_t now)
{
	if (sp->sym == NoSymbol || !sp->used_ms)
		return SAFE;
	if (now < sp->used_ms + self->reuse_ms)
		return UNSAFE;
	if (!self->rec_on || !sp->client)
		return now >= sp->used_ms + FETCH_TIMEOUT_MS ? SAFE_TIMEOUT : SAFE;
	pthread_mutex_lock(&self->rec_mutex);
	struct fetcher* f = input__fetcher_for(self, sp->client, false);
	/* A client that fetches keymaps but is busy gets longer before we give
	 * up on it than one never seen fetching. */
	int64_t give_up = f && f->fetches ? LAGGING_TIMEOUT_MS : FETCH_TIMEOUT_MS;
	if (now >= sp->used_ms + give_up) {
		pthread_mutex_unlock(&self->rec_mutex);
		return SAFE_TIMEOUT;
	}
	bool fetched = f && f->after[sp->keycode] >= sp->gen;
	/* Missed its MapNotify: keys on it translate with whatever the
	 * client has when it gets to them; only time helps. */
	bool stale = f && sp->gen > f->stale_from && sp->gen <= f->stale_to;
	bool silent = (f && f->silent) || stale || self->rec_dead;
	pthread_mutex_unlock(&self->rec_mutex);
	return fetched || silent ? SAFE : UNSAFE;
}

/* Wait until the spare may change; a client that never fetched within
 * FETCH_TIMEOUT_MS is marked silent (time guard from then on). */
static void wait_safe(struct input* self, const struct spare* sp)
{
	for (;;) {
		enum safety s = spare_safe(self, sp, clock_ms());
		if (s == SAFE)
			return;
		if (s == SAFE_TIMEOUT) {
			if (self->rec_on && sp->client) {
				pthread_mutex_lock(&self->rec_mutex);
				input__fetcher_for(self, sp->client, true)->silent = true;
				pthread_mutex_unlock(&self->rec_mutex);
			}
			return;
		}
		clock_sleep_ms(SAFE_POLL_MS);
	}
}

/* Before binding: if the focus client is half-way through setting up XKB,
 * wait for its SelectEvents (at most INIT_WAIT_MS; then stop expecting
 * one from it: some clients refetch in full without selecting again). */
static void input__wait_client_ready(struct input* self, XID client)
{
	if (!self->rec_on || !client)
		return;
	int64_t end = clock_ms() + INIT_WAIT_MS;
	pthread_mutex_lock(&self->rec_mutex);
	for (;;) {
		struct fetcher* f = input__fetcher_for(self, client, false);
		if (!f || !f->init_pending || self->rec_dead)
			break;
		if (clock_ms() >= end) {
			f->init_pending = false;
			f->no_select = true;
			break;
		}
		int64_t t = clock_ms() + 5;
		struct timespec ts = { .tv_sec = t / 1000, .tv_nsec = (t % 1000) * 1000000 };
		pthread_cond_timedwait(&self->rec_cond, &self->rec_mutex, &ts);
	}
	pthread_mutex_unlock(&self->rec_mutex);
}

/* Did client miss the MapNotify of this spare's binding (see fetcher)? */
static bool input__spare_stale_for(struct input* self, const struct spare* sp, XID client)
{
	if (!self->rec_on || !client || sp->sym == NoSymbol)
		return false;
	pthread_mutex_lock(&self->rec_mutex);
	struct fetcher* f = input__fetcher_for(self, client, false);
	bool stale = f && sp->gen > f->stale_from && sp->gen <= f->stale_to
			&& f->after[sp->keycode] < sp->gen;
	pthread_mutex_unlock(&self->rec_mutex);
	return stale;
}

/* Send the bindings of the spares flagged in change[] (one request per
 * spare: spare keycodes are rarely adjacent). */
static void input__send_bindings(struct input* self, const bool* change)
{
	for (int i = 0; i < self->n_spares; i++) {
		if (!change[i])
			continue;
		struct spare* sp = &self->spares[i];
		KeySym upper = NoSymbol;
		if (sp->sym != NoSymbol)
			input__pair_lower(sp->sym, &upper);
		KeySym syms[2] = { sp->sym, upper };
		XChangeKeyboardMapping(self->dpy, sp->keycode, 2, syms, 1);
		sp->gen = ++self->binds_sent;
		sp->used_ms = 0;
		sp->client = 0;
	}
}

/* Make sure the focus client has the new bindings of the spares flagged in
 * which[] before keys go out on them. Xlib fetches the keymap when it
 * translates a key after a MappingNotify, and forgets MappingNotify events
 * that arrive during that fetch (it clears its noted changes when the
 * reply comes): a binding can be lost to it for good. So: press and
 * release Shift (a key whose meaning does not matter) to make it look
 * keys up, watch (RECORD) its fetch cover every new binding, and send the
 * bindings it missed again. Bounded: a client that never fetches is
 * marked silent and typed to without this. */
static void input__confirm_bindings(struct input* self, const bool* which)
{
	XID client = self->cur_client;
	if (!self->rec_on || !client || !self->shift_kc)
		return;
	for (int attempt = 0; attempt < CONFIRM_TRIES; attempt++) {
		pthread_mutex_lock(&self->rec_mutex);
		struct fetcher* f = input__fetcher_for(self, client, false);
		bool skip = (f && (f->silent || f->no_select)) || self->rec_dead;
		uint64_t fetches0 = f ? f->fetches : 0;
		pthread_mutex_unlock(&self->rec_mutex);
		if (skip)
			return;
		input__fake_key(self, self->shift_kc, true);
		input__fake_key(self, self->shift_kc, false);
		if (input__sync(self) < 0)
			return;
		bool missing[MAX_SPARES] = { false };
		bool any_missing = false, fetched_since = false;
		int64_t end = clock_ms() + CONFIRM_WAIT_MS;
		pthread_mutex_lock(&self->rec_mutex);
		for (;;) {
			f = input__fetcher_for(self, client, false);
			any_missing = false;
			for (int i = 0; i < self->n_spares; i++) {
				const struct spare* sp = &self->spares[i];
				missing[i] = which[i] && !(f && f->after[sp->keycode] >= sp->gen);
				any_missing |= missing[i];
			}
			fetched_since = f && f->fetches > fetches0;
			if (!any_missing || fetched_since || self->rec_dead || clock_ms() >= end)
				break;
			int64_t t = clock_ms() + 5;
			struct timespec ts = { .tv_sec = t / 1000, .tv_nsec = (t % 1000) * 1000000 };
			pthread_cond_timedwait(&self->rec_cond, &self->rec_mutex, &ts);
		}
		if (any_missing && !fetched_since && !self->rec_dead && (!f || !f->fetches))
			input__fetcher_for(self, client, true)->silent = true;	/* never fetches */
		pthread_mutex_unlock(&self->rec_mutex);
		if (!any_missing || !fetched_since)
			return;
		/* It fetched, but not all: wait a moment for the rest of its
		 * fetches, then send what is still missing again. */
		clock_sleep_ms(2);
		pthread_mutex_lock(&self->rec_mutex);
		f = input__fetcher_for(self, client, false);
		any_missing = false;
		for (int i = 0; i < self->n_spares; i++) {
			const struct spare* sp = &self->spares[i];
			missing[i] = which[i] && !(f && f->after[sp->keycode] >= sp->gen);
			any_missing |= missing[i];
		}
		pthread_mutex_unlock(&self->rec_mutex);
		if (!any_missing)
			return;
		input__send_bindings(self, missing);
	}
}

/* Pick a spare to rebind (not needed[]): one that is safe now, least
 * recently used first, else the least recently used after waiting. */
static int input__pick_victim(struct input* self, const bool* needed)
{
	int best = -1, best_safe = -1;
	int64_t now = clock_ms();
	for (int s = 0; s < self->n_spares; s++) {
		if (needed[s])
			continue;
		const struct spare* sp = &self->spares[s];
		if (best < 0 || sp->used_ms < self->spares[best].used_ms)
			best = s;
		if (spare_safe(self, sp, now) != UNSAFE && (best_safe < 0
				|| sp->used_ms < self->spares[best_safe].used_ms))
			best_safe = s;
	}
	if (best_safe >= 0)
		return best_safe;
	if (best >= 0)
		wait_safe(self, &self->spares[best]);
	return best;
}

/* Restore bound spares to NoSymbol once safe. wait: until all are (at
 * exit). Returns whether some are left bound. */
static bool input__restore_spares(struct input* self, bool wait)
{
	bool change[MAX_SPARES] = { false };
	bool any = false, left = false;
	int64_t now = clock_ms();
	for (int i = 0; i < self->n_spares; i++) {
		struct spare* sp = &self->spares[i];
		if (sp->sym == NoSymbol)
			continue;
		if (wait) {
			wait_safe(self, sp);
		} else if (spare_safe(self, sp, now) == UNSAFE
				|| (sp->used_ms && now < sp->used_ms + RESTORE_AFTER_MS)) {
			/* Restoring is never urgent: give a client that reads
			 * ahead and lags a second to work through its queue. */
			left = true;
			continue;
		}
		sp->sym = NoSymbol;
		change[i] = any = true;
	}
	if (any) {
		input__send_bindings(self, change);
		input__sync(self);
	}
	return left;
}

/* The restorer thread: puts spare keycodes back to NoSymbol in the
 * background as soon as that is safe, so typing never waits for it. */
static void* input__restorer_main(void* data)
{
	struct input* self = data;
	pthread_mutex_lock(&self->mutex);
	while (!self->stop) {
		bool left = !self->dead && input__restore_spares(self, false);
		if (!left) {
			pthread_cond_wait(&self->cond, &self->mutex);
		} else {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 5 * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&self->cond, &self->mutex, &ts);
		}
	}
	pthread_mutex_unlock(&self->mutex);
	return NULL;
}

/* ---- public ---- */

struct input* input_new(const char* display_name, char* err, size_t err_size)
{
	struct input* self = calloc(1, sizeof(*self));
	if (!self) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&self->mutex, NULL);
	pthread_condattr_t cattr;
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&self->cond, &cattr);
	pthread_cond_init(&self->rec_cond, &cattr);
	pthread_condattr_destroy(&cattr);
	pthread_mutex_init(&self->rec_mutex, NULL);
	self->fetchers = calloc(MAX_FETCHERS, sizeof(*self->fetchers));
	if (!self->fetchers) {
		snprintf(err, err_size, "out of memory");
		goto open_failure;
	}
	self->bind_wait_ms = INPUT_BIND_WAIT_MS;
	self->reuse_ms = INPUT_REUSE_MS;

	self->dpy = XOpenDisplay(display_name);
	if (!self->dpy) {
		snprintf(err, err_size, "cannot open display %s",
				display_name ? display_name : "(default)");
		goto open_failure;
	}
	if (registry_set(self->dpy, self) < 0) {
		snprintf(err, err_size, "too many input connections");
		goto registry_failure;
	}
	for (int code = 1; code < 256; code++)
		XESetWireToError(self->dpy, code, wire_error);
	XSetIOErrorExitHandler(self->dpy, io_exit, self);

	int ev, er, major, minor;
	if (!XTestQueryExtension(self->dpy, &ev, &er, &major, &minor)) {
		snprintf(err, err_size, "the X server has no XTEST extension");
		goto xtest_failure;
	}
	XTestGrabControl(self->dpy, True);	/* act even during other clients' grabs */
	int screen = DefaultScreen(self->dpy);
	self->root = RootWindow(self->dpy, screen);
	self->width = DisplayWidth(self->dpy, screen);
	self->height = DisplayHeight(self->dpy, screen);
	XDisplayKeycodes(self->dpy, &self->min_kc, &self->max_kc);
	if (input__load_keymap(self) < 0) {
		snprintf(err, err_size, "cannot read the keyboard map");
		goto xtest_failure;
	}
	input__find_spares(self);
	if (input__sync(self) < 0) {
		snprintf(err, err_size, "X error while setting up input");
		goto xtest_failure;
	}
	input__fetchwatch_start(self, display_name);
	if (pthread_create(&self->restorer, NULL, input__restorer_main, self) != 0) {
		snprintf(err, err_size, "cannot start a thread");
		input__fetchwatch_stop(self);
		goto xtest_failure;
	}
	return self;

xtest_failure:
	if (self->map)
		XFree(self->map);
	registry_set(self->dpy, NULL);
registry_failure:
	XCloseDisplay(self->dpy);
open_failure:
	free(self->fetchers);
	pthread_cond_destroy(&self->rec_cond);
	pthread_mutex_destroy(&self->rec_mutex);
	pthread_cond_destroy(&self->cond);
	pthread_mutex_destroy(&self->mutex);
	free(self);
	return NULL;
}

void input_destroy(struct input* self)
{
	if (!self)
		return;
	pthread_mutex_lock(&self->mutex);
	self->stop = true;
	pthread_cond_signal(&self->cond);
	pthread_mutex_unlock(&self->mutex);
	pthread_join(self->restorer, NULL);

	pthread_mutex_lock(&self->mutex);
	if (!self->dead) {
		for (int b = 1; b < 16; b++)
			if (self->buttons_down[b])
				XTestFakeButtonEvent(self->dpy, (unsigned)b, False, CurrentTime);
		for (int k = 255; k > 0; k--)
			if (self->keys_down[k])
				XTestFakeKeyEvent(self->dpy, (unsigned)k, False, CurrentTime);
		input__sync(self);
		input__restore_spares(self, true);
	}
	input__fetchwatch_stop(self);
	if (self->map)
		XFree(self->map);
	registry_set(self->dpy, NULL);
	XCloseDisplay(self->dpy);
	pthread_mutex_unlock(&self->mutex);
	free(self->fetchers);
	pthread_cond_destroy(&self->rec_cond);
	pthread_mutex_destroy(&self->rec_mutex);
	pthread_cond_destroy(&self->cond);
	pthread_mutex_destroy(&self->mutex);
	free(self);
}

bool input_alive(struct input* self)
{
	pthread_mutex_lock(&self->mutex);
	bool alive = !self->dead;
	pthread_mutex_unlock(&self->mutex);
	return alive;
}

void input_set_timing(struct input* self, int bind_wait_ms, int reuse_ms)
{
	pthread_mutex_lock(&self->mutex);
	self->bind_wait_ms = bind_wait_ms < 0 ? 0 : bind_wait_ms;
	self->reuse_ms = reuse_ms < 0 ? 0 : reuse_ms;
	pthread_mutex_unlock(&self->mutex);
}

int input_spare_keycodes(struct input* self)
{
	pthread_mutex_lock(&self->mutex);
	int n = self->n_spares;
	pthread_mutex_unlock(&self->mutex);
	return n;
}

int input_screen_size(struct input* self, int* width, int* height)
{
	pthread_mutex_lock(&self->mutex);
	*width = self->width;
	*height = self->height;
	int rc = self->dead ? -EPIPE : 0;
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

int input_cursor_position(struct input* self, int* x, int* y)
{
	pthread_mutex_lock(&self->mutex);
	int rc = -EPIPE;
	if (!self->dead) {
		Window root, child;
		int wx, wy;
		unsigned mask;
		if (XQueryPointer(self->dpy, self->root, &root, &child, x, y,
				&wx, &wy, &mask) && !self->dead)
			rc = 0;
		int e = input__sync(self);
		if (rc == 0)
			rc = e;
	}
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

int input_move(struct input* self, int x, int y)
{
	pthread_mutex_lock(&self->mutex);
	int rc = -EPIPE;
	if (!self->dead) {
		XTestFakeMotionEvent(self->dpy, -1, x, y, CurrentTime);
		rc = input__sync(self);
	}
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

int input_button(struct input* self, int button, bool down)
{
	if (button < 1 || button > 9)
		return -EINVAL;
	pthread_mutex_lock(&self->mutex);
	int rc = -EPIPE;
	if (!self->dead) {
		fake_button(self, button, down);
		rc = input__sync(self);
	}
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

/* Modifiers (or any keymap keys) down in order, or up in reverse. */
static int mods_locked(struct input* self, const struct input_chord* mods,
		bool down)
{
	if (!mods || mods->n == 0)
		return 0;
	int rc = input__refresh_keymap(self);
	if (rc < 0)
		return rc;
	KeyCode kcs[INPUT_MAX_CHORD];
	for (int i = 0; i < mods->n; i++) {
		bool shift;
		if (!input__find_key(self, mods->keysyms[i], &kcs[i], &shift))
			return -ENOENT;
	}
	if (down) {
		for (int i = 0; i < mods->n; i++)
			input__fake_key(self, kcs[i], true);
	} else {
		for (int i = mods->n - 1; i >= 0; i--)
			input__fake_key(self, kcs[i], false);
	}
	return 0;
}

int input_modifiers(struct input* self, const struct input_chord* mods,
		bool down)
{
	pthread_mutex_lock(&self->mutex);
	int rc = -EPIPE;
	if (!self->dead) {
		rc = mods_locked(self, mods, down);
		int e = input__sync(self);
		if (rc == 0)
			rc = e;
	}
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

/* Press and release a button count times. */
static void fake_clicks(struct input* self, int button, int count)
{
	for (int i = 0; i < count; i++) {
		fake_button(self, button, true);
		fake_button(self, button, false);
	}
}

/* Pointer actions with the chord's modifiers held: press them, act, always
 * release them, then sync; the first error wins. */
struct pointer_action {
	int button, count;		/* click */
	const int *xs, *ys;		/* drag */
	size_t n;
	int notches_x, notches_y;	/* scroll */
};

static int with_mods(struct input* self, const struct input_chord* mods,
		void (*act)(struct input* self, const struct pointer_action* a),
		const struct pointer_action* a)
{
	pthread_mutex_lock(&self->mutex);
	int rc = -EPIPE;
	if (!self->dead) {
		rc = mods_locked(self, mods, true);
		if (rc == 0)
			act(self, a);
		mods_locked(self, mods, false);
		int e = input__sync(self);
		if (rc == 0)
			rc = e;
	}
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

static void act_click(struct input* self, const struct pointer_action* a)
{
	fake_clicks(self, a->button, a->count);
}

int input_click(struct input* self, int button, int count,
		const struct input_chord* mods)
{
	if (button < 1 || button > 9 || count < 1 || count > 10)
		return -EINVAL;
	struct pointer_action a = { .button = button, .count = count };
	return with_mods(self, mods, act_click, &a);
}

static void act_drag(struct input* self, const struct pointer_action* a)
{
	const int *xs = a->xs, *ys = a->ys;
	int button = a->button;
	size_t n = a->n;
	XTestFakeMotionEvent(self->dpy, -1, xs[0], ys[0], CurrentTime);
	fake_button(self, button, true);
	/* Flush the press before the motion so the client sees it first. */
	XSync(self->dpy, False);
	for (size_t i = 1; i < n; i++) {
		int dx = xs[i] - xs[i - 1], dy = ys[i] - ys[i - 1];
		int adx = dx < 0 ? -dx : dx, ady = dy < 0 ? -dy : dy;
		int steps = (adx > ady ? adx : ady) / DRAG_STEP_PX;
		for (int s = 1; s < steps; s++)
			XTestFakeMotionEvent(self->dpy, -1,
					xs[i - 1] + (int)((long)dx * s / steps),
					ys[i - 1] + (int)((long)dy * s / steps), CurrentTime);
		XTestFakeMotionEvent(self->dpy, -1, xs[i], ys[i], CurrentTime);
	}
	fake_button(self, button, false);
}

int input_drag(struct input* self, const int* xs, const int* ys, size_t n,
		int button, const struct input_chord* mods)
{
	if (n < 2 || button < 1 || button > 9)
		return -EINVAL;
	struct pointer_action a = { .button = button, .xs = xs, .ys = ys, .n = n };
	return with_mods(self, mods, act_drag, &a);
}

static void act_scroll(struct input* self, const struct pointer_action* a)
{
	int by = a->notches_y > 0 ? INPUT_BUTTON_WHEEL_DOWN : INPUT_BUTTON_WHEEL_UP;
	int bx = a->notches_x > 0 ? INPUT_BUTTON_WHEEL_RIGHT : INPUT_BUTTON_WHEEL_LEFT;
	fake_clicks(self, by, abs(a->notches_y));
	fake_clicks(self, bx, abs(a->notches_x));
}

int input_scroll(struct input* self, int notches_x, int notches_y,
		const struct input_chord* mods)
{
	if (notches_x > INPUT_MAX_NOTCHES || notches_x < -INPUT_MAX_NOTCHES
			|| notches_y > INPUT_MAX_NOTCHES || notches_y < -INPUT_MAX_NOTCHES)
		return -E2BIG;
	struct pointer_action a = { .notches_x = notches_x, .notches_y = notches_y };
	return with_mods(self, mods, act_scroll, &a);
}

/* Bind syms[0..n) (not on the keymap) to spares for a chord; fills kcs. */
static int bind_for_chord(struct input* self, const KeySym* syms, int n,
		KeyCode* kcs)
{
	bool change[MAX_SPARES] = { false };
	if (n > self->n_spares)
		return -ENOSPC;
	for (int i = 0; i < n; i++) {
		int s = input__pick_victim(self, change);
		self->spares[s].sym = syms[i];
		change[s] = true;
		kcs[i] = self->spares[s].keycode;
	}
	input__wait_client_ready(self, self->cur_client);
	input__send_bindings(self, change);
	if (self->bind_wait_ms) {
		XSync(self->dpy, False);
		clock_sleep_ms(self->bind_wait_ms);
	}
	input__confirm_bindings(self, change);
	return 0;
}

static int chord_locked(struct input* self, const struct input_chord* chord,
		bool press, bool release)
{
	int rc = input__refresh_keymap(self);
	if (rc < 0)
		return rc;
	self->cur_client = input__focus_client(self);
	KeyCode kcs[INPUT_MAX_CHORD];
	KeySym missing[INPUT_MAX_CHORD];
	int missing_at[INPUT_MAX_CHORD];
	int n_missing = 0;
	bool has_shift = false, need_shift = false;
	for (int i = 0; i < chord->n; i++)
		if (chord->keysyms[i] == XK_Shift_L || chord->keysyms[i] == XK_Shift_R)
			has_shift = true;
	for (int i = 0; i < chord->n; i++) {
		bool shift;
		if (input__find_key(self, chord->keysyms[i], &kcs[i], &shift)) {
			if (shift)
				need_shift = true;
		} else {
			KeySym upper;
			missing[n_missing] = input__pair_lower(chord->keysyms[i], &upper);
			if (missing[n_missing] != chord->keysyms[i])
				need_shift = true;
			missing_at[n_missing++] = i;
		}
	}
	if (n_missing) {
		if (!(press && release))
			return -ENOENT;	/* holding needs keymap keys */
		KeyCode bound[INPUT_MAX_CHORD];
		rc = bind_for_chord(self, missing, n_missing, bound);
		if (rc < 0)
			return rc;
		for (int i = 0; i < n_missing; i++)
			kcs[missing_at[i]] = bound[i];
	}
	bool add_shift = need_shift && !has_shift && self->shift_kc;
	if (press) {
		if (add_shift)
			input__fake_key(self, self->shift_kc, true);
		for (int i = 0; i < chord->n; i++)
			input__fake_key(self, kcs[i], true);
	}
	if (release) {
		for (int i = chord->n - 1; i >= 0; i--)
			input__fake_key(self, kcs[i], false);
		if (add_shift)
			input__fake_key(self, self->shift_kc, false);
	}
	if (n_missing) {
		rc = input__sync(self);
		int64_t t = clock_ms();
		for (int i = 0; i < n_missing; i++) {
			for (int s = 0; s < self->n_spares; s++) {
				if (self->spares[s].keycode == kcs[missing_at[i]]) {
					self->spares[s].used_ms = t;
					self->spares[s].client = self->cur_client;
				}
			}
		}
		pthread_cond_signal(&self->cond);
	}
	return rc;
}

int input_key_chord(struct input* self, const struct input_chord* chord)
{
	if (chord->n < 1)
		return -EINVAL;
	pthread_mutex_lock(&self->mutex);
	int rc = -EPIPE;
	if (!self->dead) {
		rc = chord_locked(self, chord, true, true);
		int e = input__sync(self);
		if (rc == 0)
			rc = e;
	}
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

int input_key_chord_state(struct input* self, const struct input_chord* chord,
		bool down)
{
	if (chord->n < 1)
		return -EINVAL;
	pthread_mutex_lock(&self->mutex);
	int rc = -EPIPE;
	if (!self->dead) {
		rc = chord_locked(self, chord, down, !down);
		int e = input__sync(self);
		if (rc == 0)
			rc = e;
	}
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

/* ---- typing ---- */

struct stroke {
	KeySym sym;
	KeyCode kc;	/* 0: needs a spare */
	bool shift;
};

/* Decode and plan; nothing is sent. */
/* Plan the strokes; nothing is sent. The text was checked. */
static void plan_text(struct input* self, const char* text, size_t len,
		struct stroke* out, size_t* n_out)
{
	size_t pos = 0, n = 0;
	while (pos < len) {
		uint32_t cp = 0;
		input_utf8_next(text, len, &pos, &cp);
		KeySym sym;
		switch (cp) {
		case '\r':
			if (pos < len && text[pos] == '\n')
				pos++;
			sym = XK_Return;
			break;
		case '\n': sym = XK_Return; break;
		case '\t': sym = XK_Tab; break;
		case '\b': sym = XK_BackSpace; break;
		case 0x1B: sym = XK_Escape; break;
		default: sym = xkb_utf32_to_keysym(cp); break;
		}
		struct stroke* s = &out[n++];
		s->sym = sym;
		s->shift = false;
		if (!input__find_key(self, sym, &s->kc, &s->shift)) {
			/* Through a spare: its pair's lower case, Shift for upper. */
			KeySym upper;
			s->kc = 0;
			s->sym = input__pair_lower(sym, &upper);
			s->shift = sym != s->sym;
		}
	}
	*n_out = n;
}

static int spare_of(struct input* self, KeySym sym)
{
	for (int i = 0; i < self->n_spares; i++)
		if (self->spares[i].sym == sym)
			return i;
	return -1;
}

/* Bind the distinct unbound symbols needed by strokes [from, to) to spares
 * not needed there (safe ones first, least recently used first). */
static void bind_batch(struct input* self, const struct stroke* st,
		size_t from, size_t to)
{
	bool needed[MAX_SPARES] = { false }, change[MAX_SPARES] = { false };
	for (size_t i = from; i < to; i++) {
		int s = st[i].kc ? -1 : spare_of(self, st[i].sym);
		if (s >= 0) {
			needed[s] = true;
			/* Bound, but the client never heard: send it again. */
			if (input__spare_stale_for(self, &self->spares[s], self->cur_client))
				change[s] = true;
		}
	}
	for (size_t i = from; i < to; i++) {
		if (st[i].kc || spare_of(self, st[i].sym) >= 0)
			continue;
		int s = input__pick_victim(self, needed);	/* exists: the batch fits */
		self->spares[s].sym = st[i].sym;
		needed[s] = change[s] = true;
	}
	input__wait_client_ready(self, self->cur_client);
	input__send_bindings(self, change);
	if (self->bind_wait_ms) {
		XSync(self->dpy, False);
		clock_sleep_ms(self->bind_wait_ms);
	}
	input__confirm_bindings(self, change);
}

static int type_locked(struct input* self, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset)
{
	int rc = input_text_check(text, len, bad_offset);
	if (rc < 0)
		return rc;
	rc = input__refresh_keymap(self);
	if (rc < 0)
		return rc;
	struct stroke* st = malloc((len ? len : 1) * sizeof(*st));
	if (!st)
		return -ENOMEM;
	size_t n = 0;
	plan_text(self, text, len, st, &n);
	size_t remapped = 0;
	for (size_t i = 0; i < n; i++)
		if (!st[i].kc)
			remapped++;
	if (remapped && self->n_spares == 0) {
		rc = -ENOSPC;
		goto out;
	}

	self->cur_client = input__focus_client(self);
	/* Caps Lock inverts the level of letters. */
	Window r, c;
	int rx, ry, wx, wy;
	unsigned mask = 0;
	XQueryPointer(self->dpy, self->root, &r, &c, &rx, &ry, &wx, &wy, &mask);
	bool caps = mask & LockMask;

	bool shift_down = false;
	size_t batches = 0;
	for (size_t i = 0; i < n;) {
		/* The batch: from i, as far as the distinct remapped symbols fit. */
		KeySym distinct[MAX_SPARES];
		int n_distinct = 0;
		size_t j = i;
		for (; j < n; j++) {
			if (st[j].kc)
				continue;
			bool seen = false;
			for (int d = 0; d < n_distinct; d++)
				if (distinct[d] == st[j].sym)
					seen = true;
			if (seen)
				continue;
			if (n_distinct == self->n_spares)
				break;
			distinct[n_distinct++] = st[j].sym;
		}
		bool rebinding = false;
		for (int d = 0; d < n_distinct; d++) {
			int sp = spare_of(self, distinct[d]);
			if (sp < 0 || input__spare_stale_for(self, &self->spares[sp], self->cur_client))
				rebinding = true;
		}
		if (rebinding) {
			if (shift_down) {
				input__fake_key(self, self->shift_kc, false);
				shift_down = false;
			}
			bind_batch(self, st, i, j);
			batches++;
		}
		for (size_t k = i; k < j; k++) {
			KeyCode kc = st[k].kc;
			bool shift = st[k].shift;
			if (!kc) {
				kc = self->spares[spare_of(self, st[k].sym)].keycode;
				KeySym upper;
				if (caps && input__pair_lower(st[k].sym, &upper) != upper)
					shift = !shift;
			} else if (caps && input__key_is_alpha(self, kc)) {
				shift = !shift;
			}
			if (shift != shift_down) {
				input__fake_key(self, self->shift_kc, shift);
				shift_down = shift;
			}
			input__fake_key(self, kc, true);
			input__fake_key(self, kc, false);
		}
		if (n_distinct) {
			rc = input__sync(self);
			if (rc < 0)
				break;
			int64_t t = clock_ms();
			for (int d = 0; d < n_distinct; d++) {
				struct spare* sp = &self->spares[spare_of(self, distinct[d])];
				sp->used_ms = t;
				sp->client = self->cur_client;
			}
		}
		i = j;
	}
	if (shift_down)
		input__fake_key(self, self->shift_kc, false);
	int e = input__sync(self);
	if (rc == 0)
		rc = e;
	if (batches)
		pthread_cond_signal(&self->cond);
	if (stats) {
		stats->chars = n;
		stats->remapped = remapped;
		stats->batches = batches;
	}
out:
	free(st);
	return rc;
}

int input_type(struct input* self, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset)
{
	size_t ignored;
	if (!bad_offset)
		bad_offset = &ignored;
	if (stats)
		memset(stats, 0, sizeof(*stats));
	pthread_mutex_lock(&self->mutex);
	int rc = self->dead ? -EPIPE : type_locked(self, text, len, stats, bad_offset);
	pthread_mutex_unlock(&self->mutex);
	return rc;
}

/* ---- windows ---- */

static Window toplevel_of(struct input* self, Window w)
{
	for (int depth = 0; depth < 64; depth++) {
		Window root, parent, *children = NULL;
		unsigned n;
		if (!XQueryTree(self->dpy, w, &root, &parent, &children, &n))
			return 0;
		if (children)
			XFree(children);
		if (parent == root || parent == 0)
			return w;
		w = parent;
	}
	return w;
}

/* Is focus on w or inside it? */
static bool focus_in(struct input* self, Window w)
{
	Window focus;
	int revert;
	XGetInputFocus(self->dpy, &focus, &revert);
	if (self->dead || focus == None || focus == PointerRoot)
		return false;
	for (int depth = 0; depth < 64 && focus && focus != self->root; depth++) {
		if (focus == w)
			return true;
		Window root, parent, *children = NULL;
		unsigned n;
		if (!XQueryTree(self->dpy, focus, &root, &parent, &children, &n))
			return false;
		if (children)
			XFree(children);
		focus = parent;
	}
	return false;
}

static bool have_wm(struct input* self)
{
	Atom check = XInternAtom(self->dpy, "_NET_SUPPORTING_WM_CHECK", False);
	Atom type;
	int format;
	unsigned long n, after;
	unsigned char* data = NULL;
	bool wm = false;
	if (XGetWindowProperty(self->dpy, self->root, check, 0, 1, False, XA_WINDOW,
			&type, &format, &n, &after, &data) == Success && data) {
		wm = n == 1 && format == 32;
		XFree(data);
	}
	return wm;
}

int input_focus_window(struct input* self, uint32_t window, int timeout_ms)
{
	pthread_mutex_lock(&self->mutex);
	int rc = -EPIPE;
	if (self->dead)
		goto out;
	XWindowAttributes attrs;
	self->error = 0;
	if (!XGetWindowAttributes(self->dpy, window, &attrs) || self->error) {
		input__sync(self);
		rc = -ENOENT;
		goto out;
	}
	Window top = toplevel_of(self, window);
	if (have_wm(self)) {
		XEvent ev = { 0 };
		ev.xclient.type = ClientMessage;
		ev.xclient.window = window;
		ev.xclient.message_type = XInternAtom(self->dpy, "_NET_ACTIVE_WINDOW", False);
		ev.xclient.format = 32;
		ev.xclient.data.l[0] = 2;	/* from a pager: honoured without focus-stealing checks */
		ev.xclient.data.l[1] = CurrentTime;
		XSendEvent(self->dpy, self->root, False,
				SubstructureRedirectMask | SubstructureNotifyMask, &ev);
	} else {
		if (top)
			XRaiseWindow(self->dpy, top);
		if (attrs.map_state == IsViewable)
			XSetInputFocus(self->dpy, window, RevertToParent, CurrentTime);
	}
	rc = input__sync(self);
	if (rc < 0)
		goto out;
	int64_t end = clock_ms() + timeout_ms;
	bool fallback = false;
	for (;;) {
		if (focus_in(self, window)) {
			rc = 0;
			break;
		}
		if (self->dead) {
			rc = -EPIPE;
			break;
		}
		if (clock_ms() >= end) {
			if (fallback) {
				rc = -ETIMEDOUT;
				break;
			}
			/* The WM ignored us: raise and focus directly, once. */
			fallback = true;
			end = clock_ms() + timeout_ms / 2 + 1;
			if (top)
				XRaiseWindow(self->dpy, top);
			XSetInputFocus(self->dpy, window, RevertToParent, CurrentTime);
			input__sync(self);
			continue;
		}
		clock_sleep_ms(FOCUS_POLL_MS);
	}
out:
	pthread_mutex_unlock(&self->mutex);
	return rc;
}
