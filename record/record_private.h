#pragma once

/* Private to record/: helpers shared by its files. */

#include <stddef.h>

/** Format a reason into err (printf style); does nothing when err is NULL
 *  or err_size 0. */
void record__set_err(char* err, size_t err_size, const char* fmt, ...)
		__attribute__((format(printf, 3, 4)));
