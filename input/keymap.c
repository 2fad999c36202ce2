/* The keymap as input sees it, and the pool of spare slots: which keycodes
 * are free, their levels, binding symbols to them in one XKB request, and
 * restoring them exactly at exit. */
#include "input/x11_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- keymap ---- */

static void build_key_table(struct input_x11* self);

static KeySym map_at(struct input_x11* self, int kc, int col)
{
	if (kc < self->min_kc || kc > self->max_kc || col >= self->per)
		return NoSymbol;
	return self->map[(kc - self->min_kc) * self->per + col];
}

/* Keep what we know of the slots true to the server's keymap: a slot
 * whose key another client rebound (setxkbmap, xmodmap) is free again,
 * and the key's state then is what the exit restores. */
static void check_slots(struct input_x11* self)
{
	for (int i = 0; i < self->n_slots; i++) {
		struct slot* sl = &self->slots[i];
		if (sl->sym == NoSymbol)
			continue;
		struct pool_key* k = &self->pool[sl->key];
		int n = XkbKeyNumSyms(self->xkb, k->kc), at = sl->group * self->levels + sl->level;
		if (at < n && sl->group < XkbKeyNumGroups(self->xkb, k->kc)
				&& XkbKeySymsPtr(self->xkb, k->kc)[at] == sl->sym
				&& XkbKeyKeyTypeIndex(self->xkb, k->kc, 0) == self->type_index)
			continue;
		sl->sym = NoSymbol;
		sl->used_ms = 0;
		sl->ping_win = 0;
	}
}

int input__load_keymap(struct input_x11* self)
{
	if (self->map)
		XFree(self->map);
	self->map = XGetKeyboardMapping(self->x.dpy, (KeyCode)self->min_kc,
			self->max_kc - self->min_kc + 1, &self->per);
	if (!self->map || x11_lost(&self->x))
		return x11_lost(&self->x) ? -ECONNRESET : -EIO;
	if (self->xkb)
		XkbFreeKeyboard(self->xkb, 0, True);
	self->xkb = XkbGetMap(self->x.dpy, XkbKeyTypesMask | XkbKeySymsMask, XkbUseCoreKbd);
	if (!self->xkb || x11_lost(&self->x))
		return x11_lost(&self->x) ? -ECONNRESET : -EIO;
	XkbGetNames(self->x.dpy, XkbKeyTypeNamesMask, self->xkb);
	self->shift_kc = self->level3_kc = 0;
	self->groups = 1;
	for (int kc = self->min_kc; kc <= self->max_kc; kc++) {
		if (self->in_pool[kc])
			continue;
		if (XkbKeyNumGroups(self->xkb, kc) > self->groups)
			self->groups = XkbKeyNumGroups(self->xkb, kc);
		if (!self->shift_kc && map_at(self, kc, 0) == XK_Shift_L)
			self->shift_kc = (KeyCode)kc;
		if (!self->level3_kc && map_at(self, kc, 0) == XK_ISO_Level3_Shift)
			self->level3_kc = (KeyCode)kc;
	}
	build_key_table(self);
	if (self->n_slots)
		check_slots(self);
	return 0;
}

/* Another client (setxkbmap, xmodmap) may change the keymap, and so do our
 * own bindings: reload when a MappingNotify arrived. */
int input__refresh_keymap(struct input_x11* self)
{
	input__drain_events(self);
	if (x11_lost(&self->x))
		return -ECONNRESET;
	if (!self->map_stale)
		return 0;
	self->map_stale = false;
	return input__load_keymap(self);
}

/* The level of a key type for modifiers mods: XKB's rule, the entry whose
 * mask is the mods the type looks at; the first level when none. */
static int type_level(const XkbKeyTypeRec* t, unsigned mods)
{
	unsigned m = mods & t->mods.mask;
	for (int i = 0; i < t->map_count; i++)
		if (t->map[i].active && t->map[i].mods.mask == m)
			return t->map[i].level;
	return 0;
}

/* The key's own group when the keyboard's is g (its out-of-range rule); -1
 * for a key without symbols. */
static int key_group(XkbDescPtr xkb, int kc, int g)
{
	int n = XkbKeyNumGroups(xkb, kc);
	if (n == 0)
		return -1;
	if (g < n)
		return g;
	unsigned char gi = XkbKeyGroupInfo(xkb, kc);
	switch (XkbOutOfRangeGroupAction(gi)) {
	case XkbRedirectIntoRange: {
		int r = XkbOutOfRangeGroupNumber(gi);
		return r < n ? r : 0;
	}
	case XkbClampIntoRange:
		return n - 1;
	default:
		return g % n;
	}
}

