/* Capture tools: screenshot, zoom, windows, window_focus, window_move,
 * wait_for_change; and the target resolution and settle wait that the input
 * tools use (server/tools.h).
 *
 * Tool calls run on worker threads, several at once, so capture contexts
 * (one X connection each) come from a small mutex-protected pool. Change
 * tracking is per context (XDamage, poll style); a global generation per
 * target, bumped whenever any context sees a change, keys the cache of
 * encoded screenshots, so a repeated screenshot of an unchanged target
 * is not captured or encoded again. */
#include "tools/tools.h"
#include "base/clock.h"
#include "capture/capture.h"
#include "record/record.h"
#include "desktop/desktop.h"
#include "base/log.h"
#include "base/options.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- Context pool ---------------------------------------------------------- */

#define POOL_MAX 16
#define SEEN_MAX 32

struct pooled {
	struct capture* cap;
	unsigned disconnects;	/* desktop_disconnects() when it was opened */
	struct {
		uint32_t window;
		uint64_t counter;
	} seen[SEEN_MAX];
	int n_seen, next_seen;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static struct pooled* pool_idle[POOL_MAX];
static int pool_n_idle, pool_n_total;
static char pool_display[256];

static void pooled_destroy(struct pooled* p)
{
	if (!p)
		return;
	capture_destroy(p->cap);
	free(p);
}

/* A context for this thread's exclusive use, or NULL (display unreachable). */
static struct pooled* pool_get(char* err, size_t err_size)
{
	const char* name = desktop_display_name();
	if (!name)
		name = "";
	pthread_mutex_lock(&pool_lock);
	if (strcmp(name, pool_display) != 0) {
		/* The display changed (restarted embedded Xvfb): start over. */
		for (int i = 0; i < pool_n_idle; i++) {
			pooled_destroy(pool_idle[i]);
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
		struct pooled* p = pool_idle[--pool_n_idle];
		if (p->disconnects == disconnects && capture_connected(p->cap)) {
			pthread_mutex_unlock(&pool_lock);
			return p;
		}
		pooled_destroy(p);
		pool_n_total--;
	}
	pool_n_total++;
	pthread_mutex_unlock(&pool_lock);

	struct pooled* p = calloc(1, sizeof(*p));
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

static void pool_put(struct pooled* p)
{
	pthread_mutex_lock(&pool_lock);
	if (!capture_connected(p->cap) || pool_n_idle >= POOL_MAX) {
		pool_n_total--;
		pthread_mutex_unlock(&pool_lock);
		pooled_destroy(p);
		pthread_mutex_lock(&pool_lock);
	} else {
		pool_idle[pool_n_idle++] = p;
	}
	pthread_cond_signal(&pool_cond);
	pthread_mutex_unlock(&pool_lock);
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

/* An encoded image and its base64, shared between the cache and callers. */
struct blob {
	atomic_int refs;
	uint8_t* data;
	size_t len;
	char* b64;
	size_t b64_len;
};

static void blob_unref(struct blob* self)
{
	if (!self || atomic_fetch_sub(&self->refs, 1) != 1)
		return;
	free(self->data);
	free(self->b64);
	free(self);
}

/* Takes ownership of data. NULL on ENOMEM (data freed). */
static struct blob* blob_new(uint8_t* data, size_t len)
{
	struct blob* self = calloc(1, sizeof(*self));
	if (self)
		self->b64 = tool_base64(data, len, &self->b64_len);
	if (!self || !self->b64) {
		free(self);
		free(data);
		return NULL;
	}
	atomic_init(&self->refs, 1);
	self->data = data;
	self->len = len;
	return self;
}

static struct cache_entry {
	struct cache_key key;
	uint64_t gen;
	uint64_t used;
	struct blob* blob;
} cache[CACHE_MAX];
static uint64_t cache_clock;

/* Poll the context's damage for the target and return the target's global
 * generation: it changes whenever any context saw the target change. */
static int target_generation(struct pooled* p, uint32_t window, uint64_t* gen)
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
static struct blob* cache_lookup(const struct cache_key* key, uint64_t gen)
{
	struct blob* out = NULL;
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

static void cache_store(const struct cache_key* key, uint64_t gen, struct blob* blob)
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
	struct blob* old = cache[slot].blob;
	cache[slot] = (struct cache_entry){ *key, gen, ++cache_clock, blob };
	pthread_mutex_unlock(&cache_lock);
	blob_unref(old);
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

/* The image block from the blob's base64 (no second encoding, no UTF-8
 * scan), and the raw bytes for REST's GET /api/v1/screenshot. */
static int add_image(struct tool_result* out, const struct blob* b, const char* mime)
{
	json_t* data = json_stringn_nocheck(b->b64, b->b64_len);
	if (!data)
		return -ENOMEM;
	json_array_append_new(out->content, json_pack("{s:s, s:o, s:s}", "type", "image",
			"data", data, "mimeType", mime));
	if (!out->image) {
		out->image = malloc(b->len ? b->len : 1);
		if (!out->image)
			return -ENOMEM;
		memcpy(out->image, b->data, b->len);
		out->image_len = b->len;
		out->image_mime = mime;
	}
	return 0;
}

/* ---- Helpers ------------------------------------------------------------------ */

static enum tool_code code_for(int rc)
{
	switch (rc) {
	case -ENOENT: return TOOL_WINDOW_NOT_FOUND;
	case -ENODATA:
	case -EINVAL: return TOOL_BAD_ARGUMENTS;
	case -ERANGE: return TOOL_OUT_OF_BOUNDS;
	case -ECONNRESET: return TOOL_DISPLAY_UNAVAILABLE;
	case -ETIMEDOUT: return TOOL_TIMEOUT;
	default: return TOOL_INTERNAL;
	}
}

static int fail_rc(struct tool_result* out, struct pooled* p, int rc)
{
	tool_result_error(out, code_for(rc), NULL, "%s", capture_error(p->cap));
	return 0;
}

/* A pooled capture context, or NULL with display_unavailable in out. */
static struct pooled* pool_get_for(struct tool_result* out)
{
	char err[256];
	struct pooled* p = pool_get(err, sizeof(err));
	if (!p)
		tool_result_error(out, TOOL_DISPLAY_UNAVAILABLE, NULL,
				"cannot connect to the X display: %s", err);
	return p;
}

/* The window argument: absent or 0 = the screen. */
static bool window_arg(json_t* args, uint32_t* window, struct tool_result* out)
{
	int64_t w = tool_arg_int(args, "window", 0);
	if (w < 0 || w > UINT32_MAX) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"window must be a window id from the windows tool (or 0 for the screen)");
		return false;
	}
	*window = (uint32_t)w;
	return true;
}

/* The window argument where one is required (not the screen). */
static bool window_required(json_t* args, uint32_t* window, struct tool_result* out)
{
	if (!window_arg(args, window, out))
		return false;
	if (!*window)
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"window is required (an id from the windows tool)");
	return *window != 0;
}

/* Resolve the target's desktop rectangle on a context. */
static int resolve(struct pooled* p, uint32_t window, struct capture_rect* rect)
{
	if (!window) {
		rect->x = rect->y = 0;
		capture_screen_size(p->cap, &rect->width, &rect->height);
		return 0;
	}
	return capture_window_geometry(p->cap, window, rect);
}

/* max_dimension: 0 (native) or 16..16384. */
static bool max_dimension_arg(json_t* args, int* value, bool* given,
		struct tool_result* out)
{
	json_t* v = json_object_get(args, "max_dimension");
	*given = v != NULL;
	if (!v)
		return true;
	int64_t m = json_integer_value(v);
	if (m != 0 && (m < 16 || m > 16384)) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"max_dimension must be 0 (native size) or 16..16384, not %lld",
				(long long)m);
		return false;
	}
	*value = (int)m;
	return true;
}

