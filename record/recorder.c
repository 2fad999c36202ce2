/* The window recorder: one thread per recording.
 *
 *   capture/ (an X connection of its own; the window's Composite pixmap as
 *   a BGRX frame, grabbed only when XDamage or the pointer says it changed)
 *   -> yuv420p, BT.709 limited (yuv.c; swscale when letterboxed into the size
 *   fixed at start) -> libx264 (ultrafast + CABAC + deblock, crf 23, no B-frames,
 *   a keyframe every 2 s) -> MP4
 *   (+faststart) in a safe-output staging file -> published with link()
 *   once the trailer is written.
 *
 * Pacing: slot i is due at start + i / fps on CLOCK_MONOTONIC (time base
 * 1/fps, pts i). A slot where the window did not change sends nothing: the
 * MP4 is variable-rate, the last picture lasting until the next one (x264
 * spends as much on an unchanged frame as on a small change, 14 % of a core
 * for a still 1280x800 window). The picture is sent again after GAP_SECONDS
 * without a change, so no gap is longer, and a keyframe is forced every
 * KEY_SECONDS of time (x264's own default interval), so a seek decodes at
 * most that much; the last picture is sent again at the last slot, so
 * the duration is the recording's. Slots missed because encoding fell
 * behind (or the process was not scheduled) are counted as dropped. Capture,
 * conversion and encoding run in this one thread, so memory stays bounded by
 * the encoder's own lookahead. */
#define _GNU_SOURCE
#include "record/record.h"
#include "base/clock.h"
#include "base/log.h"
#include "record/record_private.h"
#include "capture/capture.h"

#include "record/libav.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#define DEFAULT_FPS 30
#define DEFAULT_MIN_FREE (1LL << 20)
/* ultrafast with CABAC and the deblocking filter back: 30 % less CPU than
 * veryfast on a window redrawn whole at 30 fps, for 30 % more bytes (plain
 * ultrafast: 3x the bytes). PITFALLS 34. */
#ifndef X264_PRESET
#define X264_PRESET "ultrafast"
#endif
#define X264_PARAMS "cabac=1:deblock=1"
#define X264_CRF "23"
/* A keyframe of a text window is 100-130 KB: one every 2 s was half of a
 * terminal recording's bytes (PITFALLS 79). */
#define KEY_SECONDS 10
#define GAP_SECONDS 2

struct recorder {
	pthread_t thread;
	pthread_mutex_t mutex;	/* guards stop, done, stats */
	pthread_cond_t cond;	/* CLOCK_MONOTONIC; signalled on stop and done */
	pthread_mutex_t join_mutex;
	bool joined;
	bool stop;
	bool done;
	int result;
	struct record_stats stats;
	char* path;

	/* Owned by the thread once it runs. */
	struct capture* cap;
	uint32_t window;
	bool cursor;		/* draw the pointer */
	uint64_t seen;		/* the window's change counter at the last grab */
	bool stale;		/* the last grab found it unmapped: try again */
	int ptr_x, ptr_y;	/* the pointer at the last grab (with cursor) */
	struct safe_output* so;
	int fps;
	double max_seconds;
	AVFormatContext* oc;
	AVStream* st;
	AVCodecContext* enc;
	AVFrame* frame;
	AVPacket* pkt;
	struct SwsContext* sws;
	int out_w, out_h;
	int src_w, src_h;	/* the image size the layout is for */
	int dst_x, dst_y, dst_w, dst_h;
};

static record_log_fn log_fn;
static void* log_ud;

void record_set_log(record_log_fn fn, void* ud)
{
	log_fn = fn;
	log_ud = ud;
}

