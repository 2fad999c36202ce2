/* Typing: plan the strokes, bind the symbols that are not on the keymap to
 * spare slots (all of a segment's in one request), send.
 *
 * A segment is a run of strokes whose new symbols fit in slots that may
 * change now (free, or drained: barrier.c). Usually the whole call is one
 * segment; a call that needs more symbols than there are drained slots is
 * cut, and the next segment waits for the slots of the earlier ones to
 * drain (input_type), or the call returns what it typed and how long to
 * wait, so that its caller waits without holding the desktop lock
 * (input_type_some). Bindings stay after the call (least recently used goes first) and
 * are restored only at exit. */
#include "input/x11_private.h"
#include "base/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stroke {
	KeySym sym;
	KeyCode kc;	/* 0: goes through a slot (sym is its slot keysym) */
	bool shift;
	int group;	/* the group its key gives sym in */
	bool astral;	/* a character above U+FFFF */
	size_t end;	/* byte offset in the text after its character */
};

/* Plan the strokes; nothing is sent. The text was checked. */
static void plan_text(struct input_x11* self, const char* text, size_t len,
		struct stroke* out, size_t* n_out)
{
	size_t pos = 0, n = 0;
	int group = 0;
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
		s->group = 0;
		s->astral = cp > 0xFFFF;
		s->end = pos;
		/* The call starts in the first group (input__unlock); a key of
		 * another goes with that group locked, which stays while the
		 * keys after it are there too (a space between Latin words on
		 * ru,us is in both). */
		if (input__find_key(self, sym, group, &s->kc, &s->shift, &s->group)) {
			group = s->group;
		} else {
			s->kc = 0;
			s->sym = input__slot_keysym(cp);
		}
	}
	*n_out = n;
}

enum { PICK_NONE_DRAINED = -1, PICK_ALL_IN_SEGMENT = -2 };

/* Which slots a pick may take: any, or one level of one group (a chord's). */
struct slot_want {
	int level, group;	/* -1: any */
};
static const struct slot_want ANY_SLOT = { -1, -1 };

static bool slot_fits(const struct slot* sl, struct slot_want w)
{
	return (w.level < 0 || sl->level == w.level) && (w.group < 0 || sl->group == w.group);
}

/* A slot for a new symbol, not one of this segment, as wanted: a free one
 * first, else the least recently used that has drained. */
static int pick_slot(struct input_x11* self, uint64_t seg, int64_t now, struct slot_want want)
{
	int best = -1;
	bool any = false;
	for (int i = 0; i < self->n_slots; i++) {
		const struct slot* sl = &self->slots[i];
		if (sl->segment == seg || !slot_fits(sl, want))
			continue;
		any = true;
		if (sl->sym == NoSymbol)
			return i;
		if (!input__slot_drained(self, sl, now))
			continue;
		if (best < 0 || sl->used_ms < self->slots[best].used_ms)
			best = i;
	}
	if (best >= 0)
		return best;
	return any ? PICK_NONE_DRAINED : PICK_ALL_IN_SEGMENT;
}

/* Wait (bounded) until a slot outside the segment drains. */
static int wait_for_slot(struct input_x11* self, uint64_t seg, struct slot_want want)
{
	int64_t end = clock_ms() + DRAIN_WAIT_MAX_MS;
	for (;;) {
		input__drain_events(self);
		if (x11_lost(&self->x))
			return -ECONNRESET;
		int64_t now = clock_ms();
		int s = pick_slot(self, seg, now, want);
		if (s >= 0)
			return s;
		if (s == PICK_ALL_IN_SEGMENT)
			return -ENOSPC;
		if (now >= end)
			return -ETIMEDOUT;
		clock_sleep_ms(2);
	}
}

