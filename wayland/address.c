/* The display address deskd passes down when the desktop is Wayland:
 * "wayland:<socket path>[?sway=<IPC socket path>][&x11=<Xwayland display>]"
 * (with no sway part, "?x11=..."). desktop/ makes it once (embedded sway,
 * or the compositor it attached to); capture/ and input/ read it to pick
 * their Wayland implementation and to find the compositor, its IPC and its
 * Xwayland, so neither looks at the environment. Paths may not hold '?' or
 * '&'. */
#include "wayland/wayland.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PREFIX "wayland:"
#define SWAY_KEY "sway="
#define X11_KEY "x11="

bool wayland_is_address(const char* address)
{
	return address && strncmp(address, PREFIX, strlen(PREFIX)) == 0;
}

static bool plain(const char* s)
{
	return !strpbrk(s, "?&");
}

int wayland_address_format(const char* socket_path, const char* ipc_path, char* out,
		size_t size)
{
	if (!socket_path || socket_path[0] != '/' || !plain(socket_path))
		return -EINVAL;
	if (ipc_path && ipc_path[0] && (ipc_path[0] != '/' || !plain(ipc_path)))
		return -EINVAL;
	int n = ipc_path && ipc_path[0]
			? snprintf(out, size, PREFIX "%s?" SWAY_KEY "%s", socket_path, ipc_path)
			: snprintf(out, size, PREFIX "%s", socket_path);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int wayland_address_add_x11(char* address, size_t size, const char* display)
{
	if (!wayland_is_address(address) || !display || display[0] != ':' || !plain(display))
		return -EINVAL;
	size_t len = strlen(address);
	int n = snprintf(address + len, size - len, "%c" X11_KEY "%s",
			strchr(address, '?') ? '&' : '?', display);
	if (n < 0 || (size_t)n >= size - len) {
		address[len] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

static int copy_part(const char* s, size_t len, char* out, size_t size)
{
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

/* The value of key in the address's query ("" when absent), up to the next
 * '&'. */
static int query_value(const char* address, const char* key, char* out, size_t size)
{
	const char* q = strchr(address, '?');
	for (const char* p = q; p; p = strchr(p + 1, '&')) {
		if (strncmp(p + 1, key, strlen(key)) == 0) {
			const char* v = p + 1 + strlen(key);
			return copy_part(v, strcspn(v, "&"), out, size);
		}
	}
	return copy_part("", 0, out, size);
}

int wayland_address_parse(const char* address, char* socket_path, size_t socket_size,
		char* ipc_path, size_t ipc_size)
{
	if (!wayland_is_address(address))
		return -EINVAL;
	const char* s = address + strlen(PREFIX);
	size_t len = strcspn(s, "?");
	if (len == 0 || s[0] != '/')
		return -EINVAL;
	int rc = copy_part(s, len, socket_path, socket_size);
	if (rc < 0)
		return rc;
	if ((rc = query_value(address, SWAY_KEY, ipc_path, ipc_size)) < 0)
		return rc;
	if (strstr(address, "?" SWAY_KEY) && ipc_path[0] != '/')
		return -EINVAL;
	return 0;
}

int wayland_address_x11(const char* address, char* out, size_t size)
{
	if (!wayland_is_address(address))
		return -EINVAL;
	int rc = query_value(address, X11_KEY, out, size);
	if (rc < 0)
		return rc;
	return out[0] == ':' ? 0 : -ENOENT;
}
