/* request_human_help: the agent asks a person to take the desktop (a login,
 * a captcha, a 2FA prompt) and waits until they hand it back. The request
 * shows in every dashboard as a banner; it waits for one to be opened.
 * The waiting itself is the gate's (tools/gate.c). */
#include "tools/gate.h"
#include "tools/tools.h"
#include "base/events.h"

#include <stdio.h>
#include <stdlib.h>

#define HELP_DEFAULT_TIMEOUT_S 600
#define HELP_MAX_TIMEOUT_S 3600

static int help_tool(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char* reason = tool_arg_string(args, "reason", "");
	int timeout_s = (int)tool_arg_int(args, "timeout_s", HELP_DEFAULT_TIMEOUT_S);
	/* "call" ties these events to the call's own (the dashboard shows the
	 * request, its hold and its outcome as one row). */
	events_control("request_human_help", ctx->source, "waiting",
			json_pack("{s:s, s:i, s:I}", "reason", reason, "timeout_s", timeout_s,
					"call", (json_int_t)ctx->event_id));
	char* note = NULL;
	uint64_t id = 0;
	enum gate_help_outcome outcome = gate_help_wait(ctx, reason, timeout_s, &note, &id);
	static const char* const names[] = {
		[GATE_HELP_TIMEOUT] = "timeout",
		[GATE_HELP_HANDED_BACK] = "handed_back",
		[GATE_HELP_DISMISSED] = "dismissed",
		[GATE_HELP_CANCELLED] = "cancelled",
	};
	/* Whether there was a note, never its text (it may be a secret). */
	events_control("request_human_help", "dashboard", names[outcome],
			json_pack("{s:I, s:I, s:b}", "request", (json_int_t)id,
					"call", (json_int_t)ctx->event_id, "with_note", note && *note));
	if (outcome == GATE_HELP_CANCELLED) {
		free(note);
		tool_result_error(out, TOOL_TIMEOUT, NULL,
				"cancelled (or past its deadline) while waiting for a person");
		return 0;
	}
	json_t* result = json_pack("{s:s}", "outcome", names[outcome]);
	if (note)
		json_object_set_new(result, "note", json_string(note));
	if (outcome == GATE_HELP_HANDED_BACK)
		json_object_set_new(result, "message", json_string(
				"a person had the desktop and handed it back; take a new screenshot"));
	else if (outcome == GATE_HELP_DISMISSED)
		json_object_set_new(result, "message", json_string(
				"a person read the request and did not take the desktop; see the note"));
	else
		json_object_set_new(result, "message", json_string(
				"no one answered within timeout_s; the desktop is as it was"));
	tool_result_ok(out, result);
	free(note);
	return 0;
}

/* The schemas are data: tools/schemas/help.json, under each tool's name. */

const struct tool_def tools_help[] = {
	{
		.name = "request_human_help",
		.title = "Ask a person for help",
		.description =
			"Ask the person at the dashboard to take the desktop (login, captcha, 2FA) and "
			"wait: handed_back (with their note), dismissed or timeout. Then take a screenshot.",
		/* It changes nothing on the desktop (it passes the gate while a
		 * person holds control); the view token may not ask. */
		.flags = TOOL_READ_ONLY | TOOL_NO_VIEW | TOOL_NO_DISPLAY,
		.handler = help_tool,
	},
	{ 0 },
};
