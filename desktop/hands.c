/* The one input context of the process: one X connection for XTest and one
 * pool of spare keycodes on the display (two contexts would rebind each
 * other's keycodes). Replaced when the display went away; destroyed at exit,
 * which puts every spare keycode back.
 *
 * And the one pair of hands on it: the typing loop the agent's and a
 * person's text both run, and the thread that runs a person's input
 * (docs/CONTROL.md) from a queue. */
#include "desktop/desktop_private.h"
#include "base/clock.h"
#include "base/log.h"
#include "input/input.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t ctx_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct input* ctx_input;
static int ctx_users;
static unsigned ctx_disconnects;	/* desktop_disconnects() when it connected */
static bool ctx_atexit;

void desktop__input_close(void)
{
	pthread_mutex_lock(&ctx_mutex);
	struct input* in = ctx_users == 0 ? ctx_input : NULL;
	if (in)
		ctx_input = NULL;
	pthread_mutex_unlock(&ctx_mutex);
	/* Puts every spare keycode back as it was. */
	input_destroy(in);
}

static void input_at_exit(void)
{
	/* A stopped X server would hold the exit forever: leave the keymap (the
	 * context stays referenced, so it is no leak either). */
	if (desktop__hung(NULL)) {
		log_warn("input: the X server does not answer; exiting without restoring the spare keycodes");
		return;
	}
	desktop__input_close();
}

struct input* desktop_input_get(char* err, size_t size)
{
	pthread_mutex_lock(&ctx_mutex);
	/* A context from before a display loss is dead even if it does not
	 * know it yet (its first use would fail). */
	if (ctx_input && ctx_users == 0 && (!input_alive(ctx_input)
			|| ctx_disconnects != desktop_disconnects())) {
		log_info("input: X connection lost; reconnecting");
		input_destroy(ctx_input);
		ctx_input = NULL;
	}
	if (!ctx_input) {
		const char* name = desktop_display_name();
		ctx_disconnects = desktop_disconnects();
		ctx_input = input_new(name, err, size);
		if (ctx_input) {
			log_debug("input: connected to %s, %d spare keycodes, %d slots", name,
					input_spare_keycodes(ctx_input), input_spare_slots(ctx_input));
			if (!ctx_atexit && atexit(input_at_exit) == 0)
				ctx_atexit = true;
		}
	}
	struct input* in = ctx_input;
	if (in)
		ctx_users++;
	pthread_mutex_unlock(&ctx_mutex);
	return in;
}

void desktop_input_put(struct input* in)
{
	if (!in)
		return;
	pthread_mutex_lock(&ctx_mutex);
	ctx_users--;
	pthread_mutex_unlock(&ctx_mutex);
}

/* ---- Typing: the one loop ---------------------------------------------------- */

/* Where the next chunk of text ends: at most DESKTOP_TYPE_CHUNK_BYTES, after
 * the last space or newline in it when there is one (other clients' actions
 * run only between chunks, never inside a word), never inside a UTF-8
 * character. */
static size_t chunk_end(const char* text, size_t from, size_t len)
{
	if (len - from <= DESKTOP_TYPE_CHUNK_BYTES)
		return len;
	size_t end = from + DESKTOP_TYPE_CHUNK_BYTES;
	for (size_t i = end; i > from + DESKTOP_TYPE_CHUNK_BYTES / 2; i--)
		if (text[i - 1] == ' ' || text[i - 1] == '\n' || text[i - 1] == '\t')
			return i;
	while (end > from + 1 && ((unsigned char)text[end] & 0xc0) == 0x80)
		end--;
	return end;
}

static bool typing_stopped(struct desktop_typing* t)
{
	return t->stop && t->stop(t->ud, t);
}