static void rlog(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

static void rlog(int level, const char* fmt, ...)
{
	if (!log_fn)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_fn(log_ud, level, buf);
}

/* libav packs versions as major << 16 | minor << 8 | micro. */
static void version_of(struct record_version* out, const char* library, unsigned v)
{
	out->library = library;
	snprintf(out->version, sizeof(out->version), "%u.%u.%u", v >> 16, (v >> 8) & 255,
			v & 255);
}

/* The libraries' own versions once loaded; before the first recording the
 * ones deskd was built against (loading them to say so would cost what the
 * lazy load saves). */
void record_versions(struct record_version out[RECORD_VERSIONS])
{
	bool on = libav_loaded();
	out[0].library = "ffmpeg";
	snprintf(out[0].version, sizeof(out[0].version), "%s",
			on ? libav.av_version_info() : "loaded at the first recording");
	version_of(&out[1], "libavcodec", on ? libav.avcodec_version() : LIBAVCODEC_VERSION_INT);
	version_of(&out[2], "libavformat", on ? libav.avformat_version() : LIBAVFORMAT_VERSION_INT);
	version_of(&out[3], "libswscale", on ? libav.swscale_version() : LIBSWSCALE_VERSION_INT);
	version_of(&out[4], "libavutil", on ? libav.avutil_version() : LIBAVUTIL_VERSION_INT);
}

static void av_log_cb(void* avcl, int level, const char* fmt, va_list vl)
{
	if (level > AV_LOG_WARNING || !log_fn)
		return;
	char line[512];
	int print_prefix = 1;
	libav.av_log_format_line2(avcl, level, fmt, vl, line, sizeof(line), &print_prefix);
	size_t n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (n)
		log_fn(log_ud, level <= AV_LOG_ERROR ? 0 : 1, line);
}

static pthread_once_t av_once = PTHREAD_ONCE_INIT;

static void av_setup(void)
{
	libav.av_log_set_level(AV_LOG_WARNING);
	libav.av_log_set_callback(av_log_cb);
}

/* av_err2str without the header's inline function (libav.h). */
struct av_message {
	char text[AV_ERROR_MAX_STRING_SIZE];
};

static struct av_message av_text(int averr)
{
	struct av_message m;
	if (libav.av_strerror(averr, m.text, sizeof(m.text)) < 0)
		snprintf(m.text, sizeof(m.text), "error %d", averr);
	return m;
}

static int av_to_errno(int averr)
{
	if (averr == AVERROR(ENOMEM))
		return -ENOMEM;
	if (averr < 0 && averr > -4096)
		return averr;	/* AVERROR(e) == -e */
	return -EIO;
}

/* The black frame: limited-range Y 16, U and V 128. */
static void fill_black(AVFrame* f)
{
	for (int y = 0; y < f->height; y++)
		memset(f->data[0] + (size_t)y * (size_t)f->linesize[0], 16, (size_t)f->width);
	for (int p = 1; p < 3; p++)
		for (int y = 0; y < (f->height + 1) / 2; y++)
			memset(f->data[p] + (size_t)y * (size_t)f->linesize[p], 128,
					(size_t)(f->width + 1) / 2);
}

/* Where a w x h image goes in the output: as is (cropped by at most one
 * pixel to the even size), or scaled to fit with black bars. */
static void layout(struct recorder* self, int w, int h)
{
	int W = self->out_w, H = self->out_h;
	self->src_w = w;
	self->src_h = h;
	if ((w == W || w == W + 1) && (h == H || h == H + 1)) {
		self->dst_x = self->dst_y = 0;
		self->dst_w = W;
		self->dst_h = H;
		return;
	}
	double s = (double)W / w < (double)H / h ? (double)W / w : (double)H / h;
	int dw = (int)(w * s + 0.5) & ~1, dh = (int)(h * s + 0.5) & ~1;
	if (dw < 2)
		dw = 2;
	if (dh < 2)
		dh = 2;
	if (dw > W)
		dw = W;
	if (dh > H)
		dh = H;
	self->dst_w = dw;
	self->dst_h = dh;
	self->dst_x = ((W - dw) / 2) & ~1;
	self->dst_y = ((H - dh) / 2) & ~1;
}

static int convert(struct recorder* self, const struct frame* img)
{
	int rc = libav.av_frame_make_writable(self->frame);
	if (rc < 0)
		return av_to_errno(rc);
	AVFrame* f = self->frame;
	if (img->width != self->src_w || img->height != self->src_h) {
		layout(self, img->width, img->height);
		fill_black(f);
		rlog(3, "recording " LOG_WINDOW ": it is %dx%d, drawn at %d,%d %dx%d in %dx%d",
				LOG_WINDOW_ID(self->stats.window), img->width, img->height, self->dst_x,
				self->dst_y, self->dst_w, self->dst_h, self->out_w, self->out_h);
	}
	/* As is (cropped by at most a pixel to the even size): by hand. */
	if (self->dst_w == self->out_w && self->dst_h == self->out_h) {
		record__bgrx_to_i420(img->data, img->stride, self->out_w, self->out_h,
				f->data, f->linesize);
		return 0;
	}
	int sw = img->width, sh = img->height;
	self->sws = libav.sws_getCachedContext(self->sws, sw, sh, AV_PIX_FMT_BGR0,
			self->dst_w, self->dst_h, AV_PIX_FMT_YUV420P, SWS_BILINEAR, NULL, NULL, NULL);
	if (!self->sws)
		return -ENOMEM;
	const int* coef = libav.sws_getCoefficients(SWS_CS_ITU709);
	libav.sws_setColorspaceDetails(self->sws, coef, 1, coef, 0, 0, 1 << 16, 1 << 16);
	const uint8_t* src[4] = { img->data, NULL, NULL, NULL };
	int src_stride[4] = { img->stride, 0, 0, 0 };
	uint8_t* dst[4] = {
		f->data[0] + (size_t)self->dst_y * (size_t)f->linesize[0] + (size_t)self->dst_x,
		f->data[1] + (size_t)(self->dst_y / 2) * (size_t)f->linesize[1] + (size_t)(self->dst_x / 2),
		f->data[2] + (size_t)(self->dst_y / 2) * (size_t)f->linesize[2] + (size_t)(self->dst_x / 2),
		NULL,
	};
	libav.sws_scale(self->sws, src, src_stride, 0, sh, dst, f->linesize);
	return 0;
}

/* Bring the picture in self->frame up to date: grab the window when it
 * changed since the last grab (damage), when the pointer moved (with
 * cursor), or while it was unmapped at the last try; an unmapped window
 * keeps its last picture. Returns 0, -ENOENT (the window is gone),
 * -ECONNRESET (the display is gone), or another -errno. */
static int refresh(struct recorder* self, bool* changed)
{
	uint64_t counter;
	int rc = capture_changes_arrived(self->cap, self->window, &counter);
	if (rc < 0)
		return rc;
	bool grab = counter != self->seen || self->stale;
	int x, y;
	if (self->cursor && capture_pointer(self->cap, self->window, &x, &y) == 0
			&& (x != self->ptr_x || y != self->ptr_y)) {
		self->ptr_x = x;
		self->ptr_y = y;
		grab = true;
	}
	if (!grab)
		return 0;
	/* Changes made while grabbing raise the counter again: at worst one
	 * extra grab, never a missed change. */
	self->seen = counter;
	/* Lent: converted at once, gone before the next grab (no copy). */
	struct frame* f = NULL;
	rc = capture_window_lent(self->cap, self->window, NULL, self->cursor, &f);
	self->stale = rc == -ENODATA;
	if (rc == -ENODATA)
		return 0;
	if (rc < 0)
		return rc;
	rc = convert(self, f);
	frame_unref(f);
	if (rc == 0)
		*changed = true;
	return rc;
}

/* Send a frame (NULL flushes) and write every packet it yields. */
static int encode(struct recorder* self, AVFrame* frame)
{
	int rc = libav.avcodec_send_frame(self->enc, frame);
	if (rc < 0)
		return rc;
	for (;;) {
		rc = libav.avcodec_receive_packet(self->enc, self->pkt);
		if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF)
			return 0;
		if (rc < 0)
			return rc;
		/* libx264 in lavc 59 leaves duration 0 (PITFALLS 32). */
		self->pkt->duration = 1;
		libav.av_packet_rescale_ts(self->pkt, self->enc->time_base, self->st->time_base);
		self->pkt->stream_index = self->st->index;
		rc = libav.av_interleaved_write_frame(self->oc, self->pkt);
		if (rc < 0)
			return rc;
	}
}

