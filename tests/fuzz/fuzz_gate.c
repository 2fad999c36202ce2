/* libFuzzer harness over the gate's decisions (tools/gate.c): each input is
 * a sequence of steps, one byte each (what the person does: take, hand back,
 * pause, resume, the --approve mode and control_allows_observe; what the
 * agent tries: a tool of some flags, admitted or checked between its steps,
 * over REST or a stateless MCP request with or without elicitation and an
 * answer). Whatever the order, the guarantees hold: nothing acting or
 * looking is admitted while a person holds the desktop, nothing acting while
 * paused, a running call is interrupted after a take or a pause, nothing
 * needing approval runs without one, and no approval is left pending.
 * No display, no threads: an approval the dashboard would answer is
 * abandoned at once (the caller "hung up"). */

#include "tools/tools.h"
#include "base/options.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static const struct tool_def tools[] = {
	{ .name = "computer_click", .flags = TOOL_DESKTOP_LOCK | TOOL_DESTRUCTIVE },
	{ .name = "window_move", .flags = TOOL_DESKTOP_LOCK },
	{ .name = "screenshot", .flags = TOOL_READ_ONLY | TOOL_OBSERVES },
	{ .name = "ui_snapshot", .flags = TOOL_READ_ONLY },
	{ .name = "windows", .flags = TOOL_READ_ONLY },
};
#define N_TOOLS (sizeof(tools) / sizeof(tools[0]))

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	static struct options opts;
	memset(&opts, 0, sizeof(opts));
	opts.approve_timeout_s = 1;
	options_set_global(&opts);
	bool held = false, paused = false;
	tools_gate_set_held(false, NULL);
	tools_gate_set_paused(false);
	atomic_bool gone;
	atomic_init(&gone, true);	/* an approval wait ends at once */
	for (size_t i = 0; i < size; i++) {
		uint8_t b = data[i];
		switch (b & 7) {
		case 0:
			held = b & 8;
			tools_gate_set_held(held, (b & 16) ? "note" : NULL);
			break;
		case 1:
			paused = b & 8;
			tools_gate_set_paused(paused);
			break;
		case 2:
			opts.approve = (b >> 3) % 3 == 0 ? OPTIONS_APPROVE_NONE
				: (b >> 3) % 3 == 1 ? OPTIONS_APPROVE_DESTRUCTIVE : OPTIONS_APPROVE_ALL;
			opts.control_allows_observe = b & 0x80;
			break;
		default: {
			const struct tool_def* t = &tools[(b >> 3) % N_TOOLS];
			bool acts = !(t->flags & TOOL_READ_ONLY);
			bool looks = !acts && ((t->flags & TOOL_OBSERVES) || strncmp(t->name, "ui_", 3) == 0);
			bool needs = acts && (opts.approve == OPTIONS_APPROVE_ALL
					|| (opts.approve == OPTIONS_APPROVE_DESTRUCTIVE
						&& (t->flags & TOOL_DESTRUCTIVE)));
			struct tool_ctx ctx = { .source = "fuzz", .cancelled = &gone,
				.by_person = (b & 7) == 7 };
			/* A stateless MCP request from a client that may answer an
			 * approval inline, with an answer or not. */
			json_t* state = NULL, * responses = NULL;
			if ((b & 7) == 4) {
				ctx.stateless = ctx.client_can_elicit = true;
				if (i + 1 < size && (data[i + 1] & 1)) {
					state = json_pack("{s:s}", "kind", "deskd-approval");
					responses = json_pack("{s:{s:s, s:{s:b}}}", "deskd_approve", "action",
							"accept", "content", "approve", data[i + 1] & 2);
				}
				ctx.input_state = state;
				ctx.input_responses = responses;
			}
			struct tool_result out;
			tool_result_init(&out);
			json_t* args = json_object();
			bool admitted = tools_gate_admit(t, &ctx, args, &out);
			bool agent = !ctx.by_person;	/* the person's own calls pass */
			if (admitted && agent && held && (acts || (looks && !opts.control_allows_observe)))
				abort();	/* acted or looked while a person held the desktop */
			if (admitted && agent && paused && acts)
				abort();	/* acted while paused */
			if (admitted && agent && needs && !(ctx.stateless && responses && (data[i + 1] & 2)))
				abort();	/* ran without an approval */
			if (!admitted && !agent)
				abort();	/* the person refused their own call */
			if (!admitted && !out.is_error && !out.input_requests)
				abort();	/* refused without saying why */
			enum tool_code code;
			const char* why;
			if (tools_gate_interrupted(&ctx, &code, &why) != ((held || paused) && !ctx.by_person))
				abort();	/* a running call missed a take or a pause */
			if (admitted)
				tools_gate_finish(t, &ctx, &out);
			tool_result_deinit(&out);
			json_decref(args);
			json_decref(state);
			json_decref(responses);
			break;
		}
		}
	}
	json_t* st = tools_gate_state();
	if (json_array_size(json_object_get(st, "approvals")) != 0)
		abort();	/* an abandoned approval stayed in the dashboard */
	json_decref(st);
	return 0;
}
