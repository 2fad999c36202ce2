/* The hello, built on a worker (the window list needs X), and the outbox
 * through which other threads post to a client. */
#include "server/live/live_private.h"
#include "base/clock.h"
#include "server/http/auth.h"
#include "server/http/http.h"
#include "desktop/desktop.h"
#include "base/events.h"
#include "base/log.h"
#include "base/metrics.h"
#include "server/http/netcheck.h"
#include "base/options.h"
#include "base/worker.h"
#include "capture/capture.h"
#include "tools/tools.h"

#include <libwebsockets.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- hello (built on a worker: the window list needs X) ---- */

/* The mapped windows as the windows tool shows them, or [] when the display
 * cannot be read. */
static json_t* live_windows(void)
{
	json_t* out = json_array();
	struct capture_window_info* list = NULL;
	size_t n = 0;
	if (out && desktop_windows(&list, &n) == 0)
		for (size_t i = 0; i < n; i++)
			json_array_append_new(out, tools_window_json(&list[i]));
	free(list);
	return out ? out : json_array();
}

struct live_buf* live_hello(enum http_role role, bool with_windows)
{
	int w = 0, h = 0;
	desktop_screen_size(&w, &h);
	const struct options* opts = options_get();
	json_t* windows = with_windows ? live_windows() : json_array();
	return live_buf_json(json_pack("{s:s, s:{s:i, s:i}, s:o, s:s, s:i, s:b}",
			"type", "hello", "screen", "width", w, "height", h,
			"windows", windows ? windows : json_array(),
			"role", auth_role_name(role),
			"max_image_dimension", opts ? opts->max_image_dimension : 1280,
			"display", desktop_available()));
}

static void live_post_hello(uint64_t client_id, struct live_buf* hello)
{
	struct live_outbox_item* item = calloc(1, sizeof(*item));
	pthread_mutex_lock(&live__lock);
	if (!item || !hello || live__shutdown) {
		pthread_mutex_unlock(&live__lock);
		free(item);
		live_buf_unref(hello);
		return;
	}
	item->client_id = client_id;
	item->hello = hello;
	item->next = live__outbox;
	live__outbox = item;
	if (live__ctx)
		lws_cancel_service(live__ctx);
	pthread_mutex_unlock(&live__lock);
}

void live_post_ctrl(uint64_t client_id, struct live_buf* ctrl)
{
	struct live_outbox_item* item = calloc(1, sizeof(*item));
	pthread_mutex_lock(&live__lock);
	if (!item || !ctrl || live__shutdown) {
		pthread_mutex_unlock(&live__lock);
		free(item);
		live_buf_unref(ctrl);
		return;
	}
	item->client_id = client_id;
	item->ctrl = ctrl;
	/* Appended, so a client's errors arrive in order. */
	struct live_outbox_item** tail = &live__outbox;
	while (*tail)
		tail = &(*tail)->next;
	*tail = item;
	if (live__ctx)
		lws_cancel_service(live__ctx);
	pthread_mutex_unlock(&live__lock);
}

void live_hello_worker(void* ud)
{
	struct live_hello_job* job = ud;
	live_post_hello(job->client_id, live_hello(job->role, true));
	free(job);
}