static void free_av(struct recorder* self)
{
	if (self->oc && self->oc->pb)
		libav.avio_closep(&self->oc->pb);
	libav.avformat_free_context(self->oc);
	self->oc = NULL;
	libav.avcodec_free_context(&self->enc);
	libav.av_frame_free(&self->frame);
	libav.av_packet_free(&self->pkt);
	libav.sws_freeContext(self->sws);
	self->sws = NULL;
}

static int open_encoder(struct recorder* self, char* err, size_t err_size)
{
	const char* file = safe_output_staging_path(self->so);
	int rc = libav.avformat_alloc_output_context2(&self->oc, NULL, "mp4", file);
	if (rc < 0 || !self->oc)
		goto av_failure;
	const AVCodec* codec = libav.avcodec_find_encoder_by_name("libx264");
	if (!codec) {
		record__set_err(err, err_size, "libavcodec has no libx264 encoder");
		return -ENOTSUP;
	}
	self->st = libav.avformat_new_stream(self->oc, NULL);
	self->enc = libav.avcodec_alloc_context3(codec);
	self->frame = libav.av_frame_alloc();
	self->pkt = libav.av_packet_alloc();
	if (!self->st || !self->enc || !self->frame || !self->pkt) {
		record__set_err(err, err_size, "out of memory");
		return -ENOMEM;
	}
	AVCodecContext* c = self->enc;
	c->width = self->out_w;
	c->height = self->out_h;
	c->pix_fmt = AV_PIX_FMT_YUV420P;
	c->time_base = (AVRational){ 1, self->fps };
	c->framerate = (AVRational){ self->fps, 1 };
	c->gop_size = KEY_SECONDS * self->fps;
	c->max_b_frames = 0;
	c->color_range = AVCOL_RANGE_MPEG;
	c->colorspace = AVCOL_SPC_BT709;
	c->color_primaries = AVCOL_PRI_BT709;
	c->color_trc = AVCOL_TRC_BT709;
	libav.av_opt_set(c->priv_data, "preset", X264_PRESET, 0);
	libav.av_opt_set(c->priv_data, "x264-params", X264_PARAMS, 0);
	libav.av_opt_set(c->priv_data, "crf", X264_CRF, 0);
	if (self->oc->oformat->flags & AVFMT_GLOBALHEADER)
		c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
	rc = libav.avcodec_open2(c, codec, NULL);
	if (rc < 0)
		goto av_failure;
	rc = libav.avcodec_parameters_from_context(self->st->codecpar, c);
	if (rc < 0)
		goto av_failure;
	self->st->time_base = c->time_base;
	self->st->avg_frame_rate = c->framerate;

	self->frame->format = AV_PIX_FMT_YUV420P;
	self->frame->width = self->out_w;
	self->frame->height = self->out_h;
	self->frame->color_range = c->color_range;
	self->frame->colorspace = c->colorspace;
	self->frame->color_primaries = c->color_primaries;
	self->frame->color_trc = c->color_trc;
	rc = libav.av_frame_get_buffer(self->frame, 0);
	if (rc < 0)
		goto av_failure;
	fill_black(self->frame);

	rc = libav.avio_open(&self->oc->pb, file, AVIO_FLAG_WRITE);
	if (rc < 0)
		goto av_failure;
	/* Write each packet through at once: a full disk is noticed within a
	 * frame, not after 32 KiB of buffered output. */
	self->oc->flush_packets = 1;
	AVDictionary* opts = NULL;
	libav.av_dict_set(&opts, "movflags", "+faststart", 0);
	rc = libav.avformat_write_header(self->oc, &opts);
	if (libav.av_dict_count(opts))
		rlog(1, "mp4 muxer ignored %d option(s)", libav.av_dict_count(opts));
	libav.av_dict_free(&opts);
	if (rc < 0)
		goto av_failure;
	return 0;

av_failure:
	record__set_err(err, err_size, "cannot set up the encoder: %s", av_text(rc).text);
	return av_to_errno(rc);
}