/* What a client looks up for key kc in group g with modifiers mods. */
static KeySym key_sym(struct input_x11* self, int kc, int g, unsigned mods)
{
	int eg = key_group(self->xkb, kc, g);
	if (eg < 0)
		return NoSymbol;
	int level = type_level(XkbKeyKeyType(self->xkb, kc, eg), mods);
	if (level >= XkbKeyGroupWidth(self->xkb, kc, eg))
		return NoSymbol;
	return XkbKeySymEntry(self->xkb, kc, level, eg);
}

static unsigned key_hash(KeySym sym, int group)
{
	uint64_t h = ((uint64_t)sym << 2 | (unsigned)group) * 0x9E3779B97F4A7C15ull;
	return (unsigned)(h >> 52) & (KEY_TABLE_SIZE - 1);
}

/* The first entry for (sym, group) stays: keys go in level by level, in
 * keycode order, so a key without Shift wins, then the lowest keycode. */
static void key_table_put(struct input_x11* self, KeySym sym, int group, int kc, bool shift)
{
	if (sym == NoSymbol)
		return;
	for (unsigned i = key_hash(sym, group), n = 0; n < KEY_TABLE_SIZE;
			i = (i + 1) & (KEY_TABLE_SIZE - 1), n++) {
		struct key_entry* e = &self->keys_by_sym[i];
		if (e->kc && e->sym == sym && e->group == group)
			return;
		if (!e->kc) {
			*e = (struct key_entry){ .sym = sym, .kc = (unsigned char)kc,
				.group = (unsigned char)group, .shift = shift };
			return;
		}
	}
}

/* The keymap's keys (the pool excluded) by what they give in each group. */
static void build_key_table(struct input_x11* self)
{
	memset(self->keys_by_sym, 0, sizeof(self->keys_by_sym));
	for (int g = 0; g < self->groups && g < XkbNumKbdGroups; g++)
		for (int shift = 0; shift < 2; shift++)
			for (int k = self->min_kc; k <= self->max_kc && k < 256; k++)
				if (!self->in_pool[k])
					key_table_put(self, key_sym(self, k, g, shift ? ShiftMask : 0), g,
							k, shift);
}

bool input__find_key_in(struct input_x11* self, KeySym sym, int group, KeyCode* kc, bool* shift)
{
	for (unsigned i = key_hash(sym, group), n = 0; n < KEY_TABLE_SIZE;
			i = (i + 1) & (KEY_TABLE_SIZE - 1), n++) {
		const struct key_entry* e = &self->keys_by_sym[i];
		if (!e->kc)
			return false;
		if (e->sym != sym || e->group != group)
			continue;
		if (e->shift && !self->shift_kc)
			return false;
		*kc = e->kc;
		*shift = e->shift;
		return true;
	}
	return false;
}

/* In group first when it is there, else in the keymap's other groups (a
 * ru,us keymap has the Latin letters in its second group only). */
bool input__find_key(struct input_x11* self, KeySym sym, int first, KeyCode* kc, bool* shift,
		int* group)
{
	for (int g = -1; g < self->groups; g++) {
		int at = g < 0 ? first : g;
		if (g == first || !input__find_key_in(self, sym, at, kc, shift))
			continue;
		if (group)
			*group = at;
		return true;
	}
	return false;
}

/* Typing must not depend on the person's locks: with Caps Lock on, clients
 * turn the lower-case symbol of a slot into its upper case (XKB's lookup
 * applies Lock's case rule to any key whose type does not consume Lock),
 * and a keymap key's Lock level is not always the Shift level (on de, ß's
 * key gives ẞ with Lock, and ? is Shift on it). Unlocking for the call and
 * locking again after is exact for every key type and layout; the
 * requests go in order with the keys, so the keys see the unlocked state
 * and the person's lock is back right after them. */
int input__unlock(struct input_x11* self, struct input_locks* saved)
{
	XkbStateRec st;
	memset(saved, 0, sizeof(*saved));
	if (XkbGetState(self->x.dpy, XkbUseCoreKbd, &st) != Success || x11_lost(&self->x))
		return x11_lost(&self->x) ? -ECONNRESET : -EIO;
	saved->mods = st.locked_mods;
	saved->group = st.locked_group;
	if (saved->mods)
		XkbLockModifiers(self->x.dpy, XkbUseCoreKbd, saved->mods, 0);
	if (saved->group)
		XkbLockGroup(self->x.dpy, XkbUseCoreKbd, 0);
	return 0;
}