int desktop_hands_type(struct input* in, const char* text, size_t len,
		struct desktop_typing* t)
{
	t->total = t->typed = t->remapped = t->paced = 0;
	t->drain_timeout = false;
	for (size_t i = 0; i < len; i++)
		t->total += ((unsigned char)text[i] & 0xc0) != 0x80;
	int64_t stalled_since = 0;	/* waiting for a slot, nothing typed since */
	for (size_t from = 0; from < len;) {
		size_t end = chunk_end(text, from, len);
		struct input_type_stats st = { 0 };
		size_t done = 0;
		int wait_ms = 0;
		/* Where a slot has to drain first (a long text of many symbols
		 * to a client without _NET_WM_PING: a 3 s quarantine), input
		 * stops and we wait below without the desktop lock, so other
		 * clients' actions run meanwhile, not after the whole text. */
		int rc = input_type_some(in, text + from, end - from, &st, NULL, &done,
				&wait_ms);
		t->typed += st.chars;
		t->remapped += st.remapped;
		t->paced += st.paced;
		t->unbound = st.unbound;
		from += done;
		if (rc < 0)
			return rc;
		if (from >= len)
			break;
		if (t->progress)
			t->progress(t->ud, t);
		if (typing_stopped(t))
			return -ECANCELED;
		bool others;
		if (wait_ms > 0) {
			int64_t now = clock_ms();
			if (done || !stalled_since)
				stalled_since = now;
			if (now - stalled_since > DESKTOP_TYPE_DRAIN_MAX_MS) {
				t->drain_timeout = true;
				return -ETIMEDOUT;
			}
			/* In short steps: the stop hook applies. */
			others = desktop_lock_pause(wait_ms < 100 ? wait_ms : 100);
		} else {
			stalled_since = 0;
			others = t->yield && desktop_lock_yield();
		}
		if (typing_stopped(t))
			return -ECANCELED;
		if (others && t->others_ran && t->others_ran(t->ud) < 0)
			return -ECANCELED;
	}
	return 0;
}

/* ---- A person's hands: the queue and its thread ------------------------------ */

static pthread_mutex_t hands_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hands_cond = PTHREAD_COND_INITIALIZER;
static struct desktop_hands_op hands_ops[DESKTOP_HANDS_QUEUE];	/* under hands_lock */
static size_t hands_head, hands_n;
static bool hands_stop, hands_running;
static pthread_t hands_thread;
static const struct desktop_hands_owner* hands_owner;
/* Ops queued or running, and when the last one ended. */
static atomic_int hands_pending;
static atomic_int_fast64_t hands_done_ms;

/* What the hands thread keeps pressed on behalf of the person. */
static unsigned hands_buttons;		/* bit n: button n down */
static uint32_t hands_keys[DESKTOP_HANDS_MAX_KEYS];
static int hands_n_keys;

bool desktop_hands_push(struct desktop_hands_op* op)
{
	pthread_mutex_lock(&hands_lock);
	/* A pointer move behind another move of the same lease replaces it. */
	if (op->kind == DESKTOP_HANDS_MOVE && hands_n) {
		struct desktop_hands_op* last = &hands_ops[(hands_head + hands_n - 1) % DESKTOP_HANDS_QUEUE];
		if (last->kind == DESKTOP_HANDS_MOVE && last->lease == op->lease
				&& last->window == op->window
				&& last->max_dimension == op->max_dimension) {
			last->x = op->x;
			last->y = op->y;
			pthread_mutex_unlock(&hands_lock);
			return true;
		}
	}
	bool ok = hands_n < DESKTOP_HANDS_QUEUE && !hands_stop;
	if (ok) {
		hands_ops[(hands_head + hands_n) % DESKTOP_HANDS_QUEUE] = *op;
		hands_n++;
		atomic_fetch_add(&hands_pending, 1);
		pthread_cond_signal(&hands_cond);
	} else {
		free(op->text);
	}
	op->text = NULL;
	pthread_mutex_unlock(&hands_lock);
	return ok;
}

int desktop_hands_pending(int64_t* done_ms)
{
	if (done_ms)
		*done_ms = atomic_load(&hands_done_ms);
	return atomic_load(&hands_pending);
}

static void hands_release_all(struct input* in)
{
	for (int b = 1; b <= 9; b++)
		if (hands_buttons & (1u << b))
			input_button(in, b, false);
	hands_buttons = 0;
	for (int i = hands_n_keys - 1; i >= 0; i--) {
		struct input_chord chord = { .n = 1, .keysyms = { hands_keys[i] } };
		input_key_chord_state(in, &chord, false);
	}
	hands_n_keys = 0;
}

/* Frame pixel -> desktop pixel, as the agent's coordinates are mapped. */
static int hands_map(const struct desktop_hands_op* op, int* dx, int* dy, char* err,
		size_t err_size)
{
	struct desktop_target t;
	if (op->window == 0) {
		int w = 0, h = 0;
		desktop_screen_size(&w, &h);
		if (w <= 0 || h <= 0) {
			snprintf(err, err_size, "the display is not reachable");
			return -ECONNRESET;
		}
		t = (struct desktop_target){ .width = w, .height = h };
		desktop_scaled_size(w, h, op->max_dimension, &t.image_width, &t.image_height);
	} else {
		int rc = desktop_target(op->window, op->max_dimension, &t, err, err_size);
		if (rc < 0)
			return rc;
	}
	if (op->x < 0 || op->y < 0 || op->x >= t.image_width || op->y >= t.image_height) {
		snprintf(err, err_size, "(%d, %d) is outside the frame (0..%d, 0..%d)",
				op->x, op->y, t.image_width - 1, t.image_height - 1);
		return -ERANGE;
	}
	*dx = t.x + desktop_map(op->x, t.width, t.image_width);
	*dy = t.y + desktop_map(op->y, t.height, t.image_height);
	return 0;
}

