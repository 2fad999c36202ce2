/* The clipboard through zwlr_data_control_manager_v1: no surface and no
 * focus needed. The device is made at the first call; the current
 * selection's offer is kept (with the text types it offers) as the
 * compositor announces it. What we set is served from our copy whenever
 * the caller dispatches, until another client takes the clipboard. */
#define _GNU_SOURCE
#include "wayland/wl_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The types deskd offers and reads: text, best first, then PNG. */
static const char* const text_types[] = {
	"text/plain;charset=utf-8", "UTF8_STRING", "text/plain", "STRING", "TEXT",
	"image/png",
};
#define N_TYPES (sizeof(text_types) / sizeof(text_types[0]))
#define IMAGE_TYPE (N_TYPES - 1)
#define TEXT_MASK ((1u << IMAGE_TYPE) - 1)

struct offer {
	struct zwlr_data_control_offer_v1* wl;
	unsigned types;		/* bit i: text_types[i] is offered */
};

struct wl__clipboard {
	struct zwlr_data_control_device_v1* device;
	struct offer* selection;	/* the clipboard's offer, NULL if empty */
	struct zwlr_data_control_source_v1* source;	/* ours, while it is the clipboard */
	char* text;		/* what the source serves (text or PNG bytes) */
	size_t len;
	bool finished;
	bool image;		/* what the source offers is PNG */
	unsigned long served;	/* sends written whole */
};

static unsigned wl__source_types(const struct wl__clipboard* c)
{
	return c->image ? 1u << IMAGE_TYPE : TEXT_MASK;
}

static void offer_type(void* data, struct zwlr_data_control_offer_v1* o, const char* mime)
{
	struct offer* of = data;
	for (size_t i = 0; i < N_TYPES; i++)
		if (strcmp(mime, text_types[i]) == 0)
			of->types |= 1u << i;
}

static const struct zwlr_data_control_offer_v1_listener offer_listener = {
	.offer = offer_type,
};

static void offer_free(struct offer* of)
{
	if (!of)
		return;
	zwlr_data_control_offer_v1_destroy(of->wl);
	free(of);
}

static void device_offer(void* data, struct zwlr_data_control_device_v1* d,
		struct zwlr_data_control_offer_v1* o)
{
	struct offer* of = calloc(1, sizeof(*of));
	if (!of) {
		zwlr_data_control_offer_v1_destroy(o);
		return;
	}
	of->wl = o;
	zwlr_data_control_offer_v1_add_listener(o, &offer_listener, of);
}

static void device_selection(void* data, struct zwlr_data_control_device_v1* d,
		struct zwlr_data_control_offer_v1* o)
{
	struct wl__clipboard* c = data;
	struct offer* of = o ? zwlr_data_control_offer_v1_get_user_data(o) : NULL;
	if (c->selection != of)
		offer_free(c->selection);
	c->selection = of;
}

static void device_primary(void* data, struct zwlr_data_control_device_v1* d,
		struct zwlr_data_control_offer_v1* o)
{
	struct wl__clipboard* c = data;
	struct offer* of = o ? zwlr_data_control_offer_v1_get_user_data(o) : NULL;
	if (of && of != c->selection)
		offer_free(of);	/* deskd reads the clipboard, not the primary selection */
}

static void device_finished(void* data, struct zwlr_data_control_device_v1* d)
{
	struct wl__clipboard* c = data;
	c->finished = true;
}

static const struct zwlr_data_control_device_v1_listener device_listener = {
	.data_offer = device_offer,
	.selection = device_selection,
	.finished = device_finished,
	.primary_selection = device_primary,
};

static void source_drop(struct wl__clipboard* c)
{
	if (c->source)
		zwlr_data_control_source_v1_destroy(c->source);
	c->source = NULL;
	free(c->text);
	c->text = NULL;
	c->len = 0;
}

