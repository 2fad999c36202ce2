#pragma once

/* What the capture tools (tools/screen.c) and the window tools
 * (tools/window_tools.c) share: a pooled capture context and its errors, and the
 * window argument. Private to tools/. */

#include "tools/tools.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct desktop_capture;

/** The code for a failed capture call: whatever failed, a context whose
 *  connection died means the display is gone. */
enum tool_code tools_capture_code(struct desktop_capture* p, int rc);
/** Fill out with the capture context's error for rc; returns 0. */
int tools_capture_fail(struct tool_result* out, struct desktop_capture* p, int rc);
/** A pooled capture context, or NULL with display_unavailable in out. */
struct desktop_capture* tools_capture_get(struct tool_result* out);
/** The window argument: absent or 0 = the screen; false with
 *  bad_arguments in out. */
bool tools_window_arg(json_t* args, uint32_t* window, struct tool_result* out);