static int hands_pointer(struct input* in, const struct desktop_hands_op* op, char* err,
		size_t err_size)
{
	int dx, dy;
	int rc = hands_map(op, &dx, &dy, err, err_size);
	if (rc == 0 && op->kind == DESKTOP_HANDS_BUTTON) {
		rc = input_button_at(in, dx, dy, op->button, op->down);
		if (op->down)
			hands_buttons |= 1u << op->button;
		else
			hands_buttons &= ~(1u << op->button);
	} else if (rc == 0) {
		rc = input_move(in, dx, dy);
	}
	if (rc == 0 && op->kind == DESKTOP_HANDS_WHEEL)
		rc = input_scroll(in, op->notches_x, op->notches_y, NULL);
	return rc;
}

static int hands_key(struct input* in, const struct desktop_hands_op* op)
{
	struct input_chord chord = { .n = 1, .keysyms = { op->keysym } };
	int rc = input_key_chord_state(in, &chord, op->down);
	if (rc == -ENOENT && op->down) {
		/* Not on the keymap: it cannot be held, so tap it. */
		rc = input_key_chord(in, &chord);
	} else if (rc == 0 && op->down && hands_n_keys < DESKTOP_HANDS_MAX_KEYS) {
		hands_keys[hands_n_keys++] = op->keysym;
	} else if (!op->down) {
		for (int i = 0; i < hands_n_keys; i++)
			if (hands_keys[i] == op->keysym) {
				hands_keys[i] = hands_keys[--hands_n_keys];
				break;
			}
	}
	return rc;
}

/* A person's text stops between its chunks once the lease ends. */
static bool hands_lease_ended(void* ud, const struct desktop_typing* t)
{
	(void)t;
	const struct desktop_hands_op* op = ud;
	return !hands_owner->current(op->lease);
}

static void hands_run(struct input* in, struct desktop_hands_op* op)
{
	char err[256] = "";
	int rc = 0;
	switch (op->kind) {
	case DESKTOP_HANDS_RELEASE_ALL:
		hands_release_all(in);
		return;
	case DESKTOP_HANDS_MOVE:
	case DESKTOP_HANDS_BUTTON:
	case DESKTOP_HANDS_WHEEL:
		rc = hands_pointer(in, op, err, sizeof(err));
		break;
	case DESKTOP_HANDS_KEY:
		rc = hands_key(in, op);
		break;
	case DESKTOP_HANDS_TEXT: {
		/* The agent's loop: a long paste stops as soon as the lease
		 * ends, a draining slot is waited for without the desktop lock.
		 * The person owns the desktop meanwhile: no yield between chunks. */
		struct desktop_typing t = { .stop = hands_lease_ended, .ud = op };
		rc = desktop_hands_type(in, op->text, op->len, &t);
		if (rc == -ECANCELED)
			rc = 0;	/* the lease ended: nobody to tell */
		else if (t.drain_timeout)
			snprintf(err, sizeof(err), "no spare keycode was free again within %d ms",
					DESKTOP_TYPE_DRAIN_MAX_MS);
		break;
	}
	}
	if (rc < 0) {
		if (!err[0])
			snprintf(err, sizeof(err), "%s", rc == -ECONNRESET
					? "the display is not reachable" : strerror(-rc));
		hands_owner->failed(op->sender, rc, err);
	}
}

/* Text typed in a row goes as one call: its new characters are bound to
 * spare keycodes in one keymap change. Merges into batch[i]; returns n. */
static size_t hands_merge_text(struct desktop_hands_op* batch, size_t i, size_t n)
{
	struct desktop_hands_op* op = &batch[i];
	while (op->kind == DESKTOP_HANDS_TEXT && i + 1 < n
			&& batch[i + 1].kind == DESKTOP_HANDS_TEXT
			&& batch[i + 1].lease == op->lease
			&& op->len + batch[i + 1].len <= hands_owner->max_text) {
		char* joined = realloc(op->text, op->len + batch[i + 1].len + 1);
		if (!joined)
			break;
		memcpy(joined + op->len, batch[i + 1].text, batch[i + 1].len + 1);
		op->text = joined;
		op->len += batch[i + 1].len;
		free(batch[i + 1].text);
		memmove(&batch[i + 1], &batch[i + 2], (n - i - 2) * sizeof(batch[0]));
		n--;
		atomic_fetch_sub(&hands_pending, 1);
	}
	return n;
}

