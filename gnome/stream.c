/* The screen-cast's PipeWire stream, consumed in process: a pw_thread_loop
 * of its own, a context, a core on the daemon's socket and one input
 * pw_stream linked to Mutter's node. Each frame is copied out of PipeWire's
 * buffer at once (the buffer goes back to Mutter) into the back of two
 * frame buffers, which then swaps with the front under the lock: readers
 * copy out of the front, the loop thread never waits for them to copy. */
#define _GNU_SOURCE
#include "gnome/gnome_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gnome/pipewire.h"
#include <spa/param/video/format-utils.h>
#include <spa/param/buffers.h>
#include <spa/buffer/meta.h>
#include <spa/pod/builder.h>

/* Connecting and linking take a few ms locally; a daemon that does not
 * answer, or a node the session manager cannot link, is an error. */
#define OPEN_TIMEOUT_MS 2000
/* Mutter offers 16 buffers of a whole monitor (62 MB at 1280x800, all in
 * our RSS once read). A frame is copied out and the buffer queued back at
 * once, so a few are enough for Mutter never to wait for one. */
#define STREAM_BUFFERS 4

struct frame {
	uint8_t* data;		/* width x height, 4 * width bytes a row */
	size_t capacity;
	int width, height;
	uint32_t format;	/* SPA_VIDEO_FORMAT_* */
};

struct gnome_stream {
	struct pw_thread_loop* loop;
	struct pw_context* context;
	struct pw_core* core;
	struct spa_hook core_listener;
	struct pw_stream* stream;
	struct spa_hook stream_listener;
	uint32_t node;
	int efd;

	/* the loop thread's own (callbacks hold the loop's lock) */
	uint32_t format;	/* negotiated; 0: none yet */
	int width, height;
	struct frame back;
	struct pw_buffer* bufs[STREAM_BUFFERS * 2];	/* as add_buffer gave them */
	int n_bufs;
	enum pw_stream_state state;
	bool started;		/* reached STREAMING once */
	char why[160];		/* the stream's or core's error */
	uint64_t copies, same, empties, corrupt, damaged;
	int64_t copy_ns, copy_max_ns, same_ns;

