/* The live view's capture source, on capture/capture.h.
 * Waiting for capture/ to land in main: until then every open fails. */
#include "server/live_source.h"

#include <errno.h>
#include <stdio.h>

struct live_source* live_source_open(uint32_t window, int max_dimension,
		const char** code, char* err, size_t err_size)
{
	*code = "display_unavailable";
	snprintf(err, err_size, "capture is not available in this build");
	return NULL;
}

int live_source_wait(struct live_source* self, int timeout_ms) { return -ENOSYS; }
int live_source_grab(struct live_source* self, int quality,
		struct live_source_frame* out) { return -ENOSYS; }
int live_source_cursor(struct live_source* self, int* x, int* y, bool* visible)
{
	return -ENOSYS;
}
void live_source_close(struct live_source* self) { }
json_t* live_source_windows(void) { return json_array(); }