static void update_stats(struct recorder* self, uint64_t frames, uint64_t dropped,
		uint64_t slots)
{
	int64_t bytes = self->oc && self->oc->pb ? libav.avio_seek(self->oc->pb, 0, SEEK_CUR) : 0;
	pthread_mutex_lock(&self->mutex);
	self->stats.frames = frames;
	self->stats.dropped_frames = dropped;
	self->stats.duration_seconds = (double)slots / self->fps;
	if (bytes > 0)
		self->stats.bytes = (unsigned long long)bytes;
	pthread_mutex_unlock(&self->mutex);
}

/* Wait until `due` (monotonic ns) or a stop request; true when stopping. */
static bool wait_until(struct recorder* self, int64_t due)
{
	struct timespec ts = { .tv_sec = due / 1000000000, .tv_nsec = due % 1000000000 };
	pthread_mutex_lock(&self->mutex);
	while (!self->stop) {
		int rc = pthread_cond_timedwait(&self->cond, &self->mutex, &ts);
		if (rc == ETIMEDOUT)
			break;
	}
	bool stop = self->stop;
	pthread_mutex_unlock(&self->mutex);
	return stop;
}

static const char* end_name(enum record_end end)
{
	switch (end) {
	case RECORD_END_STOPPED: return "stopped";
	case RECORD_END_WINDOW_GONE: return "the window was destroyed";
	case RECORD_END_MAX_SECONDS: return "max_seconds reached";
	case RECORD_END_DISPLAY_GONE: return "the display went away";
	case RECORD_END_ERROR: return "error";
	default: return "running";
	}
}

