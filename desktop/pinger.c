/* The hang detector: a thread of its own with a small xcb connection asks
 * the X server a question (GetInputFocus) every PING_PERIOD_MS and waits for
 * the answer without blocking (poll on the socket). Before each exchange
 * with the server (the connection setup too, which does block) it notes the
 * time; a reader that finds a note older than HANG_MS calls the server hung,
 * even while the pinger itself is stuck in xcb_connect. Then
 * desktop_available() is false, so /healthz says 503 and tools answer
 * display_unavailable at once instead of queueing behind a stopped server
 * (D4). The first reader that calls it hung also aborts every Xlib
 * connection of the process but the watcher's (x11_abort_all: their
 * sockets shut down), so calls already in flight, blocked in a read or
 * waiting to open a connection, return at once with the connection lost and answer
 * display_unavailable too, within about HANG_MS of the stop (R5); nothing
 * they had buffered is sent later. When the answer arrives the server is
 * back: opens go on (x11_resume), and the contexts that were aborted are
 * opened again on their next use (the path of a lost display, D9). xcb
 * never exits the process and needs no error handler, so it cannot disturb
 * the Xlib connections' trapping; the pinger's own connection is xcb, not
 * on x11/'s list, so the abort leaves it alone. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "x11/x11.h"
#include "base/clock.h"
#include "base/log.h"

#include <xcb/xcb.h>
#include <xcb/xcbext.h>

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define PING_PERIOD_MS 250
#define HANG_MS 2000

static pthread_t pinger;
static bool pinger_running;
static atomic_bool pinger_stop;
static atomic_int_fast64_t pending_since;	/* clock_ms() of the unanswered exchange, 0 */
static atomic_bool hang_logged;
static atomic_int_fast64_t aborted_for;	/* the pending_since aborted for */

/* Sleep ms in short steps; false when asked to stop. */
static bool nap(int ms)
{
	for (int t = 0; t < ms; t += 50) {
		if (atomic_load(&pinger_stop))
			return false;
		clock_sleep_ms(50);
	}
	return !atomic_load(&pinger_stop);
}

/* One question and its answer: 1 answered, 0 the connection failed, -1
 * asked to stop first. */
static int ping(xcb_connection_t* c)
{
	atomic_store(&pending_since, clock_ms());
	xcb_get_input_focus_cookie_t cookie = xcb_get_input_focus(c);
	if (xcb_flush(c) <= 0)
		return 0;
	for (;;) {
		if (atomic_load(&pinger_stop))
			return -1;
		void* reply = NULL;
		xcb_generic_error_t* error = NULL;
		if (xcb_poll_for_reply(c, cookie.sequence, &reply, &error)) {
			free(reply);
			free(error);
			return 1;
		}
		if (xcb_connection_has_error(c))
			return 0;
		desktop__hung(NULL);	/* logs the hang once */
		struct pollfd pfd = { xcb_get_file_descriptor(c), POLLIN, 0 };
		poll(&pfd, 1, 100);
	}
}

static void* pinger_main(void* ud)
{
	xcb_connection_t* c = NULL;
	while (!atomic_load(&pinger_stop)) {
		if (!c) {
			/* Connect only to a server the watcher just reached: the
			 * connection setup itself waits for the server. */
			if (!desktop__connected()) {
				if (!nap(PING_PERIOD_MS))
					break;
				continue;
			}
			atomic_store(&pending_since, clock_ms());
			c = xcb_connect(desktop_display_name(), NULL);
			atomic_store(&pending_since, 0);
			if (x11_held())
				x11_resume();
			if (xcb_connection_has_error(c)) {
				xcb_disconnect(c);
				c = NULL;
				if (!nap(PING_PERIOD_MS))
					break;
				continue;
			}
		}
		int answered = ping(c);
		if (answered < 0)
			break;	/* stopping: a hang stays noted (exit handlers look) */
		int64_t since = atomic_exchange(&pending_since, 0);
		if (atomic_exchange(&hang_logged, false) && answered)
			log_info("the X server on %s answers again (after %lld ms)",
					desktop_display_name(), (long long)(clock_ms() - since));
		/* Answered, or gone (the watcher sees to that): opens go on. Every
		 * round, not only after a hang this thread saw end: a reader may
		 * have called the hang just as the answer came. */
		if (x11_held())
			x11_resume();
		if (!answered) {
			/* The connection is gone: the watcher deals with that. */
			xcb_disconnect(c);
			c = NULL;
		}
		if (!nap(PING_PERIOD_MS))
			break;
	}
	if (c)
		xcb_disconnect(c);
	return NULL;
}

bool desktop__hung(int64_t* since_ms)
{
	int64_t since = atomic_load(&pending_since);
	int64_t waited = since ? clock_ms() - since : 0;
	if (waited < HANG_MS)
		return false;
	if (since_ms)
		*since_ms = since;
	/* Once per unanswered exchange: calls blocked on the server return
	 * now (R5). A reader that saw an exchange just answered aborts in vain,
	 * and the next answer (PING_PERIOD_MS) lifts the hold. */
	int aborted = -1;
	if (atomic_exchange(&aborted_for, since) != since)
		aborted = x11_abort_all();
	if (!atomic_exchange(&hang_logged, true))
		log_warn("the X server on %s has not answered for %lld ms (stopped?); "
				"tools answer display_unavailable until it does%s",
				desktop_display_name(), (long long)waited,
				aborted > 0 ? " (X connections dropped: calls on them answer so too)" : "");
	return true;
}

int desktop__pinger_start(void)
{
	atomic_store(&pinger_stop, false);
	atomic_store(&pending_since, 0);
	atomic_store(&hang_logged, false);
	x11_resume();	/* a hold left by a previous start */
	int rc = pthread_create(&pinger, NULL, pinger_main, NULL);
	if (rc != 0)
		return -rc;
	pinger_running = true;
	return 0;
}

void desktop__pinger_stop(void)
{
	if (!pinger_running)
		return;
	atomic_store(&pinger_stop, true);
	/* It never blocks for long (poll steps of 100 ms), except in
	 * xcb_connect to a server that hangs right then: do not wait for that. */
	struct timespec ts = clock_realtime_in(500);
	if (pthread_timedjoin_np(pinger, NULL, &ts) != 0)
		pthread_detach(pinger);
	pinger_running = false;
}
