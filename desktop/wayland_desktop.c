/* The Wayland desktop (the display service's second backend, display.c
 * picks it): an embedded headless sway (--desktop wayland) or a running
 * wlroots compositor deskd attaches to (--wayland-display). Its address,
 * "wayland:<socket>[?sway=<ipc>]" (wayland/wayland.h), is the display name
 * everything below desktop/ is given: capture/ and input/ pick their
 * Wayland implementation by it, env.c gives the programs WAYLAND_DISPLAY.
 *
 * The watcher keeps one connection of its own to the compositor: it is the
 * liveness check (available turns false when it breaks, and it reconnects)
 * and the source of the screen size (the outputs' layout box). An embedded
 * sway that exits is not restarted: its clients die with it; deskd says so
 * and tools answer display_unavailable. Private to desktop/. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "wayland/wayland.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_MS 2000
#define XWAYLAND_WAIT_MS 3000

/* Main thread before the watcher starts and after it stopped, the watcher
 * in between; the Xwayland name is read by any thread (mutex). */
static struct {
	struct wayland_sway* sway;	/* embedded only */
	pid_t sway_pid;
	bool sway_exited;
	char address[WAYLAND_ADDRESS_MAX];
	pthread_mutex_t mutex;
	char xwayland[32];		/* ":N" of the embedded sway's Xwayland, or "" */
} W = { .mutex = PTHREAD_MUTEX_INITIALIZER };

bool desktop__xwayland_display(char* out, size_t size)
{
	pthread_mutex_lock(&W.mutex);
	bool have = W.xwayland[0] != '\0';
	if (have)
		snprintf(out, size, "%s", W.xwayland);
	pthread_mutex_unlock(&W.mutex);
	return have;
}

bool desktop__wayland_tracked(pid_t pid)
{
	return pid > 0 && pid == W.sway_pid;
}

/* The socket a --wayland-display name means: an absolute path as is, else
 * the name in $XDG_RUNTIME_DIR (as libwayland resolves it). */
static int socket_path(const char* name, char* out, size_t size)
{
	if (name[0] == '/')
		return snprintf(out, size, "%s", name) < (int)size ? 0 : -ENAMETOOLONG;
	const char* rt = getenv("XDG_RUNTIME_DIR");
	if (!rt || !*rt)
		return -ENOENT;
	return snprintf(out, size, "%s/%s", rt, name) < (int)size ? 0 : -ENAMETOOLONG;
}

/* sway writes its Xwayland's DISPLAY into the runtime dir at start (its
 * config runs the writer: wayland/sway.c); read it, bounded. */
static void read_xwayland(void)
{
	char x[32];
	if (wayland_sway_xwayland_display(W.sway, XWAYLAND_WAIT_MS, x, sizeof(x)) == 0) {
		pthread_mutex_lock(&W.mutex);
		snprintf(W.xwayland, sizeof(W.xwayland), "%s", x);
		pthread_mutex_unlock(&W.mutex);
		log_info("wayland: Xwayland for X programs on %s", x);
	} else {
		log_info("wayland: no Xwayland (X programs cannot run on this desktop)");
	}
}

static int start_embedded(const struct desktop_config* c)
{
	/* sway's output is re-logged line by line like the other programs'
	 * (childlog.c), at debug: it is chatty. */
	int log_fd = -1;
	int log = childlog_open("sway", LOG_DEBUG, &log_fd);
	struct wayland_sway_options o = {
		.width = c->virtual_width, .height = c->virtual_height,
		.log_fd = log >= 0 ? log_fd : -1,
		.xwayland = true, .die_with_parent = true,
	};
	int err = 0;
	W.sway = wayland_sway_start(&o, &err);
	if (log >= 0) {
		close(log_fd);
		if (W.sway)
			childlog_attach(log, (long)wayland_sway_pid(W.sway));
		else
			childlog_cancel(log);
	}
	if (!W.sway) {
		log_error("cannot start the embedded sway: %s%s; add --log-level debug to see its output",
				strerror(-err), err == -ENOENT ? " (apt-get install sway)" : "");
		return err ? err : -EIO;
	}
	W.sway_pid = wayland_sway_pid(W.sway);
	char sock[256];
	snprintf(sock, sizeof(sock), "%s/%s", wayland_sway_runtime_dir(W.sway),
			wayland_sway_display(W.sway));
	int rc = wayland_address_format(sock, wayland_sway_ipc_path(W.sway), W.address,
			sizeof(W.address));
	if (rc == 0)
		read_xwayland();
	return rc;
}

