#pragma once

/* The control channel's messages (docs/CONTROL.md) decided without state:
 * which types there are, who may send them, and an input message's fields
 * checked into numbers. server/live/control.c applies the verdicts (the lease, the
 * queue to the hands); tests/fuzz/fuzz_live.c fuzzes these. */

#include "server/http/auth.h"
#include "tools/tools.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum live_ctl_kind {
	LIVE_CTL_TAKE, LIVE_CTL_RELEASE, LIVE_CTL_PAUSE, LIVE_CTL_RESUME,
	LIVE_CTL_HELP_DISMISS, LIVE_CTL_APPROVE, LIVE_CTL_DENY,
	/* input: needs the lease */
	LIVE_CTL_MOVE, LIVE_CTL_BUTTON, LIVE_CTL_WHEEL, LIVE_CTL_KEY, LIVE_CTL_TEXT,
	LIVE_CTL_PASTE,
};

#define LIVE_CTL_MAX_TEXT 4096		/* bytes of one text message */
#define LIVE_CTL_MAX_PASTE 12000	/* bytes of one paste */
#define LIVE_CTL_MAX_NOTCHES 20		/* wheel notches of one message, each way */

/** The control message named type; false when type is none of them. */
bool live_ctl_kind_of(const char* type, enum live_ctl_kind* kind);
/** May a socket of this role send it? Only the person's token controls. */
bool live_ctl_role_may(enum http_role role, enum live_ctl_kind kind);
/** Input (move ... paste): only the lease holder may send it. */
bool live_ctl_is_input(enum live_ctl_kind kind);

/** A pointer message's numbers: a point in the watched frame, a button
 *  (1, 2, 3, 8, 9) and its state, wheel notches (each way at most
 *  LIVE_CTL_MAX_NOTCHES). */
struct live_ctl_pointer {
	int x, y;
	int button;
	bool down;
	int notches_x, notches_y;
};

/** A move, button or wheel message against a frame of w x h (w, h > 0):
 *  TOOL_OK with out filled, else TOOL_BAD_ARGUMENTS or TOOL_OUT_OF_BOUNDS
 *  with err saying why. */
enum tool_code live_ctl_parse_pointer(enum live_ctl_kind kind, json_t* msg, int w, int h,
		struct live_ctl_pointer* out, char* err, size_t size);
/** A text or paste message: TOOL_OK with *text and *len (borrowed from msg;
 *  *len 0: nothing to type), else TOOL_BAD_ARGUMENTS with err. */
enum tool_code live_ctl_parse_text(enum live_ctl_kind kind, json_t* msg, const char** text,
		size_t* len, char* err, size_t size);
