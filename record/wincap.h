#pragma once

/* Private to record/: capture of one X window through XComposite, on its own
 * X connection. One thread at a time (the recorder's). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wincap;

/* The window's client area, BGRX (4 bytes per pixel, the 4th is padding). */
struct wincap_image {
	const uint8_t* data;
	int stride;
	int width, height;
};

/** Connect to display (NULL: $DISPLAY), redirect the window, watch it.
 *  Returns 0 with *out set, or -ECONNREFUSED (display), -ENOENT (window),
 *  -ENOTSUP (no Composite, unsupported depth), -ENOMEM; reason in err. */
int wincap_open(const char* display, unsigned long window, bool cursor,
		struct wincap** out, char* err, size_t err_size);
void wincap_close(struct wincap* self);

/** The client area's current size. */
void wincap_size(const struct wincap* self, int* width, int* height);

enum wincap_status {
	WINCAP_SAME = 0,	/* nothing changed since the last image (or unmapped) */
	WINCAP_NEW = 1,		/* *image holds a fresh image */
};

/** Process pending events and grab the window if it changed (damage, map,
 *  resize, pointer moved when drawing the cursor). Returns WINCAP_NEW,
 *  WINCAP_SAME, -ENOENT when the window is gone, -EPIPE when the display
 *  is gone. The image stays valid until the next call. */
int wincap_grab(struct wincap* self, struct wincap_image* image);
