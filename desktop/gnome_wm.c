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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS 20
#define OPEN_TIMEOUT_MS 2000
#define KILL_WAIT_MS 1000

static struct {
	pthread_mutex_t lock;
	struct gnome_shell* shell;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct gn_op {
	struct gnome_shell* shell;
	uint64_t id;		/* Mutter's, found by deskd's (its low 32 bits) */
	const struct desktop_window_request* req;
	struct desktop_window_outcome* out;
	int64_t end;
};

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
static int gn_observe(struct gn_op* o)
{
	struct gnome_window* ws;
	size_t n;
	int rc = gnome_windows(o->shell, &ws, &n);
	if (rc < 0)
		return rc;
	rc = -ENOENT;
	memset(&o->out->after, 0, sizeof(o->out->after));
	for (size_t i = 0; i < n; i++) {
		const struct gnome_window* w = &ws[i];
		if ((uint32_t)w->id != o->req->window)
			continue;
		o->id = w->id;
		o->out->after = (struct desktop_window_state){
			.exists = true, .mapped = !(w->flags & GNOME_WINDOW_MINIMIZED),
			.minimized = w->flags & GNOME_WINDOW_MINIMIZED,
			.maximized = w->flags & GNOME_WINDOW_MAXIMIZED,
			.fullscreen = w->flags & GNOME_WINDOW_FULLSCREEN,
			.modal = w->flags & GNOME_WINDOW_MODAL, .takes_delete = true,
			.x = w->x, .y = w->y, .width = w->width, .height = w->height,
			.transient_for = (uint32_t)w->transient_for, .pid = w->pid,
		};
		rc = 0;
	}
	free(ws);
	return rc;
}

/* Poll until done says so, the time is up (0) or the window went (-ENOENT). */
static int gn_wait(struct gn_op* o, bool (*done)(struct gn_op* o))
{
	for (;;) {
		int rc = gn_observe(o);
		if (rc < 0)
			return rc;
		if (done(o))
			return 1;
		if (clock_ms() >= o->end || (o->req->cancelled && atomic_load(o->req->cancelled)))
			return 0;
		clock_sleep_ms(POLL_MS);
	}
}

static bool is_min(struct gn_op* o) { return o->out->after.minimized; }
static bool is_max(struct gn_op* o) { return o->out->after.maximized; }
static bool is_full(struct gn_op* o) { return o->out->after.fullscreen; }
static bool restored(struct gn_op* o)
{
	const struct desktop_window_state* a = &o->out->after;
	return !a->fullscreen && !a->maximized && !a->minimized;
}
static bool sized(struct gn_op* o)
{
	return o->out->after.width == o->req->width && o->out->after.height == o->req->height;
}
static bool gone(struct gn_op* o) { (void)o; return false; }
static bool raised(struct gn_op* o);

/* The calls each operation makes, in order, and what it waits for. */
static const struct {
	enum desktop_window_op op;
	const char* states[3];	/* gnome_window_state's names */
	bool (*done)(struct gn_op* o);
} OPS[] = {
	{ DESKTOP_WINDOW_MINIMIZE, { "minimize" }, is_min },
	{ DESKTOP_WINDOW_MAXIMIZE, { "unminimize", "maximize" }, is_max },
	{ DESKTOP_WINDOW_FULLSCREEN, { "unminimize", "fullscreen" }, is_full },
	{ DESKTOP_WINDOW_RESTORE, { "unfullscreen", "unmaximize", "unminimize" }, restored },
	{ DESKTOP_WINDOW_RAISE, { NULL }, raised },
};

static bool raised(struct gn_op* o)
{
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

static int gn_apply(struct gn_op* o, int rc, bool (*done)(struct gn_op* o))
{
	if (rc < 0)
		return rc;
	rc = gn_wait(o, done);
	if (rc < 0)
		return rc;
	o->out->applied = rc == 1;
	if (!o->out->applied && !o->out->note[0])
		desktop__window_note(o->out, "GNOME Shell did not do it within %d ms", o->req->timeout_ms);
	return 0;
}

static int gn_close(struct gn_op* o)
{
	struct desktop_window_outcome* out = o->out;
	int rc = gnome_window_close(o->shell, o->id);	/* the app may ask first */
	if (rc < 0 && rc != -ENOENT)
		return rc;
	rc = gn_wait(o, gone);
	out->closed = rc == -ENOENT;
	if (!out->closed && o->req->force && out->before.pid > 0) {
		kill((pid_t)out->before.pid, SIGTERM);
		out->killed = true;
		o->end = clock_ms() + KILL_WAIT_MS;
		out->closed = gn_wait(o, gone) == -ENOENT;
	}
	out->applied = out->closed;
	if (out->closed)
		return 0;
	if (o->req->force && out->before.pid <= 0)
		desktop__window_note(out, "the window is still there and its pid is unknown: it cannot be ended");
	else if (!o->req->force)
		desktop__window_note(out, "the window is still there after %d ms (a dialog asking to save?); "
				"answer it, or force: true ends its client", o->req->timeout_ms);
	return 0;
}

static int gn_run(struct gn_op* o)
{
	switch (o->req->op) {
	case DESKTOP_WINDOW_RESIZE:
		return gn_apply(o, gnome_window_move_resize(o->shell, o->id, o->out->before.x,
				o->out->before.y, o->req->width, o->req->height), sized);
	case DESKTOP_WINDOW_CLOSE:
		return gn_close(o);
	case DESKTOP_WINDOW_RAISE:
		return gn_apply(o, gnome_window_activate(o->shell, o->id), raised);
	default:
		break;
	}
	for (size_t i = 0; i < sizeof(OPS) / sizeof(OPS[0]); i++) {
		if (OPS[i].op != o->req->op)
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
	struct gn_op o = { .req = req, .out = out };
	if (!(o.shell = shell_get(err, err_size)))
		return -ECONNRESET;
	out->wm = true;
	snprintf(out->wm_name, sizeof(out->wm_name), "GNOME Shell");
	o.end = clock_ms() + (req->timeout_ms > 0 ? req->timeout_ms : 0);
	int rc = gn_observe(&o);
	if (rc == -ENOTSUP)
		return desktop__gnome_unsupported("windows", err, err_size);
	if (rc == -ENOENT) {
		snprintf(err, err_size, "window %u does not exist", req->window);
		return rc;
	}
	if (rc < 0)
		goto lost;
	out->before = out->after;
	rc = gn_run(&o);
	if (rc == -EINVAL) {
		snprintf(err, err_size, "unknown window operation");
		return -EINVAL;
	}
	if (rc == -ENOENT && req->op != DESKTOP_WINDOW_CLOSE) {
		snprintf(err, err_size, "window %u went away", req->window);
		return rc;
	}
	if (rc < 0)
		goto lost;
	return 0;
lost:
	snprintf(err, err_size, "GNOME Shell did not answer: %s", gnome_shell_error(o.shell));
	return -ECONNRESET;
}
