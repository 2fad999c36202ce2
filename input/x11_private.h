#pragma once

/* Private to input/: the X11 input context, shared by x11.c (connection,
 * errors, pointer, chords, focus), keymap.c (keymap, spare keycodes),
 * fetchwatch.c (the RECORD watcher of other clients' keymap fetches) and
 * type.c (typing). */

#include "input/input.h"
#include "x11/x11.h"

#include <X11/Xlib.h>
#include <X11/Xlibint.h>
#include <X11/Xutil.h>
#include <X11/extensions/XTest.h>
#include <X11/extensions/record.h>
#include <X11/extensions/XKB.h>
#include <X11/keysym.h>
#include <xkbcommon/xkbcommon.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define MAX_SPARES 64
#define DRAG_STEP_PX 16
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
	struct x11_conn x;	/* the connection (x.dpy), its errors trapped */
	Window root;
	int width, height;

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
	struct x11_conn rec;	/* the watcher's own connection */
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

/* x11.c */
void input__fake_key(struct input* self, KeyCode kc, bool down);
int input__sync(struct input* self);

/* keymap.c */
int input__load_keymap(struct input* self);
int input__refresh_keymap(struct input* self);
bool input__find_key(struct input* self, KeySym sym, KeyCode* kc, bool* shift);
bool input__key_is_alpha(struct input* self, KeyCode kc);
KeySym input__pair_lower(KeySym sym, KeySym* upper);
void input__find_spares(struct input* self);
bool input__spare_stale_for(struct input* self, const struct spare* sp, XID client);
/** Bind the spares flagged in change[] for the focus client (cur_client):
 *  wait until it is ready for them, send, wait bind_wait_ms, and confirm
 *  it fetched them (sending again what it missed). */
void input__bind(struct input* self, const bool* change);
int input__pick_victim(struct input* self, const bool* needed);
bool input__restore_spares(struct input* self, bool wait);
void* input__restorer_main(void* data);

/* fetchwatch.c */
struct fetcher* input__fetcher_for(struct input* self, XID base, bool create);
void input__fetchwatch_start(struct input* self, const char* display_name);
void input__fetchwatch_stop(struct input* self);
XID input__focus_client(struct input* self);
