/* The connection: a socket of our own (no environment changes), the
 * registry, the outputs with their logical geometry, and the bounded waits
 * every other file uses. */
#define _GNU_SOURCE
#include "wayland/wl_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int wl__error(struct wayland* self)
{
	int e = wl_display_get_error(self->display);
	if (!e)
		return 0;
	if (e == EPROTO) {
		const struct wl_interface* iface = NULL;
		uint32_t id = 0;
		uint32_t code = wl_display_get_protocol_error(self->display, &iface, &id);
		log_warn("wayland: protocol error %u on %s@%u; the connection is dead",
				code, iface ? iface->name : "?", id);
	}
	return -e;
}

int wl__flush(struct wayland* self, int64_t deadline)
{
	for (;;) {
		if (wl_display_flush(self->display) >= 0)
			return 0;
		if (errno != EAGAIN)
			return wl__error(self) ? wl__error(self) : -EPIPE;
		int64_t left = deadline - clock_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = wl_display_get_fd(self->display), .events = POLLOUT };
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
	}
}

/* Read and dispatch once, waiting until deadline for the socket. */
static int wait_once(struct wayland* self, int64_t deadline)
{
	struct wl_display* d = self->display;
	while (wl_display_prepare_read(d) != 0) {
		if (wl_display_dispatch_pending(d) < 0)
			return wl__error(self) ? wl__error(self) : -EPIPE;
		return 0;	/* events were queued: let the caller look */
	}
	int r = wl__flush(self, deadline);
	if (r < 0 && r != -ETIMEDOUT) {
		wl_display_cancel_read(d);
		return r;
	}
	int64_t left = deadline - clock_ms();
	if (left < 0)
		left = 0;
	struct pollfd p = { .fd = wl_display_get_fd(d), .events = POLLIN };
	int n = poll(&p, 1, (int)left);
	if (n <= 0) {
		wl_display_cancel_read(d);
		if (n < 0 && errno != EINTR)
			return -errno;
		return clock_ms() >= deadline ? -ETIMEDOUT : 0;
	}
	if (wl_display_read_events(d) < 0)
		return wl__error(self) ? wl__error(self) : -EPIPE;
	if (wl_display_dispatch_pending(d) < 0)
		return wl__error(self) ? wl__error(self) : -EPIPE;
	return 0;
}

int wl__wait(struct wayland* self, const bool* done, int64_t deadline)
{
	int r = wl__error(self);
	if (r)
		return r;
	if (wl_display_dispatch_pending(self->display) < 0)
		return wl__error(self) ? wl__error(self) : -EPIPE;
	while (!*done) {
		r = wait_once(self, deadline);
		if (r < 0 && !*done)
			return r;
	}
	return 0;
}

static void sync_done(void* data, struct wl_callback* cb, uint32_t serial)
{
	*(bool*)data = true;
}

static const struct wl_callback_listener sync_listener = { .done = sync_done };

int wayland_sync(struct wayland* self, int timeout_ms)
{
	bool done = false;
	struct wl_callback* cb = wl_display_sync(self->display);
	if (!cb)
		return -ENOMEM;
	wl_callback_add_listener(cb, &sync_listener, &done);
	int r = wl__wait(self, &done, clock_ms() + timeout_ms);
	wl_callback_destroy(cb);
	return r;
}

int wayland_dispatch(struct wayland* self, int timeout_ms)
{
	bool never = false;
	int r = wl__wait(self, &never, clock_ms() + timeout_ms);
	return r == -ETIMEDOUT ? 0 : r;
}

int wayland_fd(const struct wayland* self)
{
	return wl_display_get_fd(self->display);
}

uint32_t wl__time(struct wayland* self)
{
	uint32_t now = (uint32_t)clock_ms();
	if (now <= self->last_time)
		now = self->last_time + 1;
	self->last_time = now;
	return now;
}

int wl__memfd(const char* name, size_t size, void** data)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	if (data) {
		*data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (*data == MAP_FAILED)
			goto fail;
	}
	return fd;
fail:;
	int e = errno;
	close(fd);
	return -e;
}

/* ---- outputs ---- */

static void output_geometry(void* data, struct wl_output* o, int32_t x, int32_t y,
		int32_t pw, int32_t ph, int32_t subpixel, const char* make,
		const char* model, int32_t transform)
{
	struct wl__output* out = data;
	if (!out->have_logical) {
		out->info.x = x;
		out->info.y = y;
	}
	out->info.transform = transform;
}

static void output_mode(void* data, struct wl_output* o, uint32_t flags,
		int32_t width, int32_t height, int32_t refresh)
{
	struct wl__output* out = data;
	if (flags & WL_OUTPUT_MODE_CURRENT) {
		out->info.mode_width = width;
		out->info.mode_height = height;
	}
}