/* A region [x0, y0, x1, y1] in screenshot space (iw x ih, end-exclusive). */
static bool region_arg(json_t* args, int iw, int ih, int region[4],
		struct tool_result* out)
{
	json_t* r = json_object_get(args, "region");
	for (int i = 0; i < 4; i++) {
		json_t* v = json_array_get(r, (size_t)i);
		int64_t n = json_integer_value(v);
		if (n < -1000000000 || n > 1000000000) {
			tool_result_error(out, TOOL_OUT_OF_BOUNDS, NULL,
					"region values must be within the %dx%d screenshot", iw, ih);
			return false;
		}
		region[i] = (int)n;
	}
	if (region[2] <= region[0] || region[3] <= region[1]) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"region [x0, y0, x1, y1] needs x1 > x0 and y1 > y0 (end-exclusive), got [%d, %d, %d, %d]",
				region[0], region[1], region[2], region[3]);
		return false;
	}
	if (region[0] < 0 || region[1] < 0 || region[2] > iw || region[3] > ih) {
		tool_result_error(out, TOOL_OUT_OF_BOUNDS,
				json_pack("{s:i, s:i}", "image_width", iw, "image_height", ih),
				"region [%d, %d, %d, %d] is outside the %dx%d screenshot of this target",
				region[0], region[1], region[2], region[3], iw, ih);
		return false;
	}
	return true;
}

