#pragma once

/* wayland/'s private state: libwayland types, for the folder's .c files
 * only (and its unit test). */

#include "wayland/wayland.h"

#include <wayland-client.h>

#include "wayland/proto/wlr-screencopy-unstable-v1-client-protocol.h"
#include "wayland/proto/wlr-virtual-pointer-unstable-v1-client-protocol.h"
#include "wayland/proto/virtual-keyboard-unstable-v1-client-protocol.h"
#include "wayland/proto/wlr-data-control-unstable-v1-client-protocol.h"
#include "wayland/proto/xdg-output-unstable-v1-client-protocol.h"
#include "wayland/proto/wlr-foreign-toplevel-management-unstable-v1-client-protocol.h"

#define WAYLAND_MAX_OUTPUTS 16
/* Distinct non-modifier keys a chord keymap holds (wayland_keys). */
#define WAYLAND_HELD_MAX 64

struct wl__output {
	struct wayland* conn;
	uint32_t global;	/* registry name */
	struct wl_output* wl;
	struct zxdg_output_v1* xdg;
	struct wayland_output info;
	bool have_logical;	/* xdg-output's logical position and size arrived */
	bool done;		/* wl_output.done arrived */
	struct wl__watch* watch;	/* wayland_damage's pending frame (capture.c), or NULL */
};

struct wl__shm_buffer {
	struct wl_buffer* wl;
	void* data;
	size_t size;
	int width, height, stride;
	uint32_t format;
};

struct wl__clipboard;

struct wayland {
	struct wl_display* display;
	struct wl_registry* registry;
	struct wl_shm* shm;
	struct wl_seat* seat;
	struct zxdg_output_manager_v1* xdg_output_manager;
	struct zwlr_screencopy_manager_v1* screencopy;
	struct zwlr_virtual_pointer_manager_v1* pointer_manager;
	struct zwp_virtual_keyboard_manager_v1* keyboard_manager;
	struct zwlr_data_control_manager_v1* data_control;
	unsigned features;
	char missing[256];
	uint32_t toplevel_global, toplevel_version;	/* the foreign-toplevel manager's, 0 none */

	struct wl__output outputs[WAYLAND_MAX_OUTPUTS];
	int n_outputs;

	struct wl__shm_buffer buffer;	/* the capture buffer, kept between grabs */

	struct zwlr_virtual_pointer_v1* pointer;
	struct zwp_virtual_keyboard_v1* keyboard;
	uint32_t last_time;	/* the last timestamp sent, ms; only grows */
	int keymap_id;		/* which keymap the keyboard holds: 0 none, 1 chord, 2 text */
	/* Keys held between calls (wayland_keys). A chord keymap holds the
	 * modifier keys and key_syms[i] at keycode 9 + i; a key keeps its
	 * keycode while any key is down (the list only grows until then). */
	uint32_t held_mods;	/* bit i: modkeys[i] is down */
	uint32_t key_syms[WAYLAND_HELD_MAX];
	bool key_down[WAYLAND_HELD_MAX];
	int n_keys;
	int keymap_keys;	/* of them, in the chord keymap the keyboard holds */

	struct wl__clipboard* clipboard;
};

/** Dispatch until *done or -ETIMEDOUT at deadline (clock_ms). */
int wl__wait(struct wayland* self, const bool* done, int64_t deadline);
/** Flush the output buffer, polling for POLLOUT until deadline. */
int wl__flush(struct wayland* self, int64_t deadline);
/** The error of a dead connection as -errno (-EPROTO, -EPIPE), else 0. */
int wl__error(struct wayland* self);
/** A timestamp in ms that is larger than the last one sent. */
uint32_t wl__time(struct wayland* self);
/** A memfd of size bytes, mapped at *data (when data is non-NULL). */
int wl__memfd(const char* name, size_t size, void** data);
void wl__clipboard_destroy(struct wayland* self);
/** Stop tracking the toplevel list if this connection does (toplevel.c). */
void wl__toplevels_forget(struct wayland* self);
/** Drop an output's damage watch (its frame and buffer). NULL-safe. */
void wl__watch_destroy(struct wl__output* out);