static void output_done(void* data, struct wl_output* o)
{
	struct wl__output* out = data;
	out->done = true;
}

static void output_scale(void* data, struct wl_output* o, int32_t factor)
{
	struct wl__output* out = data;
	out->info.scale = factor;
}

static void output_name(void* data, struct wl_output* o, const char* name)
{
	struct wl__output* out = data;
	snprintf(out->info.name, sizeof(out->info.name), "%s", name);
}

static void output_description(void* data, struct wl_output* o, const char* d)
{
}

static const struct wl_output_listener output_listener = {
	.geometry = output_geometry,
	.mode = output_mode,
	.done = output_done,
	.scale = output_scale,
	.name = output_name,
	.description = output_description,
};

static void xdg_position(void* data, struct zxdg_output_v1* x, int32_t px, int32_t py)
{
	struct wl__output* out = data;
	out->info.x = px;
	out->info.y = py;
	out->have_logical = true;
}

static void xdg_size(void* data, struct zxdg_output_v1* x, int32_t w, int32_t h)
{
	struct wl__output* out = data;
	out->info.width = w;
	out->info.height = h;
	out->have_logical = true;
}

static void xdg_done(void* data, struct zxdg_output_v1* x)
{
}

static void xdg_name(void* data, struct zxdg_output_v1* x, const char* name)
{
	struct wl__output* out = data;
	snprintf(out->info.name, sizeof(out->info.name), "%s", name);
}

static void xdg_description(void* data, struct zxdg_output_v1* x, const char* d)
{
}

static const struct zxdg_output_v1_listener xdg_output_listener = {
	.logical_position = xdg_position,
	.logical_size = xdg_size,
	.done = xdg_done,
	.name = xdg_name,
	.description = xdg_description,
};

static void output_watch_xdg(struct wayland* self, struct wl__output* out)
{
	if (!self->xdg_output_manager || out->xdg)
		return;
	out->xdg = zxdg_output_manager_v1_get_xdg_output(self->xdg_output_manager, out->wl);
	if (out->xdg)
		zxdg_output_v1_add_listener(out->xdg, &xdg_output_listener, out);
}

static void output_release(struct wl__output* out)
{
	wl__watch_destroy(out);
	if (out->xdg)
		zxdg_output_v1_destroy(out->xdg);
	if (out->wl) {
		if (wl_output_get_version(out->wl) >= 3)
			wl_output_release(out->wl);
		else
			wl_output_destroy(out->wl);
	}
	memset(out, 0, sizeof(*out));
}

/* ---- the registry ---- */

#define MIN(a, b) ((a) < (b) ? (a) : (b))

static void registry_global(void* data, struct wl_registry* reg, uint32_t name,
		const char* iface, uint32_t version)
{
	struct wayland* self = data;
	if (strcmp(iface, wl_shm_interface.name) == 0 && !self->shm) {
		self->shm = wl_registry_bind(reg, name, &wl_shm_interface, 1);
		self->features |= WAYLAND_SHM;
	} else if (strcmp(iface, wl_seat_interface.name) == 0 && !self->seat) {
		self->seat = wl_registry_bind(reg, name, &wl_seat_interface, MIN(version, 5));
		self->features |= WAYLAND_SEAT;
	} else if (strcmp(iface, zxdg_output_manager_v1_interface.name) == 0) {
		self->xdg_output_manager = wl_registry_bind(reg, name,
				&zxdg_output_manager_v1_interface, MIN(version, 3));
		self->features |= WAYLAND_XDG_OUTPUT;
		for (int i = 0; i < self->n_outputs; i++)
			output_watch_xdg(self, &self->outputs[i]);
	} else if (strcmp(iface, zwlr_screencopy_manager_v1_interface.name) == 0) {
		self->screencopy = wl_registry_bind(reg, name,
				&zwlr_screencopy_manager_v1_interface, MIN(version, 3));
		self->features |= WAYLAND_SCREENCOPY;
	} else if (strcmp(iface, zwlr_virtual_pointer_manager_v1_interface.name) == 0) {
		self->pointer_manager = wl_registry_bind(reg, name,
				&zwlr_virtual_pointer_manager_v1_interface, MIN(version, 2));
		self->features |= WAYLAND_VIRTUAL_POINTER;
	} else if (strcmp(iface, zwp_virtual_keyboard_manager_v1_interface.name) == 0) {
		self->keyboard_manager = wl_registry_bind(reg, name,
				&zwp_virtual_keyboard_manager_v1_interface, 1);
		self->features |= WAYLAND_VIRTUAL_KEYBOARD;
	} else if (strcmp(iface, zwlr_data_control_manager_v1_interface.name) == 0) {
		self->data_control = wl_registry_bind(reg, name,
				&zwlr_data_control_manager_v1_interface, MIN(version, 2));
		self->features |= WAYLAND_DATA_CONTROL;
	} else if (strcmp(iface, zwlr_foreign_toplevel_manager_v1_interface.name) == 0) {
		self->toplevel_global = name;	/* bound only by wayland_toplevels_track */
		self->toplevel_version = version;
		self->features |= WAYLAND_FOREIGN_TOPLEVEL;
	} else if (strcmp(iface, wl_output_interface.name) == 0) {
		if (self->n_outputs >= WAYLAND_MAX_OUTPUTS) {
			log_warn("wayland: more than %d outputs; output %u is ignored",
					WAYLAND_MAX_OUTPUTS, name);
			return;
		}
		struct wl__output* out = &self->outputs[self->n_outputs++];
		memset(out, 0, sizeof(*out));
		out->conn = self;
		out->global = name;
		out->info.scale = 1;
		out->wl = wl_registry_bind(reg, name, &wl_output_interface, MIN(version, 4));
		wl_output_add_listener(out->wl, &output_listener, out);
		output_watch_xdg(self, out);
	}
}

