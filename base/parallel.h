#pragma once

#include <stddef.h>

/* Short CPU-bound jobs (an image's bands or strips) run at once on the
 * caller's thread and a few long-lived helpers, one per core beside it. A
 * helper that has not started by the time the caller has run out of work
 * is not waited for: the caller never stalls on a thread the scheduler has
 * not run yet, and no thread is created per call. */

#define PARALLEL_MAX_THREADS 4

/** Threads parallel_run uses at most, the caller's included: the online
 *  cores, 1 to PARALLEL_MAX_THREADS. */
int parallel_threads(void);

/** fn on each of n jobs of size bytes at jobs (n at most
 *  PARALLEL_MAX_THREADS), each job once, on whichever thread takes it;
 *  returns when all have run. size 0: one job that up to n threads share
 *  (fn hands out its work itself, and may run on threads that find
 *  nothing left). While another call is running, this one runs its jobs
 *  on the caller's thread alone. */
void parallel_run(void (*fn)(void* job), void* jobs, size_t size, int n);
