/* Captures for the tools: a pool of capture contexts, the change
 * generations per target, the cache of encoded screenshots, PNG band states,
 * and the waits for change and for quiet (desktop/desktop.h).
 *
 * Tool calls run on worker threads, several at once, so capture contexts
 * (one X connection each) come from a small mutex-protected pool. Change
 * tracking is per context (XDamage, poll style); a global generation per
 * target, bumped whenever any context sees a change, keys the cache of
 * encoded screenshots, so a repeated screenshot of an unchanged target
 * is not captured or encoded again. */
#include "desktop/desktop.h"
#include "base/base64.h"
#include "base/clock.h"
#include "base/jsonmem.h"
#include "base/log.h"
#include "base/worker.h"
#include "capture/capture.h"
#include "desktop/desktop_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- Context pool ---------------------------------------------------------- */

#define POOL_MAX 16
#define POOL_KEEP 2		/* idle contexts kept however long they wait */
#define POOL_IDLE_MS 5000	/* others are closed once idle this long */
#define SEEN_MAX 32

struct desktop_capture {
	struct capture* cap;
	unsigned disconnects;	/* desktop_disconnects() when it was opened */
	int64_t idle_since;	/* clock_ms() when it was put back */
	bool warm;		/* has captured: holds a screen's worth of shared image */
	struct {
		uint32_t window;
		uint64_t counter;
	} seen[SEEN_MAX];
	int n_seen, next_seen;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static struct desktop_capture* pool_idle[POOL_MAX];
static int pool_n_idle, pool_n_total;
static int pool_n_warm;		/* warm contexts, idle or not */
static char pool_display[256];

static int gate_max(void);

static void capture_slot_destroy(struct desktop_capture* p)
{
	if (!p)
		return;
	if (p->warm) {
		pthread_mutex_lock(&pool_lock);
		pool_n_warm--;
		pthread_mutex_unlock(&pool_lock);
	}
	capture_destroy(p->cap);
	free(p);
}

/* Under pool_lock: the idle context to hand out, the top one (the last put
 * back) of the kind asked for if any. Screenshots ask for warm ones, the
 * rest for cold ones, so the shared images stay with a few contexts. */
static struct desktop_capture* pool_take(bool warm)
{
	int i = pool_n_idle - 1;
	while (i > 0 && pool_idle[i]->warm != warm)
		i--;
	if (pool_idle[i]->warm != warm)
		i = pool_n_idle - 1;
	struct desktop_capture* p = pool_idle[i];
	memmove(pool_idle + i, pool_idle + i + 1, (size_t)(pool_n_idle - i - 1) * sizeof(*pool_idle));
	pool_n_idle--;
	return p;
}

static struct desktop_capture* capture_get(bool warm, char* err, size_t err_size)
{
	const char* name = desktop_display_name();
	if (!name)
		name = "";
	pthread_mutex_lock(&pool_lock);
	if (strcmp(name, pool_display) != 0) {
		/* The display changed (restarted embedded Xvfb): start over. */
		for (int i = 0; i < pool_n_idle; i++) {
			capture_slot_destroy(pool_idle[i]);
			pool_n_total--;
		}
		pool_n_idle = 0;
		snprintf(pool_display, sizeof(pool_display), "%s", name);
	}
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	while (pool_n_idle == 0 && pool_n_total >= POOL_MAX) {
		if (pthread_cond_timedwait(&pool_cond, &pool_lock, &until) == ETIMEDOUT) {
			pthread_mutex_unlock(&pool_lock);
			snprintf(err, err_size, "all %d capture connections are busy", POOL_MAX);
			return NULL;
		}
	}
	/* Contexts from before a display loss are dead even if they do not
	 * know it yet. */
	unsigned disconnects = desktop_disconnects();
	while (pool_n_idle > 0) {
		struct desktop_capture* p = pool_take(warm);
		if (p->disconnects == disconnects && capture_connected(p->cap)) {
			pthread_mutex_unlock(&pool_lock);
			return p;
		}
		if (p->warm)
			pool_n_warm--;
		p->warm = false;
		capture_slot_destroy(p);
		pool_n_total--;
	}
	pool_n_total++;
	pthread_mutex_unlock(&pool_lock);

