#pragma once

/* Private to tools/: the help requests of the gate, for tools/help.c. */

#include "tools/tools.h"

enum gate_help_outcome {
	GATE_HELP_TIMEOUT = 0,
	GATE_HELP_HANDED_BACK,
	GATE_HELP_DISMISSED,
	GATE_HELP_CANCELLED,
};

/** Show a help request (reason copied) and wait until a person hands back,
 *  dismisses it, timeout_s passes, or the call is cancelled (or its
 *  deadline passes); progress every few seconds through ctx->progress.
 *  *note: the person's note (malloc'd, or NULL). *id: the request's id. */
enum gate_help_outcome gate_help_wait(struct tool_ctx* ctx, const char* reason,
		int timeout_s, char** note, uint64_t* id);
