/* libFuzzer harness over the reader of sway's get_tree reply
 * (wayland_sway_parse_tree in wayland/ipc.c): the compositor's JSON, which
 * deskd reads with a small parser of its own (no JSON library in wayland/).
 * Whatever the bytes: no crash, no read past the text, no leak; every
 * window it returns has its strings (never NULL) and a size that is not
 * negative. */

#include "wayland/wayland.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	char* text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	struct wayland_window* w = NULL;
	size_t n = 0;
	int rc = wayland_sway_parse_tree(text, &w, &n);
	assert(rc == 0 || rc == -EPROTO || rc == -ENOMEM);
	assert(rc == 0 || (w == NULL && n == 0));
	for (size_t i = 0; i < n; i++) {
		assert(w[i].app_id && w[i].title);
		(void)w[i].width;
	}
	wayland_windows_free(w, n);
	free(text);
	return 0;
}
