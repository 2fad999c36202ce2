/* XTest pointer and keyboard on our own X connection: input/'s X11
 * backend (its ops table is at the end; input.c takes the mutex).
 *
 * Errors: x11/ traps them on this connection only (its per-display error
 * vector, never the process-wide handler, let alone Xlib's default one that
 * exits); a lost connection marks it lost through its IO exit handler
 * instead of exiting. */
#include "input/x11_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How recent an answer spares input__ready its round trip (ms). */
#define INPUT_READY_FRESH_MS 20

static void settle_pointer(struct input_x11* self);

static void fake_button(struct input_x11* self, int button, bool down)
{
	XTestFakeButtonEvent(self->x.dpy, (unsigned)button, down, CurrentTime);
	self->buttons_down[button] = down;
}

/* A press of the key whose release was the last key event sent must get a
 * later server timestamp: LibreOffice's X11 backend takes a release
 * followed by a press of the same keycode with the same timestamp and
 * state for autorepeat and drops the pair (PITFALLS 27d), and XTest events
 * sent within a millisecond share one. No real keyboard types a key twice
 * within a millisecond.
 * - A round trip answered after that release shows the server stamped it
 *   by then: the press waits here for what is left of REPEAT_GAP_MS since
 *   the answer (elapsed time only, so the server's clock need not be ours;
 *   an agent's repeated keypress pays nothing or a fraction of it).
 * - Otherwise (a doubled letter in one call) it goes out with XTest's
 *   delay of REPEAT_GAP_MS, so the server stamps it later. */
void input__fake_key(struct input_x11* self, KeyCode kc, bool down)
{
	unsigned long delay = 0;
	if (down && self->last_release == kc) {
		if (self->x.answered_ns > self->release_ns)
			clock_sleep_ns(self->x.answered_ns + (int64_t)REPEAT_GAP_MS * 1000000 - clock_ns());
		else
			delay = REPEAT_GAP_MS;
	}
	XTestFakeKeyEvent(self->x.dpy, kc, down, delay);
	self->keys_down[kc] = down;
	self->last_release = down ? 0 : kc;
	if (!down)
		self->release_ns = clock_ns();
}

/* Wait for the server to process everything sent; report trapped errors. */
int input__sync(struct input_x11* self)
{
	return x11_errno(x11_sync(&self->x));
}

/* Before a call sends events: a round trip, so they go out only while the
 * server answers. Events written to a stopped server wait in the socket
 * and would all run when it goes on, long after the caller gave up (R5);
 * with the round trip first, a stop before the call blocks here, with
 * nothing of the call sent, until the hang detector aborts the connection
 * (-ECONNRESET). Errors recorded before belong to earlier requests and are
 * dropped. 0 or -ECONNRESET. */
int input__ready(struct input_x11* self)
{
	if (x11_lost(&self->x))
		return -ECONNRESET;
	/* The server answered this connection a moment ago (the previous
	 * action of a batch, a call just before): it was not stopped then.
	 * Saves a round trip per action. The cost: a server stopped within
	 * this window runs the call's events when it goes on, although the
	 * call was aborted (Xvfb still reads what was written before our
	 * shutdown; test_x11 saw the move land). */
	if (clock_ns() - self->x.answered_ns < (int64_t)INPUT_READY_FRESH_MS * 1000000)
		return 0;
	int rc = x11_sync(&self->x);
	return rc < 0 ? rc : 0;
}

/* ---- public ---- */

static const struct input_ops x11_ops;