/* Map a screenshot-space region to physical pixels of the target. */
static struct capture_rect map_region(const int region[4], int w, int h, int iw, int ih)
{
	int x0 = tools_map_coordinate(region[0], w, iw);
	int y0 = tools_map_coordinate(region[1], h, ih);
	int x1 = region[2] >= iw ? w : tools_map_coordinate(region[2], w, iw);
	int y1 = region[3] >= ih ? h : tools_map_coordinate(region[3], h, ih);
	if (x1 <= x0)
		x1 = x0 + 1;
	if (y1 <= y0)
		y1 = y0 + 1;
	return (struct capture_rect){ x0, y0, x1 - x0, y1 - y0 };
}

static int grab(struct pooled* p, uint32_t window, const struct capture_rect* phys,
		bool cursor, struct frame** f)
{
	return window ? capture_window(p->cap, window, phys, cursor, f)
			: capture_screen(p->cap, phys, cursor, f);
}

/* out: checked and staged before the capture (fail fast), written and
 * published after. */
static struct safe_output* out_open(const char* path, struct tool_result* out)
{
	const struct options* opts = options_get();
	char* const* roots = opts ? opts->output_root : NULL;
	int n_roots = opts ? opts->n_output_root : 0;
	char* def[1];
	if (n_roots == 0 && opts && opts->data_dir) {
		def[0] = opts->data_dir;
		roots = def;
		n_roots = 1;
	}
	char err[512] = "";
	struct safe_output* so = NULL;
	int rc = safe_output_open(path, roots, n_roots, &so, err, sizeof(err));
	if (rc == -EEXIST)
		tool_result_error(out, TOOL_OUTPUT_EXISTS, NULL,
				"%s already exists; deskd never replaces files: pick a new name", path);
	else if (rc == -EINVAL)
		tool_result_error(out, TOOL_BAD_PATH, NULL, "out: %s", err[0] ? err : path);
	else if (rc < 0)
		tool_result_error(out, TOOL_INTERNAL, NULL, "cannot write %s: %s", path,
				err[0] ? err : strerror(-rc));
	return rc < 0 ? NULL : so;
}

/* Write and publish; consumes so. */
static int out_finish(struct safe_output* so, const char* path, const uint8_t* data,
		size_t len, struct tool_result* out)
{
	int rc = safe_output_write(so, data, len);
	if (rc < 0) {
		safe_output_abort(so);
		tool_result_error(out, TOOL_INTERNAL, NULL, "cannot write %s: %s", path,
				strerror(-rc));
		return -1;
	}
	rc = safe_output_publish(so);
	if (rc == -EEXIST) {
		tool_result_error(out, TOOL_OUTPUT_EXISTS, NULL,
				"%s appeared while writing; deskd never replaces files", path);
		return -1;
	}
	if (rc < 0) {
		tool_result_error(out, TOOL_INTERNAL, NULL, "cannot publish %s: %s", path,
				strerror(-rc));
		return -1;
	}
	return 0;
}

static json_t* region_json(const int r[4])
{
	return json_pack("[i,i,i,i]", r[0], r[1], r[2], r[3]);
}

/* ---- screenshot ------------------------------------------------------------------- */

