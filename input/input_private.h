#pragma once

/* Private to input/: the backend-neutral context and its operations.
 *
 * input.c holds the public entry points: it checks the arguments every
 * backend shares, takes the context's one mutex and calls the backend
 * through its ops table, so each operation runs with the mutex held
 * (a backend may wait on it with a condition variable, as X11's drainer
 * does). x11.c (XTest) and wayland.c (wlroots virtual devices) each embed
 * struct input as their first member and fill a const struct input_ops. */

#include "input/input.h"

#include <pthread.h>

struct input_ops {
	const char* name;	/* "x11", "wayland": for messages */
	/* Called without the mutex (a backend may stop threads that take it):
	 * releases what the backend holds; input.c then destroys the mutex and
	 * frees the context (the head is the first member of one allocation). */
	void (*destroy)(struct input* self);
	bool (*alive)(struct input* self);
	int (*screen_size)(struct input* self, int* width, int* height);
	int (*cursor_position)(struct input* self, int* x, int* y);
	int (*move)(struct input* self, int x, int y);
	int (*button)(struct input* self, int button, bool down);
	/* Move, then press or release, in one round trip; NULL: move, button. */
	int (*button_at)(struct input* self, int x, int y, int button, bool down);
	int (*click)(struct input* self, int button, int count,
			const struct input_chord* mods);
	int (*drag)(struct input* self, const int* xs, const int* ys, size_t n,
			int button, const struct input_chord* mods);
	int (*scroll)(struct input* self, int notches_x, int notches_y,
			const struct input_chord* mods);
	/* A chord's keys: pressed in order when press, released in reverse
	 * when release (both: input_key_chord; one: input_key_chord_state). */
	int (*keys)(struct input* self, const struct input_chord* chord,
			bool press, bool release);
	/* Modifiers down or up, nothing added (input_modifiers). */
	int (*modifiers)(struct input* self, const struct input_chord* mods,
			bool down);
	/* Typing; done and wait_ms are NULL for input_type (wait inside). */
	int (*type)(struct input* self, const char* text, size_t len,
			struct input_type_stats* stats, size_t* bad_offset,
			size_t* done, int* wait_ms);
	void (*set_timing)(struct input* self, int bind_wait_ms);
	int (*spare_keycodes)(struct input* self);
	int (*spare_slots)(struct input* self);
	int (*focus_window)(struct input* self, uint32_t window, int timeout_ms);
	/* NULL: the backend cannot see other clients' grabs. */
	int (*wait_ungrabbed)(struct input* self, int timeout_ms);
	unsigned (*focus_needs)(struct input* self);	/* NULL: none */
};

/* A pointer action that the backends run with modifiers held around it
 * (input__with_mods, x11.c's with_mods): its arguments. */
struct pointer_action {
	int button, count;		/* click */
	const int *xs, *ys;		/* drag */
	size_t n;
	int notches_x, notches_y;	/* scroll */
};

struct input {
	const struct input_ops* ops;
	pthread_mutex_t mutex;	/* every operation runs with it held */
};

/** Set up the head of a backend's context (the mutex). */
void input__head_init(struct input* self, const struct input_ops* ops);

/* Pointer actions built on a backend's own move, button and modifiers ops
 * (the wlroots and GNOME backends; X11 batches its XTest requests): act
 * with mods pressed before and always released after (the first error
 * wins); a click's presses; a drag's path, with motion about every 16 px
 * of each leg, the button let go also when a motion failed. */
int input__with_mods(struct input* self, const struct input_chord* mods,
		int (*act)(struct input* self, const struct pointer_action* a),
		const struct pointer_action* a);
int input__act_click(struct input* self, const struct pointer_action* a);
int input__act_drag(struct input* self, const struct pointer_action* a);

/* The backends' constructors: NULL with a reason in err. */
struct input* input__x11_new(const char* display_name, char* err, size_t err_size);
struct input* input__wayland_new(const char* address, char* err, size_t err_size);
struct input* input__gnome_new(const char* address, char* err, size_t err_size);
/** Does an X window have the X server's input focus (not None, PointerRoot
 *  or the root)? On Xwayland: an X window has the compositor's keyboard
 *  focus (wlroots' xwm sets None when a Wayland window takes it). Takes
 *  the context's mutex. */
bool input__x11_window_focused(struct input* x11);
