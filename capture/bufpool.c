/* A small cache of big buffers. Fresh multi-megabyte allocations come from
 * mmap and cost a page fault per 4 KiB on first touch (about 11 ms for one
 * 1280x800 frame on the reference machine); reusing them costs nothing.
 * What it keeps is resident memory: bounded, and all of it given back by
 * capture_buffers_release() once captures stop for a while (desktop/). */
#include "capture/bufpool.h"
#include "capture/capture.h"

#include <pthread.h>
#include <stdlib.h>

#define POOL_SLOTS 16
/* A burst of one client's 1920x1080 screenshots reuses about 20 MB (the
 * frame, its scaled copy, the PNG bands' rows, tokens and output); more
 * concurrent callers allocate afresh rather than keep their share. */
#define POOL_MAX_BYTES ((size_t)24 << 20)
#define POOL_ROUND ((size_t)64 << 10)

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void* p;
	size_t cap;
} pool[POOL_SLOTS];
static size_t pool_bytes;

void* capture__buf_get(size_t size, size_t* cap)
{
	if (size == 0)
		size = 1;
	pthread_mutex_lock(&pool_lock);
	int best = -1;
	for (int i = 0; i < POOL_SLOTS; i++) {
		if (!pool[i].p || pool[i].cap < size || pool[i].cap > 2 * size + POOL_ROUND * 16)
			continue;
		if (best < 0 || pool[i].cap < pool[best].cap)
			best = i;
	}
	if (best >= 0) {
		void* p = pool[best].p;
		*cap = pool[best].cap;
		pool_bytes -= pool[best].cap;
		pool[best].p = NULL;
		pthread_mutex_unlock(&pool_lock);
		return p;
	}
	pthread_mutex_unlock(&pool_lock);
	size_t rounded = (size + POOL_ROUND - 1) / POOL_ROUND * POOL_ROUND;
	void* p = NULL;
	if (posix_memalign(&p, 64, rounded) != 0)
		return NULL;
	*cap = rounded;
	return p;
}

void capture__buf_put(void* p, size_t cap)
{
	if (!p)
		return;
	pthread_mutex_lock(&pool_lock);
	int slot = -1;
	for (int i = 0; i < POOL_SLOTS && slot < 0; i++)
		if (!pool[i].p)
			slot = i;
	if (slot < 0 || pool_bytes + cap > POOL_MAX_BYTES) {
		/* Full: drop the smallest cached buffer if this one is bigger. */
		int small = -1;
		for (int i = 0; i < POOL_SLOTS; i++)
			if (pool[i].p && (small < 0 || pool[i].cap < pool[small].cap))
				small = i;
		if (small < 0 || pool[small].cap >= cap || pool_bytes - pool[small].cap + cap > POOL_MAX_BYTES) {
			pthread_mutex_unlock(&pool_lock);
			free(p);
			return;
		}
		free(pool[small].p);
		pool_bytes -= pool[small].cap;
		pool[small].p = NULL;
		slot = small;
	}
	pool[slot].p = p;
	pool[slot].cap = cap;
	pool_bytes += cap;
	pthread_mutex_unlock(&pool_lock);
}

size_t capture_buffers_release(void)
{
	void* drop[POOL_SLOTS];
	int n = 0;
	pthread_mutex_lock(&pool_lock);
	size_t bytes = pool_bytes;
	for (int i = 0; i < POOL_SLOTS; i++) {
		if (pool[i].p)
			drop[n++] = pool[i].p;
		pool[i].p = NULL;
	}
	pool_bytes = 0;
	pthread_mutex_unlock(&pool_lock);
	for (int i = 0; i < n; i++)
		free(drop[i]);
	return bytes;
}
