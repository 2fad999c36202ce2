/* When a slot may be bound anew: the drain barrier.
 *
 * Clients translate keycodes with their own copy of the keymap, fetched
 * lazily and as it is when they get to the key, not as it was when the key
 * was sent. A client that lags behind its queue therefore turns keys on a
 * slot into the slot's next binding, or into nothing (INPUT.md, R1). So a
 * slot changes only once the client that got its last key has worked
 * through that key:
 *
 *  - a client that advertises _NET_WM_PING answers a ping only after it
 *    handled the events before it (GTK, Qt; Chromium advertises it too):
 *    after each segment of keys we ping the window that got them, and the
 *    answer drains the segment's slots (PING_GIVE_UP_MS bounds a client
 *    that never answers);
 *  - others (xterm) get a quarantine of QUARANTINE_MS after the last key,
 *    plus a millisecond per key of that segment.
 *
 * Answers come to the root window with SubstructureNotify (GTK) or
 * StructureNotify (Qt) in their mask; our connection selects both; the drainer thread reads them (and the other root
 * events) every DRAIN_EVERY_MS so nothing piles up between calls. */
#include "input/x11_private.h"
#include "base/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define DRAIN_EVERY_MS 200

static void note_answer(struct input_x11* self, Window win, uint64_t seq)
{
	int slot = -1;
	for (int i = 0; i < 16; i++) {
		if (self->answers[i].win == win) {
			slot = i;
			break;
		}
		if (slot < 0 && !self->answers[i].win)
			slot = i;
	}
	if (slot < 0)
		slot = (int)(seq % 16);	/* evict any: its slots fall back to time */
	if (self->answers[slot].win != win) {
		self->answers[slot].win = win;
		self->answers[slot].answered = 0;
	}
	if (seq > self->answers[slot].answered)
		self->answers[slot].answered = seq;
}

void input__drain_events(struct input_x11* self)
{
	while (!x11_lost(&self->x) && XPending(self->x.dpy)) {
		XEvent ev;
		XNextEvent(self->x.dpy, &ev);
		if (ev.type == MappingNotify && ev.xmapping.request != MappingPointer) {
			self->map_stale = true;
		} else if (ev.type == self->xkb_event) {
			int what = ((XkbEvent*)&ev)->any.xkb_type;
			if (what == XkbMapNotify || what == XkbNewKeyboardNotify)
				self->map_stale = true;
		} else if (ev.type == ClientMessage && ev.xclient.format == 32
				&& ev.xclient.message_type == self->wm_protocols
				&& (Atom)ev.xclient.data.l[0] == self->net_wm_ping
				&& ev.xclient.window == self->root) {
			/* Ours carry seq in the timestamp field, the WM's real
			 * server times; only windows we pinged are looked at. */
			note_answer(self, (Window)ev.xclient.data.l[2],
					(uint64_t)(unsigned long)ev.xclient.data.l[1]);
		}
	}
}

static bool window_pings(struct input_x11* self, Window w)
{
	Atom* protos = NULL;
	int n = 0;
	bool yes = false;
	if (XGetWMProtocols(self->x.dpy, w, &protos, &n)) {
		for (int i = 0; i < n; i++)
			if (protos[i] == self->net_wm_ping)
				yes = true;
		XFree(protos);
	}
	return yes;
}

/* w's parent, or None when it cannot be read (errors trapped). */
static Window parent_of(struct input_x11* self, Window w)
{
	Window root, parent, *kids;
	unsigned nkids;
	if (!XQueryTree(self->x.dpy, w, &root, &parent, &kids, &nkids))
		return None;
	if (kids)
		XFree(kids);
	return parent;
}

Window input__key_target(struct input_x11* self, bool* pings)
{
	*pings = false;
	Window focus, root, child;
	unsigned mask;
	int revert, rx, ry, wx, wy;
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
	/* Up to the window that carries WM_PROTOCOLS (the client's top-level;
	 * the focus may be a child of it). */
	x11_clear(&self->x);
	for (Window w = focus; w && w != self->root;) {
		Atom* protos = NULL;
		int n = 0;
		if (XGetWMProtocols(self->x.dpy, w, &protos, &n)) {
			XFree(protos);
			*pings = window_pings(self, w);
			return w;
		}
		w = parent_of(self, w);
	}
	x11_take(&self->x);
	return focus;
}

/* Clients whose keys need more than the keymap, by the WM_CLASS (instance
 * or class, a prefix) of the focus window or a window above it:
 *  - LibreOffice's Writer keeps typed characters in a buffer while more key
 *    events are queued and inserts them later, but inserts a character above
 *    U+FFFF (two UTF-16 units: its X11 backend commits it as text input) at
 *    once, ahead of the buffered ones;
 *  - Java's AWT turns a keysym above U+FFFF into its low 16 bits (U+1F600
 *    arrives as U+F600); its focus is a child "FocusProxy" window (OpenJDK
 *    17), older ones name their windows sun-awt-X11-*.
 * PITFALLS.md has the evidence. */
static const struct {
	const char* prefix;
	unsigned quirks;
} client_quirks[] = {
	{ "libreoffice", INPUT_QUIRK_CATCH_UP_ASTRAL },
	{ "soffice", INPUT_QUIRK_CATCH_UP_ASTRAL },
	{ "Focus-Proxy-Window", INPUT_CLIENT_BMP_KEYS },
	{ "sun-awt-X11-", INPUT_CLIENT_BMP_KEYS },
};