static void* run(void* ud)
{
	struct recorder* self = ud;
	const int64_t start = clock_ns();
	uint64_t max_slots = self->max_seconds > 0
		? (uint64_t)(self->max_seconds * self->fps + 0.5) : UINT64_MAX;
	if (max_slots == 0)
		max_slots = 1;	/* max_seconds under half a frame: one frame */
	uint64_t slot = 0, frames = 0, dropped = 0;
	uint64_t sent = 0, key = 0;	/* the slots of the last frame and keyframe sent */
	enum record_end end = RECORD_END_NONE;
	int rc = 0;
	char msg[256] = "";

	for (;;) {
		int64_t due = start + (int64_t)(slot * 1000000000ULL / (uint64_t)self->fps);
		/* Slot 0 is due now and its picture was taken by record_start:
		 * it is encoded even when a stop came before this thread ran (a
		 * record_stop right after record_start), so every recording
		 * has a frame. */
		if (slot > 0 && wait_until(self, due)) {
			end = RECORD_END_STOPPED;
			break;
		}
		/* Late by whole slots (encoding behind, or the process was not
		 * scheduled): nothing could be captured for them; the last
		 * picture lasts over them. Counted as dropped. */
		uint64_t current = (uint64_t)(clock_ns() - start) * (uint64_t)self->fps / 1000000000ULL;
		if (current > max_slots)
			current = max_slots;
		if (current > slot) {
			dropped += current - slot;
			slot = current;
		}
		if (slot >= max_slots) {
			end = RECORD_END_MAX_SECONDS;
			break;
		}
		bool changed = slot == 0;
		rc = slot > 0 ? refresh(self, &changed) : 0;
		if (rc == -ENOENT) {
			end = RECORD_END_WINDOW_GONE;
			rc = 0;
			break;
		}
		if (rc == -ECONNRESET) {
			end = RECORD_END_DISPLAY_GONE;
			rc = 0;
			break;
		}
		if (rc < 0) {
			snprintf(msg, sizeof(msg), "capture failed: %s (%s)", strerror(-rc),
					capture_error(self->cap));
			break;
		}
		bool keyframe = slot == 0 || slot - key >= (uint64_t)(KEY_SECONDS * self->fps);
		bool repeat = slot - sent >= (uint64_t)(GAP_SECONDS * self->fps);
		if (changed || keyframe || repeat) {
			self->frame->pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
			self->frame->pts = (int64_t)slot;
			rc = encode(self, self->frame);
			if (rc < 0) {
				snprintf(msg, sizeof(msg), "writing %s failed: %s", self->path, av_text(rc).text);
				rc = av_to_errno(rc);
				break;
			}
			frames++;
			sent = slot;
			if (keyframe)
				key = slot;
		}
		slot++;
		update_stats(self, frames, dropped, slot);
	}

	/* The last picture again at the last slot: the MP4's duration is that
	 * frame's end. */
	if (rc == 0 && frames > 0 && sent + 1 < slot) {
		self->frame->pict_type = AV_PICTURE_TYPE_NONE;
		self->frame->pts = (int64_t)(slot - 1);
		rc = encode(self, self->frame);
		if (rc < 0) {
			snprintf(msg, sizeof(msg), "writing %s failed: %s", self->path, av_text(rc).text);
			rc = av_to_errno(rc);
		} else {
			frames++;
		}
	}

	/* Finalize: flush the encoder, write the trailer (moov first), publish. */
	if (rc == 0) {
		rc = encode(self, NULL);
		if (rc == 0)
			rc = libav.av_write_trailer(self->oc);
		if (rc == 0)
			rc = libav.avio_closep(&self->oc->pb);
		if (rc < 0) {
			snprintf(msg, sizeof(msg), "finishing %s failed: %s", self->path, av_text(rc).text);
			rc = av_to_errno(rc);
		}
	}
	unsigned long long bytes = 0;
	struct stat st;
	if (rc == 0 && fstat(safe_output_fd(self->so), &st) == 0)
		bytes = (unsigned long long)st.st_size;
	free_av(self);
	capture_destroy(self->cap);
	self->cap = NULL;
	if (rc == 0 && frames == 0) {
		rc = -ENODATA;
		snprintf(msg, sizeof(msg), "no frame was recorded (%s)", end_name(end));
	}
	if (rc == 0) {
		rc = safe_output_publish(self->so);
		if (rc == -EEXIST)
			snprintf(msg, sizeof(msg), "%s appeared during the recording; it was not replaced and the recording was discarded",
					self->path);
		else if (rc < 0)
			snprintf(msg, sizeof(msg), "publishing %s failed: %s", self->path, strerror(-rc));
	} else {
		safe_output_abort(self->so);
	}
	self->so = NULL;
	if (rc < 0) {
		if (!msg[0])
			snprintf(msg, sizeof(msg), "recording failed: %s", strerror(-rc));
		end = end == RECORD_END_NONE ? RECORD_END_ERROR : end;
		rlog(0, "recording " LOG_WINDOW " to %s failed: %s", LOG_WINDOW_ID(self->stats.window), self->path, msg);
	} else {
		rlog(2, "recording " LOG_WINDOW " published %s: %llu frames (%llu dropped), %.2f s, %llu bytes (%s)",
				LOG_WINDOW_ID(self->stats.window), self->path, (unsigned long long)frames,
				(unsigned long long)dropped, (double)slot / self->fps, bytes, end_name(end));
	}

	pthread_mutex_lock(&self->mutex);
	self->stats.frames = frames;
	self->stats.dropped_frames = dropped;
	self->stats.duration_seconds = (double)slot / self->fps;
	self->stats.bytes = rc < 0 ? 0 : bytes;
	self->stats.end = end;
	self->stats.state = rc < 0 ? RECORD_FAILED : RECORD_FINISHED;
	self->stats.error = rc;
	snprintf(self->stats.message, sizeof(self->stats.message), "%s", msg);
	self->result = rc;
	self->done = true;
	pthread_cond_broadcast(&self->cond);
	pthread_mutex_unlock(&self->mutex);
	return NULL;
}

