#include "base/worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct worker_job {
	void (*fn)(void* ud);
	void* ud;
};

static pthread_mutex_t worker__mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t worker__idle = PTHREAD_COND_INITIALIZER;
static int worker__busy;

static void* worker_main(void* arg)
{
	struct worker_job job = *(struct worker_job*)arg;
	free(arg);
	job.fn(job.ud);
	pthread_mutex_lock(&worker__mutex);
	if (--worker__busy == 0)
		pthread_cond_broadcast(&worker__idle);
	pthread_mutex_unlock(&worker__mutex);
	return NULL;
}

int worker_spawn(void (*fn)(void* ud), void* ud)
{
	struct worker_job* job = malloc(sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->fn = fn;
	job->ud = ud;

	pthread_mutex_lock(&worker__mutex);
	if (worker__busy >= WORKER_MAX) {
		pthread_mutex_unlock(&worker__mutex);
		free(job);
		return -EAGAIN;
	}
	worker__busy++;
	pthread_mutex_unlock(&worker__mutex);

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t thread;
	int rc = pthread_create(&thread, &attr, worker_main, job);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		free(job);
		pthread_mutex_lock(&worker__mutex);
		worker__busy--;
		pthread_mutex_unlock(&worker__mutex);
		return -rc;
	}
	return 0;
}

void worker_drain(int timeout_ms)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&worker__mutex);
	while (worker__busy > 0)
		if (pthread_cond_timedwait(&worker__idle, &worker__mutex, &deadline) != 0)
			break;
	pthread_mutex_unlock(&worker__mutex);
}