static void registry_remove(void* data, struct wl_registry* reg, uint32_t name)
{
	struct wayland* self = data;
	for (int i = 0; i < self->n_outputs; i++) {
		if (self->outputs[i].global != name)
			continue;
		output_release(&self->outputs[i]);
		memmove(&self->outputs[i], &self->outputs[i + 1],
				(size_t)(self->n_outputs - i - 1) * sizeof(self->outputs[0]));
		self->n_outputs--;
		/* the listeners point at the slots: move them along */
		for (int j = i; j < self->n_outputs; j++) {
			wl_output_set_user_data(self->outputs[j].wl, &self->outputs[j]);
			if (self->outputs[j].xdg)
				zxdg_output_v1_set_user_data(self->outputs[j].xdg, &self->outputs[j]);
		}
		return;
	}
}

static const struct wl_registry_listener registry_listener = {
	.global = registry_global,
	.global_remove = registry_remove,
};

static void note_missing(struct wayland* self)
{
	static const struct {
		unsigned bit;
		const char* name;
	} all[] = {
		{ WAYLAND_SHM, "wl_shm" },
		{ WAYLAND_SEAT, "wl_seat" },
		{ WAYLAND_XDG_OUTPUT, "zxdg_output_manager_v1" },
		{ WAYLAND_SCREENCOPY, "zwlr_screencopy_manager_v1" },
		{ WAYLAND_VIRTUAL_POINTER, "zwlr_virtual_pointer_manager_v1" },
		{ WAYLAND_VIRTUAL_KEYBOARD, "zwp_virtual_keyboard_manager_v1" },
		{ WAYLAND_DATA_CONTROL, "zwlr_data_control_manager_v1" },
		{ WAYLAND_FOREIGN_TOPLEVEL, "zwlr_foreign_toplevel_manager_v1" },
	};
	size_t len = 0;
	self->missing[0] = '\0';
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (self->features & all[i].bit)
			continue;
		int n = snprintf(self->missing + len, sizeof(self->missing) - len, "%s%s",
				len ? " " : "", all[i].name);
		if (n > 0 && (size_t)n < sizeof(self->missing) - len)
			len += (size_t)n;
	}
}

