#pragma once

/* Private to input/: the X11 input context (behind input_private.h's ops), shared by x11.c (connection,
 * errors, pointer, chords, focus), keymap.c (the keymap, the pool of spare
 * slots, the locks around typing), barrier.c (when a slot may be bound
 * anew: _NET_WM_PING answers and quarantines), reclaim.c (the records of
 * bound pool keys, and putting back a killed deskd's) and type.c (typing). */

#include "input/input_private.h"
#include "x11/x11.h"

#include <X11/Xlib.h>
#include <X11/Xlibint.h>
#include <X11/Xutil.h>
#include <X11/XKBlib.h>
#include <X11/extensions/XTest.h>
#include <X11/extensions/XKB.h>
#include <X11/keysym.h>
#include <xkbcommon/xkbcommon.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define MAX_POOL_KEYS 64	/* spare keycodes */
#define MAX_LEVELS 4
/* A pool smaller than this gets more groups per spare key (at most 4). */
#define POOL_SLOTS_WANTED 192
#define MAX_SLOTS (MAX_POOL_KEYS * MAX_LEVELS * XkbNumKbdGroups)
#define DRAG_STEP_PX 16
/* Entries of the keysym table: 4 groups x 248 keys x 2 levels fit twice. */
#define KEY_TABLE_SIZE 4096
/* A slot whose last key went to a client without _NET_WM_PING: rebound
 * only QUARANTINE_MS (plus 1 ms per key of that call) after its last key. */
#define QUARANTINE_MS 3000
/* A ping unanswered this long: the client is hung or gone; time rules. */
#define PING_GIVE_UP_MS 20000
/* The longest a call waits for one slot to drain before giving up. */
#define DRAIN_WAIT_MAX_MS 25000
/* The longest typing waits for a client to catch up (input__catch_up)
 * before it sends the next key anyway. */
#define CATCH_UP_MAX_MS 2000
/* How often a caller that waits for ping answers looks again. */
#define DRAIN_POLL_MS 10
/* At exit, the longest wait for bound slots to drain before the restore. */
#define EXIT_DRAIN_MS 1500
/* After a click, the longest wait for the pointer to be released and
 * thawed (openbox freezes it until it replays the press). */
#define POINTER_SETTLE_MS 500
/* The server time between a key's release and its next press (x11.c). */
#define REPEAT_GAP_MS 1

/* A spare keycode of the pool: empty when input started (its original
 * state is kept to restore it exactly at exit). */
struct pool_key {
	KeyCode kc;
	unsigned char orig_kt[XkbNumKbdGroups];
	unsigned char orig_group_info, orig_width;
	int orig_n;		/* its keysyms when input started */
	KeySym orig_syms[16];
	bool bound;		/* we changed it (restore at exit) */
};

/* One level of a spare keycode. */
struct slot {
	int key;		/* index into pool[] */
	int level;		/* 0: plain, 1: Shift, 2: Level3, 3: both */
	int group;		/* the spare key's group (the keyboard's, locked) */
	KeySym sym;		/* NoSymbol when free */
	int64_t used_ms;	/* last key sent on it (server-synced); 0 never */
	int64_t quarantine_ms;	/* drained by time once now >= this */
	Window ping_win;	/* client window pinged after its last key; 0 none */
	uint64_t ping_seq;	/* the ping that drains it */
	uint64_t segment;	/* the segment that last used it */
};

struct input_x11 {
	struct input head;	/* first: the ops and the one mutex */
	struct x11_conn x;	/* the connection (x.dpy), its errors trapped */
	Window root;
	int width, height;

