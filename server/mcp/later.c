#define _GNU_SOURCE
/* Answers decided later (core.h, mcp_later): a call's answer starts
 * as plain JSON, and one still running after MCP_STREAM_AFTER_MS gets its
 * SSE stream (one that may become a task gets its task sooner), because a closed stream is how a client cancels (a suspended
 * connection never notices its client leaving) and, on the session era,
 * what a client resumes. One watcher thread for both transports
 * (http_modern.c, mcp_http.c); it holds a reference to each sink listed. */

#include "server/mcp/core.h"
#include "base/clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define LATER_TICK_MS 50

struct later {
	void* ud;
	int64_t due;
	bool (*settled)(void* ud);
	void (*fire)(void* ud);
	void (*unref)(void* ud);
	struct later* next;
};

static struct {
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	struct later* pending;
	bool running;
	pthread_t thread;
} W = { .mutex = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void* watcher_main(void* arg)
{
	(void)arg;
	pthread_mutex_lock(&W.mutex);
	for (;;) {
		if (!W.pending) {
			pthread_cond_wait(&W.cond, &W.mutex);
			continue;
		}
		struct timespec ts = clock_realtime_in(LATER_TICK_MS);
		pthread_cond_timedwait(&W.cond, &W.mutex, &ts);
		int64_t now = clock_ms();
		struct later* due = NULL;
		for (struct later** p = &W.pending; *p; ) {
			struct later* l = *p;
			if (l->settled(l->ud) || now >= l->due) {
				*p = l->next;
				l->next = due;
				due = l;
			} else {
				p = &l->next;
			}
		}
		pthread_mutex_unlock(&W.mutex);
		while (due) {
			struct later* l = due;
			due = l->next;
			if (!l->settled(l->ud))
				l->fire(l->ud);
			l->unref(l->ud);	/* the list's */
			free(l);
		}
		pthread_mutex_lock(&W.mutex);
	}
	return NULL;
}

void mcp_later(void* ud, int64_t started_ms, int after_ms, bool (*settled)(void* ud),
		void (*fire)(void* ud), void (*unref)(void* ud))
{
	struct later* l = calloc(1, sizeof(*l));
	if (!l) {
		/* Undecided stays as it is: a call stays JSON (still answered,
		 * only not cancellable by a close), a task stays a call. */
		unref(ud);
		return;
	}
	*l = (struct later){ .ud = ud, .due = started_ms + after_ms, .settled = settled,
		.fire = fire, .unref = unref };
	pthread_mutex_lock(&W.mutex);
	if (!W.running) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		W.running = pthread_create(&W.thread, &attr, watcher_main, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	if (W.running) {
		l->next = W.pending;
		W.pending = l;
		pthread_cond_signal(&W.cond);
		l = NULL;
	}
	pthread_mutex_unlock(&W.mutex);
	if (l) {
		unref(ud);
		free(l);
	}
}