/* A key of another group (ru,us: the Latin letters are in the second) goes
 * with that group locked: the request runs in order with the keys, and each
 * key event carries its group, so the client looks up the key's symbol. */
void input__lock_group(struct input_x11* self, struct input_locks* saved, int g)
{
	if (saved->now == g)
		return;
	XkbLockGroup(self->x.dpy, XkbUseCoreKbd, (unsigned)g);
	saved->now = g;
}

void input__relock(struct input_x11* self, const struct input_locks* saved)
{
	if (saved->mods)
		XkbLockModifiers(self->x.dpy, XkbUseCoreKbd, saved->mods, saved->mods);
	if (saved->now != saved->group)
		XkbLockGroup(self->x.dpy, XkbUseCoreKbd, (unsigned)saved->group);
}

KeySym input__slot_keysym(uint32_t cp)
{
	if ((cp >= 0x20 && cp < 0x7f) || (cp >= 0xa0 && cp <= 0xff))
		return cp;
	return 0x01000000 | cp;
}

/* ---- the pool ---- */

/* Keycodes that toolkits and browsers give a meaning of their own, from
 * the keycode rather than the keysym: Chromium maps evdev codes to DOM
 * codes (keycode 166 is BrowserBack and navigates back, whatever symbol it
 * carries), and the same USB/evdev tables name media, power and launch
 * keys elsewhere. Xvfb's keycodes are evdev + 8. Never a slot. */
static const unsigned char special_keycodes[] = {
	37, 50, 62, 63, 64, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,
	90, 91, 93, 94, 97, 98, 99, 100, 101, 102, 104, 105, 106, 107, 108, 110,
	111, 112, 113, 114, 115, 116, 117, 118, 119, 121, 122, 123, 124, 125, 126,
	127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 139, 140, 141, 142,
	143, 144, 145, 146, 148, 150, 151, 152, 158, 160, 163, 164, 166, 167, 169,
	171, 172, 173, 174, 175, 176, 177, 179, 180, 181, 182, 187, 188, 189, 190,
	191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 209, 212, 214,
	215, 216, 217, 218, 225, 232, 233, 235, 236, 237, 238, 239, 240, 241, 242,
	243, 252,
};

static bool is_special(int kc)
{
	for (size_t i = 0; i < sizeof(special_keycodes); i++)
		if (special_keycodes[i] == kc)
			return true;
	return false;
}

static int type_named(struct input_x11* self, const char* name)
{
	XkbClientMapPtr m = self->xkb->map;
	for (int i = 0; i < m->num_types; i++) {
		if (!m->types[i].name)
			continue;
		char* n = XGetAtomName(self->x.dpy, m->types[i].name);
		bool same = n && strcmp(n, name) == 0;
		if (n)
			XFree(n);
		if (same)
			return i;
	}
	return -1;
}

/* Four levels when FOUR_LEVEL selects level 2 with the modifier of an
 * ISO_Level3_Shift key on the keymap (and level 3 with Shift too). */
static bool four_levels(struct input_x11* self, int type, unsigned l3_mods)
{
	if (type < 0 || !l3_mods || !self->level3_kc)
		return false;
	XkbKeyTypePtr t = &self->xkb->map->types[type];
	if (t->num_levels != 4)
		return false;
	bool lv[4] = { true, false, false, false };
	for (int i = 0; i < t->map_count; i++) {
		XkbKTMapEntryPtr e = &t->map[i];
		if (!e->active || e->level >= 4)
			continue;
		unsigned want = e->level == 1 ? ShiftMask : e->level == 2 ? l3_mods
				: e->level == 3 ? (ShiftMask | l3_mods) : 0;
		if (e->mods.mask == want)
			lv[e->level] = true;
	}
	return lv[1] && lv[2] && lv[3];
}

static void probe_xkb_binding(struct input_x11* self);