static int screenshot(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!window_arg(args, &window, out))
		return 0;
	int max_dim = 0;
	bool max_given;
	if (!max_dimension_arg(args, &max_dim, &max_given, out))
		return 0;
	const char* format = tool_arg_string(args, "format", "png");
	bool jpeg = strcmp(format, "jpeg") == 0;
	int quality = (int)tool_arg_int(args, "quality", 80);
	bool cursor = tool_arg_bool(args, "cursor", false);
	bool include_image = tool_arg_bool(args, "include_image", true);
	const char* path = tool_arg_string(args, "out", NULL);
	if (path && path[0] != '/') {
		tool_result_error(out, TOOL_BAD_PATH, NULL,
				"out must be an absolute path, not \"%s\"", path);
		return 0;
	}

	struct safe_output* so = NULL;
	if (path && !(so = out_open(path, out)))
		return 0;
	struct pooled* p = pool_get_for(out);
	if (!p) {
		safe_output_abort(so);
		return 0;
	}
	struct frame* f = NULL;
	struct blob* blob = NULL;
	struct capture_rect target;
	int rc = resolve(p, window, &target);
	if (rc < 0) {
		fail_rc(out, p, rc);
		goto done;
	}
	if (!max_given)
		max_dim = tool_session_max_dimension(ctx->session, window);
	int iw, ih;
	tools_scaled_size(target.width, target.height, max_dim, &iw, &ih);

	int region[4] = { 0, 0, iw, ih };
	bool has_region = json_object_get(args, "region") != NULL;
	if (has_region && !region_arg(args, iw, ih, region, out))
		goto done;
	struct capture_rect phys = map_region(region, target.width, target.height, iw, ih);
	int ow = region[2] - region[0], oh = region[3] - region[1];
	if (ow > phys.width)
		ow = phys.width;
	if (oh > phys.height)
		oh = phys.height;

	struct cache_key key;
	memset(&key, 0, sizeof(key));
	key.window = window;
	if (has_region)
		memcpy(key.region, region, sizeof(region));
	key.width = ow;
	key.height = oh;
	key.target_w = target.width;
	key.target_h = target.height;
	key.format = jpeg;
	key.quality = jpeg ? quality : 0;
	uint64_t gen = 0;
	bool cacheable = !cursor && target_generation(p, window, &gen) == 0;
	if (cacheable)
		blob = cache_lookup(&key, gen);
	if (!blob) {
		rc = grab(p, window, has_region ? &phys : NULL, cursor, &f);
		if (rc < 0) {
			fail_rc(out, p, rc);
			goto done;
		}
		if (f->width != ow || f->height != oh) {
			/* (Smaller than asked only if the window shrank meanwhile.) */
			struct frame* s = capture_scale(f, ow < f->width ? ow : f->width,
					oh < f->height ? oh : f->height);
			if (!s) {
				tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory while scaling");
				goto done;
			}
			frame_unref(f);
			f = s;
		}
		ow = f->width;
		oh = f->height;
		uint8_t* data;
		size_t len;
		if (jpeg) {
			rc = capture_encode_jpeg(f, quality, &data, &len);
		} else {
			struct cache_key pkey = key;
			pkey.quality = 0;
			struct capture_png_state* st;
			int slot = png_state_take(&pkey, &st);
			rc = slot >= 0 ? capture_encode_png_cached(&st, f, &data, &len)
					: capture_encode_png(f, &data, &len);
			png_state_give(slot, st);
		}
		if (rc < 0) {
			tool_result_error(out, TOOL_INTERNAL, NULL, "encoding failed: %s", strerror(-rc));
			goto done;
		}
		blob = blob_new(data, len);
		if (!blob) {
			tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory");
			goto done;
		}
		if (cacheable)
			cache_store(&key, gen, blob);
	}
	if (so) {
		int wrc = out_finish(so, path, blob->data, blob->len, out);
		so = NULL;
		if (wrc < 0)
			goto done;
	}
	/* Later clicks on this target map through the same space. */
	if (max_given)
		tool_session_set_max_dimension(ctx->session, window, max_dim);

	const char* mime = jpeg ? "image/jpeg" : "image/png";
	json_t* meta = json_pack("{s:i, s:i, s:i, s:i, s:f, s:I, s:s, s:I, s:[i,i,i,i]}",
			"width", ow, "height", oh,
			"physical_width", phys.width, "physical_height", phys.height,
			"scale_factor", iw ? (double)target.width / iw : 1.0,
			"window", (json_int_t)window, "format", jpeg ? "jpeg" : "png",
			"bytes", (json_int_t)blob->len,
			"desktop", target.x + phys.x, target.y + phys.y, phys.width, phys.height);
	if (has_region)
		json_object_set_new(meta, "region", region_json(region));
	if (path)
		json_object_set_new(meta, "path", json_string(path));
	/* Image first: clients that show one block show the picture. */
	int irc = 0;
	if (include_image) {
		irc = add_image(out, blob, mime);
	} else if (!out->image) {
		/* No block, but REST's GET /api/v1/screenshot still wants bytes. */
		out->image = malloc(blob->len ? blob->len : 1);
		if (out->image) {
			memcpy(out->image, blob->data, blob->len);
			out->image_len = blob->len;
			out->image_mime = mime;
		} else {
			irc = -ENOMEM;
		}
	}
	if (irc < 0) {
		json_decref(meta);
		tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory");
		goto done;
	}
	tool_result_ok(out, meta);
done:
	safe_output_abort(so);
	blob_unref(blob);
	frame_unref(f);
	pool_put(p);
	return 0;
}