/* The window must exist and not be the root; Composite is required (the
 * window's own pixels, also when covered). Fills its client area. */
static int check_window(struct recorder* self, struct capture_rect* g, char* err,
		size_t err_size)
{
	uint32_t window = self->window;
	if (!capture_has_window_capture(self->cap)) {
		record__set_err(err, err_size, "this desktop cannot capture one window: an X server "
				"without Composite 0.2, or a Wayland compositor without sway's IPC (its "
				"window list has no geometry)");
		return -ENOTSUP;
	}
	if (self->window == capture_root_window(self->cap)) {
		record__set_err(err, err_size, LOG_WINDOW " is the root window: give a window id from the windows tool",
				LOG_WINDOW_ID(window));
		return -ENOTSUP;
	}
	int rc = capture_window_geometry(self->cap, self->window, g);
	if (rc == -ENOENT)
		record__set_err(err, err_size, LOG_WINDOW " not found (list windows with the windows tool)",
				LOG_WINDOW_ID(window));
	else if (rc < 0)
		record__set_err(err, err_size, "cannot reach " LOG_WINDOW ": %s", LOG_WINDOW_ID(window),
				capture_error(self->cap));
	return rc == -ECONNRESET ? -ECONNREFUSED : rc;
}

static int check_space(const char* path, long long min_free, char* err, size_t err_size)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char* slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	struct statvfs vfs;
	if (statvfs(dir, &vfs) < 0)
		return 0;	/* the writes will tell */
	unsigned long long avail = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	if (avail < (unsigned long long)min_free) {
		record__set_err(err, err_size, "not enough free space in %s: %llu KiB free, a recording needs at least %lld KiB",
				dir, avail / 1024, min_free / 1024);
		return -ENOSPC;
	}
	return 0;
}

