#pragma once

/* Private to record/: helpers shared by its files. */

#include <stddef.h>
#include <stdint.h>

/** Format a reason into err (printf style); does nothing when err is NULL
 *  or err_size 0. */
void record__set_err(char* err, size_t err_size, const char* fmt, ...)
		__attribute__((format(printf, 3, 4)));

/** width x height BGRX (even sizes) to I420 planes dst[0..2] (Y, U, V),
 *  BT.709 limited range; chroma is each 2x2 block's mean (yuv.c). */
void record__bgrx_to_i420(const uint8_t* src, int stride, int width, int height,
		uint8_t* const dst[3], const int dst_stride[3]);