int input__slots_for(struct input_x11* self, const KeySym* syms, int n, int level, int group,
		int* out, uint64_t seg, int* bound)
{
	struct slot_want want = { level, group };
	int new_slots[INPUT_MAX_CHORD];
	KeySym new_syms[INPUT_MAX_CHORD];
	int n_new = 0;
	if (n > INPUT_MAX_CHORD)
		return -E2BIG;
	for (int i = 0; i < n; i++) {
		int s = -1;
		for (int k = 0; s < 0 && k < self->n_slots; k++)
			if (self->slots[k].sym == syms[i] && slot_fits(&self->slots[k], want))
				s = k;
		for (int k = 0; s < 0 && k < n_new; k++)
			if (new_syms[k] == syms[i])
				s = new_slots[k];
		if (s < 0) {
			s = pick_slot(self, seg, clock_ms(), want);
			if (s == PICK_NONE_DRAINED)
				s = wait_for_slot(self, seg, want);
			if (s == PICK_ALL_IN_SEGMENT)
				s = -ENOSPC;
			if (s < 0)
				return s;
			self->slots[s].sym = NoSymbol;
			new_slots[n_new] = s;
			new_syms[n_new++] = syms[i];
		}
		self->slots[s].segment = seg;
		out[i] = s;
	}
	*bound = n_new;
	return input__bind_slots(self, new_slots, new_syms, n_new);
}

/* The level keys held now, changed to want. */
static void set_level(struct input_x11* self, int* held, int want)
{
	if (*held == want)
		return;
	if ((*held & 2) && !(want & 2))
		input__level_keys(self, 2, false);
	if ((*held & 1) && !(want & 1))
		input__level_keys(self, 1, false);
	if (!(*held & 2) && (want & 2))
		input__level_keys(self, 2, true);
	if (!(*held & 1) && (want & 1))
		input__level_keys(self, 1, true);
	*held = want;
}

/* What the client needs between keys (input__client_quirks). */
struct pacing {
	Window target;
	unsigned quirks;
	bool keys_since;	/* keys sent since the client last caught up */
	size_t paced;		/* times it waited for the client */
};

/* Send n planned strokes whose slots are bound. */
static int send_strokes(struct input_x11* self, const struct stroke* st, size_t n,
		int* held, struct input_locks* locks, struct pacing* pace)
{
	for (size_t k = 0; k < n; k++) {
		KeyCode kc = st[k].kc;
		int level;
		if (kc) {
			level = st[k].shift ? 1 : 0;
			input__lock_group(self, locks, st[k].group);
		} else {
			const struct slot* sl = &self->slots[input__slot_of(self, st[k].sym)];
			kc = self->pool[sl->key].kc;
			level = sl->level;
			/* A key of one group is the same in any (the keymap's
			 * group may stay). */
			if (XkbKeyNumGroups(self->xkb, kc) > 1)
				input__lock_group(self, locks, sl->group);
		}
		if ((pace->quirks & INPUT_QUIRK_CATCH_UP_ASTRAL) && st[k].astral && pace->keys_since) {
			/* A client that did not answer in time gets the key anyway. */
			if (input__catch_up(self, pace->target, CATCH_UP_MAX_MS) == -ECONNRESET)
				return -ECONNRESET;
			pace->paced++;
		}
		set_level(self, held, level);
		input__fake_key(self, kc, true);
		input__fake_key(self, kc, false);
		pace->keys_since = !st[k].astral;
	}
	return 0;
}

/* How long until a slot outside the segment may drain: the nearest
 * quarantine's end, or a short poll for slots waiting for a ping answer. */
static int drain_wait_ms(struct input_x11* self, uint64_t seg, int64_t now)
{
	int64_t best = DRAIN_POLL_MS;
	bool any_time = false;
	for (int i = 0; i < self->n_slots; i++) {
		const struct slot* sl = &self->slots[i];
		if (sl->segment == seg || sl->sym == NoSymbol || sl->ping_win)
			continue;
		int64_t left = sl->quarantine_ms - now;
		if (!any_time || left < best)
			best = left;
		any_time = true;
	}
	bool pinged = false;
	for (int i = 0; i < self->n_slots; i++)
		if (self->slots[i].segment != seg && self->slots[i].ping_win)
			pinged = true;
	if (pinged && best > DRAIN_POLL_MS)
		best = DRAIN_POLL_MS;
	return best < 1 ? 1 : (int)best;
}

/* Type text; with wait_ms, stop instead of waiting for a slot to drain:
 * *done is then how many bytes were typed and *wait_ms (> 0) how long
 * until a slot may drain. */
