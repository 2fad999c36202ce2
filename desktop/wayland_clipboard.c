/* The clipboard on a Wayland desktop (zwlr_data_control_manager_v1), the
 * second implementation of desktop.h's clipboard calls (clipboard.c hands
 * over when the desktop is Wayland). One connection, kept by a thread that
 * serves deskd's offer whenever a client pastes: it polls the socket
 * without the lock and dispatches under it, so a write or read waits at
 * most one dispatch. Reads of another client's content go through the same
 * connection (its offer is the one the thread tracks).
 *
 * Wayland has no PRIMARY through data-control in deskd yet: PRIMARY calls
 * answer -ENOTSUP. A paste's requestor is unknown (no window ids), so a
 * delivery counts for any window. Private to desktop/. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "wayland/wayland.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WL_CLIP_TIMEOUT_MS 2000
#define CONNECT_TIMEOUT_MS 2000

static struct {
	pthread_mutex_t lock;	/* guards wl and what follows */
	pthread_cond_t cond;	/* a delivery */
	struct wayland* wl;
	pthread_t thread;
	bool running, stop;
	int wake[2];
} K = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	.wake = { -1, -1 } };

static void* serve_main(void* ud)
{
	(void)ud;
	unsigned long served = 0;
	for (;;) {
		pthread_mutex_lock(&K.lock);
		bool stop = K.stop;
		int fd = K.wl ? wayland_fd(K.wl) : -1;
		pthread_mutex_unlock(&K.lock);
		if (stop || fd < 0)
			break;
		struct pollfd p[2] = { { fd, POLLIN, 0 }, { K.wake[0], POLLIN, 0 } };
		if (poll(p, 2, 200) > 0 && (p[1].revents & POLLIN)) {
			char b[16];
			while (read(K.wake[0], b, sizeof(b)) > 0) {
			}
		}
		pthread_mutex_lock(&K.lock);
		int rc = K.wl ? wayland_dispatch(K.wl, 0) : -EPIPE;
		unsigned long now = K.wl ? wayland_clipboard_served(K.wl) : served;
		if (now != served) {
			served = now;
			pthread_cond_broadcast(&K.cond);
		}
		if (rc < 0 && rc != -ETIMEDOUT && rc != -EAGAIN && rc != -EINTR) {
			log_warn("clipboard: lost the compositor (%s)", strerror(-rc));
			wayland_disconnect(K.wl);
			K.wl = NULL;
		}
		pthread_mutex_unlock(&K.lock);
	}
	return NULL;
}

/* Connect and start the thread once (again after the connection broke).
 * Lock held. */
static int ensure(char* err, size_t err_size)
{
	if (K.wl)
		return 0;
	if (K.running) {	/* a thread that lost its connection: join it */
		K.stop = true;
		pthread_mutex_unlock(&K.lock);
		pthread_join(K.thread, NULL);
		pthread_mutex_lock(&K.lock);
		K.running = K.stop = false;
	}
	char sock[WAYLAND_ADDRESS_MAX], ipc[WAYLAND_ADDRESS_MAX];
	if (wayland_address_parse(desktop_display_name(), sock, sizeof(sock), ipc, sizeof(ipc)) < 0) {
		snprintf(err, err_size, "the desktop is not Wayland");
		return -ECONNRESET;
	}
	int e = 0;
	K.wl = wayland_connect(sock, NULL, CONNECT_TIMEOUT_MS, &e);
	if (!K.wl) {
		snprintf(err, err_size, "cannot connect to the compositor: %s", strerror(-e));
		return -ECONNRESET;
	}
	if (!wayland_has(K.wl, WAYLAND_DATA_CONTROL)) {
		snprintf(err, err_size, "the compositor offers no zwlr_data_control_manager_v1: "
				"no clipboard on this desktop");
		wayland_disconnect(K.wl);
		K.wl = NULL;
		return -ENOTSUP;
	}
	if (K.wake[0] < 0 && pipe2(K.wake, O_CLOEXEC | O_NONBLOCK) != 0)
		K.wake[0] = K.wake[1] = -1;
	if (pthread_create(&K.thread, NULL, serve_main, NULL) != 0) {
		wayland_disconnect(K.wl);
		K.wl = NULL;
		snprintf(err, err_size, "cannot start the clipboard thread");
		return -EAGAIN;
	}
	K.running = true;
	return 0;
}

static int primary_refused(char* err, size_t err_size)
{
	snprintf(err, err_size, "the PRIMARY selection is not offered on Wayland desktops; "
			"use the clipboard");
	return -ENOTSUP;
}