	struct desktop_capture* p = calloc(1, sizeof(*p));
	if (p) {
		p->disconnects = disconnects;
		p->cap = capture_create(*name ? name : NULL, err, err_size);
	}
	else
		snprintf(err, err_size, "out of memory");
	if (!p || !p->cap) {
		free(p);
		pthread_mutex_lock(&pool_lock);
		pool_n_total--;
		pthread_cond_signal(&pool_cond);
		pthread_mutex_unlock(&pool_lock);
		return NULL;
	}
	return p;
}

struct desktop_capture* desktop_capture_get(char* err, size_t err_size)
{
	return capture_get(false, err, err_size);
}

struct desktop_capture* desktop_capture_get_warm(char* err, size_t err_size)
{
	return capture_get(true, err, err_size);
}

void desktop_capture_put(struct desktop_capture* p)
{
	if (!p)
		return;
	/* More shared images than captures run at once: this one's goes (a
	 * round trip now; a fresh one costs its page faults later). */
	pthread_mutex_lock(&pool_lock);
	bool cool = p->warm && pool_n_warm > gate_max();
	if (cool) {
		p->warm = false;
		pool_n_warm--;
	}
	pthread_mutex_unlock(&pool_lock);
	if (cool)
		capture_release(p->cap);
	pthread_mutex_lock(&pool_lock);
	if (!capture_connected(p->cap) || pool_n_idle >= POOL_MAX) {
		pool_n_total--;
		pthread_mutex_unlock(&pool_lock);
		capture_slot_destroy(p);
		pthread_mutex_lock(&pool_lock);
	} else {
		p->idle_since = clock_ms();
		pool_idle[pool_n_idle++] = p;
	}
	pthread_cond_signal(&pool_cond);
	pthread_mutex_unlock(&pool_lock);
}

void desktop__capture_close_idle(void)
{
	struct desktop_capture* idle[POOL_MAX];
	pthread_mutex_lock(&pool_lock);
	int n = pool_n_idle;
	memcpy(idle, pool_idle, (size_t)n * sizeof(*idle));
	pool_n_idle = 0;
	pool_n_total -= n;
	pthread_cond_broadcast(&pool_cond);
	pthread_mutex_unlock(&pool_lock);
	for (int i = 0; i < n; i++)
		capture_slot_destroy(idle[i]);
}

struct trim_job {
	struct desktop_capture* slots[POOL_MAX];
	int n;
};

static void trim_run(void* ud)
{
	struct trim_job* job = ud;
	for (int i = 0; i < job->n; i++)
		capture_slot_destroy(job->slots[i]);
	free(job);
}

/* A burst of captures leaves up to POOL_MAX connections (and their shared
 * memory) behind: close the idle ones beyond POOL_KEEP that waited
 * POOL_IDLE_MS. The watcher calls this; closing takes a round trip, so it
 * happens on a worker, and only while the server answers. */
static void memory_release_maybe(void);

void desktop__capture_trim(void)
{
	if (!desktop_available() || desktop__hung(NULL))
		return;
	memory_release_maybe();
	struct trim_job* job = NULL;
	int64_t now = clock_ms();
	pthread_mutex_lock(&pool_lock);
	/* Gets take from the top, so the bottom waited longest. */
	int n = 0;
	while (n < pool_n_idle - POOL_KEEP && now - pool_idle[n]->idle_since >= POOL_IDLE_MS)
		n++;
	if (n > 0 && (job = calloc(1, sizeof(*job)))) {
		memcpy(job->slots, pool_idle, (size_t)n * sizeof(*pool_idle));
		job->n = n;
		memmove(pool_idle, pool_idle + n, (size_t)(pool_n_idle - n) * sizeof(*pool_idle));
		pool_n_idle -= n;
		pool_n_total -= n;
	}
	pthread_mutex_unlock(&pool_lock);
	if (job && worker_spawn(trim_run, job) < 0) {
		/* No worker free: put them back; the next round tries again. */
		pthread_mutex_lock(&pool_lock);
		for (int i = 0; i < job->n && pool_n_idle < POOL_MAX; i++) {
			memmove(pool_idle + 1, pool_idle, (size_t)pool_n_idle * sizeof(*pool_idle));
			pool_idle[0] = job->slots[i];
			pool_n_idle++;
			pool_n_total++;
		}
		pthread_mutex_unlock(&pool_lock);
		free(job);
	}
}

/* ---- Generations and the screenshot cache ----------------------------------- */

#define GEN_MAX 64
#define CACHE_MAX 8
/* Encoded bytes and their Base64 together: a few full-screen PNGs of a busy
 * screen (a 1280x800 one of noise is 3 MB, 7 MB with its Base64). */
#define CACHE_MAX_BYTES ((size_t)16 << 20)

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint32_t window;
	uint64_t gen;
} gens[GEN_MAX];
static int n_gens, next_gen_evict;
static uint64_t gen_clock;

