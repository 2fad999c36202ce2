#pragma once

/* Private to capture/: the X11 capture context. */

#include "capture/capture_private.h"
#include "x11/x11.h"

#include <X11/Xlib.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xdamage.h>

#define CAPTURE_MAX_TRACKED 64

struct capture_tracked {
	uint32_t window;	/* 0 = screen */
	Damage damage;
	uint64_t counter;
	bool pending;		/* a DamageNotify arrived since the last poll */
	bool gone;		/* DestroyNotify seen */
	bool redirected;	/* Composite redirect done by this connection */
	bool used;
	/* The union of the damage taken since capture_dirty last asked, once
	 * it asked (a fetch of the region per subtract, so only then). */
	bool track_dirty, dirty_any;
	int dirty_x0, dirty_y0, dirty_x1, dirty_y1;
};

/* The X11 context: the neutral head first, so a struct capture* is one. */
struct capture_x11 {
	struct capture head;
	struct x11_conn x;	/* the connection (x.dpy), its errors trapped */	/* the connection (x.dpy), its errors trapped */
	Window root;
	int screen_w, screen_h;
	Visual* visual;
	int depth;

	bool have_shm, have_composite, have_damage, have_xfixes;
	XserverRegion parts;	/* capture_dirty's scratch region, or 0 */
	int damage_event, damage_error;

	/* The XShm segment: grown when a bigger image is needed. */
	XShmSegmentInfo shm;
	size_t shm_size;	/* 0: none attached */

	/* Change tracking; slot 0 is the screen. */
	struct capture_tracked tracked[CAPTURE_MAX_TRACKED];
	unsigned evict;
	uint64_t change_clock;	/* counters take values from it: monotonic per context */

	/* Atoms. */
	Atom net_client_list, net_client_list_stacking, net_active_window,
		net_wm_name, net_wm_pid, utf8_string, net_supported,
		net_moveresize_window, wm_state, net_frame_extents;
};

static inline struct capture_x11* x11_of(struct capture* base)
{
	return (struct capture_x11*)base;
}

static inline const struct capture_x11* x11_cof(const struct capture* base)
{
	return (const struct capture_x11*)base;
}

/** Drain pending events (damage, structure) without a round trip. */
void capture__drain(struct capture_x11* self);

/* window_list.c's operations (the table is in x11.c). */
int x11cap_list_windows(struct capture* base, struct capture_window_info** out, size_t* n);
int x11cap_window_info(struct capture* base, uint32_t window, struct capture_window_info* out);
int x11cap_focus_window(struct capture* base, uint32_t window);
int x11cap_move_window(struct capture* base, uint32_t window, const int* x, const int* y,
		const int* width, const int* height, struct capture_rect* result);
