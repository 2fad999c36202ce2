/* Screenshot thumbnails for the timeline: after a call that returned a
 * screenshot to an agent, a small JPEG made from that very image (so it
 * shows exactly what the agent saw, and never anything it was not allowed
 * to see) on a worker, off the answer's path, kept in base/events' bounded
 * ring. A person's input never gets one: tools_call() asks only for agent
 * calls, and a call refused while a person holds the desktop has no image. */
#include "tools/tools.h"
#include "base/clock.h"
#include "base/events.h"
#include "base/log.h"
#include "base/worker.h"
#include "capture/capture.h"
#include "desktop/desktop.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define THUMB_MAX_SIDE 240
#define THUMB_QUALITY 60
#define THUMB_MAX_JOBS 1		/* more at once are skipped: a burst of
					 * screenshots must not queue decodes */
#define THUMB_MAX_INPUT (64u << 20)

struct thumb_job {
	uint64_t id;
	size_t len;
	unsigned char data[];
};

static atomic_int thumb_jobs;

static void thumb_make(void* ud)
{
	struct thumb_job* job = ud;
	int64_t t0 = clock_ns();
	struct frame* f = capture_decode(job->data, job->len);
	struct frame* small = NULL;
	uint8_t* jpeg = NULL;
	size_t len = 0;
	if (f) {
		int w, h;
		desktop_scaled_size(f->width, f->height, THUMB_MAX_SIDE, &w, &h);
		small = capture_scale(f, w, h);
	}
	if (small && capture_encode_jpeg(small, THUMB_QUALITY, &jpeg, &len) == 0) {
		events_thumbnail_put(job->id, jpeg, len);
		log_debug("thumbnail for event %llu: %dx%d from %dx%d, %zu bytes, %.1f ms",
				(unsigned long long)job->id, small->width, small->height, f->width,
				f->height, len, (double)(clock_ns() - t0) / 1e6);
	} else
		log_debug("no thumbnail for event %llu", (unsigned long long)job->id);
	free(jpeg);
	frame_unref(small);
	frame_unref(f);
	free(job);
	atomic_fetch_sub(&thumb_jobs, 1);
}

json_t* tools_thumbnail(const struct tool_ctx* ctx, const struct tool_result* res,
		uint64_t event_id)
{
	(void)ctx;
	if (!res || res->is_error || !res->image || !res->image_len)
		return NULL;
	json_int_t w = json_integer_value(json_object_get(res->structured, "window"));
	json_t* shot = json_pack("{s:I}", "window", w > 0 && w <= 0xffffffff ? w : 0);
	bool queued = false;
	if (res->image_len <= THUMB_MAX_INPUT
			&& atomic_fetch_add(&thumb_jobs, 1) < THUMB_MAX_JOBS) {
		struct thumb_job* job = malloc(sizeof(*job) + res->image_len);
		if (job) {
			job->id = event_id;
			job->len = res->image_len;
			memcpy(job->data, res->image, res->image_len);
			queued = worker_spawn(thumb_make, job) == 0;
			if (!queued)
				free(job);
		}
		if (!queued)
			atomic_fetch_sub(&thumb_jobs, 1);
	} else if (res->image_len <= THUMB_MAX_INPUT) {
		atomic_fetch_sub(&thumb_jobs, 1);
	}
	if (shot && queued)
		json_object_set_new(shot, "thumbnail", json_true());
	return shot ? json_pack("{s:o}", "screenshot", shot) : NULL;
}
