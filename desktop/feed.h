#pragma once

/* Private to the live view: what a feed's producer thread needs from
 * capture/ (one X connection per source, used by the producer thread only).
 * server/live_source.c implements it on capture/capture.h. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct live_source;

struct live_source_frame {
	const unsigned char* jpeg;	/* owned by the source; valid until the next grab */
	size_t len;
	int width, height;		/* of the JPEG */
	int cursor_x, cursor_y;		/* pointer in JPEG pixels; may lie outside */
	bool cursor_visible;		/* the pointer is over the target */
};

/** Open a source for the screen (window == 0) or a window, scaled so its
 *  longest side is at most max_dimension (0 = native). Returns NULL on
 *  failure with *code ("window_not_found", "display_unavailable",
 *  "internal") and a message in err. Calling thread owns the source. */
struct live_source* live_source_open(uint32_t window, int max_dimension,
		const char** code, char* err, size_t err_size);
/** Wait up to timeout_ms for a change of the target's pixels since the last
 *  grab. Returns 1 (changed), 0 (nothing changed) or -errno (-ENOENT: the
 *  window is gone; -EPIPE: the display is gone). */
int live_source_wait(struct live_source* self, int timeout_ms);
/** Capture and encode the target now (JPEG at quality). Returns 0 or -errno. */
int live_source_grab(struct live_source* self, int quality,
		struct live_source_frame* out);
/** The pointer in JPEG pixels of the last grab's geometry; returns 0 or -errno. */
int live_source_cursor(struct live_source* self, int* x, int* y, bool* visible);
/** NULL-safe. */
void live_source_close(struct live_source* self);

/** The window list as in the windows tool (new reference), or an empty
 *  array when it cannot be read. Any thread (opens its own connection). */
json_t* live_source_windows(void);
