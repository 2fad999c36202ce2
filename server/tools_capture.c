/* STUB: replaced by the owner of this file. */
#include "server/tools.h"
#include <errno.h>
#include <stddef.h>
const struct tool_def tools_capture[] = { { 0 } };
enum tool_code tools_capture_target(struct tool_ctx* ctx, uint32_t window,
		struct tool_target* out, char* err, size_t err_size) { return TOOL_DISPLAY_UNAVAILABLE; }
int tools_capture_settle(uint32_t window, int quiet_ms, int timeout_ms) { return -ETIMEDOUT; }