/* ---- zoom -------------------------------------------------------------------------- */

static int zoom(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!window_arg(args, &window, out))
		return 0;
	int max_dim = 0;
	bool max_given;
	if (!max_dimension_arg(args, &max_dim, &max_given, out))
		return 0;
	struct pooled* p = pool_get_for(out);
	if (!p)
		return 0;
	struct frame* f = NULL;
	uint8_t* data = NULL;
	size_t len = 0;
	struct capture_rect target;
	int rc = resolve(p, window, &target);
	if (rc < 0) {
		fail_rc(out, p, rc);
		goto done;
	}
	/* The region is in the target's screenshot space (the session's max
	 * dimension); zoom's own max_dimension only sizes its output. */
	int iw, ih;
	tools_scaled_size(target.width, target.height,
			tool_session_max_dimension(ctx->session, window), &iw, &ih);
	int region[4];
	if (!region_arg(args, iw, ih, region, out))
		goto done;
	struct capture_rect phys = map_region(region, target.width, target.height, iw, ih);
	rc = grab(p, window, &phys, false, &f);
	if (rc < 0) {
		fail_rc(out, p, rc);
		goto done;
	}
	int ow, oh;
	tools_scaled_size(f->width, f->height, max_given ? max_dim : 0, &ow, &oh);
	if (ow != f->width || oh != f->height) {
		struct frame* s = capture_scale(f, ow, oh);
		if (!s) {
			tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory while scaling");
			goto done;
		}
		frame_unref(f);
		f = s;
	}
	rc = capture_encode_png(f, &data, &len);
	if (rc < 0) {
		tool_result_error(out, TOOL_INTERNAL, NULL, "encoding failed: %s", strerror(-rc));
		goto done;
	}
	if (tool_result_image(out, data, len, "image/png") < 0) {
		tool_result_error(out, TOOL_INTERNAL, NULL, "out of memory");
		goto done;
	}
	json_t* meta = json_pack("{s:i, s:i, s:i, s:i, s:f, s:I, s:o, s:s, s:I, s:[i,i,i,i]}",
			"width", f->width, "height", f->height,
			"physical_width", phys.width, "physical_height", phys.height,
			"scale_factor", (double)phys.width / f->width,
			"window", (json_int_t)window, "region", region_json(region),
			"format", "png", "bytes", (json_int_t)len,
			"desktop", target.x + phys.x, target.y + phys.y, phys.width, phys.height);
	tool_result_ok(out, meta);
done:
	free(data);
	frame_unref(f);
	pool_put(p);
	return 0;
}

/* ---- windows ----------------------------------------------------------------------- */

static json_t* window_json(const struct capture_window_info* w)
{
	return json_pack("{s:I, s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:b, s:b}",
			"id", (json_int_t)w->id, "pid", w->pid, "title", w->title,
			"app", w->app[0] ? w->app : w->instance,
			"x", w->rect.x, "y", w->rect.y, "width", w->rect.width,
			"height", w->rect.height, "focused", w->focused, "visible", w->visible);
}

static bool contains_nocase(const char* hay, const char* needle)
{
	size_t n = strlen(needle);
	for (const char* h = hay; *h; h++)
		if (strncasecmp(h, needle, n) == 0)
			return true;
	return n == 0;
}

static int windows(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char* app = tool_arg_string(args, "app", NULL);
	int64_t pid = tool_arg_int(args, "pid", 0);
	bool on_screen = tool_arg_bool(args, "on_screen_only", false);
	struct pooled* p = pool_get_for(out);
	if (!p)
		return 0;
	struct capture_window_info* list;
	size_t n;
	int rc = capture_list_windows(p->cap, &list, &n);
	if (rc < 0) {
		fail_rc(out, p, rc);
		pool_put(p);
		return 0;
	}
	json_t* arr = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct capture_window_info* w = &list[i];
		if (app && !contains_nocase(w->app, app) && !contains_nocase(w->instance, app))
			continue;
		if (pid && w->pid != pid)
			continue;
		if (on_screen && !w->visible)
			continue;
		json_array_append_new(arr, window_json(w));
	}
	free(list);
	int sw, sh;
	capture_screen_size(p->cap, &sw, &sh);
	pool_put(p);
	tool_result_ok(out, json_pack("{s:o, s:{s:i, s:i}}", "windows", arr,
			"screen", "width", sw, "height", sh));
	return 0;
}

/* ---- window_focus, window_move ------------------------------------------------------ */