struct cache_key {
	uint32_t window;
	int region[4];		/* screenshot space; all 0 = whole target */
	int width, height;	/* output size */
	int target_w, target_h;	/* physical target size */
	int format;		/* 0 png, 1 jpeg */
	int quality;
};

void desktop_image_unref(struct desktop_image* self)
{
	if (!self || atomic_fetch_sub(&self->refs, 1) != 1)
		return;
	free(self->data);
	free(self->b64);
	free(self);
}

/* Takes ownership of data. NULL on ENOMEM (data freed). */
static struct desktop_image* image_new(uint8_t* data, size_t len, int width, int height)
{
	struct desktop_image* self = calloc(1, sizeof(*self));
	if (self)
		self->b64 = base64_encode(data, len, &self->b64_len);
	if (!self || !self->b64) {
		free(self);
		free(data);
		return NULL;
	}
	atomic_init(&self->refs, 1);
	self->data = data;
	self->len = len;
	self->width = width;
	self->height = height;
	return self;
}

static struct cache_entry {
	struct cache_key key;
	uint64_t gen;
	uint64_t used;
	struct desktop_image* blob;
} cache[CACHE_MAX];
static uint64_t cache_clock;
static size_t cache_bytes;

static size_t image_bytes(const struct desktop_image* img)
{
	return img ? img->len + img->b64_len : 0;
}

/* Poll the context's damage for the target and return the target's global
 * generation: it changes whenever any context saw the target change. */
static int target_generation(struct desktop_capture* p, uint32_t window, uint64_t* gen)
{
	uint64_t counter;
	int rc = capture_changes(p->cap, window, &counter);
	if (rc < 0)
		return rc;
	int slot = -1;
	for (int i = 0; i < p->n_seen; i++)
		if (p->seen[i].window == window)
			slot = i;
	bool changed = slot < 0 || p->seen[slot].counter != counter;
	if (slot < 0) {
		if (p->n_seen < SEEN_MAX) {
			slot = p->n_seen++;
		} else {
			slot = p->next_seen;
			p->next_seen = (p->next_seen + 1) % SEEN_MAX;
		}
		p->seen[slot].window = window;
	}
	p->seen[slot].counter = counter;

	pthread_mutex_lock(&cache_lock);
	int g = -1;
	for (int i = 0; i < n_gens; i++)
		if (gens[i].window == window)
			g = i;
	if (g < 0) {
		if (n_gens < GEN_MAX) {
			g = n_gens++;
		} else {
			g = next_gen_evict;
			next_gen_evict = (next_gen_evict + 1) % GEN_MAX;
		}
		gens[g].window = window;
		changed = true;
	}
	if (changed)
		gens[g].gen = ++gen_clock;
	*gen = gens[g].gen;
	pthread_mutex_unlock(&cache_lock);
	return 0;
}