	/* readers' and the loop thread's, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct frame front;
	uint64_t seq;
	atomic_bool broken;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_pipewire(void)
{
	if (pipewire_load(NULL, 0) == 0)
		pw.pw_init(NULL, NULL);
}

static const char* state_name(enum pw_stream_state s)
{
	return pw.pw_stream_state_as_string(s);
}

/* ---- the loop thread ---- */

static void on_core_error(void* data, uint32_t id, int seq, int res, const char* message)
{
	struct gnome_stream* st = data;
	/* only the core's own errors end the connection (EPIPE: the daemon
	 * is gone); an object's are reported by that object */
	if (id != PW_ID_CORE)
		return;
	snprintf(st->why, sizeof(st->why), "PipeWire: %s (%s)", message ? message : "error",
			strerror(res < 0 ? -res : res));
	atomic_store(&st->broken, true);
	pthread_mutex_lock(&st->lock);
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
	pw.pw_thread_loop_signal(st->loop, false);
}

static const struct pw_core_events core_events = {
	PW_VERSION_CORE_EVENTS,
	.error = on_core_error,
};

static void on_state_changed(void* data, enum pw_stream_state old,
		enum pw_stream_state state, const char* error)
{
	struct gnome_stream* st = data;
	st->state = state;
	log_debug("gnome: stream to node %" PRIu32 ": %s -> %s%s%s", st->node,
			state_name(old), state_name(state), error ? ": " : "", error ? error : "");
	if (state == PW_STREAM_STATE_STREAMING)
		st->started = true;
	/* unconnected: the node or the link is gone and, with DONT_RECONNECT,
	 * nothing links us again */
	if (state == PW_STREAM_STATE_ERROR || state == PW_STREAM_STATE_UNCONNECTED) {
		/* unlinked before it streamed: the session manager found no
		 * such node (or none it would link) and, told not to
		 * reconnect, dropped the stream */
		if (!st->why[0] && state == PW_STREAM_STATE_ERROR)
			snprintf(st->why, sizeof(st->why), "PipeWire stream to node %" PRIu32
					" failed: %s", st->node, error ? error : "unknown error");
		else if (!st->why[0] && error)
			snprintf(st->why, sizeof(st->why), "PipeWire stream to node %" PRIu32
					" ended: %s", st->node, error);
		else if (!st->why[0])
			snprintf(st->why, sizeof(st->why), "PipeWire stream to node %" PRIu32 " %s",
					st->node, st->started ? "ended (the node is gone)"
					: "was not linked (no such video node?)");
		atomic_store(&st->broken, true);
		pthread_mutex_lock(&st->lock);
		pthread_cond_broadcast(&st->cond);
		pthread_mutex_unlock(&st->lock);
	}
	pw.pw_thread_loop_signal(st->loop, false);
}

static bool format_ok(uint32_t f)
{
	return f == SPA_VIDEO_FORMAT_BGRx || f == SPA_VIDEO_FORMAT_BGRA ||
		f == SPA_VIDEO_FORMAT_RGBx || f == SPA_VIDEO_FORMAT_RGBA;
}

static const char* format_name(uint32_t f)
{
	return f == SPA_VIDEO_FORMAT_BGRx ? "BGRx" : f == SPA_VIDEO_FORMAT_BGRA ? "BGRA" :
		f == SPA_VIDEO_FORMAT_RGBx ? "RGBx" : f == SPA_VIDEO_FORMAT_RGBA ? "RGBA" : "other";
}

/* The format is fixed: say which buffers and metadata we take. */
static void on_param_changed(void* data, uint32_t id, const struct spa_pod* param)
{
	struct gnome_stream* st = data;
	if (id != SPA_PARAM_Format)
		return;
	st->format = 0;
	if (!param)
		return;	/* cleared: renegotiating */
	struct spa_video_info_raw info;
	memset(&info, 0, sizeof(info));
	if (spa_format_video_raw_parse(param, &info) < 0 || !format_ok(info.format) ||
			info.size.width == 0 || info.size.height == 0 ||
			info.size.width > 16384 || info.size.height > 16384) {
		pw.pw_stream_set_error(st->stream, -EINVAL, "unusable video format");
		return;
	}
	st->format = info.format;
	st->width = (int)info.size.width;
	st->height = (int)info.size.height;
	log_debug("gnome: stream to node %" PRIu32 ": %dx%d %s", st->node, st->width, st->height,
			format_name(info.format));

	uint8_t buf[512];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buf, sizeof(buf));
	const struct spa_pod* params[3];
	/* shared memory only: Mutter has no DMA-BUF without a GPU, and we
	 * could not read one without mapping it through a GPU API */
	params[0] = spa_pod_builder_add_object(&b,
		SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
		SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(STREAM_BUFFERS, 2,
				STREAM_BUFFERS),
		SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int(
				(1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr)));
	params[1] = spa_pod_builder_add_object(&b,
		SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
		SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
		SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
	/* damage is only counted (in the closing log line), not used: what
	 * it is relative to is the producer's business */
	params[2] = spa_pod_builder_add_object(&b,
		SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
		SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoDamage),
		SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(
				sizeof(struct spa_meta_region) * 16,
				sizeof(struct spa_meta_region) * 1,
				sizeof(struct spa_meta_region) * 16));
	pw.pw_stream_update_params(st->stream, params, 3);
}

/* Is this buffer a whole frame we can read? Its rows in *rows, *stride. */
static bool buffer_frame(struct gnome_stream* st, struct pw_buffer* pb,
		const uint8_t** rows, size_t* stride)
{
	struct spa_buffer* b = pb->buffer;
	if (!st->format || b->n_datas < 1)
		return false;
	struct spa_data* d = &b->datas[0];
	const struct spa_chunk* c = d->chunk;
	if (!d->data || !c || c->size == 0) {
		st->empties++;	/* Mutter sends these when only the cursor moved */
		return false;
	}
	struct spa_meta_header* h = spa_buffer_find_meta_data(b, SPA_META_Header, sizeof(*h));
	if ((c->flags & SPA_CHUNK_FLAG_CORRUPTED) ||
			(h && (h->flags & SPA_META_HEADER_FLAG_CORRUPTED))) {
		st->corrupt++;
		return false;
	}
	size_t row = 4 * (size_t)st->width;
	size_t s = c->stride > 0 ? (size_t)c->stride : row;
	size_t off = d->maxsize ? c->offset % d->maxsize : 0;
	size_t need = s * (size_t)(st->height - 1) + row;
	if (s < row || need > c->size || off + need > d->maxsize) {
		st->corrupt++;
		return false;
	}
	*rows = (const uint8_t*)d->data + off;
	*stride = s;
	return true;
}