static unsigned class_quirks(const char* name)
{
	unsigned quirks = 0;
	for (size_t i = 0; name && i < sizeof(client_quirks) / sizeof(client_quirks[0]); i++)
		if (strncasecmp(name, client_quirks[i].prefix, strlen(client_quirks[i].prefix)) == 0)
			quirks |= client_quirks[i].quirks;
	return quirks;
}

/* Clients whose keys need more, by the libraries their process maps:
 *  - Qt 5's xcb keyboard decodes each key's text with QString::fromUtf8,
 *    which skips a UTF-8 byte-order mark: U+FEFF typed arrives as nothing
 *    (and a text that starts with it loses it by paste too). Qt 6 keeps it. */
static const struct {
	const char* library;
	unsigned quirks;
} library_quirks[] = {
	{ "/libQt5Core.so", INPUT_CLIENT_NO_BOM_KEYS },
};

#define MAPS_MAX_LINES 20000	/* a browser maps a few thousand */

static unsigned process_quirks(long pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	FILE* f = fopen(path, "re");
	if (!f)
		return 0;	/* another pid namespace, or gone */
	unsigned quirks = 0;
	char line[512];
	for (int n = 0; n < MAPS_MAX_LINES && fgets(line, sizeof(line), f); n++)
		for (size_t i = 0; i < sizeof(library_quirks) / sizeof(library_quirks[0]); i++)
			if (strstr(line, library_quirks[i].library))
				quirks |= library_quirks[i].quirks;
	fclose(f);
	return quirks;
}

unsigned input__client_quirks(struct input_x11* self, Window w)
{
	unsigned quirks = 0;
	x11_clear(&self->x);
	/* A window's client stays the same: its pid and maps are read once. */
	if (w != self->libs_window) {
		long pid = x11_client_pid(self->x.dpy, w);
		self->libs_window = w;
		self->libs_quirks = pid > 0 ? process_quirks(pid) : 0;
	}
	quirks |= self->libs_quirks;
	for (int depth = 0; w && w != self->root && depth < 32; depth++) {
		XClassHint hint = { 0 };
		if (XGetClassHint(self->x.dpy, w, &hint)) {
			quirks |= class_quirks(hint.res_name) | class_quirks(hint.res_class);
			XFree(hint.res_name);
			XFree(hint.res_class);
		}
		w = parent_of(self, w);
	}
	x11_take(&self->x);
	return quirks;
}

static void send_ping(struct input_x11* self, Window target, uint64_t seq)
{
	XEvent ev;
	memset(&ev, 0, sizeof(ev));
	ev.xclient.type = ClientMessage;
	ev.xclient.window = target;
	ev.xclient.message_type = self->wm_protocols;
	ev.xclient.format = 32;
	ev.xclient.data.l[0] = (long)self->net_wm_ping;
	ev.xclient.data.l[1] = (long)seq;
	ev.xclient.data.l[2] = (long)target;
	XSendEvent(self->x.dpy, target, False, NoEventMask, &ev);
}

static bool answered(struct input_x11* self, Window win, uint64_t seq)
{
	for (int i = 0; i < 16; i++)
		if (self->answers[i].win == win && self->answers[i].answered >= seq)
			return true;
	return false;
}

int input__catch_up(struct input_x11* self, Window target, int timeout_ms)
{
	uint64_t seq = ++self->ping_seq;
	send_ping(self, target, seq);
	if (x11_sync(&self->x) != 0)
		return -ENOENT;	/* the window is gone */
	int64_t end = clock_ms() + timeout_ms;
	for (;;) {
		input__drain_events(self);
		if (x11_lost(&self->x))
			return -ECONNRESET;
		if (answered(self, target, seq))
			return 0;
		if (clock_ms() >= end)
			return -ETIMEDOUT;
		clock_sleep_ms(1);
	}
}

void input__after_keys(struct input_x11* self, uint64_t segment, Window target,
		bool pings, size_t keys)
{
	int64_t now = clock_ms();
	uint64_t seq = 0;
	if (target && pings) {
		seq = ++self->ping_seq;
		send_ping(self, target, seq);
		/* A window gone meanwhile is no error of the call's. */
		if (x11_sync(&self->x) != 0)
			seq = 0;
	}
	for (int i = 0; i < self->n_slots; i++) {
		struct slot* sl = &self->slots[i];
		if (sl->segment != segment || sl->sym == NoSymbol)
			continue;
		sl->used_ms = now;
		sl->quarantine_ms = now + QUARANTINE_MS + (int64_t)keys;
		sl->ping_win = seq ? target : 0;
		sl->ping_seq = seq;
	}
}

bool input__slot_drained(struct input_x11* self, const struct slot* sl, int64_t now)
{
	if (sl->sym == NoSymbol || !sl->used_ms)
		return true;
	if (!sl->ping_win)
		return now >= sl->quarantine_ms;
	if (answered(self, sl->ping_win, sl->ping_seq))
		return true;
	return now >= sl->used_ms + PING_GIVE_UP_MS;
}

void* input__drainer_main(void* data)
{
	struct input_x11* self = data;
	pthread_mutex_lock(&self->head.mutex);
	while (!self->stop) {
		if (!x11_lost(&self->x))
			input__drain_events(self);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += DRAIN_EVERY_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&self->cond, &self->head.mutex, &ts);
	}
	pthread_mutex_unlock(&self->head.mutex);
	return NULL;
}
