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

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define THUMB_MAX_SIDE 240
#define THUMB_QUALITY 60
/* One decode at a time (a 1080p PNG decodes into 8 MB), the screenshots
 * behind it waiting as their compressed bytes; past this many waiting, a
 * burst's further ones get no thumbnail rather than a queue of decodes. */
#define THUMB_QUEUE 4
#define THUMB_MAX_INPUT (64u << 20)

struct thumb_job {
	uint64_t id;
	size_t len;
	unsigned char data[];
};

static pthread_mutex_t thumb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct thumb_job* thumb_queue[THUMB_QUEUE];
static int thumb_waiting;
static bool thumb_running;	/* a worker drains the queue */

static void thumb_make(const struct thumb_job* job)
{
	int64_t t0 = clock_ns();
	/* Decoded reduced (a 1280x800 PNG's full decode is 7 MB). */
	int fw = 0, fh = 0;
	struct frame* f = capture_decode_reduced(job->data, job->len, THUMB_MAX_SIDE, &fw, &fh);
	struct frame* small = NULL;
	uint8_t* jpeg = NULL;
	size_t len = 0;
	if (f) {
		int w, h;
		desktop_scaled_size(fw, fh, THUMB_MAX_SIDE, &w, &h);
		small = capture_scale(f, w < f->width ? w : f->width, h < f->height ? h : f->height);
	}
	if (small && capture_encode_jpeg(small, THUMB_QUALITY, &jpeg, &len) == 0) {
		events_thumbnail_put(job->id, jpeg, len);
		log_debug("thumbnail for event %llu: %dx%d from %dx%d, %zu bytes, %.1f ms",
				(unsigned long long)job->id, small->width, small->height, fw, fh, len,
				(double)(clock_ns() - t0) / 1e6);
	} else
		log_debug("no thumbnail for event %llu", (unsigned long long)job->id);
	free(jpeg);
	frame_unref(small);
	frame_unref(f);
}

/* The worker: the queue's jobs in their order until it is empty. */
static void thumb_drain(void* ud)
{
	(void)ud;
	for (;;) {
		pthread_mutex_lock(&thumb_lock);
		struct thumb_job* job = thumb_waiting ? thumb_queue[0] : NULL;
		if (job) {
			memmove(thumb_queue, thumb_queue + 1, (size_t)--thumb_waiting * sizeof(*thumb_queue));
		} else {
			thumb_running = false;
		}
		pthread_mutex_unlock(&thumb_lock);
		if (!job)
			return;
		thumb_make(job);
		free(job);
	}
}

/* Queue a copy of the image; false when the queue is full or no worker
 * could start (no thumbnail then). */
static bool thumb_queue_image(uint64_t event_id, const unsigned char* image, size_t len)
{
	struct thumb_job* job = malloc(sizeof(*job) + len);
	if (!job)
		return false;
	job->id = event_id;
	job->len = len;
	memcpy(job->data, image, len);
	pthread_mutex_lock(&thumb_lock);
	bool queued = thumb_waiting < THUMB_QUEUE;
	if (queued)
		thumb_queue[thumb_waiting++] = job;
	if (queued && !thumb_running) {
		thumb_running = worker_spawn(thumb_drain, NULL) == 0;
		if (!thumb_running)
			queued = (--thumb_waiting, false);
	}
	pthread_mutex_unlock(&thumb_lock);
	if (!queued)
		free(job);
	return queued;
}

json_t* tools_thumbnail(const struct tool_ctx* ctx, const struct tool_result* res,
		uint64_t event_id)
{
	(void)ctx;
	if (!res || res->is_error || !res->image || !res->image_len)
		return NULL;
	json_int_t w = json_integer_value(json_object_get(res->structured, "window"));
	json_t* shot = json_pack("{s:I}", "window", w > 0 && w <= 0xffffffff ? w : 0);
	bool queued = res->image_len <= THUMB_MAX_INPUT
			&& thumb_queue_image(event_id, res->image, res->image_len);
	if (shot && queued)
		json_object_set_new(shot, "thumbnail", json_true());
	return shot ? json_pack("{s:o}", "screenshot", shot) : NULL;
}