static void source_send(void* data, struct zwlr_data_control_source_v1* s,
		const char* mime, int fd)
{
	struct wl__clipboard* c = data;
	/* a reader that stops reading must not hold us: 1 s at most */
	int64_t deadline = clock_ms() + 1000;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	size_t off = 0;
	while (off < c->len && clock_ms() < deadline) {
		ssize_t n = write(fd, c->text + off, c->len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		poll(&p, 1, (int)(deadline - clock_ms()));
	}
	if (off < c->len)
		log_warn("wayland: a clipboard reader took %zu of %zu bytes", off, c->len);
	else
		c->served++;
	close(fd);
}

static void source_cancelled(void* data, struct zwlr_data_control_source_v1* s)
{
	struct wl__clipboard* c = data;
	if (c->source == s)
		source_drop(c);
	else
		zwlr_data_control_source_v1_destroy(s);
}

static const struct zwlr_data_control_source_v1_listener source_listener = {
	.send = source_send,
	.cancelled = source_cancelled,
};

static int device_get(struct wayland* self, int64_t deadline, struct wl__clipboard** out)
{
	if (!self->data_control || !self->seat)
		return -ENOTSUP;
	if (self->clipboard && self->clipboard->finished) {
		wl__clipboard_destroy(self);
	}
	if (!self->clipboard) {
		struct wl__clipboard* c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->device = zwlr_data_control_manager_v1_get_data_device(self->data_control,
				self->seat);
		if (!c->device) {
			free(c);
			return -ENOMEM;
		}
		zwlr_data_control_device_v1_add_listener(c->device, &device_listener, c);
		self->clipboard = c;
		/* the current selection comes at once */
		int r = wayland_sync(self, (int)(deadline - clock_ms()));
		if (r < 0)
			return r;
	}
	*out = self->clipboard;
	return 0;
}

int wayland_clipboard_put(struct wayland* self, const void* data, size_t len, bool image,
		int timeout_ms)
{
	int64_t deadline = clock_ms() + timeout_ms;
	struct wl__clipboard* c;
	int r = device_get(self, deadline, &c);
	if (r < 0)
		return r;
	char* copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	copy[len] = '\0';
	struct zwlr_data_control_source_v1* s =
		zwlr_data_control_manager_v1_create_data_source(self->data_control);
	if (!s) {
		free(copy);
		return -ENOMEM;
	}
	source_drop(c);
	c->source = s;
	c->text = copy;
	c->len = len;
	c->image = image;
	zwlr_data_control_source_v1_add_listener(s, &source_listener, c);
	if (image)
		zwlr_data_control_source_v1_offer(s, text_types[IMAGE_TYPE]);
	else
		for (size_t i = 0; i < IMAGE_TYPE; i++)
			zwlr_data_control_source_v1_offer(s, text_types[i]);
	zwlr_data_control_device_v1_set_selection(c->device, s);
	return wayland_sync(self, (int)(deadline - clock_ms()));
}

int wayland_clipboard_set(struct wayland* self, const char* utf8, int timeout_ms)
{
	return wayland_clipboard_put(self, utf8, strlen(utf8), false, timeout_ms);
}

bool wayland_clipboard_owned(const struct wayland* self, unsigned long* served)
{
	const struct wl__clipboard* c = self->clipboard;
	if (served)
		*served = c ? c->served : 0;
	return c && c->source;
}

unsigned long wayland_clipboard_served(const struct wayland* self)
{
	return self->clipboard ? self->clipboard->served : 0;
}

int wayland_clipboard_clear(struct wayland* self, int timeout_ms)
{
	struct wl__clipboard* c = self->clipboard;
	if (!c || !c->source)
		return 0;
	zwlr_data_control_device_v1_set_selection(c->device, NULL);
	source_drop(c);
	return wayland_sync(self, timeout_ms);
}

int wayland_clipboard_get(struct wayland* self, int timeout_ms, char** out, size_t* len)
{
	void* data;
	size_t n;
	int r = wayland_clipboard_take(self, false, WAYLAND_CLIPBOARD_MAX, timeout_ms, &data, &n);
	if (r == -ENODATA)
		r = -ENOENT;
	*out = r == 0 ? data : NULL;
	if (len)
		*len = r == 0 ? n : 0;
	return r;
}

int wayland_clipboard_take(struct wayland* self, bool image, size_t max, int timeout_ms,
		void** data, size_t* len)
{
	int64_t deadline = clock_ms() + timeout_ms;
	char** out = (char**)data;
	*out = NULL;
	*len = 0;
	struct wl__clipboard* c;
	int r = device_get(self, deadline, &c);
	if (r < 0)
		return r;
	r = wayland_sync(self, (int)(deadline - clock_ms()));
	if (r < 0)
		return r;
	if (c->source && c->text) {
		/* ours: reading it through the compositor would need us to
		 * serve it while we wait */
		bool ours_image = !(wl__source_types(c) & TEXT_MASK);
		if (ours_image != image)
			return -ENODATA;
		if (!(*out = malloc(c->len + 1)))
			return -ENOMEM;
		memcpy(*out, c->text, c->len + 1);
		*len = c->len;
		return 0;
	}
	if (!c->selection || !c->selection->types)
		return -ENOENT;
	unsigned want = image ? 1u << IMAGE_TYPE : TEXT_MASK;
	if (!(c->selection->types & want))
		return -ENODATA;
	size_t t = 0;
	while (!(c->selection->types & want & (1u << t)))
		t++;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	zwlr_data_control_offer_v1_receive(c->selection->wl, text_types[t], fds[1]);
	close(fds[1]);
	r = wl__flush(self, deadline);
	if (r < 0) {
		close(fds[0]);
		return r;
	}
	size_t cap = 4096, n = 0;
	char* buf = malloc(cap);
	if (!buf) {
		close(fds[0]);
		return -ENOMEM;
	}
	for (;;) {
		int64_t left = deadline - clock_ms();
		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int k = poll(&p, 1, (int)left);
		if (k < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (k <= 0)
			continue;
		if (n + 1 >= cap) {
			if (n >= max) {
				r = -EFBIG;
				break;
			}
			char* b = realloc(buf, cap *= 2);
			if (!b) {
				r = -ENOMEM;
				break;
			}
			buf = b;
		}
		ssize_t got = read(fds[0], buf + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			break;
		}
		if (got == 0) {
			r = 0;
			break;
		}
		n += (size_t)got;
	}
	close(fds[0]);
	if (r < 0) {
		free(buf);
		return r;
	}
	if (n > max) {
		free(buf);
		return -EFBIG;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

void wl__clipboard_destroy(struct wayland* self)
{
	struct wl__clipboard* c = self->clipboard;
	if (!c)
		return;
	source_drop(c);
	offer_free(c->selection);
	zwlr_data_control_device_v1_destroy(c->device);
	free(c);
	self->clipboard = NULL;
}
