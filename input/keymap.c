/* The keymap as input sees it, and the spare keycodes: which ones are free,
 * when one may change, binding, confirming and restoring them. */
#include "input/x11_private.h"
#include "base/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- keymap ---- */

static KeySym map_at(struct input* self, int kc, int col)
{
	if (kc < self->min_kc || kc > self->max_kc || col >= self->per)
		return NoSymbol;
	return self->map[(kc - self->min_kc) * self->per + col];
}

int input__load_keymap(struct input* self)
{
	if (self->map)
		XFree(self->map);
	self->map = XGetKeyboardMapping(self->x.dpy, (KeyCode)self->min_kc,
			self->max_kc - self->min_kc + 1, &self->per);
	if (!self->map || x11_lost(&self->x))
		return x11_lost(&self->x) ? -ECONNRESET : -EIO;
	self->shift_kc = 0;
	for (int kc = self->min_kc; kc <= self->max_kc && !self->shift_kc; kc++)
		if (!self->pool[kc] && map_at(self, kc, 0) == XK_Shift_L)
			self->shift_kc = (KeyCode)kc;
	return 0;
}

/* Another client (setxkbmap, xmodmap) may change the keymap: reload when a
 * MappingNotify arrived. Our own remaps arrive here too, harmlessly. */
int input__refresh_keymap(struct input* self)
{
	bool stale = false;
	while (!x11_lost(&self->x) && XPending(self->x.dpy)) {
		XEvent ev;
		XNextEvent(self->x.dpy, &ev);
		if (ev.type == MappingNotify && ev.xmapping.request != MappingPointer)
			stale = true;
	}
	if (x11_lost(&self->x))
		return -ECONNRESET;
	return stale ? input__load_keymap(self) : 0;
}

/* Find sym on the keymap (group 1, levels 1 and 2; spares excluded). */
bool input__find_key(struct input* self, KeySym sym, KeyCode* kc, bool* shift)
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
bool input__key_is_alpha(struct input* self, KeyCode kc)
{
	KeySym lower, upper;
	XConvertCase(map_at(self, kc, 0), &lower, &upper);
	return lower != upper;
}

/* The key a symbol goes on: a letter with two cases binds {lower, upper}
 * (upper with Shift, as on a real keyboard: both levels bound, so no
 * case folding, and one spare serves both cases); others bind {sym, sym}. */
KeySym input__pair_lower(KeySym sym, KeySym* upper)
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

void input__find_spares(struct input* self)
{
	XModifierKeymap* mods = XGetModifierMapping(self->x.dpy);
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
static void wait_client_ready(struct input* self, XID client)
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
bool input__spare_stale_for(struct input* self, const struct spare* sp, XID client)
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
static void send_bindings(struct input* self, const bool* change)
{
	for (int i = 0; i < self->n_spares; i++) {
		if (!change[i])
			continue;
		struct spare* sp = &self->spares[i];
		KeySym upper = NoSymbol;
		if (sp->sym != NoSymbol)
			input__pair_lower(sp->sym, &upper);
		KeySym syms[2] = { sp->sym, upper };
		XChangeKeyboardMapping(self->x.dpy, sp->keycode, 2, syms, 1);
		sp->gen = ++self->binds_sent;
		sp->used_ms = 0;
		sp->client = 0;
	}
}

/* Flag in missing[] the spares of which[] whose binding f (the client) has
 * not fetched yet; returns whether there are any. Under rec_mutex. */
static bool find_missing(struct input* self, const struct fetcher* f,
		const bool* which, bool* missing)
{
	bool any = false;
	for (int i = 0; i < self->n_spares; i++) {
		const struct spare* sp = &self->spares[i];
		missing[i] = which[i] && !(f && f->after[sp->keycode] >= sp->gen);
		any |= missing[i];
	}
	return any;
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
static void confirm_bindings(struct input* self, const bool* which)
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
			any_missing = find_missing(self, f, which, missing);
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
		any_missing = find_missing(self, f, which, missing);
		pthread_mutex_unlock(&self->rec_mutex);
		if (!any_missing)
			return;
		send_bindings(self, missing);
	}
}

void input__bind(struct input* self, const bool* change)
{
	wait_client_ready(self, self->cur_client);
	send_bindings(self, change);
	if (self->bind_wait_ms) {
		XSync(self->x.dpy, False);
		clock_sleep_ms(self->bind_wait_ms);
	}
	confirm_bindings(self, change);
}

/* Pick a spare to rebind (not needed[]): one that is safe now, least
 * recently used first, else the least recently used after waiting. */
int input__pick_victim(struct input* self, const bool* needed)
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
bool input__restore_spares(struct input* self, bool wait)
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
		send_bindings(self, change);
		input__sync(self);
	}
	return left;
}

/* The restorer thread: puts spare keycodes back to NoSymbol in the
 * background as soon as that is safe, so typing never waits for it. */
void* input__restorer_main(void* data)
{
	struct input* self = data;
	pthread_mutex_lock(&self->mutex);
	while (!self->stop) {
		bool left = !x11_lost(&self->x) && input__restore_spares(self, false);
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