/* A reference to the cached image for key at gen, or NULL. */
static struct desktop_image* cache_lookup(const struct cache_key* key, uint64_t gen)
{
	struct desktop_image* out = NULL;
	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < CACHE_MAX; i++) {
		struct cache_entry* e = &cache[i];
		if (e->blob && e->gen == gen && memcmp(&e->key, key, sizeof(*key)) == 0) {
			out = e->blob;
			atomic_fetch_add(&out->refs, 1);
			e->used = ++cache_clock;
			break;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	return out;
}

static void cache_store(const struct cache_key* key, uint64_t gen, struct desktop_image* blob)
{
	size_t bytes = image_bytes(blob);
	if (bytes > CACHE_MAX_BYTES)
		return;
	struct desktop_image* old[CACHE_MAX];
	int n_old = 0;
	atomic_fetch_add(&blob->refs, 1);
	pthread_mutex_lock(&cache_lock);
	int slot = 0;
	for (int i = 0; i < CACHE_MAX; i++) {
		if (cache[i].blob && memcmp(&cache[i].key, key, sizeof(*key)) == 0) {
			slot = i;
			break;
		}
		if (!cache[i].blob) {
			slot = i;
			break;
		}
		if (cache[i].used < cache[slot].used)
			slot = i;
	}
	if (cache[slot].blob) {
		cache_bytes -= image_bytes(cache[slot].blob);
		old[n_old++] = cache[slot].blob;
	}
	cache[slot] = (struct cache_entry){ *key, gen, ++cache_clock, blob };
	cache_bytes += bytes;
	/* Over the byte bound: the least recently used others go. */
	while (cache_bytes > CACHE_MAX_BYTES) {
		int lru = -1;
		for (int i = 0; i < CACHE_MAX; i++)
			if (i != slot && cache[i].blob && (lru < 0 || cache[i].used < cache[lru].used))
				lru = i;
		if (lru < 0)
			break;
		cache_bytes -= image_bytes(cache[lru].blob);
		old[n_old++] = cache[lru].blob;
		cache[lru].blob = NULL;
	}
	pthread_mutex_unlock(&cache_lock);
	for (int i = 0; i < n_old; i++)
		desktop_image_unref(old[i]);
}

/* PNG states (capture_encode_png_cached): the previous image of a target
 * and its compressed bands, so after a small change only the bands it
 * touched are deflated again. Checked out for the encode, one user each. */
#define PNG_STATES 4

static struct {
	struct cache_key key;
	struct capture_png_state* state;
	bool busy, used_slot;
	uint64_t used;
} png_states[PNG_STATES];

/* The slot for key, marked busy, with *state (may be NULL: a new one is
 * made by the encoder); -1 when every slot is busy. */
static int png_state_take(const struct cache_key* key, struct capture_png_state** state)
{
	*state = NULL;
	pthread_mutex_lock(&cache_lock);
	int slot = -1;
	for (int i = 0; i < PNG_STATES; i++)
		if (png_states[i].used_slot && !png_states[i].busy
				&& memcmp(&png_states[i].key, key, sizeof(*key)) == 0)
			slot = i;
	struct capture_png_state* old = NULL;
	if (slot < 0) {
		for (int i = 0; i < PNG_STATES; i++) {
			if (png_states[i].busy)
				continue;
			if (slot < 0 || !png_states[i].used_slot
					|| (png_states[slot].used_slot && png_states[i].used < png_states[slot].used))
				slot = i;
		}
		if (slot >= 0) {
			old = png_states[slot].state;
			png_states[slot].state = NULL;
			png_states[slot].key = *key;
			png_states[slot].used_slot = true;
		}
	}
	if (slot >= 0) {
		png_states[slot].busy = true;
		*state = png_states[slot].state;
	}
	pthread_mutex_unlock(&cache_lock);
	capture_png_state_free(old);
	return slot;
}

static void png_state_give(int slot, struct capture_png_state* state)
{
	if (slot < 0) {
		capture_png_state_free(state);
		return;
	}
	pthread_mutex_lock(&cache_lock);
	png_states[slot].state = state;
	png_states[slot].busy = false;
	png_states[slot].used = ++cache_clock;
	pthread_mutex_unlock(&cache_lock);
}

/* ---- Giving memory back ------------------------------------------------------ */

/* What a burst of captures keeps warm (the buffer cache, the X shared image
 * of each pooled context, the PNG states' frames and bands, the cached
 * screenshots) is tens of MB that an idle deskd does not need: after
 * --memory-idle without a capture it is freed and the heap trimmed; the
 * next capture pays its page faults once. */
#define MEMORY_IDLE_MS 10000

static _Atomic int64_t last_capture_ms;
static atomic_bool memory_released = true;	/* nothing kept before a first capture */

void desktop__capture_used(void)
{
	atomic_store(&last_capture_ms, clock_ms());
	atomic_store(&memory_released, false);
}

static void memory_release_run(void* ud)
{
	(void)ud;
	size_t freed = 0;
	/* The idle contexts' shared images: taken out of the pool meanwhile
	 * (a get opens a new context instead), back at the bottom after. */
	struct desktop_capture* idle[POOL_MAX];
	pthread_mutex_lock(&pool_lock);
	int n = pool_n_idle;
	memcpy(idle, pool_idle, (size_t)n * sizeof(*idle));
	pool_n_idle = 0;
	pthread_mutex_unlock(&pool_lock);
	for (int i = 0; i < n; i++)
		capture_release(idle[i]->cap);
	pthread_mutex_lock(&pool_lock);
	for (int i = 0; i < n; i++) {
		if (idle[i]->warm)
			pool_n_warm--;
		idle[i]->warm = false;
	}
	memmove(pool_idle + n, pool_idle, (size_t)pool_n_idle * sizeof(*pool_idle));
	memcpy(pool_idle, idle, (size_t)n * sizeof(*idle));
	pool_n_idle += n;
	pthread_cond_broadcast(&pool_cond);
	pthread_mutex_unlock(&pool_lock);

	struct capture_png_state* states[PNG_STATES];
	struct desktop_image* images[CACHE_MAX];
	int n_states = 0, n_images = 0;
	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < PNG_STATES; i++) {
		if (png_states[i].busy || !png_states[i].used_slot)
			continue;
		if (png_states[i].state)
			states[n_states++] = png_states[i].state;
		png_states[i].state = NULL;
		png_states[i].used_slot = false;
	}
	for (int i = 0; i < CACHE_MAX; i++) {
		if (cache[i].blob)
			images[n_images++] = cache[i].blob;
		cache[i].blob = NULL;
	}
	freed += cache_bytes;
	cache_bytes = 0;
	pthread_mutex_unlock(&cache_lock);
	for (int i = 0; i < n_states; i++)
		capture_png_state_free(states[i]);
	for (int i = 0; i < n_images; i++)
		desktop_image_unref(images[i]);
	freed += capture_buffers_release();
	/* The trimmer returns the heap's free pages within a second. */
	jsonmem_note_freed(freed > ((size_t)1 << 20) ? freed : (size_t)1 << 20);
	log_debug("idle: gave back %d contexts' shared images, %d PNG states, %d cached "
			"screenshots and %zu KB of buffers and images", n, n_states, n_images,
			freed >> 10);
}