static int window_focus(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!window_required(args, &window, out))
		return 0;
	struct pooled* p = pool_get_for(out);
	if (!p)
		return 0;
	int rc = capture_focus_window(p->cap, window);
	struct capture_window_info info;
	if (rc == 0)
		rc = capture_window_info(p->cap, window, &info);
	if (rc < 0)
		fail_rc(out, p, rc);
	else
		tool_result_ok(out, window_json(&info));
	pool_put(p);
	return 0;
}

static int window_move(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!window_required(args, &window, out))
		return 0;
	int v[4];
	const int* ptr[4] = { NULL };
	const char* names[4] = { "x", "y", "width", "height" };
	int given = 0;
	for (int i = 0; i < 4; i++) {
		json_t* j = json_object_get(args, names[i]);
		if (!j)
			continue;
		v[i] = (int)json_integer_value(j);
		ptr[i] = &v[i];
		given++;
	}
	if (!given) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "give at least one of x, y, width, height");
		return 0;
	}
	struct pooled* p = pool_get_for(out);
	if (!p)
		return 0;
	struct capture_rect r;
	int rc = capture_move_window(p->cap, window, ptr[0], ptr[1], ptr[2], ptr[3], &r);
	struct capture_window_info info;
	if (rc == 0)
		rc = capture_window_info(p->cap, window, &info);
	if (rc < 0)
		fail_rc(out, p, rc);
	else
		tool_result_ok(out, window_json(&info));
	pool_put(p);
	return 0;
}

/* ---- wait_for_change ----------------------------------------------------------------- */

#define WAIT_SLICE_MS 50

/* Wait until the target changed (unless already_changed) and then stayed
 * still for stable_ms, at most timeout_ms; honours cancellation and the
 * call's deadline. Returns 0 or -errno; *changed and *stable tell how far
 * it got. */