/* The address names the Xwayland too: input/ types into X windows there. */
static void add_xwayland(void)
{
	char x[32];
	if (desktop__xwayland_display(x, sizeof(x)) && wayland_address_add_x11(W.address,
			sizeof(W.address), x) < 0)
		log_warn("wayland: cannot name Xwayland %s in the address", x);
}

static int start_attached(const struct desktop_config* c)
{
	char sock[256];
	int rc = socket_path(c->wayland_display, sock, sizeof(sock));
	if (rc < 0) {
		log_error("--wayland-display %s: %s", c->wayland_display,
				rc == -ENOENT ? "not an absolute path and XDG_RUNTIME_DIR is not set"
				: "path too long");
		return rc;
	}
	const char* ipc = c->sway_socket && *c->sway_socket ? c->sway_socket : NULL;
	if (!ipc)
		log_info("wayland: no sway IPC (SWAYSOCK): windows cannot be listed, focused or moved");
	if (c->xwayland_display && c->xwayland_display[0] == ':') {
		pthread_mutex_lock(&W.mutex);
		snprintf(W.xwayland, sizeof(W.xwayland), "%s", c->xwayland_display);
		pthread_mutex_unlock(&W.mutex);
	}
	return wayland_address_format(sock, ipc, W.address, sizeof(W.address));
}

int desktop__wayland_start(const struct desktop_config* c, bool embedded)
{
	W.sway_exited = false;
	int rc = embedded ? start_embedded(c) : start_attached(c);
	if (rc < 0)
		return rc;
	add_xwayland();
	desktop__set_display_name(W.address);
	xvfb_start_clients(W.address);
	return 0;
}

/* One round of the embedded sway's health: false once it exited. */
static bool sway_alive(void)
{
	if (!W.sway || W.sway_exited)
		return W.sway == NULL;
	int status;
	if (waitpid(W.sway_pid, &status, WNOHANG) == W.sway_pid) {
		W.sway_exited = true;
		log_error("the embedded sway exited (status %d): its programs ended with it; "
				"restart deskd", status);
		return false;
	}
	return true;
}

static struct wayland* connect_compositor(void)
{
	char sock[WAYLAND_ADDRESS_MAX], ipc[WAYLAND_ADDRESS_MAX];
	if (wayland_address_parse(W.address, sock, sizeof(sock), ipc, sizeof(ipc)) < 0)
		return NULL;
	int err = 0;
	struct wayland* wl = wayland_connect(sock, NULL, CONNECT_TIMEOUT_MS, &err);
	if (!wl)
		return NULL;
	int32_t x, y, w, h;
	wayland_layout(wl, &x, &y, &w, &h);
	desktop__set_size(w, h);
	/* Without sway's IPC the window list is foreign-toplevel's, kept by
	 * this connection's dispatching (the loop below). */
	if (!ipc[0] && wayland_has(wl, WAYLAND_FOREIGN_TOPLEVEL)) {
		int rc = wayland_toplevels_track(wl, CONNECT_TIMEOUT_MS);
		if (rc < 0)
			log_warn("the compositor's window list (foreign-toplevel): %s", strerror(-rc));
	}
	const char* missing = wayland_missing(wl);
	char info[128];
	snprintf(info, sizeof(info), "wayland%s%s", missing[0] ? "; lacks " : "", missing);
	desktop__set_server_info(info);
	return wl;
}