static void memory_release_maybe(void)
{
	int after = desktop__config()->memory_idle_ms;
	if (after < 0 || atomic_load(&memory_released))
		return;
	if (clock_ms() - atomic_load(&last_capture_ms) < (after ? after : MEMORY_IDLE_MS))
		return;
	atomic_store(&memory_released, true);
	if (worker_spawn(memory_release_run, NULL) < 0)
		atomic_store(&memory_released, false);	/* the next round tries again */
}

/* ---- wait_for_change ----------------------------------------------------------------- */

#define WAIT_SLICE_MS 50

int desktop_wait_change(struct desktop_capture* p, uint32_t window,
		int timeout_ms, int stable_ms, bool need_change,
		const atomic_bool* cancelled, int64_t deadline_ms,
		bool* changed, bool* stable)
{
	int64_t start = clock_ms(), end = start + timeout_ms;
	if (deadline_ms && deadline_ms < end)
		end = deadline_ms;
	uint64_t counter;
	int rc = capture_changes(p->cap, window, &counter);
	if (rc < 0)
		return rc;
	*changed = !need_change;
	*stable = false;
	int64_t last_change = start;
	for (;;) {
		if (cancelled && atomic_load(cancelled))
			return -ECANCELED;
		int64_t now = clock_ms();
		if (*changed && now - last_change >= stable_ms) {
			*stable = true;
			return 0;
		}
		if (now >= end)
			return 0;
		int64_t until = end;
		if (*changed && last_change + stable_ms < until)
			until = last_change + stable_ms;
		int slice = (int)(until - now);
		if (slice > WAIT_SLICE_MS)
			slice = WAIT_SLICE_MS;
		if (slice < 1)
			slice = 1;
		uint64_t next;
		rc = capture_wait_changes(p->cap, window, counter, slice, &next);
		if (rc == 0) {
			counter = next;
			*changed = true;
			last_change = clock_ms();
		} else if (rc != -ETIMEDOUT) {
			return rc;
		}
	}
}


