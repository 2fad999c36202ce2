/* Typing: plan the strokes, bind spare keycodes in batches, send. */
#include "input/x11_private.h"
#include "base/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	input__bind(self, change);
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
	XQueryPointer(self->x.dpy, self->root, &r, &c, &rx, &ry, &wx, &wy, &mask);
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
	int rc = x11_lost(&self->x) ? -ECONNRESET : type_locked(self, text, len, stats, bad_offset);
	pthread_mutex_unlock(&self->mutex);
	return rc;
}