void input__find_pool(struct input_x11* self)
{
	XModifierKeymap* mods = XGetModifierMapping(self->x.dpy);
	bool is_mod[256] = { false };
	unsigned l3_mods = 0;
	if (mods) {
		for (int i = 0; i < 8 * mods->max_keypermod; i++) {
			KeyCode kc = mods->modifiermap[i];
			is_mod[kc] = true;
			if (kc && kc == self->level3_kc)
				l3_mods |= 1u << (i / mods->max_keypermod);
		}
		XFreeModifiermap(mods);
	}
	self->n_pool = 0;
	/* Keycode 8 is skipped: some clients treat the lowest keycode specially. */
	for (int kc = 9; kc <= self->max_kc && kc < 256; kc++) {
		if (kc < self->min_kc || is_mod[kc] || is_special(kc)
				|| self->n_pool >= MAX_POOL_KEYS)
			continue;
		bool empty = true;
		for (int c = 0; c < self->per; c++)
			if (map_at(self, kc, c) != NoSymbol)
				empty = false;
		int n = XkbKeyNumSyms(self->xkb, kc);
		for (int i = 0; i < n; i++)
			if (XkbKeySymsPtr(self->xkb, kc)[i] != NoSymbol)
				empty = false;
		if (!empty || n > 16)
			continue;
		struct pool_key* k = &self->pool[self->n_pool++];
		memset(k, 0, sizeof(*k));
		k->kc = (KeyCode)kc;
		XkbSymMapPtr sm = &self->xkb->map->key_sym_map[kc];
		memcpy(k->orig_kt, sm->kt_index, sizeof(k->orig_kt));
		k->orig_group_info = sm->group_info;
		k->orig_width = sm->width;
		k->orig_n = n;
		for (int i = 0; i < n; i++)
			k->orig_syms[i] = XkbKeySymsPtr(self->xkb, kc)[i];
		self->in_pool[kc] = true;
	}
	int four = type_named(self, "FOUR_LEVEL");
	if (four_levels(self, four, l3_mods)) {
		self->levels = 4;
		self->type_index = four;
	} else {
		self->levels = 2;
		self->type_index = XkbTwoLevelIndex;
	}
	/* A small pool (Xvfb's stock keymap leaves 12 spare keys: 48 slots)
	 * gets more groups per key, chosen by locking the group for their keys
	 * (type.c): 4 x 4 x 12 = 192. Only then, and a key only once a slot of
	 * its other groups is used: while such a key is bound, the keyboard
	 * has that many groups, and a person's layout switch steps through
	 * them. A multiple of the layout's own groups keeps each press on the
	 * next layout (groups wrap into a key's range: on us,ru, groups 3 and 4
	 * are us and ru again); on a 3-layout keymap a fourth group would be a
	 * press that changes nothing, so it gets 3 (PITFALLS 27g). */
	int per_group = self->n_pool * self->levels;
	self->slot_groups = 1;
	while (per_group && self->slot_groups < XkbNumKbdGroups
			&& per_group * self->slot_groups < POOL_SLOTS_WANTED)
		self->slot_groups++;
	if (self->slot_groups > 1 && self->slot_groups % self->groups) {
		int up = (self->slot_groups / self->groups + 1) * self->groups;
		self->slot_groups = up <= XkbNumKbdGroups ? up
				: self->slot_groups / self->groups * self->groups;
	}
	self->n_slots = 0;
	/* Group by group and level by level, so the first symbols need no
	 * group switch and no modifier. */
	for (int group = 0; group < self->slot_groups; group++)
		for (int level = 0; level < self->levels; level++)
			for (int k = 0; k < self->n_pool; k++)
				self->slots[self->n_slots++] = (struct slot){ .key = k, .level = level,
					.group = group };
	build_key_table(self);	/* without the pool's keys */
	probe_xkb_binding(self);
}

int input__slot_of(struct input_x11* self, KeySym sym)
{
	for (int i = 0; i < self->n_slots; i++)
		if (self->slots[i].sym == sym)
			return i;
	return -1;
}

/* Send the key symbol maps of the whole pool's range in one XKB request:
 * keys in between go with their current contents, so they do not change.
 * Always the whole range: Xlib notes a MapNotify's key range and fetches
 * just the noted range at its next lookup, then forgets what it noted, so
 * a notify read while such a fetch was on its way would be lost for keys
 * outside the range being fetched; with one range for every request, any
 * fetch covers every slot. */
static void send_range(struct input_x11* self)
{
	int lo = self->pool[0].kc, hi = self->pool[self->n_pool - 1].kc;
	XkbMapChangesRec changes;
	memset(&changes, 0, sizeof(changes));
	changes.changed = XkbKeySymsMask;
	changes.first_key_sym = (KeyCode)lo;
	changes.num_key_syms = (unsigned char)(hi - lo + 1);
	XkbChangeMap(self->x.dpy, self->xkb, &changes);
	self->binds++;
}