static int type_locked(struct input_x11* self, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset, size_t* done,
		int* wait_ms)
{
	int rc = input_text_check(text, len, bad_offset);
	if (rc < 0)
		return rc;
	rc = input__refresh_keymap(self);
	if (rc < 0)
		return rc;
	struct stroke* st = malloc((len ? len : 1) * sizeof(*st));
	int* new_slots = malloc((len ? len : 1) * sizeof(int));
	KeySym* new_syms = malloc((len ? len : 1) * sizeof(KeySym));
	if (!st || !new_slots || !new_syms) {
		rc = -ENOMEM;
		goto out;
	}
	size_t n = 0;
	plan_text(self, text, len, st, &n);
	size_t remapped = 0;
	for (size_t i = 0; i < n; i++)
		if (!st[i].kc)
			remapped++;
	if (done)
		*done = len;
	if (wait_ms)
		*wait_ms = 0;
	size_t typed = n;	/* strokes sent */
	if (remapped && self->n_slots == 0) {
		for (size_t i = 0; stats && i < n; i++) {
			if (!st[i].kc) {
				/* Back from input__slot_keysym. */
				stats->unbound = st[i].sym < 0x100 ? (uint32_t)st[i].sym
						: (uint32_t)(st[i].sym & 0xffffff);
				break;
			}
		}
		rc = -ENOSPC;
		goto out;
	}

	bool pings = false;
	Window target = remapped ? input__key_target(self, &pings) : 0;
	struct pacing pace = { .target = target,
		.quirks = target && pings ? input__client_quirks(self, target) : 0 };
	struct input_locks locks;
	rc = input__unlock(self, &locks);
	if (rc < 0)
		goto out;

	int held = 0;
	size_t batches = 0;
	for (size_t i = 0; i < n && rc == 0;) {
		uint64_t seg = ++self->segment;
		int n_new = 0;
		bool uses_slots = false;
		size_t j = i;
		for (; j < n; j++) {
			if (st[j].kc)
				continue;
			int s = input__slot_of(self, st[j].sym);
			for (int k = n_new - 1; s < 0 && k >= 0; k--)
				if (new_syms[k] == st[j].sym)
					s = new_slots[k];
			if (s < 0) {
				int64_t now = clock_ms();
				s = pick_slot(self, seg, now, ANY_SLOT);
				if (s == PICK_NONE_DRAINED && j == i && wait_ms) {
					/* The caller waits, without its locks. */
					*wait_ms = drain_wait_ms(self, seg, now);
					*done = i ? st[i - 1].end : 0;
					typed = i;
					break;
				}
				if (s == PICK_NONE_DRAINED && j == i)
					s = wait_for_slot(self, seg, ANY_SLOT);
				if (s < 0) {
					if (j == i && s != PICK_NONE_DRAINED
							&& s != PICK_ALL_IN_SEGMENT)
						rc = s;
					break;
				}
				self->slots[s].sym = NoSymbol;	/* its old symbol is gone */
				new_slots[n_new] = s;
				new_syms[n_new++] = st[j].sym;
			}
			self->slots[s].segment = seg;
			uses_slots = true;
		}
		if (rc < 0 || typed < n)
			break;
		if (n_new) {
			set_level(self, &held, 0);
			rc = input__bind_slots(self, new_slots, new_syms, n_new);
			if (rc < 0)
				break;
			batches++;
		}
		rc = send_strokes(self, st + i, j - i, &held, &locks, &pace);
		if (rc < 0)
			break;
		if (uses_slots) {
			rc = input__sync(self);
			if (rc < 0)
				break;
			input__after_keys(self, seg, target, pings, j - i);
		}
		i = j;
	}
	set_level(self, &held, 0);
	input__relock(self, &locks);
	int e = input__sync(self);
	if (rc == 0)
		rc = e;
	if (stats) {
		if (typed < n) {
			remapped = 0;
			for (size_t i = 0; i < typed; i++)
				if (!st[i].kc)
					remapped++;
		}
		stats->chars = typed;
		stats->remapped = remapped;
		stats->batches = batches;
		stats->paced = pace.paced;
	}
out:
	free(new_syms);
	free(new_slots);
	free(st);
	return rc;
}

/* The type operation: input.c took the mutex, zeroed stats and gave a
 * bad_offset; with done and wait_ms (input_type_some) a drain wait returns
 * to the caller, without them it is waited out here. */
int input__x11_type(struct input* in, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset, size_t* done,
		int* wait_ms)
{
	struct input_x11* self = (struct input_x11*)in;
	int rc = input__ready(self);
	if (rc == 0)
		rc = type_locked(self, text, len, stats, bad_offset, done, wait_ms);
	return rc;
}
