/* The public face of input/: pick the backend by the display name
 * (wayland_is_address: the wlroots one; gnome_is_address: Mutter's; else
 * X11), check what every backend would check, take the context's mutex
 * and call the backend. */
#include "input/input_private.h"
#include "gnome/gnome.h"
#include "wayland/wayland.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void input__head_init(struct input* self, const struct input_ops* ops)
{
	self->ops = ops;
	pthread_mutex_init(&self->mutex, NULL);
}

int input__with_mods(struct input* self, const struct input_chord* mods,
		int (*act)(struct input* self, const struct pointer_action* a),
		const struct pointer_action* a)
{
	int rc = self->ops->modifiers(self, mods, true);
	if (rc == 0)
		rc = act(self, a);
	int e = self->ops->modifiers(self, mods, false);
	return rc < 0 ? rc : e;
}

int input__act_click(struct input* self, const struct pointer_action* a)
{
	for (int i = 0; i < a->count; i++) {
		int rc = self->ops->button(self, a->button, true);
		if (rc == 0)
			rc = self->ops->button(self, a->button, false);
		if (rc < 0)
			return rc;
	}
	return 0;
}

#define DRAG_STEP_PX 16

static int drag_leg(struct input* self, int x0, int y0, int x1, int y1)
{
	int dx = x1 - x0, dy = y1 - y0;
	int adx = abs(dx), ady = abs(dy);
	int steps = (adx > ady ? adx : ady) / DRAG_STEP_PX;
	for (int s = 1; s < steps; s++) {
		int rc = self->ops->move(self, x0 + (int)((long)dx * s / steps),
				y0 + (int)((long)dy * s / steps));
		if (rc < 0)
			return rc;
	}
	return self->ops->move(self, x1, y1);
}

int input__act_drag(struct input* self, const struct pointer_action* a)
{
	int rc = self->ops->move(self, a->xs[0], a->ys[0]);
	if (rc < 0)
		return rc;
	rc = self->ops->button(self, a->button, true);
	for (size_t i = 1; i < a->n && rc == 0; i++)
		rc = drag_leg(self, a->xs[i - 1], a->ys[i - 1], a->xs[i], a->ys[i]);
	int e = self->ops->button(self, a->button, false);	/* never leave it down */
	return rc < 0 ? rc : e;
}

struct input* input_new(const char* display_name, char* err, size_t err_size)
{
	if (wayland_is_address(display_name))
		return input__wayland_new(display_name, err, err_size);
	if (gnome_is_address(display_name))
		return input__gnome_new(display_name, err, err_size);
	return input__x11_new(display_name, err, err_size);
}

void input_destroy(struct input* self)
{
	if (!self)
		return;
	self->ops->destroy(self);
	pthread_mutex_destroy(&self->mutex);
	free(self);
}

/* An operation under the mutex: `CALL` is an expression of self. */
#define LOCKED(type, call) do { \
	pthread_mutex_lock(&self->mutex); \
	type locked_result = (call); \
	pthread_mutex_unlock(&self->mutex); \
	return locked_result; \
} while (0)

bool input_alive(struct input* self)
{
	LOCKED(bool, self->ops->alive(self));
}

void input_set_timing(struct input* self, int bind_wait_ms)
{
	pthread_mutex_lock(&self->mutex);
	self->ops->set_timing(self, bind_wait_ms);
	pthread_mutex_unlock(&self->mutex);
}

int input_spare_keycodes(struct input* self)
{
	LOCKED(int, self->ops->spare_keycodes(self));
}

int input_spare_slots(struct input* self)
{
	LOCKED(int, self->ops->spare_slots(self));
}

int input_screen_size(struct input* self, int* width, int* height)
{
	LOCKED(int, self->ops->screen_size(self, width, height));
}

int input_cursor_position(struct input* self, int* x, int* y)
{
	LOCKED(int, self->ops->cursor_position(self, x, y));
}

int input_move(struct input* self, int x, int y)
{
	LOCKED(int, self->ops->move(self, x, y));
}

int input_button(struct input* self, int button, bool down)
{
	if (button < 1 || button > 9)
		return -EINVAL;
	LOCKED(int, self->ops->button(self, button, down));
}

static int button_at(struct input* self, int x, int y, int button, bool down)
{
	if (self->ops->button_at)
		return self->ops->button_at(self, x, y, button, down);
	int rc = self->ops->move(self, x, y);
	return rc < 0 ? rc : self->ops->button(self, button, down);
}

int input_button_at(struct input* self, int x, int y, int button, bool down)
{
	if (button < 1 || button > 9)
		return -EINVAL;
	LOCKED(int, button_at(self, x, y, button, down));
}

int input_modifiers(struct input* self, const struct input_chord* mods, bool down)
{
	LOCKED(int, self->ops->modifiers(self, mods, down));
}

int input_click(struct input* self, int button, int count,
		const struct input_chord* mods)
{
	if (button < 1 || button > 9 || count < 1 || count > 10)
		return -EINVAL;
	LOCKED(int, self->ops->click(self, button, count, mods));
}

int input_drag(struct input* self, const int* xs, const int* ys, size_t n,
		int button, const struct input_chord* mods)
{
	if (n < 2 || button < 1 || button > 9)
		return -EINVAL;
	LOCKED(int, self->ops->drag(self, xs, ys, n, button, mods));
}

int input_scroll(struct input* self, int notches_x, int notches_y,
		const struct input_chord* mods)
{
	if (notches_x > INPUT_MAX_NOTCHES || notches_x < -INPUT_MAX_NOTCHES
			|| notches_y > INPUT_MAX_NOTCHES || notches_y < -INPUT_MAX_NOTCHES)
		return -E2BIG;
	LOCKED(int, self->ops->scroll(self, notches_x, notches_y, mods));
}

int input_key_chord(struct input* self, const struct input_chord* chord)
{
	if (chord->n < 1)
		return -EINVAL;
	LOCKED(int, self->ops->keys(self, chord, true, true));
}

int input_key_chord_state(struct input* self, const struct input_chord* chord,
		bool down)
{
	if (chord->n < 1)
		return -EINVAL;
	LOCKED(int, self->ops->keys(self, chord, down, !down));
}

/* Both typing entry points: stats zeroed and a bad_offset to write, so the
 * backends need not check. */
static int type_call(struct input* self, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset, size_t* done,
		int* wait_ms)
{
	size_t ignored;
	if (!bad_offset)
		bad_offset = &ignored;
	if (stats)
		memset(stats, 0, sizeof(*stats));
	LOCKED(int, self->ops->type(self, text, len, stats, bad_offset, done, wait_ms));
}

int input_type(struct input* self, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset)
{
	return type_call(self, text, len, stats, bad_offset, NULL, NULL);
}

int input_type_some(struct input* self, const char* text, size_t len,
		struct input_type_stats* stats, size_t* bad_offset, size_t* done,
		int* wait_ms)
{
	*done = 0;
	*wait_ms = 0;
	return type_call(self, text, len, stats, bad_offset, done, wait_ms);
}

int input_focus_window(struct input* self, uint32_t window, int timeout_ms)
{
	LOCKED(int, self->ops->focus_window(self, window, timeout_ms));
}

int input_wait_ungrabbed(struct input* self, int timeout_ms)
{
	if (!self->ops->wait_ungrabbed)
		return 0;
	LOCKED(int, self->ops->wait_ungrabbed(self, timeout_ms));
}

unsigned input_focus_needs(struct input* self)
{
	if (!self->ops->focus_needs)
		return 0;
	LOCKED(unsigned, self->ops->focus_needs(self));
}
