#pragma once

/* Private to capture/: a cache of big, 64-byte aligned buffers (any thread). */

#include <stddef.h>

/** A buffer of at least size bytes; *cap gets its real size. NULL on ENOMEM. */
void* capture__buf_get(size_t size, size_t* cap);
/** Give a buffer from capture__buf_get back (kept for reuse, or freed). */
void capture__buf_put(void* p, size_t cap);
