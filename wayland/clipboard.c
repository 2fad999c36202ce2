/* The clipboard through zwlr_data_control_manager_v1: not written yet
 * (wayland.h promises it; the calls say -ENOTSUP until then). */
#include "wayland/wl_private.h"

#include <errno.h>

int wayland_clipboard_set(struct wayland* self, const char* utf8, int timeout_ms)
{
	return -ENOTSUP;
}

int wayland_clipboard_get(struct wayland* self, int timeout_ms, char** out, size_t* len)
{
	*out = NULL;
	if (len)
		*len = 0;
	return -ENOTSUP;
}

void wl__clipboard_destroy(struct wayland* self)
{
}