	int min_kc, max_kc, per;
	KeySym* map;		/* core map, (max_kc - min_kc + 1) * per */
	XkbDescPtr xkb;		/* XKB types and key symbol maps */
	KeyCode shift_kc, level3_kc;
	int groups;		/* the keymap's groups (the most any key has) */
	/* What input__find_key_in finds, by keysym and group (built with the
	 * keymap: a text off the keymap looked each character up on every
	 * key). Open addressing; kc 0 is an empty entry. */
	struct key_entry {
		KeySym sym;
		unsigned char kc, group;
		bool shift;
	} keys_by_sym[KEY_TABLE_SIZE];
	bool in_pool[256];	/* keycode is a spare (never a keymap key) */
	struct pool_key pool[MAX_POOL_KEYS];
	int n_pool;
	int levels;		/* 2 or 4 */
	int slot_groups;	/* groups per spare key: 1, or up to 4 on a small pool */
	int type_index;		/* TWO_LEVEL or FOUR_LEVEL */
	struct slot slots[MAX_SLOTS];
	int n_slots;
	uint64_t segment;	/* counts typing segments */
	int bind_wait_ms;
	int64_t binds;		/* XKB binding requests sent */
	/* The server refuses XKB key symbol maps (Xwayland answers BadValue to
	 * every XkbSetMap that binds a symbol): spare keys are bound through
	 * the core protocol instead, one symbol each (levels 1, the symbol on
	 * both core levels). */
	bool core_maps;

	/* _NET_WM_PING answers arrive on this connection (it selects
	 * SubstructureNotify on the root); drained by the drainer thread and
	 * whenever a slot's barrier is checked. */
	Atom wm_protocols, net_wm_ping;
	uint64_t ping_seq;	/* the last ping sent */
	struct {
		Window win;
		uint64_t answered;	/* highest seq answered */
	} answers[16];
	int xkb_event;		/* the XKB extension's event code */
	/* The library quirks of the last focus window's process (barrier.c),
	 * read once per window. */
	Window libs_window;
	unsigned libs_quirks;
	bool map_stale;		/* a MappingNotify or XKB map change came: reload the keymap */
	pthread_cond_t cond;	/* wakes the drainer */
	pthread_t drainer;
	bool stop;

	/* Which pool keys this context bound, on the root (reclaim.c). */
	Window owner;		/* ours: the records' owner, gone with the connection */
	Atom claims_atom, owner_atom;

	bool keys_down[256];
	KeyCode last_release;	/* the last key event sent was its release; 0 not */
	int64_t release_ns;	/* when it was sent (base/clock.h ns) */
	bool buttons_down[16];
};

/* x11.c */
void input__fake_key(struct input_x11* self, KeyCode kc, bool down);
int input__sync(struct input_x11* self);
/** Before a call's events: a round trip (they go out only while the server
 *  answers). 0 or -ECONNRESET. */
int input__ready(struct input_x11* self);

/* keymap.c */
int input__load_keymap(struct input_x11* self);
int input__refresh_keymap(struct input_x11* self);
/** Find sym on the keymap (the pool excluded) in the keyboard's group
 *  group: a key that gives it with no modifier, else with Shift (*shift). */
bool input__find_key_in(struct input_x11* self, KeySym sym, int group, KeyCode* kc, bool* shift);
/** The same in group first, else in another group (*group: which; may be
 *  NULL). */
bool input__find_key(struct input_x11* self, KeySym sym, int first, KeyCode* kc, bool* shift,
		int* group);
/* The locks (modifiers, group) a call types past, to put back after it. */
struct input_locks {
	unsigned mods;		/* locked modifiers the call unlocked; 0 none */
	int group;		/* the locked group it reset to the first; 0 none */
	int now;		/* the group locked while the call types */
};
/** Unlock every locked modifier (Caps Lock, NumLock, level locks) and the
 *  locked group for a call's keys: the keys then mean what the keymap's
 *  first level(s) say. One round trip; saved is for input__relock. */
int input__unlock(struct input_x11* self, struct input_locks* saved);
/** Lock group g for the keys that follow (a key found in that group); no
 *  request when it is locked already. */
void input__lock_group(struct input_x11* self, struct input_locks* saved, int g);
/** Lock again what input__unlock unlocked (and the group as it was). */
void input__relock(struct input_x11* self, const struct input_locks* saved);
/** The keysym a character is bound with on a slot: its Unicode keysym
 *  (Latin-1 as is), so every toolkit maps it back the same way. */