/* Run one batch under the desktop lock with the one input context. */
static void hands_run_batch(struct desktop_hands_op* batch, size_t n)
{
	int64_t taken_ns = clock_ns();
	desktop_lock();
	int64_t locked_ns = clock_ns();
	char err[256] = "";
	struct input* in = desktop_input_get(err, sizeof(err));
	for (size_t i = 0; i < n; i++) {
		struct desktop_hands_op* op = &batch[i];
		n = hands_merge_text(batch, i, n);
		bool current = op->kind == DESKTOP_HANDS_RELEASE_ALL
				|| hands_owner->current(op->lease);
		if (in && current)
			hands_run(in, op);
		if (op->kind == DESKTOP_HANDS_BUTTON && log_enabled(LOG_TRACE))
			/* A press's way through deskd, in ms of CLOCK_MONOTONIC
			 * (make bench's dashboard section reads these). */
			log_trace("hands: button %d %s: received %.3f taken %.3f locked %.3f sent %.3f",
					op->button, op->down ? "down" : "up", op->received_ns / 1e6,
					taken_ns / 1e6, locked_ns / 1e6, clock_ns() / 1e6);
		else if (!in && current && op->kind != DESKTOP_HANDS_RELEASE_ALL)
			hands_owner->failed(op->sender, -ECONNRESET,
					err[0] ? err : "the display is not reachable");
		free(op->text);
		atomic_store(&hands_done_ms, clock_ms());
		atomic_fetch_sub(&hands_pending, 1);
	}
	desktop_input_put(in);
	desktop_unlock();
}

static void* hands_main(void* arg)
{
	(void)arg;
	struct desktop_hands_op batch[32];
	pthread_mutex_lock(&hands_lock);
	for (;;) {
		while (!hands_stop && hands_n == 0)
			pthread_cond_wait(&hands_cond, &hands_lock);
		if (hands_stop)
			break;
		size_t n = 0;
		while (hands_n && n < sizeof(batch) / sizeof(batch[0])) {
			batch[n++] = hands_ops[hands_head];
			hands_head = (hands_head + 1) % DESKTOP_HANDS_QUEUE;
			hands_n--;
		}
		pthread_mutex_unlock(&hands_lock);
		hands_run_batch(batch, n);
		pthread_mutex_lock(&hands_lock);
	}
	for (; hands_n; hands_n--) {
		free(hands_ops[hands_head].text);
		hands_head = (hands_head + 1) % DESKTOP_HANDS_QUEUE;
	}
	pthread_mutex_unlock(&hands_lock);
	return NULL;
}

int desktop_hands_start(const struct desktop_hands_owner* owner)
{
	pthread_mutex_lock(&hands_lock);
	hands_stop = false;
	hands_owner = owner;
	pthread_mutex_unlock(&hands_lock);
	if (pthread_create(&hands_thread, NULL, hands_main, NULL) != 0)
		return -EAGAIN;
	hands_running = true;
	return 0;
}

void desktop_hands_stop(void)
{
	if (!hands_running)
		return;
	pthread_mutex_lock(&hands_lock);
	hands_stop = true;
	pthread_cond_broadcast(&hands_cond);
	pthread_mutex_unlock(&hands_lock);
	pthread_join(hands_thread, NULL);
	hands_running = false;
}

/* ---- The vocabulary of input, for the layers above -------------------------- */

int desktop_key_lookup(const char* name, uint32_t* keysym, char* near, size_t near_size)
{
	if (near_size)
		near[0] = '\0';
	if (input_key_lookup(name, keysym) == 0)
		return 0;
	input_key_suggest(name, near, near_size, 3);
	return -ENOENT;
}

bool desktop_text_one_char(const char* s)
{
	size_t pos = 0, len = strlen(s);
	uint32_t cp;
	return len && input_utf8_next(s, len, &pos, &cp) == 0 && pos == len && cp >= 0x20
			&& cp != 0x7f;
}

int desktop_text_check(const char* s, size_t len, size_t* bad_offset)
{
	return input_text_check(s, len, bad_offset);
}

int desktop_pixels_to_notches(double pixels)
{
	return input_pixels_to_notches(pixels);
}