/* ---- Using a context ---------------------------------------------------------- */

struct capture* desktop_capture_backend(struct desktop_capture* self)
{
	return self->cap;
}

int desktop_capture_resolve(struct desktop_capture* self, uint32_t window,
		struct capture_rect* rect)
{
	if (!window) {
		rect->x = rect->y = 0;
		capture_screen_size(self->cap, &rect->width, &rect->height);
		return 0;
	}
	return capture_window_geometry(self->cap, window, rect);
}

int desktop_target(uint32_t window, int max_dimension, struct desktop_target* out,
		char* err, size_t err_size)
{
	struct desktop_capture* p = desktop_capture_get(err, err_size);
	if (!p)
		return -ECONNRESET;
	struct capture_rect r;
	int rc = desktop_capture_resolve(p, window, &r);
	if (rc < 0) {
		snprintf(err, err_size, "%s", capture_error(p->cap));
		desktop_capture_put(p);
		return rc == -ECONNRESET ? -ECONNRESET : -ENOENT;
	}
	desktop_capture_put(p);
	out->window = window;
	out->x = r.x;
	out->y = r.y;
	out->width = r.width;
	out->height = r.height;
	desktop_scaled_size(r.width, r.height, max_dimension,
			&out->image_width, &out->image_height);
	return 0;
}

int desktop_settle(uint32_t window, int quiet_ms, int timeout_ms)
{
	char err[256];
	struct desktop_capture* p = desktop_capture_get(err, sizeof(err));
	if (!p)
		return -ETIMEDOUT;
	bool changed, stable;
	int rc = desktop_wait_change(p, window, timeout_ms, quiet_ms, false, NULL, 0,
			&changed, &stable);
	desktop_capture_put(p);
	if (rc == -ENOENT)
		return 0;	/* the window went away: nothing left to settle */
	return rc == 0 && stable ? 0 : -ETIMEDOUT;
}

/* ---- Screenshots ------------------------------------------------------------------ */

/* Captures and encodes at once: more only share the same cores (the PNG
 * encoder already uses them all) while each holds a frame and its
 * encoder's buffers, 20 MB for a 1280x800 PNG; the others wait their turn
 * (bounded: past it they go ahead anyway). */
#define SHOT_GATE_WAIT_S 10

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_busy;

static int gate_max(void)
{
	static atomic_int cached;
	int n = atomic_load(&cached);
	if (!n) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus < 2 ? 2 : cpus > 8 ? 8 : (int)cpus;
		atomic_store(&cached, n);
	}
	return n;
}