void* desktop__wayland_watch(void* ud)
{
	(void)ud;
	struct wayland* wl = NULL;
	int retry_ms = 100;
	bool had = false;
	while (!desktop__watcher_wait(wl ? 0 : retry_ms)) {
		xvfb_reap();
		if (!sway_alive()) {
			if (wl) {
				wayland_disconnect(wl);
				wl = NULL;
				desktop__set_available(false, true);
			}
			retry_ms = 1000;
			continue;
		}
		if (!wl) {
			if ((wl = connect_compositor())) {
				desktop__set_available(true, false);
				if (had)
					log_info("the compositor at %s is back", W.address);
				had = true;
				retry_ms = 100;
			} else {
				retry_ms = retry_ms * 2 > 1000 ? 1000 : retry_ms * 2;
			}
			continue;
		}
		/* Output changes arrive as events; a broken socket ends it. */
		int rc = wayland_dispatch(wl, 200);
		desktop__capture_trim();
		if (rc < 0 && rc != -ETIMEDOUT && rc != -EAGAIN && rc != -EINTR) {
			log_warn("lost the compositor at %s (%s); tools answer display_unavailable "
					"until it is back", W.address, strerror(-rc));
			wayland_disconnect(wl);
			wl = NULL;
			desktop__set_available(false, true);
			continue;
		}
		int32_t x, y, w, h;
		wayland_layout(wl, &x, &y, &w, &h);
		desktop__set_size(w, h);
	}
	if (wl)
		wayland_disconnect(wl);
	desktop__set_available(false, false);
	return NULL;
}

void desktop__wayland_stop(bool keep_config)
{
	/* The programs first (while their compositor lives), then sway. */
	xvfb_stop(keep_config);
	wayland_sway_stop(W.sway);
	W.sway = NULL;
	W.sway_pid = 0;
	pthread_mutex_lock(&W.mutex);
	W.xwayland[0] = '\0';
	pthread_mutex_unlock(&W.mutex);
}

/* The protocols deskd uses and what each is for (doctor). */
static const struct {
	unsigned feature;
	const char* name;
	const char* purpose;
} PROTOCOLS[] = {
	{ WAYLAND_SCREENCOPY, "zwlr_screencopy_manager_v1", "screenshots, the live view, recording" },
	{ WAYLAND_VIRTUAL_POINTER, "zwlr_virtual_pointer_manager_v1", "clicks, moves, drags, scroll" },
	{ WAYLAND_VIRTUAL_KEYBOARD, "zwp_virtual_keyboard_manager_v1", "typing and keys" },
	{ WAYLAND_DATA_CONTROL, "zwlr_data_control_manager_v1", "the clipboard" },
	{ WAYLAND_XDG_OUTPUT, "zxdg_output_manager_v1", "outputs' logical geometry (scaled outputs)" },
	{ WAYLAND_FOREIGN_TOPLEVEL, "zwlr_foreign_toplevel_manager_v1",
	  "the window list without sway's IPC (no geometry)" },
};

bool desktop_is_wayland_address(const char* name)
{
	return wayland_is_address(name);
}

int desktop_wayland_probe(const char* address, struct desktop_wayland_probe* out)
{
	memset(out, 0, sizeof(*out));
	char sock[WAYLAND_ADDRESS_MAX], ipc[WAYLAND_ADDRESS_MAX];
	if (wayland_address_parse(address, sock, sizeof(sock), ipc, sizeof(ipc)) < 0)
		return -EINVAL;
	int err = 0;
	struct wayland* wl = wayland_connect(sock, NULL, CONNECT_TIMEOUT_MS, &err);
	if (!wl)
		return err ? err : -ECONNREFUSED;
	int32_t x, y, w, h;
	wayland_layout(wl, &x, &y, &w, &h);
	out->width = w;
	out->height = h;
	out->outputs = wayland_output_count(wl);
	for (size_t i = 0; i < sizeof(PROTOCOLS) / sizeof(PROTOCOLS[0]); i++) {
		out->features[out->n].name = PROTOCOLS[i].name;
		out->features[out->n].purpose = PROTOCOLS[i].purpose;
		out->features[out->n].present = wayland_has(wl, PROTOCOLS[i].feature);
		out->features[out->n].spare_with_ipc = PROTOCOLS[i].feature == WAYLAND_FOREIGN_TOPLEVEL;
		out->n++;
	}
	out->toplevels = wayland_has(wl, WAYLAND_FOREIGN_TOPLEVEL);
	wayland_disconnect(wl);
	if (ipc[0]) {
		struct wayland_window* list;
		size_t n;
		if (wayland_sway_windows(ipc, CONNECT_TIMEOUT_MS, &list, &n) == 0) {
			out->sway_ipc = true;
			wayland_windows_free(list, n);
		}
	}
	return 0;
}