static int wl_error(int rc, const char* what, char* err, size_t err_size)
{
	if (rc == -ETIMEDOUT)
		snprintf(err, err_size, "the compositor did not answer %s in %d ms", what,
				WL_CLIP_TIMEOUT_MS);
	else
		snprintf(err, err_size, "%s failed: %s", what, strerror(-rc));
	return rc == -EPIPE || rc == -EPROTO ? -ECONNRESET : rc;
}

int desktop__wayland_clipboard_write(enum desktop_selection sel, const void* data, size_t len,
		bool image, char* err, size_t err_size)
{
	if (sel == DESKTOP_PRIMARY)
		return primary_refused(err, err_size);
	pthread_mutex_lock(&K.lock);
	int rc = ensure(err, err_size);
	if (rc == 0 && (rc = wayland_clipboard_put(K.wl, data, len, image, WL_CLIP_TIMEOUT_MS)) < 0)
		rc = wl_error(rc, "offering the clipboard", err, err_size);
	pthread_mutex_unlock(&K.lock);
	return rc;
}

int desktop__wayland_clipboard_read(enum desktop_selection sel, bool image, void** data,
		size_t* len, int timeout_ms, char* err, size_t err_size)
{
	*data = NULL;
	*len = 0;
	if (sel == DESKTOP_PRIMARY)
		return primary_refused(err, err_size);
	pthread_mutex_lock(&K.lock);
	int rc = ensure(err, err_size);
	if (rc == 0)
		rc = wayland_clipboard_take(K.wl, image, DESKTOP_CLIPBOARD_MAX, timeout_ms, data, len);
	pthread_mutex_unlock(&K.lock);
	if (rc == -ENOENT)
		snprintf(err, err_size, "the clipboard is empty");
	else if (rc == -ENODATA)
		snprintf(err, err_size, "the clipboard offers no %s",
				image ? "image/png" : "text");
	else if (rc == -EFBIG)
		snprintf(err, err_size, "the clipboard content is over the limit of %d bytes",
				DESKTOP_CLIPBOARD_MAX);
	else if (rc < 0 && !err[0])
		rc = wl_error(rc, "reading the clipboard", err, err_size);
	return rc;
}

bool desktop__wayland_clipboard_owned(enum desktop_selection sel, unsigned long* served)
{
	pthread_mutex_lock(&K.lock);
	bool owned = sel == DESKTOP_CLIPBOARD && K.wl && wayland_clipboard_owned(K.wl, served);
	if (!K.wl && served)
		*served = 0;
	pthread_mutex_unlock(&K.lock);
	return owned;
}

int desktop__wayland_clipboard_release(enum desktop_selection sel, char* err, size_t err_size)
{
	if (sel == DESKTOP_PRIMARY)
		return 0;
	pthread_mutex_lock(&K.lock);
	int rc = K.wl ? wayland_clipboard_clear(K.wl, WL_CLIP_TIMEOUT_MS) : 0;
	pthread_mutex_unlock(&K.lock);
	return rc < 0 ? wl_error(rc, "giving up the clipboard", err, err_size) : 0;
}

unsigned long desktop__wayland_clipboard_delivered(void)
{
	pthread_mutex_lock(&K.lock);
	unsigned long n = K.wl ? wayland_clipboard_served(K.wl) : 0;
	pthread_mutex_unlock(&K.lock);
	return n;
}

int desktop__wayland_clipboard_wait_delivered(unsigned long since, int timeout_ms,
		atomic_bool* cancelled)
{
	int64_t end = clock_ms() + timeout_ms;
	pthread_mutex_lock(&K.lock);
	while (K.wl && wayland_clipboard_served(K.wl) <= since && clock_ms() < end
			&& !(cancelled && atomic_load(cancelled))) {
		struct timespec ts = clock_realtime_in(20);
		pthread_cond_timedwait(&K.cond, &K.lock, &ts);
	}
	int rc = K.wl && wayland_clipboard_served(K.wl) > since ? 0
		: cancelled && atomic_load(cancelled) ? -ECANCELED : -ETIMEDOUT;
	pthread_mutex_unlock(&K.lock);
	return rc;
}

void desktop__wayland_clipboard_stop(void)
{
	pthread_mutex_lock(&K.lock);
	bool running = K.running;
	K.stop = true;
	pthread_mutex_unlock(&K.lock);
	if (K.wake[1] >= 0 && write(K.wake[1], "x", 1) < 0)
		log_debug("clipboard: cannot wake the thread");
	if (running)
		pthread_join(K.thread, NULL);
	pthread_mutex_lock(&K.lock);
	if (K.wl)
		wayland_disconnect(K.wl);
	K.wl = NULL;
	K.running = K.stop = false;
	pthread_mutex_unlock(&K.lock);
	for (int i = 0; i < 2; i++) {
		if (K.wake[i] >= 0)
			close(K.wake[i]);
		K.wake[i] = -1;
	}
}
