#pragma once

/* The status and doctor tools (server/status.c): they answer without a
 * display and report on the whole process, so they live at the top. */

#include "tools/tools.h"

extern const struct tool_def status_tools[];
