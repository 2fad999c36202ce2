#pragma once

/* Private to capture/: the X11 capture context. */

#include "capture/capture.h"
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
};

struct capture {
	struct x11_conn x;	/* the connection (x.dpy), its errors trapped */
	Window root;
	int screen_w, screen_h;
	Visual* visual;
	int depth;

	bool have_shm, have_composite, have_damage, have_xfixes;
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

	char error[256];	/* capture_error() */
};

/** Record a failure reason (printf style); returns rc. */
int capture__fail(struct capture* self, int rc, const char* fmt, ...)
		__attribute__((format(printf, 3, 4)));
/** Drain pending events (damage, structure) without a round trip. */
void capture__drain(struct capture* self);
