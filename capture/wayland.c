/* The Wayland capture context (not yet). */
#include "capture/capture_private.h"

#include <stdio.h>

struct capture* capture__wayland_create(const char* address, char* err, size_t err_size)
{
	snprintf(err, err_size, "Wayland capture is not implemented yet");
	return NULL;
}
