/* Window states on a GNOME desktop: desktop_window_op through deskd's GNOME
 * Shell extension (gnome/gnome.h's window calls; wm.c hands over when the
 * desktop is GNOME). Each operation is one call on the window, then a
 * bounded wait that reads the shell's list back, so the caller learns what
 * the shell did. One connection for the process, made at the first use and
 * again when the bus dropped it. Mutter alone (no shell) has no window
 * calls: -ENOTSUP, saying so. Private to desktop/. */
#include "desktop/desktop_private.h"
#include "gnome/gnome.h"
#include "base/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPEN_TIMEOUT_MS 2000
#define SETTLE_MS 60		/* the frame unchanged this long: the shell is done */
#define SETTLE_POLL_MS 15

static struct {
	pthread_mutex_t lock;
	struct gnome_shell* shell;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct gn_op {
	struct desktop__window_watch w;	/* first: the request, outcome, end */
	struct gnome_shell* shell;
	uint64_t id;		/* Mutter's, found by deskd's (its low 32 bits) */
};

static struct gn_op* op_of(struct desktop__window_watch* w)
{
	return (struct gn_op*)w;
}

/* The connection, made again when the bus dropped it; NULL with err. */
static struct gnome_shell* shell_get(char* err, size_t err_size)
{
	pthread_mutex_lock(&S.lock);
	if (S.shell && !gnome_shell_alive(S.shell)) {
		gnome_shell_close(S.shell);
		S.shell = NULL;
	}
	if (!S.shell)
		S.shell = gnome_shell_open(desktop_display_name(), OPEN_TIMEOUT_MS, err, err_size);
	struct gnome_shell* s = S.shell;
	pthread_mutex_unlock(&S.lock);
	return s;
}

void desktop__gnome_wm_stop(void)
{
	pthread_mutex_lock(&S.lock);
	gnome_shell_close(S.shell);
	S.shell = NULL;
	pthread_mutex_unlock(&S.lock);
}

/* The window's state now into out->after: 0, -ENOENT (gone), or the
 * shell's -errno. */
static int gn_observe(struct desktop__window_watch* w)
{
	struct gn_op* o = op_of(w);
	struct gnome_window* ws;
	size_t n;
	int rc = gnome_windows(o->shell, &ws, &n);
	if (rc < 0)
		return rc;
	rc = -ENOENT;
	memset(&w->out->after, 0, sizeof(w->out->after));
	for (size_t i = 0; i < n; i++) {
		const struct gnome_window* g = &ws[i];
		if ((uint32_t)g->id != w->req->window)
			continue;
		o->id = g->id;
		w->out->after = (struct desktop_window_state){
			.exists = true, .mapped = !(g->flags & GNOME_WINDOW_MINIMIZED),
			.minimized = g->flags & GNOME_WINDOW_MINIMIZED,
			.maximized = g->flags & GNOME_WINDOW_MAXIMIZED,
			.fullscreen = g->flags & GNOME_WINDOW_FULLSCREEN,
			.modal = g->flags & GNOME_WINDOW_MODAL, .takes_delete = true,
			.x = g->x, .y = g->y, .width = g->width, .height = g->height,
			.transient_for = (uint32_t)g->transient_for, .pid = g->pid,
		};
		rc = 0;
	}
	free(ws);
	return rc;
}

static bool is_min(struct desktop__window_watch* w) { return w->out->after.minimized; }
static bool is_max(struct desktop__window_watch* w) { return w->out->after.maximized; }
static bool is_full(struct desktop__window_watch* w) { return w->out->after.fullscreen; }
static bool restored(struct desktop__window_watch* w)
{
	const struct desktop_window_state* a = &w->out->after;
	return !a->fullscreen && !a->maximized && !a->minimized;
}
static bool sized(struct desktop__window_watch* w)
{
	return w->out->after.width == w->req->width && w->out->after.height == w->req->height;
}
static bool raised(struct desktop__window_watch* w);

/* The calls each operation makes, in order, and what it waits for. */
static const struct {
	enum desktop_window_op op;
	const char* states[3];	/* gnome_window_state's names */
	bool (*done)(struct desktop__window_watch* w);
} OPS[] = {
	{ DESKTOP_WINDOW_MINIMIZE, { "minimize" }, is_min },
	{ DESKTOP_WINDOW_MAXIMIZE, { "unminimize", "maximize" }, is_max },
	{ DESKTOP_WINDOW_FULLSCREEN, { "unminimize", "fullscreen" }, is_full },
	{ DESKTOP_WINDOW_RESTORE, { "unfullscreen", "unmaximize", "unminimize" }, restored },
	{ DESKTOP_WINDOW_RAISE, { NULL }, raised },
};

static bool raised(struct desktop__window_watch* w)
{
	struct gn_op* o = op_of(w);
	struct gnome_window* ws;
	size_t n;
	bool focused = false;
	if (gnome_windows(o->shell, &ws, &n) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (ws[i].id == o->id)
			focused = ws[i].flags & GNOME_WINDOW_FOCUSED;
	free(ws);
	return focused;
}

/* The shell sets a state at once and the geometry a frame or more later
 * (fullscreen read back with the old size): wait, bounded by the
 * request's time, until the frame stayed the same for SETTLE_MS. 1, or
 * the observe error. */
static int settle(struct gn_op* o)
{
	struct desktop_window_state last = o->w.out->after;
	int64_t same_since = clock_ms();
	while (clock_ms() - same_since < SETTLE_MS && clock_ms() < o->w.end) {
		clock_sleep_ms(SETTLE_POLL_MS);
		int rc = gn_observe(&o->w);
		if (rc < 0)
			return rc;
		const struct desktop_window_state* now = &o->w.out->after;
		if (now->x != last.x || now->y != last.y || now->width != last.width
				|| now->height != last.height) {
			last = *now;
			same_since = clock_ms();
		}
	}
	return 1;
}

static int gn_apply(struct gn_op* o, int rc, bool (*done)(struct desktop__window_watch* w))
{
	if (rc < 0)
		return rc;
	rc = desktop__window_wait(&o->w, done);
	if (rc == 1)
		rc = settle(o);
	if (rc < 0)
		return rc;
	o->w.out->applied = rc == 1;
	if (!o->w.out->applied && !o->w.out->note[0])
		desktop__window_note(o->w.out, "GNOME Shell did not do it within %d ms",
				o->w.req->timeout_ms);
	return 0;
}

static int ask_close(struct desktop__window_watch* w)
{
	return gnome_window_close(op_of(w)->shell, op_of(w)->id);
}

static int gn_run(struct desktop__window_watch* w)
{
	struct gn_op* o = op_of(w);
	const struct desktop_window_request* req = o->w.req;
	switch (req->op) {
	case DESKTOP_WINDOW_RESIZE:
		return gn_apply(o, gnome_window_move_resize(o->shell, o->id, o->w.out->before.x,
				o->w.out->before.y, req->width, req->height), sized);
	case DESKTOP_WINDOW_CLOSE:
		return desktop__window_close(&o->w, ask_close);
	case DESKTOP_WINDOW_RAISE:
		return gn_apply(o, gnome_window_activate(o->shell, o->id), raised);
	default:
		break;
	}
	for (size_t i = 0; i < sizeof(OPS) / sizeof(OPS[0]); i++) {
		if (OPS[i].op != req->op)
			continue;
		int rc = 0;
		for (int k = 0; k < 3 && OPS[i].states[k] && rc == 0; k++)
			rc = gnome_window_state(o->shell, o->id, OPS[i].states[k]);
		return gn_apply(o, rc, OPS[i].done);
	}
	return -EINVAL;
}

int desktop__gnome_window_op(const struct desktop_window_request* req,
		struct desktop_window_outcome* out, char* err, size_t err_size)
{
	struct gn_op o = { .w = { .req = req, .out = out, .observe = gn_observe } };
	if (!(o.shell = shell_get(err, err_size)))
		return -ECONNRESET;
	out->wm = true;
	snprintf(out->wm_name, sizeof(out->wm_name), "GNOME Shell");
	o.w.end = clock_ms() + (req->timeout_ms > 0 ? req->timeout_ms : 0);
	int rc = desktop__window_run(&o.w, gn_run, err, err_size);
	if (rc == -ENOTSUP)
		return desktop__gnome_unsupported("windows", err, err_size);
	if (rc == 0 || rc == -ENOENT || rc == -EINVAL)
		return rc;
	snprintf(err, err_size, "GNOME Shell did not answer: %s", gnome_shell_error(o.shell));
	return -ECONNRESET;
}
