/* The display address deskd passes down when the desktop is Wayland:
 * "wayland:<socket path>[?sway=<IPC socket path>]". desktop/ makes it once
 * (embedded sway, or the compositor it attached to); capture/ and input/
 * read it to pick their Wayland implementation and to find the compositor,
 * so neither looks at the environment. */
#include "wayland/wayland.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PREFIX "wayland:"
#define SWAY_SEP "?sway="

bool wayland_is_address(const char* address)
{
	return address && strncmp(address, PREFIX, strlen(PREFIX)) == 0;
}

int wayland_address_format(const char* socket_path, const char* ipc_path, char* out,
		size_t size)
{
	if (!socket_path || socket_path[0] != '/' || strstr(socket_path, SWAY_SEP))
		return -EINVAL;
	if (ipc_path && ipc_path[0] && (ipc_path[0] != '/' || strstr(ipc_path, SWAY_SEP)))
		return -EINVAL;
	int n = ipc_path && ipc_path[0]
			? snprintf(out, size, PREFIX "%s" SWAY_SEP "%s", socket_path, ipc_path)
			: snprintf(out, size, PREFIX "%s", socket_path);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int copy_part(const char* s, size_t len, char* out, size_t size)
{
	if (len >= size)
		return -ENAMETOOLONG;
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

int wayland_address_parse(const char* address, char* socket_path, size_t socket_size,
		char* ipc_path, size_t ipc_size)
{
	if (!wayland_is_address(address))
		return -EINVAL;
	const char* s = address + strlen(PREFIX);
	const char* sep = strstr(s, SWAY_SEP);
	size_t len = sep ? (size_t)(sep - s) : strlen(s);
	if (len == 0 || s[0] != '/')
		return -EINVAL;
	int rc = copy_part(s, len, socket_path, socket_size);
	if (rc < 0)
		return rc;
	const char* ipc = sep ? sep + strlen(SWAY_SEP) : "";
	if (sep && ipc[0] != '/')
		return -EINVAL;
	return copy_part(ipc, strlen(ipc), ipc_path, ipc_size);
}