struct input* input__x11_new(const char* display_name, char* err, size_t err_size)
{
	struct input_x11* self = calloc(1, sizeof(*self));
	if (!self) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	input__head_init(&self->head, &x11_ops);
	pthread_condattr_t cattr;
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&self->cond, &cattr);
	pthread_condattr_destroy(&cattr);
	self->bind_wait_ms = INPUT_BIND_WAIT_MS;

	if (!x11_open(&self->x, display_name)) {
		snprintf(err, err_size, "cannot open display %s",
				display_name ? display_name : "(default)");
		goto open_failure;
	}

	int ev, er, major, minor;
	if (!XTestQueryExtension(self->x.dpy, &ev, &er, &major, &minor)) {
		snprintf(err, err_size, "the X server has no XTEST extension");
		goto xtest_failure;
	}
	int xkb_op, xkb_ev, xkb_er, xkb_major = XkbMajorVersion, xkb_minor = XkbMinorVersion;
	if (!XkbQueryExtension(self->x.dpy, &xkb_op, &xkb_ev, &xkb_er, &xkb_major, &xkb_minor)) {
		snprintf(err, err_size, "the X server has no XKEYBOARD extension");
		goto xtest_failure;
	}
	/* setxkbmap loads a new keymap with the same keycodes: no core
	 * MappingNotify then, only XKB's notifies (input__drain_events). */
	self->xkb_event = xkb_ev;
	XkbSelectEvents(self->x.dpy, XkbUseCoreKbd, XkbNewKeyboardNotifyMask | XkbMapNotifyMask,
			XkbNewKeyboardNotifyMask | XkbMapNotifyMask);
	XTestGrabControl(self->x.dpy, True);	/* act even during other clients' grabs */
	int screen = DefaultScreen(self->x.dpy);
	self->root = RootWindow(self->x.dpy, screen);
	self->width = DisplayWidth(self->x.dpy, screen);
	self->height = DisplayHeight(self->x.dpy, screen);
	self->wm_protocols = XInternAtom(self->x.dpy, "WM_PROTOCOLS", False);
	self->net_wm_ping = XInternAtom(self->x.dpy, "_NET_WM_PING", False);
	/* _NET_WM_PING answers go to the root with SubstructureNotify (GTK)
	 * or StructureNotify (Qt) in the mask. */
	XSelectInput(self->x.dpy, self->root, SubstructureNotifyMask | StructureNotifyMask);
	XDisplayKeycodes(self->x.dpy, &self->min_kc, &self->max_kc);
	if (input__load_keymap(self) < 0) {
		snprintf(err, err_size, "cannot read the keyboard map");
		goto xtest_failure;
	}
	/* Keys a killed deskd left bound are spare keys again. */
	int put_back = input__reclaim(self);
	if (put_back < 0)
		log_warn("input: cannot put back spare keycodes left bound: %s", strerror(-put_back));
	input__find_pool(self);
	if (input__sync(self) < 0) {
		snprintf(err, err_size, "X error while setting up input");
		goto xtest_failure;
	}
	if (pthread_create(&self->drainer, NULL, input__drainer_main, self) != 0) {
		snprintf(err, err_size, "cannot start a thread");
		goto xtest_failure;
	}
	return &self->head;

xtest_failure:
	if (self->map)
		XFree(self->map);
	if (self->xkb)
		XkbFreeKeyboard(self->xkb, 0, True);
	x11_close(&self->x);
open_failure:
	pthread_cond_destroy(&self->cond);
	pthread_mutex_destroy(&self->head.mutex);
	free(self);
	return NULL;
}

/* At exit: give clients a moment to work through keys on bound slots
 * (bounded), then put the pool back exactly as it was. */
static void restore_at_exit(struct input_x11* self)
{
	int64_t end = clock_ms() + EXIT_DRAIN_MS;
	for (;;) {
		input__drain_events(self);
		int64_t now = clock_ms();
		bool all = true;
		for (int i = 0; i < self->n_slots && all; i++)
			if (!input__slot_drained(self, &self->slots[i], now))
				all = false;
		if (all || now >= end || x11_lost(&self->x))
			break;
		clock_sleep_ms(5);
	}
	if (!x11_lost(&self->x)) {
		input__restore_pool(self);
		input__claim_end(self);
	}
}

static void x11_destroy(struct input* in)
{
	struct input_x11* self = (struct input_x11*)in;
	pthread_mutex_lock(&self->head.mutex);
	self->stop = true;
	pthread_cond_signal(&self->cond);
	pthread_mutex_unlock(&self->head.mutex);
	pthread_join(self->drainer, NULL);

	pthread_mutex_lock(&self->head.mutex);
	if (!x11_lost(&self->x)) {
		for (int b = 1; b < 16; b++)
			if (self->buttons_down[b])
				XTestFakeButtonEvent(self->x.dpy, (unsigned)b, False, CurrentTime);
		for (int k = 255; k > 0; k--)
			if (self->keys_down[k])
				XTestFakeKeyEvent(self->x.dpy, (unsigned)k, False, CurrentTime);
		input__sync(self);
		/* Our own MappingNotify events, or another client's change. */
		input__refresh_keymap(self);
		restore_at_exit(self);
	}
	if (self->map)
		XFree(self->map);
	if (self->xkb)
		XkbFreeKeyboard(self->xkb, 0, True);
	x11_close(&self->x);
	pthread_mutex_unlock(&self->head.mutex);
	pthread_cond_destroy(&self->cond);
}