static void gate_enter(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += SHOT_GATE_WAIT_S;
	pthread_mutex_lock(&gate_lock);
	while (gate_busy >= gate_max())
		if (pthread_cond_timedwait(&gate_cond, &gate_lock, &until) == ETIMEDOUT)
			break;
	gate_busy++;
	pthread_mutex_unlock(&gate_lock);
}

static void gate_leave(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_busy--;
	pthread_cond_signal(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static int encode(const struct desktop_shot* req, const struct cache_key* key,
		struct frame* f, uint8_t** data, size_t* len)
{
	if (req->jpeg)
		return capture_encode_jpeg(f, req->quality, data, len);
	struct cache_key pkey = *key;
	pkey.quality = 0;
	struct capture_png_state* st;
	int slot = png_state_take(&pkey, &st);
	int rc = slot >= 0 ? capture_encode_png_cached(&st, f, data, len)
			: capture_encode_png(f, data, len);
	png_state_give(slot, st);
	return rc;
}

int desktop_shot(struct desktop_capture* p, const struct desktop_shot* req,
		struct desktop_image** out, char* err, size_t err_size)
{
	struct cache_key key;
	memset(&key, 0, sizeof(key));
	key.window = req->window;
	if (req->part)
		memcpy(key.region, req->region, sizeof(key.region));
	key.width = req->width;
	key.height = req->height;
	key.target_w = req->target_width;
	key.target_h = req->target_height;
	key.format = req->jpeg;
	key.quality = req->jpeg ? req->quality : 0;
	desktop__capture_used();
	uint64_t gen = 0;
	bool cacheable = !req->cursor && target_generation(p, req->window, &gen) == 0;
	if (cacheable && (*out = cache_lookup(&key, gen)))
		return 0;

	gate_enter();
	/* Lent: the encode (or the scale) reads the shared image itself, 1.3 ms
	 * less at 1920x1080 (a PNG's band state copies only the rows that
	 * changed), and the frame is gone before p is used again. */
	struct frame* f = NULL;
	int rc = req->window
			? capture_window_lent(p->cap, req->window, req->part, req->cursor, &f)
			: capture_screen_lent(p->cap, req->part, req->cursor, &f);
	/* No more shared images than captures run at once (the gate's): a
	 * context past them gives its segment back once its frame is done,
	 * not when it is put back (callers waiting at the gate hold warm ones
	 * too: the soak had five of 4 MB). */
	pthread_mutex_lock(&pool_lock);
	if (!p->warm) {
		p->warm = true;
		pool_n_warm++;
	}
	bool cool = pool_n_warm > gate_max();
	if (cool) {
		p->warm = false;
		pool_n_warm--;
	}
	pthread_mutex_unlock(&pool_lock);
	if (rc < 0) {
		if (cool)
			capture_release(p->cap);
		snprintf(err, err_size, "%s", capture_error(p->cap));
		gate_leave();
		return rc;
	}
	if (f->width != req->width || f->height != req->height) {
		/* (Smaller than asked only if the window shrank meanwhile.) */
		struct frame* s = capture_scale(f, req->width < f->width ? req->width : f->width,
				req->height < f->height ? req->height : f->height);
		frame_unref(f);
		if (cool)
			capture_release(p->cap);
		cool = false;
		if (!s) {
			snprintf(err, err_size, "out of memory while scaling");
			gate_leave();
			return -ENOMEM;
		}
		f = s;
	}
	uint8_t* data;
	size_t len;
	rc = encode(req, &key, f, &data, &len);
	int width = f->width, height = f->height;
	frame_unref(f);
	if (cool)
		capture_release(p->cap);
	if (rc < 0) {
		gate_leave();
		snprintf(err, err_size, "encoding failed: %s", strerror(-rc));
		return -EIO;
	}
	struct desktop_image* img = image_new(data, len, width, height);
	gate_leave();
	if (!img) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	if (cacheable)
		cache_store(&key, gen, img);
	*out = img;
	return 0;
}
