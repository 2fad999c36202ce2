#define _GNU_SOURCE	/* pthread_setname_np */
#include "base/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

struct parallel_task {
	void (*fn)(void* job);
	char* jobs;
	size_t size;
	int n;
	atomic_int next;	/* the next job to take (size > 0) */
	int wanted;		/* helpers that may still join */
	int active;		/* helpers that joined and have not finished */
};

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct parallel_task* task;	/* the running call's, or NULL */
	unsigned long generation;	/* one per call, so a helper joins it once */
	int helpers;
} P = {
	.once = PTHREAD_ONCE_INIT,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

int parallel_threads(void)
{
	static atomic_int cached;
	int n = atomic_load_explicit(&cached, memory_order_relaxed);
	if (!n) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus < 1 ? 1 : cpus > PARALLEL_MAX_THREADS ? PARALLEL_MAX_THREADS : (int)cpus;
		atomic_store_explicit(&cached, n, memory_order_relaxed);
	}
	return n;
}

static void take_part(struct parallel_task* t)
{
	if (!t->size) {
		t->fn(t->jobs);
		return;
	}
	for (;;) {
		int i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
		if (i >= t->n)
			return;
		t->fn(t->jobs + (size_t)i * t->size);
	}
}

static void* helper_main(void* ud)
{
	(void)ud;
	unsigned long seen = 0;
	pthread_mutex_lock(&P.lock);
	for (;;) {
		while (!P.task || P.task->wanted == 0 || P.generation == seen)
			pthread_cond_wait(&P.work, &P.lock);
		struct parallel_task* t = P.task;
		seen = P.generation;
		t->wanted--;
		t->active++;
		pthread_mutex_unlock(&P.lock);
		take_part(t);
		pthread_mutex_lock(&P.lock);
		if (--t->active == 0)
			pthread_cond_broadcast(&P.done);
	}
	return NULL;
}

static void start_helpers(void)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Small stacks: the jobs' buffers are on the heap. */
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (int i = 1; i < parallel_threads(); i++) {
		pthread_t thread;
		if (pthread_create(&thread, &attr, helper_main, NULL) != 0)
			break;
		pthread_setname_np(thread, "deskd-parallel");
		P.helpers++;
	}
	pthread_attr_destroy(&attr);
}

void parallel_run(void (*fn)(void* job), void* jobs, size_t size, int n)
{
	if (n <= 0)
		return;
	n = n > PARALLEL_MAX_THREADS ? PARALLEL_MAX_THREADS : n;
	struct parallel_task t = { .fn = fn, .jobs = jobs, .size = size, .n = n };
	atomic_init(&t.next, 0);
	if (n > 1)
		pthread_once(&P.once, start_helpers);
	pthread_mutex_lock(&P.lock);
	bool shared = n > 1 && P.helpers > 0 && !P.task;
	if (shared) {
		t.wanted = n - 1 < P.helpers ? n - 1 : P.helpers;
		P.task = &t;
		P.generation++;
		pthread_cond_broadcast(&P.work);
	}
	pthread_mutex_unlock(&P.lock);

	if (!shared) {
		/* Alone: a shared job once, or each job in turn. */
		take_part(&t);
		return;
	}
	take_part(&t);
	pthread_mutex_lock(&P.lock);
	t.wanted = 0;	/* a helper not started yet stays out */
	while (t.active > 0)
		pthread_cond_wait(&P.done, &P.lock);
	P.task = NULL;
	pthread_mutex_unlock(&P.lock);
}
