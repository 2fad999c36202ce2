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
#include "base/worker.h"
#include "capture/capture.h"
#include "desktop/desktop_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Context pool ---------------------------------------------------------- */

#define POOL_MAX 16
#define POOL_KEEP 2		/* idle contexts kept however long they wait */
#define POOL_IDLE_MS 5000	/* others are closed once idle this long */
#define SEEN_MAX 32

struct desktop_capture {
	struct capture* cap;
	unsigned disconnects;	/* desktop_disconnects() when it was opened */
	int64_t idle_since;	/* clock_ms() when it was put back */
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
static char pool_display[256];

static void capture_slot_destroy(struct desktop_capture* p)
{
	if (!p)
		return;
	capture_destroy(p->cap);
	free(p);
}

struct desktop_capture* desktop_capture_get(char* err, size_t err_size)
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
		struct desktop_capture* p = pool_idle[--pool_n_idle];
		if (p->disconnects == disconnects && capture_connected(p->cap)) {
			pthread_mutex_unlock(&pool_lock);
			return p;
		}
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

void desktop_capture_put(struct desktop_capture* p)
{
	if (!p)
		return;
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
void desktop__capture_trim(void)
{
	if (!desktop_available() || desktop__hung(NULL))
		return;
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
	struct desktop_image* old = cache[slot].blob;
	cache[slot] = (struct cache_entry){ *key, gen, ++cache_clock, blob };
	pthread_mutex_unlock(&cache_lock);
	desktop_image_unref(old);
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
	uint64_t gen = 0;
	bool cacheable = !req->cursor && target_generation(p, req->window, &gen) == 0;
	if (cacheable && (*out = cache_lookup(&key, gen)))
		return 0;

	struct frame* f = NULL;
	int rc = req->window
			? capture_window(p->cap, req->window, req->part, req->cursor, &f)
			: capture_screen(p->cap, req->part, req->cursor, &f);
	if (rc < 0) {
		snprintf(err, err_size, "%s", capture_error(p->cap));
		return rc;
	}
	if (f->width != req->width || f->height != req->height) {
		/* (Smaller than asked only if the window shrank meanwhile.) */
		struct frame* s = capture_scale(f, req->width < f->width ? req->width : f->width,
				req->height < f->height ? req->height : f->height);
		frame_unref(f);
		if (!s) {
			snprintf(err, err_size, "out of memory while scaling");
			return -ENOMEM;
		}
		f = s;
	}
	uint8_t* data;
	size_t len;
	rc = encode(req, &key, f, &data, &len);
	int width = f->width, height = f->height;
	frame_unref(f);
	if (rc < 0) {
		snprintf(err, err_size, "encoding failed: %s", strerror(-rc));
		return -EIO;
	}
	struct desktop_image* img = image_new(data, len, width, height);
	if (!img) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	if (cacheable)
		cache_store(&key, gen, img);
	*out = img;
	return 0;
}