/* ---- the operations (input.c holds the mutex) ---- */

static struct input_x11* x11_of(struct input* in)
{
	return (struct input_x11*)in;
}

static bool x11_alive(struct input* in)
{
	return !x11_lost(&x11_of(in)->x);
}

bool input__x11_window_focused(struct input* in)
{
	struct input_x11* self = x11_of(in);
	Window focus = None;
	int revert;
	pthread_mutex_lock(&in->mutex);
	if (!x11_lost(&self->x))
		XGetInputFocus(self->x.dpy, &focus, &revert);
	pthread_mutex_unlock(&in->mutex);
	return focus != None && focus != PointerRoot && focus != self->root;
}

static void x11_set_timing(struct input* in, int bind_wait_ms)
{
	x11_of(in)->bind_wait_ms = bind_wait_ms < 0 ? 0 : bind_wait_ms;
}

static int x11_spare_keycodes(struct input* in)
{
	return x11_of(in)->n_pool;
}

static int x11_spare_slots(struct input* in)
{
	return x11_of(in)->n_slots;
}

static int x11_screen_size(struct input* in, int* width, int* height)
{
	struct input_x11* self = x11_of(in);
	*width = self->width;
	*height = self->height;
	return x11_lost(&self->x) ? -ECONNRESET : 0;
}

static int x11_cursor_position(struct input* in, int* x, int* y)
{
	struct input_x11* self = x11_of(in);
	if (x11_lost(&self->x))
		return -ECONNRESET;
	int rc = -ECONNRESET;
	Window root, child;
	int wx, wy;
	unsigned mask;
	if (XQueryPointer(self->x.dpy, self->root, &root, &child, x, y,
			&wx, &wy, &mask) && !x11_lost(&self->x))
		rc = 0;
	int e = input__sync(self);
	return rc == 0 ? e : rc;
}

static int x11_move(struct input* in, int x, int y)
{
	struct input_x11* self = x11_of(in);
	int rc = input__ready(self);
	if (rc == 0) {
		XTestFakeMotionEvent(self->x.dpy, -1, x, y, CurrentTime);
		rc = input__sync(self);
	}
	return rc;
}

static int x11_button(struct input* in, int button, bool down)
{
	struct input_x11* self = x11_of(in);
	int rc = input__ready(self);
	if (rc == 0) {
		fake_button(self, button, down);
		rc = input__sync(self);
		if (rc == 0)
			settle_pointer(self);
	}
	return rc;
}

/* The motion and the button go out together: requests on one connection
 * run in order, so the press lands where the motion put the pointer. */
static int x11_button_at(struct input* in, int x, int y, int button, bool down)
{
	struct input_x11* self = x11_of(in);
	int rc = input__ready(self);
	if (rc == 0) {
		XTestFakeMotionEvent(self->x.dpy, -1, x, y, CurrentTime);
		fake_button(self, button, down);
		rc = input__sync(self);
		if (rc == 0)
			settle_pointer(self);
	}
	return rc;
}

