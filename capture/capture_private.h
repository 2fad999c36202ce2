#pragma once

/* Private to capture/: the backend-neutral head of a capture context and
 * the operations table each backend fills (x11.c for X11, wayland.c for a
 * wlroots compositor, gnome.c for Mutter). capture.c forwards the public functions of
 * capture/capture.h through it, so callers never learn which one runs. */

#include "capture/capture.h"

struct capture_ops {
	void (*destroy)(struct capture* self);
	bool (*connected)(const struct capture* self);
	int (*fd)(const struct capture* self);
	uint32_t (*root_window)(const struct capture* self);
	void (*screen_size)(const struct capture* self, int* width, int* height);
	bool (*has_shm)(const struct capture* self);
	bool (*has_window_capture)(const struct capture* self);
	/* NULL: the backend keeps nothing between captures worth giving back. */
	void (*release)(struct capture* self);

	int (*screen)(struct capture* self, const struct capture_rect* region, bool cursor,
			struct frame** out);
	int (*window)(struct capture* self, uint32_t window, const struct capture_rect* region,
			bool cursor, struct frame** out);
	int (*window_geometry)(struct capture* self, uint32_t window, struct capture_rect* out);
	int (*pointer)(struct capture* self, uint32_t window, int* x, int* y);

	/* sync: take in what the display has to say now (one round trip);
	 * else only what already arrived. capture_wait_changes is built on
	 * this and a poll() of fd, for every backend. */
	int (*changes)(struct capture* self, uint32_t window, bool sync, uint64_t* counter);
	/* NULL: the backend does not know which part changed. */
	int (*dirty)(struct capture* self, uint32_t window, struct capture_rect* out);
	void (*untrack)(struct capture* self, uint32_t window);

	int (*list_windows)(struct capture* self, struct capture_window_info** out, size_t* n);
	int (*window_info)(struct capture* self, uint32_t window, struct capture_window_info* out);
	int (*focus_window)(struct capture* self, uint32_t window);
	int (*move_window)(struct capture* self, uint32_t window, const int* x, const int* y,
			const int* width, const int* height, struct capture_rect* result);
};

/* The head every backend's context starts with. */
struct capture {
	const struct capture_ops* ops;
	char error[256];	/* capture_error() */
	bool lend;		/* this capture may give a lent frame (the *_lent calls) */
};

/** A frame lent data (a context's shared image, valid until its next
 *  capture): see capture_screen_lent. NULL if out of memory. */
struct frame* capture__frame_lent(uint8_t* data, int width, int height, int stride);

/** Record a failure reason (printf style); returns rc. */
int capture__fail(struct capture* self, int rc, const char* fmt, ...)
		__attribute__((format(printf, 3, 4)));

/** The backends' constructors: NULL with a reason in err on failure. */
struct capture* capture__x11_create(const char* name, char* err, size_t err_size);
/** address: "wayland:<socket>[?sway=<ipc>]" (wayland/wayland.h). */
struct capture* capture__wayland_create(const char* address, char* err, size_t err_size);
/** address: "gnome:<bus>[?pipewire=...]" (gnome/gnome.h). */
struct capture* capture__gnome_create(const char* address, char* err, size_t err_size);
