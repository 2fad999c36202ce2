#pragma once
/* libav* loaded at the first recording (private to record/): deskd links
 * none of FFmpeg's libraries, whose dependencies (x265, rav1e, librsvg,
 * gnutls, ICU...) were two thirds of an idle deskd's resident memory. The
 * functions the recorder calls are pointers in one table, filled by
 * libav_load() with dlopen/dlsym from the sonames deskd was built against.
 * Only out-of-line functions may be called (a header's inline function
 * would name a symbol nothing links). */
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#include <stdbool.h>
#include <stddef.h>

#define LIBAV_FUNCTIONS(X) \
	X(AVUTIL, av_dict_count) X(AVUTIL, av_dict_free) X(AVUTIL, av_dict_set) \
	X(AVUTIL, av_frame_alloc) X(AVUTIL, av_frame_free) X(AVUTIL, av_frame_get_buffer) \
	X(AVUTIL, av_frame_make_writable) X(AVUTIL, av_log_format_line2) \
	X(AVUTIL, av_log_set_callback) X(AVUTIL, av_log_set_level) X(AVUTIL, av_opt_set) \
	X(AVUTIL, av_strerror) X(AVUTIL, av_version_info) X(AVUTIL, avutil_version) \
	X(AVCODEC, av_packet_alloc) X(AVCODEC, av_packet_free) X(AVCODEC, av_packet_rescale_ts) \
	X(AVCODEC, avcodec_alloc_context3) X(AVCODEC, avcodec_find_encoder_by_name) \
	X(AVCODEC, avcodec_free_context) X(AVCODEC, avcodec_open2) \
	X(AVCODEC, avcodec_parameters_from_context) X(AVCODEC, avcodec_receive_packet) \
	X(AVCODEC, avcodec_send_frame) X(AVCODEC, avcodec_version) \
	X(AVFORMAT, av_interleaved_write_frame) X(AVFORMAT, av_write_trailer) \
	X(AVFORMAT, avformat_alloc_output_context2) X(AVFORMAT, avformat_free_context) \
	X(AVFORMAT, avformat_new_stream) X(AVFORMAT, avformat_version) \
	X(AVFORMAT, avformat_write_header) X(AVFORMAT, avio_closep) X(AVFORMAT, avio_open) \
	X(AVFORMAT, avio_seek) \
	X(SWSCALE, sws_freeContext) X(SWSCALE, sws_getCachedContext) \
	X(SWSCALE, sws_getCoefficients) X(SWSCALE, sws_scale) \
	X(SWSCALE, sws_setColorspaceDetails) X(SWSCALE, swscale_version)

struct libav {
#define LIBAV_POINTER(lib, name) __typeof__(name)* name;
	LIBAV_FUNCTIONS(LIBAV_POINTER)
#undef LIBAV_POINTER
};

/** The table; its pointers are set once libav_load() returned 0. */
extern struct libav libav;

/** Load the libraries once (any thread; later calls return the first
 *  outcome): 0, or -1 with why (the library or symbol that is missing). */
int libav_load(char* why, size_t size);
/** Has a libav_load() succeeded? */
bool libav_loaded(void);