KeySym input__slot_keysym(uint32_t cp);
void input__find_pool(struct input_x11* self);
int input__slot_of(struct input_x11* self, KeySym sym);
/** Bind syms[i] to slots[slot[i]] for i < n in one XKB request, then wait
 *  bind_wait_ms. */
int input__bind_slots(struct input_x11* self, const int* slot, const KeySym* syms, int n);
/** Put every pool key back as it was when input started. */
void input__restore_pool(struct input_x11* self);
/** Press or release what selects a slot's level (Shift, Level3). */
void input__level_keys(struct input_x11* self, int level, bool down);

/* reclaim.c */
#define INPUT_CLAIM_FIELDS 4
/** A record of _DESKD_SPARE_KEYS: a pool key a context bound, and how it
 *  was before (its types, group info, width and number of symbols, all
 *  NoSymbol: pool keys are empty). */
struct input_claim {
	unsigned long owner;	/* the context's window */
	int kc;
	unsigned char kt[XkbNumKbdGroups];
	unsigned char group_info, width;
	int n;
};
void input__claim_pack(const struct input_claim* c, long out[INPUT_CLAIM_FIELDS]);
/** false: not a record deskd writes (dropped). */
bool input__claim_unpack(const long in[INPUT_CLAIM_FIELDS], struct input_claim* c);
/** Does a key hold only what deskd binds on a slot (input__slot_keysym's
 *  symbols, at least one)? */
bool input__looks_bound(const KeySym* syms, int n);
/** At start, before the pool is looked for: our owner window, and the keys
 *  of contexts that are gone put back. How many were, or -errno. */
int input__reclaim(struct input_x11* self);
/** Before the first binding of pool key k: record it (one request). */
void input__claim_note(struct input_x11* self, const struct pool_key* k);
/** At exit, after the pool's restore: remove our records. */
void input__claim_end(struct input_x11* self);

/* type.c */
/** The type operation (input_type, input_type_some), mutex held. */
int input__x11_type(struct input* in, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset, size_t* done,
		int* wait_ms);
/** Slots on level and group (-1 any) for syms[0..n) (n <= INPUT_MAX_CHORD)
 *  in segment seg: those bound already, others bound now in one request
 *  (*bound: how many). */
int input__slots_for(struct input_x11* self, const KeySym* syms, int n, int level, int group,
		int* out, uint64_t seg, int* bound);

/* barrier.c */
/** The client window that gets key events now (the focus, or the window
 *  under the pointer on PointerRoot), 0 when none; and whether it answers
 *  _NET_WM_PING. */
Window input__key_target(struct input_x11* self, bool* pings);
/* What a client needs of typing (input__client_quirks). */
enum {
	/* Before a character above U+FFFF that follows others: wait until
	 * the client took the keys before it (a _NET_WM_PING answered). */
	INPUT_QUIRK_CATCH_UP_ASTRAL = 1 << 0,
};
/** The quirks (these and input.h's INPUT_CLIENT_*) of the client of window
 *  w, by the WM_CLASS of w and the windows above it, and by the libraries
 *  its process maps (Qt 5). */
unsigned input__client_quirks(struct input_x11* self, Window w);
/** Ping target and wait (at most timeout_ms) for its answer: it has handled
 *  every event sent before. 0, -ETIMEDOUT, -ENOENT (window gone) or
 *  -ECONNRESET. */
int input__catch_up(struct input_x11* self, Window target, int timeout_ms);
/** After a segment's keys went out to target: ping it (when it pings) and
 *  mark the slots of this segment with the barrier that drains them. */
void input__after_keys(struct input_x11* self, uint64_t segment, Window target,
		bool pings, size_t keys);
/** Has the slot drained: may it be bound anew now? */
bool input__slot_drained(struct input_x11* self, const struct slot* sl, int64_t now);
/** Read pending events: ping answers, and MappingNotify (map_stale). */
void input__drain_events(struct input_x11* self);
void* input__drainer_main(void* data);