static int frame_fit(struct frame* f, int width, int height)
{
	size_t size = 4 * (size_t)width * (size_t)height;
	if (f->capacity < size) {
		uint8_t* p = realloc(f->data, size);
		if (!p)
			return -ENOMEM;
		f->data = p;
		f->capacity = size;
	}
	f->width = width;
	f->height = height;
	return 0;
}

/* Are these rows the front frame's pixels? Only the loop thread writes
 * the front (it swaps it), so it reads it without the lock. */
static bool same_as_front(const struct gnome_stream* st, const uint8_t* rows, size_t stride)
{
	const struct frame* f = &st->front;
	if (!st->seq || f->width != st->width || f->height != st->height ||
			f->format != st->format)
		return false;
	size_t row = 4 * (size_t)st->width;
	/* from the bottom up: a change is usually in the content, seldom in
	 * the top bar, so a changed frame is told early */
	for (int y = st->height - 1; y >= 0; y--) {
		if (memcmp(f->data + row * (size_t)y, rows + stride * (size_t)y, row) != 0)
			return false;
	}
	return true;
}

static void copy_frame(struct gnome_stream* st, const uint8_t* rows, size_t stride)
{
	int64_t t0 = clock_ns();
	/* Mutter (43, headless) repaints at each pointer motion and sends
	 * the same pixels when the cursor is not drawn in: not a change */
	if (same_as_front(st, rows, stride)) {
		st->same++;
		st->same_ns += clock_ns() - t0;
		return;
	}
	if (frame_fit(&st->back, st->width, st->height) < 0)
		return;	/* keep the last frame; the next may fit */
	st->back.format = st->format;
	size_t row = 4 * (size_t)st->width;
	if (stride == row) {
		memcpy(st->back.data, rows, row * (size_t)st->height);
	} else {
		for (int y = 0; y < st->height; y++)
			memcpy(st->back.data + row * (size_t)y, rows + stride * (size_t)y, row);
	}
	int64_t ns = clock_ns() - t0;
	st->copies++;
	st->copy_ns += ns;
	if (ns > st->copy_max_ns)
		st->copy_max_ns = ns;

	pthread_mutex_lock(&st->lock);
	struct frame t = st->front;
	st->front = st->back;
	st->back = t;
	st->seq++;
	/* under the lock: whoever sees the new number finds the fd readable */
	uint64_t one = 1;
	if (write(st->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, it polls readable anyway */
	}
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

/* Did the producer fill in a damage region (the meta is there once
 * negotiated, filled or not)? */
static bool has_damage(struct spa_buffer* b)
{
	struct spa_meta* m = spa_buffer_find_meta(b, SPA_META_VideoDamage);
	if (!m)
		return false;
	struct spa_meta_region* r;
	spa_meta_for_each(r, m) {
		if (spa_meta_region_is_valid(r))
			return true;
	}
	return false;
}

static void on_process(void* data)
{
	struct gnome_stream* st = data;
	/* of what is queued, only the newest whole frame is copied */
	struct pw_buffer* best = NULL;
	const uint8_t* best_rows = NULL;
	size_t best_stride = 0;
	struct pw_buffer* b;
	while ((b = pw.pw_stream_dequeue_buffer(st->stream))) {
		const uint8_t* rows;
		size_t stride;
		if (has_damage(b->buffer))
			st->damaged++;
		if (!buffer_frame(st, b, &rows, &stride)) {
			pw.pw_stream_queue_buffer(st->stream, b);
			continue;
		}
		if (best)
			pw.pw_stream_queue_buffer(st->stream, best);
		best = b;
		best_rows = rows;
		best_stride = stride;
	}
	if (!best)
		return;
	copy_frame(st, best_rows, best_stride);
	pw.pw_stream_queue_buffer(st->stream, best);
}

static void on_add_buffer(void* data, struct pw_buffer* b)
{
	struct gnome_stream* st = data;
	if (st->n_bufs < (int)(sizeof(st->bufs) / sizeof(st->bufs[0])))
		st->bufs[st->n_bufs++] = b;
}

static void on_remove_buffer(void* data, struct pw_buffer* b)
{
	struct gnome_stream* st = data;
	for (int i = 0; i < st->n_bufs; i++) {
		if (st->bufs[i] == b) {
			st->bufs[i] = st->bufs[--st->n_bufs];
			return;
		}
	}
}

static const struct pw_stream_events stream_events = {
	PW_VERSION_STREAM_EVENTS,
	.add_buffer = on_add_buffer,
	.remove_buffer = on_remove_buffer,
	.state_changed = on_state_changed,
	.param_changed = on_param_changed,
	.process = on_process,
};

/* ---- opening and closing ---- */

/* A socket connected to the daemon at an absolute path: PipeWire 0.3.65
 * would take the path as PW_KEY_REMOTE_NAME too, but $PIPEWIRE_REMOTE
 * overrides that property, and deskd's environment is not the desktop's. */
static int connect_socket(const char* path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* a local connect completes at once or, with a full backlog, is
	 * pending (EAGAIN); PipeWire's own connect goes on in both cases */
	if (connect(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0 && errno != EAGAIN) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int connect_stream(struct gnome_stream* st, const char* socket_path, int* remote_fd,
		char* err, size_t err_size)
{
	if (*remote_fd >= 0) {
		/* the core owns the fd from here, also when it fails */
		st->core = pw.pw_context_connect_fd(st->context, *remote_fd, NULL, 0);
		*remote_fd = -1;
		socket_path = "the portal's connection";
	} else if (socket_path && socket_path[0]) {
		int fd = connect_socket(socket_path);
		if (fd < 0) {
			snprintf(err, err_size, "cannot connect to PipeWire at %s: %s",
					socket_path, strerror(-fd));
			return fd;
		}
		/* the core owns fd from here, also when it fails */
		st->core = pw.pw_context_connect_fd(st->context, fd, NULL, 0);
	} else {
		st->core = pw.pw_context_connect(st->context, NULL, 0);
	}
	if (!st->core) {
		int e = errno ? errno : EIO;
		snprintf(err, err_size, "cannot connect to PipeWire%s%s: %s",
				socket_path && socket_path[0] ? " at " : "",
				socket_path && socket_path[0] ? socket_path : "", strerror(e));
		return -e;
	}
	pw_core_add_listener(st->core, &st->core_listener, &core_events, st);

	st->stream = pw.pw_stream_new(st->core, "deskd", pw.pw_properties_new(
			PW_KEY_MEDIA_TYPE, "Video",
			PW_KEY_MEDIA_CATEGORY, "Capture",
			PW_KEY_MEDIA_ROLE, "Screen",
			NULL));
	if (!st->stream) {
		int e = errno ? errno : ENOMEM;
		snprintf(err, err_size, "cannot make a PipeWire stream: %s", strerror(e));
		return -e;
	}
	pw.pw_stream_add_listener(st->stream, &st->stream_listener, &stream_events, st);

	uint8_t buf[1024];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buf, sizeof(buf));
	const struct spa_pod* params[1];
	params[0] = spa_pod_builder_add_object(&b,
		SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
		SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
		SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
		SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(5,
				SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRx,
				SPA_VIDEO_FORMAT_BGRA, SPA_VIDEO_FORMAT_RGBx,
				SPA_VIDEO_FORMAT_RGBA),
		SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(
				&SPA_RECTANGLE(1920, 1080), &SPA_RECTANGLE(1, 1),
				&SPA_RECTANGLE(16384, 16384)),
		SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(
				&SPA_FRACTION(0, 1), &SPA_FRACTION(0, 1),
				&SPA_FRACTION(1000, 1)));
	/* target_id is how 0.3.65 names a node by its id (node.target; the
	 * portal's way); DONT_RECONNECT: when Mutter's node goes, the stream
	 * ends rather than being linked to another source */
	int r = pw.pw_stream_connect(st->stream, PW_DIRECTION_INPUT, st->node,
			PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS |
			PW_STREAM_FLAG_DONT_RECONNECT, params, 1);
	if (r < 0) {
		snprintf(err, err_size, "cannot connect a PipeWire stream to node %" PRIu32 ": %s",
				st->node, strerror(-r));
		return r;
	}

	/* linked and negotiated: STREAMING (Mutter's first frame follows) */
	struct timespec until;
	pw.pw_thread_loop_get_time(st->loop, &until, (int64_t)OPEN_TIMEOUT_MS * SPA_NSEC_PER_MSEC);
	while (!st->started && !atomic_load(&st->broken)) {
		if (pw.pw_thread_loop_timed_wait_full(st->loop, &until) == -ETIMEDOUT)
			break;
	}
	if (atomic_load(&st->broken)) {
		snprintf(err, err_size, "%s", st->why);
		return -EPIPE;
	}
	if (!st->started) {
		snprintf(err, err_size, "PipeWire stream to node %" PRIu32
				" not streaming after %d ms (%s): no such node, or not linked",
				st->node, OPEN_TIMEOUT_MS, state_name(st->state));
		return -ETIMEDOUT;
	}
	return 0;
}

static struct gnome_stream* stream_open(const char* socket_path, int* remote_fd, uint32_t node,
		char* err, size_t err_size)
{
	pthread_once(&init_once, init_pipewire);
	if (pipewire_load(err, err_size) < 0)
		return NULL;
	struct gnome_stream* st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	st->node = node;
	st->state = PW_STREAM_STATE_UNCONNECTED;
	pthread_mutex_init(&st->lock, NULL);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&st->cond, &attr);
	pthread_condattr_destroy(&attr);
	st->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (st->efd < 0) {
		snprintf(err, err_size, "eventfd: %s", strerror(errno));
		gnome__stream_close(st);
		return NULL;
	}

	/* the loop's thread and the context's data-loop thread take no
	 * signals: they stay the main thread's */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = 0;
	st->loop = pw.pw_thread_loop_new("deskd-pipewire", NULL);
	if (st->loop)
		/* unlocked buffers: --memory-idle drops our pages of them
		 * (madvise refuses locked ones), and a video consumer that
		 * copies each frame out needs no realtime guarantee */
		st->context = pw.pw_context_new(pw.pw_thread_loop_get_loop(st->loop),
				pw.pw_properties_new("mem.allow-mlock", "false", NULL), 0);
	if (st->context)
		r = pw.pw_thread_loop_start(st->loop);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!st->loop || !st->context || r < 0) {
		snprintf(err, err_size, "cannot start PipeWire's loop: %s",
				strerror(r < 0 ? -r : errno ? errno : ENOMEM));
		gnome__stream_close(st);
		return NULL;
	}

	pw.pw_thread_loop_lock(st->loop);
	r = connect_stream(st, socket_path, remote_fd, err, err_size);
	pw.pw_thread_loop_unlock(st->loop);
	if (r < 0) {
		gnome__stream_close(st);
		return NULL;
	}
	return st;
}

struct gnome_stream* gnome__stream_open(const char* socket_path, int remote_fd, uint32_t node,
		char* err, size_t err_size)
{
	struct gnome_stream* st = stream_open(socket_path, &remote_fd, node, err, err_size);
	if (remote_fd >= 0)
		close(remote_fd);	/* failed before PipeWire took it */
	return st;
}

void gnome__stream_release(struct gnome_stream* st)
{
	if (!st || !st->loop)
		return;
	/* The back buffer is the loop thread's, touched only under the loop's
	 * lock (callbacks run holding it). The front stays: Mutter sends no
	 * frame until the screen changes, so it is the only picture of it. */
	pw.pw_thread_loop_lock(st->loop);
	free(st->back.data);
	memset(&st->back, 0, sizeof(st->back));
	/* Mutter's buffers are its memfds mapped shared: dropping our pages
	 * keeps their contents (the next read faults them in again) and takes
	 * them out of our RSS; the memory stays Mutter's. */
	long page = sysconf(_SC_PAGESIZE);
	for (int i = 0; i < st->n_bufs; i++) {
		struct spa_buffer* sb = st->bufs[i]->buffer;
		for (uint32_t j = 0; sb && j < sb->n_datas; j++) {
			struct spa_data* d = &sb->datas[j];
			if (d->type != SPA_DATA_MemFd || !d->data || page <= 0)
				continue;
			uintptr_t a = ((uintptr_t)d->data + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
			uintptr_t e = ((uintptr_t)d->data + d->maxsize) & ~(uintptr_t)(page - 1);
			if (e > a)
				madvise((void*)a, e - a, MADV_DONTNEED);
		}
	}
	pw.pw_thread_loop_unlock(st->loop);
}

void gnome__stream_close(struct gnome_stream* st)
{
	if (!st)
		return;
	if (st->loop) {
		pw.pw_thread_loop_lock(st->loop);
		if (st->copies)
			log_debug("gnome: stream to node %" PRIu32 ": %" PRIu64 " frames copied,"
					" %.2f ms each (max %.2f); %" PRIu64 " unchanged, %.2f ms each;"
					" %" PRIu64 " empty, %" PRIu64 " corrupt, %" PRIu64 " with damage",
					st->node, st->copies,
					(double)st->copy_ns / (double)st->copies / 1e6,
					(double)st->copy_max_ns / 1e6, st->same,
					st->same ? (double)st->same_ns / (double)st->same / 1e6 : 0.0,
					st->empties, st->corrupt, st->damaged);
		if (st->stream)
			pw.pw_stream_destroy(st->stream);
		if (st->core) {
			spa_hook_remove(&st->core_listener);
			pw.pw_core_disconnect(st->core);
		}
		pw.pw_thread_loop_unlock(st->loop);
		pw.pw_thread_loop_stop(st->loop);
	}
	if (st->context)
		pw.pw_context_destroy(st->context);
	if (st->loop)
		pw.pw_thread_loop_destroy(st->loop);
	if (st->efd >= 0)
		close(st->efd);
	free(st->front.data);
	free(st->back.data);
	pthread_cond_destroy(&st->cond);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

/* ---- readers: any thread ---- */

uint64_t gnome__stream_seq(struct gnome_stream* st)
{
	pthread_mutex_lock(&st->lock);
	uint64_t seq = st->seq;
	pthread_mutex_unlock(&st->lock);
	return seq;
}

int gnome__stream_wait(struct gnome_stream* st, uint64_t after, int timeout_ms,
		uint64_t* seq)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	int64_t ms = timeout_ms > 0 ? timeout_ms : 0;
	until.tv_sec += (time_t)(ms / 1000);
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	int r = 0;
	pthread_mutex_lock(&st->lock);
	while (st->seq <= after) {
		if (atomic_load(&st->broken)) {
			r = -EPIPE;
			break;
		}
		if (pthread_cond_timedwait(&st->cond, &st->lock, &until) == ETIMEDOUT) {
			r = st->seq > after ? 0 : -ETIMEDOUT;
			break;
		}
	}
	if (seq)
		*seq = st->seq;
	pthread_mutex_unlock(&st->lock);
	return r;
}

int gnome__stream_fd(struct gnome_stream* st)
{
	return st->efd;
}

void gnome__stream_size(struct gnome_stream* st, int* width, int* height)
{
	pthread_mutex_lock(&st->lock);
	*width = st->seq ? st->front.width : 0;
	*height = st->seq ? st->front.height : 0;
	pthread_mutex_unlock(&st->lock);
}

/* RGBx/RGBA to BGRx/BGRA: bytes 0 and 2 swap. */
static void swap_row(uint8_t* dst, const uint8_t* src, int width)
{
	for (int x = 0; x < width; x++) {
		uint32_t v;
		memcpy(&v, src + 4 * (size_t)x, 4);
		v = (v & 0xff00ff00u) | ((v >> 16) & 0xffu) | ((v & 0xffu) << 16);
		memcpy(dst + 4 * (size_t)x, &v, 4);
	}
}

int gnome__stream_read(struct gnome_stream* st, int x, int y, int width, int height,
		uint8_t* dst, int dst_stride, uint64_t* seq)
{
	int r = 0;
	pthread_mutex_lock(&st->lock);
	const struct frame* f = &st->front;
	if (!st->seq) {
		r = -EAGAIN;
	} else if (x < 0 || y < 0 || width <= 0 || height <= 0 ||
			width > f->width - x || height > f->height - y ||
			dst_stride < 4 * width) {
		r = -EINVAL;
	} else {
		bool swap = f->format == SPA_VIDEO_FORMAT_RGBx || f->format == SPA_VIDEO_FORMAT_RGBA;
		size_t stride = 4 * (size_t)f->width;
		const uint8_t* src = f->data + stride * (size_t)y + 4 * (size_t)x;
		for (int row = 0; row < height; row++) {
			uint8_t* d = dst + (size_t)dst_stride * (size_t)row;
			const uint8_t* s = src + stride * (size_t)row;
			if (swap)
				swap_row(d, s, width);
			else
				memcpy(d, s, 4 * (size_t)width);
		}
		if (seq)
			*seq = st->seq;
	}
	pthread_mutex_unlock(&st->lock);
	return r;
}

bool gnome__stream_broken(struct gnome_stream* st)
{
	return atomic_load(&st->broken);
}
