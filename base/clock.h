#pragma once

/* The one monotonic clock and sleep of the house (milliseconds and
 * nanoseconds since an arbitrary point; never wall time). */

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline int64_t clock_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleeps the whole time, across signals; nothing for ns <= 0. */
static inline void clock_sleep_ns(int64_t ns)
{
	if (ns <= 0)
		return;
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static inline void clock_sleep_ms(int64_t ms)
{
	clock_sleep_ns(ms * 1000000);
}

/* The wall-clock time ms from now, for pthread_cond_timedwait and
 * pthread_timedjoin_np (which take CLOCK_REALTIME). */
static inline struct timespec clock_realtime_in(int64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}
