/* Spare keys a deskd left bound when it could not restore them (kill -9
 * runs no exit handler): the next deskd found them taken, had no spare
 * keys of its own and left them bound again.
 *
 * So every input context writes which pool keys it binds, and how each was
 * before, to a property of the root window (_DESKD_SPARE_KEYS), appended in
 * the same request stream before the binding itself: a context killed
 * after a binding always left its record. The owner of a record is a
 * window of the context's own connection (unmapped, InputOnly), which the
 * server destroys when that connection goes, however the process ended.
 * At its start a context puts back the keys of owners that are gone, under
 * a server grab so that no other deskd reads or writes the property
 * meanwhile, and only keys that still hold what deskd binds (a layout
 * loaded since may have given the keycode a meaning of its own); at its
 * exit, after its own restore, it removes its records. */
#include "input/x11_private.h"
#include "base/log.h"

#include <X11/Xatom.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Records are read up to this many; a property longer than that (a
 * thousand dead deskds' keys) is cut, the rest forgotten. */
#define CLAIM_MAX_RECORDS 1024

void input__claim_pack(const struct input_claim* c, long out[INPUT_CLAIM_FIELDS])
{
	out[0] = (long)c->owner;
	out[1] = c->kc;
	out[2] = (long)((unsigned long)c->kt[0] | (unsigned long)c->kt[1] << 8
			| (unsigned long)c->kt[2] << 16 | (unsigned long)c->kt[3] << 24);
	out[3] = (long)((unsigned long)c->group_info | (unsigned long)c->width << 8
			| (unsigned long)c->n << 16);
}

bool input__claim_unpack(const long in[INPUT_CLAIM_FIELDS], struct input_claim* c)
{
	unsigned long kt = (unsigned long)in[2], info = (unsigned long)in[3];
	memset(c, 0, sizeof(*c));
	c->owner = (unsigned long)in[0];
	c->kc = (int)in[1];
	for (int g = 0; g < XkbNumKbdGroups; g++)
		c->kt[g] = (unsigned char)(kt >> (8 * g));
	c->group_info = (unsigned char)info;
	c->width = (unsigned char)(info >> 8);
	c->n = (int)(info >> 16);
	/* Keycodes deskd binds, and at most the symbols a pool key may have. */
	return c->owner && c->kc >= 8 && c->kc <= 255 && c->n <= 16;
}

bool input__looks_bound(const KeySym* syms, int n)
{
	bool any = false;
	if (n < 1 || n > MAX_LEVELS * XkbNumKbdGroups)	/* a key's most: 4 groups */
		return false;
	for (int i = 0; i < n; i++) {
		KeySym s = syms[i];
		if (s == NoSymbol)
			continue;
		/* input__slot_keysym's: Latin-1 as is, else a Unicode keysym. */
		bool latin1 = (s >= 0x20 && s < 0x7f) || (s >= 0xa0 && s <= 0xff);
		bool unicode = s >= 0x01000100 && s <= 0x0110ffff;
		if (!latin1 && !unicode)
			return false;
		any = true;
	}
	return any;
}

static void claim_atoms(struct input_x11* self)
{
	if (!self->claims_atom)
		self->claims_atom = XInternAtom(self->x.dpy, "_DESKD_SPARE_KEYS", False);
	if (!self->owner_atom)
		self->owner_atom = XInternAtom(self->x.dpy, "_DESKD_INPUT", False);
}

/* Is the context that wrote records as owner still connected? Its window
 * exists and is marked as an input context's (window ids are reused once
 * a client is gone; our own id, before we wrote anything, can only be a
 * dead context's). */
static bool owner_alive(struct input_x11* self, Window owner)
{
	if (owner == self->owner)
		return false;
	int format;
	unsigned char* data = NULL;
	x11_clear(&self->x);
	long n = x11_property(self->x.dpy, owner, self->owner_atom, XA_CARDINAL, 1, &format, &data);
	if (data)
		XFree(data);
	x11_take(&self->x);	/* BadWindow: gone */
	return n >= 0;
}