/* One spare key's core mapping: sym on both levels (NoSymbol empties it).
 * A lone symbol would get core case rules (a letter alone is its lower and
 * upper case: "É" would type "é"); the same symbol twice is just itself. */
static void core_bind(struct input_x11* self, int kc, KeySym sym)
{
	KeySym both[2] = { sym, sym };
	XChangeKeyboardMapping(self->x.dpy, kc, 2, both, 1);
}

/* Does the server take an XKB binding? Bind the first spare key to a
 * symbol through XKB and empty it again through the core protocol (which
 * every server takes); a refusal makes this context bind through the core
 * protocol, one symbol per key. (input__find_pool) */
static void probe_xkb_binding(struct input_x11* self)
{
	if (self->n_pool == 0 || input__sync(self) < 0)
		return;
	int kc = self->pool[0].kc;
	XkbSymMapPtr sm = &self->xkb->map->key_sym_map[kc];
	struct pool_key* k = &self->pool[0];
	KeySym* p = XkbResizeKeySyms(self->xkb, kc, 1);
	if (!p)
		return;
	p[0] = XK_VoidSymbol;
	for (int g = 0; g < XkbNumKbdGroups; g++)
		sm->kt_index[g] = XkbOneLevelIndex;
	sm->group_info = XkbSetGroupInfo(1, XkbWrapIntoRange, 0);
	sm->width = 1;
	XkbMapChangesRec changes;
	memset(&changes, 0, sizeof(changes));
	changes.changed = XkbKeySymsMask;
	changes.first_key_sym = (KeyCode)kc;
	changes.num_key_syms = 1;
	XkbChangeMap(self->x.dpy, self->xkb, &changes);
	bool refused = input__sync(self) == -EINVAL;
	/* Back to what it was: empty, in the server and in our copy. */
	memcpy(sm->kt_index, k->orig_kt, sizeof(k->orig_kt));
	sm->group_info = k->orig_group_info;
	sm->width = k->orig_width;
	XkbResizeKeySyms(self->xkb, kc, 0);
	core_bind(self, kc, NoSymbol);
	input__sync(self);
	if (!refused)
		return;
	self->core_maps = true;
	self->levels = 1;
	self->slot_groups = 1;
	self->n_slots = 0;
	for (int i = 0; i < self->n_pool; i++)
		self->slots[self->n_slots++] = (struct slot){ .key = i, .level = 0 };
	log_debug("input: the X server refuses XKB bindings (Xwayland?): %d spare keys bound "
			"through the core protocol, one symbol each", self->n_pool);
}

/* input__bind_slots through the core protocol (core_maps). */
static int bind_core(struct input_x11* self, const int* slot, const KeySym* syms, int n)
{
	for (int i = 0; i < n; i++) {
		struct slot* sl = &self->slots[slot[i]];
		struct pool_key* k = &self->pool[sl->key];
		if (!k->bound)
			input__claim_note(self, k);
		core_bind(self, k->kc, syms[i]);
		k->bound = true;
		sl->sym = syms[i];
	}
	self->binds++;
	int rc = input__sync(self);
	if (rc == 0 && self->bind_wait_ms)
		clock_sleep_ms(self->bind_wait_ms);
	return rc;
}