int record_start(const struct record_params* params, struct recorder** out,
		char* err, size_t err_size)
{
	int rc;
	*out = NULL;
	if (err && err_size)
		err[0] = '\0';
	char why[300];
	if (libav_load(why, sizeof(why)) < 0) {
		record__set_err(err, err_size, "recording needs FFmpeg's libraries: %s", why);
		return -ENOSYS;
	}
	pthread_once(&av_once, av_setup);
	int fps = params->fps ? params->fps : DEFAULT_FPS;
	if (fps < 1 || fps > 60 || params->max_seconds < 0) {
		record__set_err(err, err_size, "fps must be 1 to 60 and max_seconds positive");
		return -EINVAL;
	}

	struct recorder* self = calloc(1, sizeof(*self));
	if (!self)
		return -ENOMEM;
	self->fps = fps;
	self->max_seconds = params->max_seconds;
	self->stats.window = params->window;
	self->stats.fps = fps;
	self->path = strdup(params->path ? params->path : "");
	if (!self->path) {
		rc = -ENOMEM;
		goto path_failure;
	}

	self->window = params->window;
	self->cursor = params->cursor;
	self->stale = true;	/* the first refresh grabs */
	self->cap = capture_create(params->display, err, err_size);
	if (!self->cap) {
		rc = -ECONNREFUSED;
		goto capture_failure;
	}
	struct capture_rect g;
	rc = check_window(self, &g, err, err_size);
	if (rc < 0)
		goto window_failure;
	/* At most the screen's size: a window can outgrow it (a GTK text view
	 * widens to a long line: 20308 px, which x264 refuses); its frames are
	 * then scaled to fit (letterboxed), as for a window that grows later. */
	int sw, sh;
	capture_screen_size(self->cap, &sw, &sh);
	if (sw > 0 && sh > 0 && (g.width > sw || g.height > sh)) {
		double k = (double)sw / g.width < (double)sh / g.height ? (double)sw / g.width
				: (double)sh / g.height;
		g.width = (int)(g.width * k);
		g.height = (int)(g.height * k);
	}
	self->out_w = g.width < 2 ? 2 : g.width & ~1;
	self->out_h = g.height < 2 ? 2 : g.height & ~1;
	self->stats.width = self->out_w;
	self->stats.height = self->out_h;

	rc = safe_output_open(params->path, params->roots, params->n_roots, &self->so,
			err, err_size);
	if (rc < 0)
		goto output_failure;
	rc = check_space(params->path, params->min_free_bytes > 0
			? params->min_free_bytes : DEFAULT_MIN_FREE, err, err_size);
	if (rc < 0)
		goto encoder_failure;
	rc = open_encoder(self, err, err_size);
	if (rc < 0)
		goto encoder_failure;
	/* The first picture now: the first grab redirects the window and
	 * waits (bounded) for the client to repaint it, which would make the
	 * first slots late. */
	bool changed;
	rc = refresh(self, &changed);
	if (rc < 0) {
		record__set_err(err, err_size, "cannot capture " LOG_WINDOW ": %s", LOG_WINDOW_ID(params->window),
				capture_error(self->cap));
		rc = rc == -ECONNRESET ? -ECONNREFUSED : rc;
		goto encoder_failure;
	}

	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&self->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&self->mutex, NULL);
	pthread_mutex_init(&self->join_mutex, NULL);
	rc = -pthread_create(&self->thread, NULL, run, self);
	if (rc < 0) {
		record__set_err(err, err_size, "cannot start the recording thread: %s", strerror(-rc));
		pthread_cond_destroy(&self->cond);
		pthread_mutex_destroy(&self->mutex);
		pthread_mutex_destroy(&self->join_mutex);
		goto encoder_failure;
	}
	pthread_setname_np(self->thread, "deskd-record");
	rlog(2, "recording " LOG_WINDOW " at %d fps, %dx%d, to %s", LOG_WINDOW_ID(params->window), fps,
			self->out_w, self->out_h, self->path);
	*out = self;
	return 0;