static int wait_change(struct pooled* p, uint32_t window, int timeout_ms, int stable_ms,
		bool need_change, struct tool_ctx* ctx, bool* changed, bool* stable)
{
	int64_t start = clock_ms(), end = start + timeout_ms;
	if (ctx && ctx->deadline_ms && ctx->deadline_ms < end)
		end = ctx->deadline_ms;
	uint64_t counter;
	int rc = capture_changes(p->cap, window, &counter);
	if (rc < 0)
		return rc;
	*changed = !need_change;
	*stable = false;
	int64_t last_change = start;
	for (;;) {
		if (ctx && ctx->cancelled && atomic_load(ctx->cancelled))
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

static int wait_for_change(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	uint32_t window;
	if (!window_arg(args, &window, out))
		return 0;
	int timeout_ms = (int)tool_arg_int(args, "timeout_ms", 10000);
	int stable_ms = (int)tool_arg_int(args, "stable_ms", 200);
	struct pooled* p = pool_get_for(out);
	if (!p)
		return 0;
	int64_t start = clock_ms();
	bool changed = false, stable = false;
	int rc = wait_change(p, window, timeout_ms, stable_ms, true, ctx, &changed, &stable);
	int64_t waited = clock_ms() - start;
	if (rc == -ECANCELED)
		tool_result_error(out, TOOL_TIMEOUT, NULL, "cancelled after %lld ms", (long long)waited);
	else if (rc < 0)
		fail_rc(out, p, rc);
	else
		tool_result_ok(out, json_pack("{s:b, s:b, s:I, s:I, s:b}",
				"changed", changed, "stable", stable,
				"waited_ms", (json_int_t)waited, "window", (json_int_t)window,
				"timed_out", !(changed && stable)));
	pool_put(p);
	return 0;
}

/* ---- For the input tools ------------------------------------------------------------- */

enum tool_code tools_capture_target(struct tool_ctx* ctx, uint32_t window,
		struct tool_target* out, char* err, size_t err_size)
{
	struct pooled* p = pool_get(err, err_size);
	if (!p)
		return TOOL_DISPLAY_UNAVAILABLE;
	struct capture_rect r;
	int rc = resolve(p, window, &r);
	if (rc < 0) {
		snprintf(err, err_size, "%s", capture_error(p->cap));
		pool_put(p);
		return rc == -ECONNRESET ? TOOL_DISPLAY_UNAVAILABLE : TOOL_WINDOW_NOT_FOUND;
	}
	pool_put(p);
	out->window = window;
	out->x = r.x;
	out->y = r.y;
	out->width = r.width;
	out->height = r.height;
	tools_scaled_size(r.width, r.height,
			tool_session_max_dimension(ctx ? ctx->session : NULL, window),
			&out->image_width, &out->image_height);
	return TOOL_OK;
}

int tools_capture_settle(uint32_t window, int quiet_ms, int timeout_ms)
{
	char err[256];
	struct pooled* p = pool_get(err, sizeof(err));
	if (!p)
		return -ETIMEDOUT;
	bool changed, stable;
	int rc = wait_change(p, window, timeout_ms, quiet_ms, false, NULL, &changed, &stable);
	pool_put(p);
	if (rc == -ENOENT)
		return 0;	/* the window went away: nothing left to settle */
	return rc == 0 && stable ? 0 : -ETIMEDOUT;
}

/* ---- The table ------------------------------------------------------------------------ */

#define WINDOW_PROP \
	"\"window\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":4294967295," \
	"\"description\":\"Window id from the windows tool; omit (or 0) for the whole screen.\"}"
#define REGION_PROP(what) \
	"\"region\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":4,\"maxItems\":4," \
	"\"description\":\"" what "\"}"
#define MAX_DIM_PROP(what) \
	"\"max_dimension\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":16384," \
	"\"description\":\"" what "\"}"

#define WINDOW_ITEM \
	"{\"type\":\"object\",\"properties\":{" \
	"\"id\":{\"type\":\"integer\"},\"pid\":{\"type\":\"integer\"},\"title\":{\"type\":\"string\"}," \
	"\"app\":{\"type\":\"string\"},\"x\":{\"type\":\"integer\"},\"y\":{\"type\":\"integer\"}," \
	"\"width\":{\"type\":\"integer\"},\"height\":{\"type\":\"integer\"}," \
	"\"focused\":{\"type\":\"boolean\"},\"visible\":{\"type\":\"boolean\"}}," \
	"\"required\":[\"id\",\"pid\",\"title\",\"app\",\"x\",\"y\",\"width\",\"height\",\"focused\",\"visible\"]}"

#define IMAGE_META_PROPS \
	"\"width\":{\"type\":\"integer\",\"description\":\"image width in pixels\"}," \
	"\"height\":{\"type\":\"integer\"}," \
	"\"physical_width\":{\"type\":\"integer\",\"description\":\"desktop pixels the image covers\"}," \
	"\"physical_height\":{\"type\":\"integer\"}," \
	"\"scale_factor\":{\"type\":\"number\",\"description\":\"desktop pixels per image pixel\"}," \
	"\"window\":{\"type\":\"integer\"},\"format\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}," \
	"\"region\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}," \
	"\"desktop\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}," \
	"\"description\":\"[x, y, width, height] of the desktop area shown\"}"

const struct tool_def tools_capture[] = {
	{
		.name = "screenshot",
		.title = "Screenshot",
		.description =
			"Capture the screen, or one window (window: id from the windows tool), as PNG "
			"(default) or JPEG. Returns the image plus its size and scale. The image is "
			"scaled so its longest side is at most max_dimension (default: the server's "
			"--max-image-dimension; 0 = native); that choice is remembered per target, and "
			"every coordinate you pass to click, move, zoom etc. for the same target is in "
			"this image's pixel space and mapped back exactly. A window screenshot shows "
			"the window's own pixels even when it is covered or partly off-screen. region "
			"[x0, y0, x1, y1] (end-exclusive, in this image space) returns only that part. "
			"Use JPEG for large or photo-like screens, PNG for crisp text. An unchanged "
			"screen is answered from a cache. out writes the image to an absolute path "
			"under an allowed output root (mode 0600, never replacing a file); "
			"include_image=false then skips the image block.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
			WINDOW_PROP ","
			REGION_PROP("[x0, y0, x1, y1] end-exclusive, in this target's screenshot pixels") ","
			MAX_DIM_PROP("Longest side of the image: 0 = native, else 16..16384. Remembered for this target.") ","
			"\"format\":{\"type\":\"string\",\"enum\":[\"png\",\"jpeg\"],\"default\":\"png\"},"
			"\"quality\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"default\":80,"
			"\"description\":\"JPEG quality\"},"
			"\"cursor\":{\"type\":\"boolean\",\"default\":false,\"description\":\"draw the mouse pointer\"},"
			"\"include_image\":{\"type\":\"boolean\",\"default\":true},"
			"\"out\":{\"type\":\"string\",\"description\":\"absolute path to also write the image to\"}}}",
		.output_schema = "{\"type\":\"object\",\"properties\":{" IMAGE_META_PROPS ","
			"\"path\":{\"type\":\"string\"}},"
			"\"required\":[\"width\",\"height\",\"physical_width\",\"physical_height\",\"scale_factor\",\"window\",\"format\",\"bytes\"]}",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = screenshot,
	},
	{
		.name = "zoom",
		.title = "Zoom into a region",
		.description =
			"Look closer: returns region [x0, y0, x1, y1] (end-exclusive, in the pixel space "
			"of your screenshots of this target) taken from a full-resolution capture, so "
			"small text that the scaled screenshot blurred is readable. max_dimension "
			"optionally caps the longest side of the result (default: native). Coordinates "
			"for clicks stay in the screenshot space, not the zoomed image's.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"region\"],\"properties\":{"
			WINDOW_PROP ","
			REGION_PROP("[x0, y0, x1, y1] end-exclusive, in this target's screenshot pixels") ","
			MAX_DIM_PROP("Longest side of the result: 0 = native (default), else 16..16384.") "}}",
		.output_schema = "{\"type\":\"object\",\"properties\":{" IMAGE_META_PROPS "},"
			"\"required\":[\"width\",\"height\",\"physical_width\",\"physical_height\",\"scale_factor\",\"window\",\"region\"]}",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = zoom,
	},
	{
		.name = "windows",
		.title = "List windows",
		.description =
			"List the top-level application windows: id (pass it as window to other tools), "
			"pid, title, app (WM_CLASS), client-area geometry x, y, width, height in desktop "
			"pixels (exactly what a window screenshot shows), focused and visible (mapped and "
			"on screen). Filter by app (case-insensitive substring), pid, or on_screen_only.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
			"\"app\":{\"type\":\"string\",\"description\":\"case-insensitive substring of the WM_CLASS\"},"
			"\"pid\":{\"type\":\"integer\",\"minimum\":1},"
			"\"on_screen_only\":{\"type\":\"boolean\",\"default\":false}}}",
		.output_schema = "{\"type\":\"object\",\"properties\":{\"windows\":{\"type\":\"array\",\"items\":"
			WINDOW_ITEM "},\"screen\":{\"type\":\"object\"}},\"required\":[\"windows\"]}",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = windows,
	},
	{
		.name = "window_focus",
		.title = "Focus a window",
		.description =
			"Bring a window to the front and give it the keyboard focus (restoring it if "
			"minimized). Returns the window's info once it has the focus.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"window\"],\"properties\":{"
			"\"window\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":4294967295,"
			"\"description\":\"window id from the windows tool\"}}}",
		.output_schema = WINDOW_ITEM,
		.flags = TOOL_DESKTOP_LOCK | TOOL_IDEMPOTENT,
		.handler = window_focus,
	},
	{
		.name = "window_move",
		.title = "Move or resize a window",
		.description =
			"Move and/or resize a window. x, y place the client area's top-left corner "
			"and width, height size it, all in desktop pixels (the geometry the windows tool "
			"reports; window decorations are compensated). Omitted values stay. Returns the "
			"resulting geometry, which the window manager or app may have adjusted.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"window\"],\"properties\":{"
			"\"window\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":4294967295},"
			"\"x\":{\"type\":\"integer\",\"minimum\":-32768,\"maximum\":32767},"
			"\"y\":{\"type\":\"integer\",\"minimum\":-32768,\"maximum\":32767},"
			"\"width\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":32767},"
			"\"height\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":32767}}}",
		.output_schema = WINDOW_ITEM,
		.flags = TOOL_DESKTOP_LOCK,
		.handler = window_move,
	},
	{
		.name = "wait_for_change",
		.title = "Wait for the screen to change",
		.description =
			"Wait until the screen (or a window) changes and then stays still for stable_ms "
			"(default 200), at most timeout_ms (default 10000, max 60000). Use it after an "
			"action whose effect takes time (a page load, a dialog) instead of sleeping. "
			"Timing out is a normal result (changed/stable false), not an error.",
		.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
			WINDOW_PROP ","
			"\"timeout_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":60000,\"default\":10000},"
			"\"stable_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10000,\"default\":200}}}",
		.output_schema = "{\"type\":\"object\",\"properties\":{\"changed\":{\"type\":\"boolean\"},"
			"\"stable\":{\"type\":\"boolean\"},\"waited_ms\":{\"type\":\"integer\"},"
			"\"window\":{\"type\":\"integer\"},\"timed_out\":{\"type\":\"boolean\"}},"
			"\"required\":[\"changed\",\"waited_ms\"]}",
		.flags = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = wait_for_change,
	},
	{ 0 },
};