int input__bind_slots(struct input_x11* self, const int* slot, const KeySym* syms, int n)
{
	if (n <= 0)
		return 0;
	if (self->core_maps)
		return bind_core(self, slot, syms, n);
	for (int i = 0; i < n; i++) {
		struct slot* sl = &self->slots[slot[i]];
		struct pool_key* k = &self->pool[sl->key];
		int kc = k->kc;
		XkbSymMapPtr sm = &self->xkb->map->key_sym_map[kc];
		/* A key gets its other groups only when a slot there is used:
		 * the keyboard has 4 groups while such a key is bound. */
		int groups = sl->group > 0 ? self->slot_groups : 1;
		int have = k->bound && XkbKeyKeyTypeIndex(self->xkb, kc, 0) == self->type_index
				&& XkbKeyNumSyms(self->xkb, kc) == self->levels * XkbKeyNumGroups(self->xkb, kc)
				? XkbKeyNumGroups(self->xkb, kc) : 0;
		if (have < groups) {
			/* Group 1's symbols stay as they are when the key widens. */
			KeySym keep[MAX_LEVELS];
			for (int l = 0; l < self->levels; l++)
				keep[l] = have ? XkbKeySymsPtr(self->xkb, kc)[l] : NoSymbol;
			/* Room first (while the key still has fewer symbols), then
			 * the explicit type: TWO_LEVEL or FOUR_LEVEL in each group. */
			int width = self->levels * groups;
			KeySym* p = XkbResizeKeySyms(self->xkb, kc, width);
			if (!p)
				return -ENOMEM;
			for (int l = 0; l < width; l++)
				p[l] = l < self->levels ? keep[l] : NoSymbol;
			for (int g = 0; g < XkbNumKbdGroups; g++)
				sm->kt_index[g] = (unsigned char)self->type_index;
			sm->group_info = XkbSetGroupInfo(groups, XkbWrapIntoRange, 0);
			sm->width = (unsigned char)self->levels;
			if (!k->bound)
				input__claim_note(self, k);	/* before the binding goes out */
			k->bound = true;
			/* Its other levels are empty now (kept: group 1's when it
			 * widened): free them. */
			for (int s = 0; s < self->n_slots; s++)
				if (self->slots[s].key == sl->key && (!have || self->slots[s].group > 0))
					self->slots[s].sym = NoSymbol;
		}
		XkbKeySymsPtr(self->xkb, kc)[sl->group * self->levels + sl->level] = syms[i];
		sl->sym = syms[i];
	}
	/* The other slots of keys bound just now, freed above, may have held
	 * symbols of this very call: put back those given in this request. */
	for (int i = 0; i < n; i++) {
		struct slot* sl = &self->slots[slot[i]];
		sl->sym = syms[i];
		XkbKeySymsPtr(self->xkb, self->pool[sl->key].kc)[sl->group * self->levels + sl->level]
				= syms[i];
	}
	send_range(self);
	int rc = input__sync(self);
	if (rc < 0)
		return rc;
	/* Clients get the MapNotify before our keys, but some (Chromium)
	 * translate the first key after a change with the old binding unless
	 * they had a moment to fetch the new one. */
	if (self->bind_wait_ms)
		clock_sleep_ms(self->bind_wait_ms);
	/* Announce the same binding once more. A plain Xlib client can miss
	 * the first MapNotify for good: at its first key lookup it fetches
	 * the whole map and only then selects MapNotify, and at a later
	 * lookup it fetches the noted changes and then forgets all notes,
	 * including one that came in while the fetch was on its way. Keys we
	 * had just sent start such a fetch, so a binding right after them
	 * (the next action, the next call) falls into that window, and the
	 * key stays NoSymbol in that client until the key is bound anew.
	 * By now (bind_wait_ms later) its fetch is over: this notify it
	 * notes, and it fetches the binding at the key that uses it. */
	send_range(self);
	return input__sync(self);
}

void input__restore_pool(struct input_x11* self)
{
	if (self->core_maps) {
		for (int i = 0; i < self->n_pool; i++)
			if (self->pool[i].bound)
				core_bind(self, self->pool[i].kc, NoSymbol);	/* spare keys were empty */
		for (int i = 0; i < self->n_pool; i++)
			self->pool[i].bound = false;
		for (int s = 0; s < self->n_slots; s++)
			self->slots[s].sym = NoSymbol;
		input__sync(self);
		return;
	}
	int lo = 256, hi = -1;
	for (int i = 0; i < self->n_pool; i++) {
		struct pool_key* k = &self->pool[i];
		if (!k->bound)
			continue;
		int kc = k->kc;
		XkbSymMapPtr sm = &self->xkb->map->key_sym_map[kc];
		KeySym* p = k->orig_n ? XkbResizeKeySyms(self->xkb, kc, k->orig_n) : NULL;
		memcpy(sm->kt_index, k->orig_kt, sizeof(k->orig_kt));
		sm->group_info = k->orig_group_info;
		sm->width = k->orig_width;
		if (k->orig_n == 0)
			XkbResizeKeySyms(self->xkb, kc, 0);
		else if (p)
			memcpy(XkbKeySymsPtr(self->xkb, kc), k->orig_syms,
					sizeof(KeySym) * (size_t)k->orig_n);
		k->bound = false;
		if (kc < lo)
			lo = kc;
		if (kc > hi)
			hi = kc;
	}
	for (int s = 0; s < self->n_slots; s++)
		self->slots[s].sym = NoSymbol;
	if (hi >= lo) {
		send_range(self);
		input__sync(self);
	}
}

void input__level_keys(struct input_x11* self, int level, bool down)
{
	if ((level & 2) && self->level3_kc)
		input__fake_key(self, self->level3_kc, down);
	if ((level & 1) && self->shift_kc)
		input__fake_key(self, self->shift_kc, down);
}