/* The records in the root property (CLAIM_MAX_RECORDS at most), or NULL. */
static long* read_claims(struct input_x11* self, int* n_records)
{
	int format = 0;
	unsigned char* data = NULL;
	*n_records = 0;
	long n = x11_property(self->x.dpy, self->root, self->claims_atom, XA_CARDINAL,
			CLAIM_MAX_RECORDS * INPUT_CLAIM_FIELDS, &format, &data);
	if (n < INPUT_CLAIM_FIELDS || format != 32) {
		if (data)
			XFree(data);
		return NULL;
	}
	long* out = malloc((size_t)n * sizeof(long));
	if (out)
		memcpy(out, data, (size_t)n * sizeof(long));
	XFree(data);
	*n_records = out ? (int)(n / INPUT_CLAIM_FIELDS) : 0;
	return out;
}

static void write_claims(struct input_x11* self, const long* recs, int n_records)
{
	if (n_records == 0)
		XDeleteProperty(self->x.dpy, self->root, self->claims_atom);
	else
		XChangeProperty(self->x.dpy, self->root, self->claims_atom, XA_CARDINAL, 32,
				PropModeReplace, (const unsigned char*)recs,
				n_records * INPUT_CLAIM_FIELDS);
}

/* Put a dead owner's key back as it was before that owner bound it, in our
 * copy of the keymap (sent by the caller); false when it holds something
 * deskd does not bind (left alone). */
static bool put_back(struct input_x11* self, const struct input_claim* c)
{
	int kc = c->kc;
	if (kc < self->min_kc || kc > self->max_kc)
		return false;
	int n = XkbKeyNumSyms(self->xkb, kc);
	if (!input__looks_bound(XkbKeySymsPtr(self->xkb, kc), n))
		return false;
	XkbSymMapPtr sm = &self->xkb->map->key_sym_map[kc];
	KeySym* p = XkbResizeKeySyms(self->xkb, kc, c->n);
	if (c->n && !p)
		return false;
	memcpy(sm->kt_index, c->kt, sizeof(sm->kt_index));
	sm->group_info = c->group_info;
	sm->width = c->width;
	for (int i = 0; i < c->n; i++)
		XkbKeySymsPtr(self->xkb, kc)[i] = NoSymbol;	/* pool keys were empty */
	return true;
}

/* Send the keys put back (lo..hi) through XKB; a server that refuses XKB
 * key maps (Xwayland) gets them emptied through the core protocol. */
static int send_put_back(struct input_x11* self, const bool* back, int lo, int hi)
{
	XkbMapChangesRec changes;
	memset(&changes, 0, sizeof(changes));
	changes.changed = XkbKeySymsMask;
	changes.first_key_sym = (KeyCode)lo;
	changes.num_key_syms = (unsigned char)(hi - lo + 1);
	XkbChangeMap(self->x.dpy, self->xkb, &changes);
	int rc = input__sync(self);
	if (rc != -EINVAL)
		return rc;
	for (int kc = lo; kc <= hi; kc++) {
		if (!back[kc])
			continue;
		KeySym none[2] = { NoSymbol, NoSymbol };
		XChangeKeyboardMapping(self->x.dpy, kc, 2, none, 1);
	}
	return input__sync(self);
}

/* Under the grab: keep the live owners' records, put back the dead
 * owners' keys. How many keys were put back, or -errno. */