static int open_socket(const char* display, const char* runtime_dir)
{
	if (!display)
		display = getenv("WAYLAND_DISPLAY");
	if (!display || !*display)
		display = "wayland-0";
	if (!runtime_dir)
		runtime_dir = getenv("XDG_RUNTIME_DIR");
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int n;
	if (display[0] == '/')
		n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", display);
	else if (runtime_dir && *runtime_dir)
		n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", runtime_dir, display);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static bool outputs_ready(const struct wayland* self)
{
	for (int i = 0; i < self->n_outputs; i++) {
		const struct wl__output* o = &self->outputs[i];
		if (!o->done)
			return false;
		if (self->xdg_output_manager && !o->have_logical)
			return false;
	}
	return true;
}

struct wayland* wayland_connect(const char* display, const char* runtime_dir,
		int timeout_ms, int* err)
{
	int64_t deadline = clock_ms() + timeout_ms;
	int e = 0;
	struct wayland* self = calloc(1, sizeof(*self));
	if (!self) {
		e = -ENOMEM;
		goto alloc_failure;
	}
	int fd = open_socket(display, runtime_dir);
	if (fd < 0) {
		e = fd;
		goto socket_failure;
	}
	self->display = wl_display_connect_to_fd(fd);
	if (!self->display) {
		close(fd);
		e = -ENOMEM;
		goto socket_failure;
	}
	self->registry = wl_display_get_registry(self->display);
	if (!self->registry) {
		e = -ENOMEM;
		goto registry_failure;
	}
	wl_registry_add_listener(self->registry, &registry_listener, self);
	/* the globals, then their first events (outputs, xdg outputs) */
	e = wayland_sync(self, (int)(deadline - clock_ms()));
	if (e < 0)
		goto registry_failure;
	while (!outputs_ready(self)) {
		e = wayland_sync(self, (int)(deadline - clock_ms()));
		if (e < 0)
			goto registry_failure;
	}
	note_missing(self);
	if (!self->shm || self->n_outputs == 0) {
		log_warn("wayland: the compositor offers %s; deskd needs wl_shm and an output",
				self->shm ? "no output" : "no wl_shm");
		e = -ENOTSUP;
		goto registry_failure;
	}
	for (int i = 0; i < self->n_outputs; i++) {
		struct wayland_output* o = &self->outputs[i].info;
		if (!self->outputs[i].have_logical) {
			/* no xdg-output: the mode divided by the scale */
			int s = o->scale > 0 ? o->scale : 1;
			bool swap = o->transform & 1;
			o->width = (swap ? o->mode_height : o->mode_width) / s;
			o->height = (swap ? o->mode_width : o->mode_height) / s;
		}
	}
	if (*self->missing)
		log_info("wayland: connected; missing globals: %s", self->missing);
	return self;

registry_failure:
	wayland_disconnect(self);
	self = NULL;
	goto done;
socket_failure:
	free(self);
	self = NULL;
alloc_failure:
done:
	if (err)
		*err = e;
	return NULL;
}

void wayland_disconnect(struct wayland* self)
{
	if (!self)
		return;
	wl__toplevels_forget(self);	/* first: other threads reach its handles and seat */
	wl__clipboard_destroy(self);
	if (self->pointer)
		zwlr_virtual_pointer_v1_destroy(self->pointer);
	if (self->keyboard)
		zwp_virtual_keyboard_v1_destroy(self->keyboard);
	if (self->buffer.wl) {
		wl_buffer_destroy(self->buffer.wl);
		munmap(self->buffer.data, self->buffer.size);
	}
	for (int i = 0; i < self->n_outputs; i++)
		output_release(&self->outputs[i]);
	if (self->screencopy)
		zwlr_screencopy_manager_v1_destroy(self->screencopy);
	if (self->pointer_manager)
		zwlr_virtual_pointer_manager_v1_destroy(self->pointer_manager);
	if (self->keyboard_manager)
		wl_proxy_destroy((struct wl_proxy*)self->keyboard_manager);
	if (self->data_control)
		zwlr_data_control_manager_v1_destroy(self->data_control);
	if (self->xdg_output_manager)
		zxdg_output_manager_v1_destroy(self->xdg_output_manager);
	if (self->seat)
		wl_seat_destroy(self->seat);
	if (self->shm)
		wl_shm_destroy(self->shm);
	if (self->registry)
		wl_registry_destroy(self->registry);
	/* let the destroys reach the compositor (devices vanish at once) */
	wl_display_flush(self->display);
	wl_display_disconnect(self->display);
	free(self);
}

unsigned wayland_features(const struct wayland* self)
{
	return self->features;
}

bool wayland_has(const struct wayland* self, unsigned features)
{
	return (self->features & features) == features;
}

const char* wayland_missing(const struct wayland* self)
{
	return self->missing;
}

int wayland_output_count(const struct wayland* self)
{
	return self->n_outputs;
}

int wayland_output_get(const struct wayland* self, int i, struct wayland_output* out)
{
	if (i < 0 || i >= self->n_outputs)
		return -ENOENT;
	*out = self->outputs[i].info;
	return 0;
}

void wayland_layout(const struct wayland* self, int32_t* x, int32_t* y,
		int32_t* width, int32_t* height)
{
	int32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
	for (int i = 0; i < self->n_outputs; i++) {
		const struct wayland_output* o = &self->outputs[i].info;
		if (i == 0 || o->x < x0)
			x0 = o->x;
		if (i == 0 || o->y < y0)
			y0 = o->y;
		if (i == 0 || o->x + o->width > x1)
			x1 = o->x + o->width;
		if (i == 0 || o->y + o->height > y1)
			y1 = o->y + o->height;
	}
	*x = x0;
	*y = y0;
	*width = x1 - x0;
	*height = y1 - y0;
}