encoder_failure:
	free_av(self);
	safe_output_abort(self->so);
output_failure:
window_failure:
	capture_destroy(self->cap);
capture_failure:
	free(self->path);
path_failure:
	free(self);
	return rc;
}

void record_request_stop(struct recorder* self)
{
	if (!self)
		return;
	pthread_mutex_lock(&self->mutex);
	self->stop = true;
	pthread_cond_broadcast(&self->cond);
	pthread_mutex_unlock(&self->mutex);
}

int record_stop(struct recorder* self, struct record_stats* stats)
{
	record_request_stop(self);
	pthread_mutex_lock(&self->join_mutex);
	if (!self->joined) {
		pthread_join(self->thread, NULL);
		self->joined = true;
	}
	pthread_mutex_unlock(&self->join_mutex);
	if (stats)
		record_get_stats(self, stats);
	return self->result;
}

bool record_done(struct recorder* self)
{
	pthread_mutex_lock(&self->mutex);
	bool done = self->done;
	pthread_mutex_unlock(&self->mutex);
	return done;
}

void record_get_stats(struct recorder* self, struct record_stats* out)
{
	pthread_mutex_lock(&self->mutex);
	*out = self->stats;
	pthread_mutex_unlock(&self->mutex);
}

const char* record_path(const struct recorder* self)
{
	return self->path;
}

void record_destroy(struct recorder* self)
{
	if (!self)
		return;
	record_stop(self, NULL);
	pthread_cond_destroy(&self->cond);
	pthread_mutex_destroy(&self->mutex);
	pthread_mutex_destroy(&self->join_mutex);
	free(self->path);
	free(self);
}