static int reclaim_grabbed(struct input_x11* self)
{
	int n_records = 0;
	long* recs = read_claims(self, &n_records);
	if (!recs)
		return 0;
	bool back[256] = { false };
	int lo = 256, hi = -1, kept = 0, n_back = 0;
	Window alive[8] = { 0 }, dead[8] = { 0 };	/* owners looked at (cache) */
	for (int i = 0; i < n_records; i++) {
		struct input_claim c;
		if (!input__claim_unpack(recs + i * INPUT_CLAIM_FIELDS, &c))
			continue;
		bool live = false, known = false;
		for (int k = 0; k < 8 && !known; k++) {
			if (alive[k] == c.owner)
				live = known = true;
			else if (dead[k] == c.owner)
				known = true;
		}
		if (!known) {
			live = owner_alive(self, c.owner);
			Window* cache = live ? alive : dead;
			memmove(cache + 1, cache, 7 * sizeof(Window));
			cache[0] = c.owner;
		}
		if (live) {
			memmove(recs + kept * INPUT_CLAIM_FIELDS, recs + i * INPUT_CLAIM_FIELDS,
					INPUT_CLAIM_FIELDS * sizeof(long));
			kept++;
		} else if (!back[c.kc] && put_back(self, &c)) {
			back[c.kc] = true;
			n_back++;
			lo = c.kc < lo ? c.kc : lo;
			hi = c.kc > hi ? c.kc : hi;
		}
	}
	write_claims(self, recs, kept);
	free(recs);
	int rc = n_back ? send_put_back(self, back, lo, hi) : input__sync(self);
	return rc < 0 ? rc : n_back;
}

int input__reclaim(struct input_x11* self)
{
	claim_atoms(self);
	XSetWindowAttributes attr = { .override_redirect = True };
	self->owner = XCreateWindow(self->x.dpy, self->root, -1, -1, 1, 1, 0, 0, InputOnly,
			CopyFromParent, CWOverrideRedirect, &attr);
	long pid = (long)getpid();
	XChangeProperty(self->x.dpy, self->owner, self->owner_atom, XA_CARDINAL, 32,
			PropModeReplace, (const unsigned char*)&pid, 1);
	int rc = input__sync(self);
	if (rc < 0) {
		/* No owner window: record nothing, or the next deskd would take
		 * our keys for a dead one's. */
		self->owner = 0;
		return rc;
	}
	XGrabServer(self->x.dpy);
	int n = reclaim_grabbed(self);
	XUngrabServer(self->x.dpy);
	rc = input__sync(self);
	if (n > 0)
		log_info("input: put back %d spare keycodes that a deskd which is gone "
				"(killed?) left bound", n);
	if (n < 0)
		return n;
	if (rc < 0)
		return rc;
	return n ? input__load_keymap(self) : 0;
}

void input__claim_note(struct input_x11* self, const struct pool_key* k)
{
	if (!self->owner)
		return;
	struct input_claim c = { .owner = self->owner, .kc = k->kc,
		.group_info = k->orig_group_info, .width = k->orig_width, .n = k->orig_n };
	memcpy(c.kt, k->orig_kt, sizeof(c.kt));
	long rec[INPUT_CLAIM_FIELDS];
	input__claim_pack(&c, rec);
	XChangeProperty(self->x.dpy, self->root, self->claims_atom, XA_CARDINAL, 32,
			PropModeAppend, (const unsigned char*)rec, INPUT_CLAIM_FIELDS);
}

void input__claim_end(struct input_x11* self)
{
	if (!self->owner)
		return;
	XGrabServer(self->x.dpy);
	int n_records = 0;
	long* recs = read_claims(self, &n_records);
	int kept = 0;
	for (int i = 0; recs && i < n_records; i++) {
		if ((Window)(unsigned long)recs[i * INPUT_CLAIM_FIELDS] == self->owner)
			continue;
		memmove(recs + kept * INPUT_CLAIM_FIELDS, recs + i * INPUT_CLAIM_FIELDS,
				INPUT_CLAIM_FIELDS * sizeof(long));
		kept++;
	}
	if (recs)
		write_claims(self, recs, kept);
	free(recs);
	XUngrabServer(self->x.dpy);
	XDestroyWindow(self->x.dpy, self->owner);
	self->owner = 0;
	input__sync(self);
}