/* Modifiers (or any keymap keys) down in order, or up in reverse. */
static int mods_locked(struct input_x11* self, const struct input_chord* mods,
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
		if (!input__find_key(self, mods->keysyms[i], 0, &kcs[i], &shift, NULL))
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

static int x11_modifiers(struct input* in, const struct input_chord* mods,
		bool down)
{
	struct input_x11* self = x11_of(in);
	int rc = input__ready(self);
	if (rc == 0) {
		rc = mods_locked(self, mods, down);
		int e = input__sync(self);
		if (rc == 0)
			rc = e;
	}
	return rc;
}

/* Press and release a button count times. */
static void fake_clicks(struct input_x11* self, int button, int count)
{
	for (int i = 0; i < count; i++) {
		fake_button(self, button, true);
		fake_button(self, button, false);
	}
}

/* Wait (bounded) until the server shows every button we do not hold as
 * released. A window manager's synchronous grab (openbox, click to focus)
 * freezes the pointer at a press until it replays it; events queued
 * meanwhile are delivered where the sprite is when it thaws, so the next
 * motion must wait, or the click lands at the next action's position. */
static void settle_pointer(struct input_x11* self)
{
	unsigned held = 0;
	for (int b = 1; b <= 5; b++)
		if (self->buttons_down[b])
			held |= Button1Mask << (b - 1);
	const unsigned buttons = Button1Mask | Button2Mask | Button3Mask
			| Button4Mask | Button5Mask;
	int64_t end = clock_ms() + POINTER_SETTLE_MS;
	for (;;) {
		Window root, child;
		int rx, ry, wx, wy;
		unsigned mask = 0;
		if (!XQueryPointer(self->x.dpy, self->root, &root, &child, &rx, &ry,
				&wx, &wy, &mask) || x11_lost(&self->x))
			return;
		if (!(mask & buttons & ~held) || clock_ms() >= end)
			return;
		clock_sleep_ms(1);
	}
}

/* Pointer actions with the chord's modifiers held: press them, act, always
 * release them, then sync; the first error wins. */

static int with_mods(struct input* in, const struct input_chord* mods,
		void (*act)(struct input_x11* self, const struct pointer_action* a),
		const struct pointer_action* a)
{
	struct input_x11* self = x11_of(in);
	int rc = input__ready(self);
	if (rc == 0) {
		rc = mods_locked(self, mods, true);
		if (rc == 0)
			act(self, a);
		mods_locked(self, mods, false);
		int e = input__sync(self);
		if (rc == 0)
			rc = e;
		if (rc == 0)
			settle_pointer(self);
	}
	return rc;
}

static void act_click(struct input_x11* self, const struct pointer_action* a)
{
	fake_clicks(self, a->button, a->count);
}

static int x11_click(struct input* self, int button, int count,
		const struct input_chord* mods)
{
	struct pointer_action a = { .button = button, .count = count };
	return with_mods(self, mods, act_click, &a);
}

static void act_drag(struct input_x11* self, const struct pointer_action* a)
{
	const int *xs = a->xs, *ys = a->ys;
	int button = a->button;
	size_t n = a->n;
	XTestFakeMotionEvent(self->x.dpy, -1, xs[0], ys[0], CurrentTime);
	fake_button(self, button, true);
	/* Flush the press before the motion so the client sees it first. */
	XSync(self->x.dpy, False);
	for (size_t i = 1; i < n; i++) {
		int dx = xs[i] - xs[i - 1], dy = ys[i] - ys[i - 1];
		int adx = dx < 0 ? -dx : dx, ady = dy < 0 ? -dy : dy;
		int steps = (adx > ady ? adx : ady) / DRAG_STEP_PX;
		for (int s = 1; s < steps; s++)
			XTestFakeMotionEvent(self->x.dpy, -1,
					xs[i - 1] + (int)((long)dx * s / steps),
					ys[i - 1] + (int)((long)dy * s / steps), CurrentTime);
		XTestFakeMotionEvent(self->x.dpy, -1, xs[i], ys[i], CurrentTime);
	}
	fake_button(self, button, false);
}

static int x11_drag(struct input* self, const int* xs, const int* ys, size_t n,
		int button, const struct input_chord* mods)
{
	struct pointer_action a = { .button = button, .xs = xs, .ys = ys, .n = n };
	return with_mods(self, mods, act_drag, &a);
}

static void act_scroll(struct input_x11* self, const struct pointer_action* a)
{
	int by = a->notches_y > 0 ? INPUT_BUTTON_WHEEL_DOWN : INPUT_BUTTON_WHEEL_UP;
	int bx = a->notches_x > 0 ? INPUT_BUTTON_WHEEL_RIGHT : INPUT_BUTTON_WHEEL_LEFT;
	fake_clicks(self, by, abs(a->notches_y));
	fake_clicks(self, bx, abs(a->notches_x));
}

static int x11_scroll(struct input* self, int notches_x, int notches_y,
		const struct input_chord* mods)
{
	struct pointer_action a = { .notches_x = notches_x, .notches_y = notches_y };
	return with_mods(self, mods, act_scroll, &a);
}

/* The slot keysym of a chord key not on the keymap: a character's Unicode
 * keysym (as typing binds it), other keysyms (XF86AudioMute) as they are. */
static KeySym chord_slot_keysym(KeySym sym)
{
	uint32_t cp = xkb_keysym_to_utf32((xkb_keysym_t)sym);
	return cp >= 0x20 && cp != 0x7f ? input__slot_keysym(cp) : sym;
}

/* The keys of a chord in group g: kcs[i], or 0 for a key not there; how
 * many are not; *need_shift when one of them gives its symbol with Shift. */
static int chord_keys_in(struct input_x11* self, const struct input_chord* chord, int g,
		KeyCode* kcs, bool* need_shift)
{
	int missing = 0;
	*need_shift = false;
	for (int i = 0; i < chord->n; i++) {
		bool shift;
		if (input__find_key_in(self, chord->keysyms[i], g, &kcs[i], &shift)) {
			*need_shift |= shift;
		} else {
			kcs[i] = 0;
			missing++;
		}
	}
	return missing;
}

/* A chord's keys are looked up in the group the keyboard is in. A key only
 * another group has (ctrl+c on ru,us: c is in the second) is sent with that
 * group locked for the chord, all of its keys found there, so the client
 * gets the named symbol on its own key, as a person who switched layouts
 * would send it. Keys on no group go on a spare key's level that the
 * chord's own modifiers select (a Shift level would add Shift to ctrl+c,
 * and ctrl+shift+x must find x on the level Shift selects). */
static int chord_locked(struct input_x11* self, const struct input_chord* chord,
		bool press, bool release)
{
	int rc = input__refresh_keymap(self);
	if (rc < 0)
		return rc;
	XkbStateRec st;
	if (XkbGetState(self->x.dpy, XkbUseCoreKbd, &st) != Success || x11_lost(&self->x))
		return x11_lost(&self->x) ? -ECONNRESET : -EIO;
	int group = st.group;
	KeyCode kcs[INPUT_MAX_CHORD];
	bool need_shift;
	int n_missing = chord_keys_in(self, chord, group, kcs, &need_shift);
	for (int g = 0; n_missing && g < self->groups; g++) {
		KeyCode alt[INPUT_MAX_CHORD];
		bool alt_shift;
		int m = g == group ? n_missing : chord_keys_in(self, chord, g, alt, &alt_shift);
		if (m < n_missing) {
			group = g;
			n_missing = m;
			need_shift = alt_shift;
			memcpy(kcs, alt, sizeof(kcs));
		}
	}
	bool has_shift = false, has_level3 = false;
	for (int i = 0; i < chord->n; i++) {
		KeySym k = chord->keysyms[i];
		has_shift |= k == XK_Shift_L || k == XK_Shift_R;
		has_level3 |= k == XK_ISO_Level3_Shift;
	}
	KeySym missing[INPUT_MAX_CHORD];
	int missing_at[INPUT_MAX_CHORD], slot_of[INPUT_MAX_CHORD];
	n_missing = 0;
	for (int i = 0; i < chord->n; i++) {
		if (kcs[i])
			continue;
		missing[n_missing] = chord_slot_keysym(chord->keysyms[i]);
		missing_at[n_missing++] = i;
	}
	int level = 0;
	uint64_t seg = 0;
	bool pings = false;
	Window target = 0;
	if (n_missing) {
		if (!(press && release))
			return -ENOENT;	/* holding needs keymap keys */
		if (self->n_slots == 0)
			return -ENOSPC;
		int want = (has_shift ? 1 : 0) | (has_level3 && self->levels > 2 ? 2 : 0);
		if (want >= self->levels)
			want = 0;
		target = input__key_target(self, &pings);
		seg = ++self->segment;
		int bound = 0;
		/* Spare keys wrap the keyboard's group into theirs. */
		rc = input__slots_for(self, missing, n_missing, want, group % self->slot_groups,
				slot_of, seg, &bound);
		if (rc < 0)
			return rc;
		for (int i = 0; i < n_missing; i++) {
			const struct slot* sl = &self->slots[slot_of[i]];
			kcs[missing_at[i]] = self->pool[sl->key].kc;
			level |= sl->level;
		}
	}
	if (need_shift && !has_shift)
		level |= 1;
	if (has_shift)
		level &= ~1;
	if (has_level3)
		level &= ~2;
	/* The group is base + latched + locked (wrapped): lock what makes it
	 * the one wanted. */
	struct input_locks locks = { .group = st.locked_group, .now = st.locked_group };
	if (group != st.group) {
		int n = self->groups;
		int lock = ((group - (int)(short)st.base_group - (int)(short)st.latched_group) % n + n) % n;
		input__lock_group(self, &locks, lock);
	}
	if (press) {
		input__level_keys(self, level, true);
		for (int i = 0; i < chord->n; i++)
			input__fake_key(self, kcs[i], true);
	}
	if (release) {
		for (int i = chord->n - 1; i >= 0; i--)
			input__fake_key(self, kcs[i], false);
		input__level_keys(self, level, false);
	}
	input__relock(self, &locks);
	if (n_missing) {
		rc = input__sync(self);
		if (rc == 0)
			input__after_keys(self, seg, target, pings, (size_t)chord->n);
	}
	return rc;
}

static int x11_keys(struct input* in, const struct input_chord* chord,
		bool press, bool release)
{
	struct input_x11* self = x11_of(in);
	int rc = input__ready(self);
	if (rc == 0) {
		rc = chord_locked(self, chord, press, release);
		int e = input__sync(self);
		if (rc == 0)
			rc = e;
	}
	return rc;
}

/* ---- windows ---- */

static int x11_focus(struct input* in, uint32_t window, int timeout_ms)
{
	struct input_x11* self = x11_of(in);
	int rc = input__ready(self);
	if (rc == 0)
		rc = x11_focus_window(&self->x, window, timeout_ms);
	return rc;
}

/* Grabbing the pointer ourselves is how X tells whether another client
 * holds it (AlreadyGrabbed); ours is let go at once. */
static int x11_wait_ungrabbed(struct input* in, int timeout_ms)
{
	struct input_x11* self = x11_of(in);
	int rc = input__ready(self);
	int64_t end = clock_ms() + timeout_ms;
	while (rc == 0) {
		int got = XGrabPointer(self->x.dpy, self->root, False, 0, GrabModeAsync,
				GrabModeAsync, None, None, CurrentTime);
		if (got == GrabSuccess) {
			XUngrabPointer(self->x.dpy, CurrentTime);
			return input__sync(self);
		}
		if (x11_lost(&self->x))
			return -ECONNRESET;
		if (clock_ms() >= end)
			return -ETIMEDOUT;
		clock_sleep_ms(20);
	}
	return rc;
}

static unsigned x11_focus_needs(struct input* in)
{
	struct input_x11* self = x11_of(in);
	if (x11_lost(&self->x))
		return 0;
	Window focus = None;
	int revert;
	XGetInputFocus(self->x.dpy, &focus, &revert);
	if (focus == None || focus == PointerRoot)
		return 0;
	return input__client_quirks(self, focus) & (INPUT_CLIENT_BMP_KEYS | INPUT_CLIENT_NO_BOM_KEYS);
}

static const struct input_ops x11_ops = {
	.name = "x11",
	.destroy = x11_destroy,
	.alive = x11_alive,
	.screen_size = x11_screen_size,
	.cursor_position = x11_cursor_position,
	.move = x11_move,
	.button = x11_button,
	.button_at = x11_button_at,
	.click = x11_click,
	.drag = x11_drag,
	.scroll = x11_scroll,
	.keys = x11_keys,
	.modifiers = x11_modifiers,
	.type = input__x11_type,
	.set_timing = x11_set_timing,
	.spare_keycodes = x11_spare_keycodes,
	.spare_slots = x11_spare_slots,
	.focus_window = x11_focus,
	.wait_ungrabbed = x11_wait_ungrabbed,
	.focus_needs = x11_focus_needs,
};
