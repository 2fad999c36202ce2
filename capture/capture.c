/* The public capture face, forwarded to the backend the display name
 * chooses (capture_private.h): a Wayland address (wayland/wayland.h) gets
 * wayland.c, a GNOME one (gnome/gnome.h) gnome.c, anything else X11
 * (x11.c), as before there was a choice. */
#include "capture/capture_private.h"
#include "base/clock.h"
#include "gnome/gnome.h"
#include "wayland/wayland.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>

int capture__fail(struct capture* self, int rc, const char* fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(self->error, sizeof(self->error), fmt, ap);
	va_end(ap);
	return rc;
}

struct capture* capture_create(const char* name, char* err, size_t err_size)
{
	if (wayland_is_address(name))
		return capture__wayland_create(name, err, err_size);
	if (gnome_is_address(name))
		return capture__gnome_create(name, err, err_size);
	return capture__x11_create(name, err, err_size);
}

void capture_destroy(struct capture* self)
{
	if (self)
		self->ops->destroy(self);
}

const char* capture_error(const struct capture* self)
{
	return self->error[0] ? self->error : "no error";
}

bool capture_connected(const struct capture* self)
{
	return self->ops->connected(self);
}

int capture_fd(const struct capture* self)
{
	return self->ops->fd(self);
}

uint32_t capture_root_window(const struct capture* self)
{
	return self->ops->root_window(self);
}

void capture_screen_size(const struct capture* self, int* width, int* height)
{
	self->ops->screen_size(self, width, height);
}

void capture_release(struct capture* self)
{
	if (self && self->ops->release)
		self->ops->release(self);
}

bool capture_has_shm(const struct capture* self)
{
	return self->ops->has_shm(self);
}

bool capture_has_window_capture(const struct capture* self)
{
	return self->ops->has_window_capture(self);
}

int capture_screen(struct capture* self, const struct capture_rect* region,
		bool cursor, struct frame** out)
{
	return self->ops->screen(self, region, cursor, out);
}

int capture_window(struct capture* self, uint32_t window,
		const struct capture_rect* region, bool cursor, struct frame** out)
{
	return self->ops->window(self, window, region, cursor, out);
}

int capture_screen_lent(struct capture* self, const struct capture_rect* region,
		bool cursor, struct frame** out)
{
	self->lend = true;
	int rc = self->ops->screen(self, region, cursor, out);
	self->lend = false;
	return rc;
}

int capture_window_lent(struct capture* self, uint32_t window,
		const struct capture_rect* region, bool cursor, struct frame** out)
{
	self->lend = true;
	int rc = self->ops->window(self, window, region, cursor, out);
	self->lend = false;
	return rc;
}

int capture_window_geometry(struct capture* self, uint32_t window,
		struct capture_rect* out)
{
	return self->ops->window_geometry(self, window, out);
}

int capture_pointer(struct capture* self, uint32_t window, int* x, int* y)
{
	return self->ops->pointer(self, window, x, y);
}

int capture_changes(struct capture* self, uint32_t window, uint64_t* counter)
{
	return self->ops->changes(self, window, true, counter);
}

int capture_changes_arrived(struct capture* self, uint32_t window, uint64_t* counter)
{
	return self->ops->changes(self, window, false, counter);
}

int capture_dirty(struct capture* self, uint32_t window, struct capture_rect* out)
{
	*out = (struct capture_rect){ 0 };
	return self->ops->dirty ? self->ops->dirty(self, window, out) : 0;
}

int capture_wait_changes(struct capture* self, uint32_t window, uint64_t since,
		int timeout_ms, uint64_t* counter)
{
	int64_t end = clock_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		int rc = capture_changes(self, window, counter);
		if (rc < 0)
			return rc;
		if (*counter > since)
			return 0;
		int64_t left = end - clock_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = capture_fd(self), .events = POLLIN };
		poll(&p, 1, (int)left);
	}
}

void capture_untrack(struct capture* self, uint32_t window)
{
	self->ops->untrack(self, window);
}

int capture_list_windows(struct capture* self, struct capture_window_info** out,
		size_t* n)
{
	return self->ops->list_windows(self, out, n);
}

int capture_window_info(struct capture* self, uint32_t window,
		struct capture_window_info* out)
{
	return self->ops->window_info(self, window, out);
}

int capture_focus_window(struct capture* self, uint32_t window)
{
	return self->ops->focus_window(self, window);
}

int capture_move_window(struct capture* self, uint32_t window, const int* x,
		const int* y, const int* width, const int* height,
		struct capture_rect* result)
{
	return self->ops->move_window(self, window, x, y, width, height, result);
}
