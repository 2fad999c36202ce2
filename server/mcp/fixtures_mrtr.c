/* The conformance fixtures of protocol 2026-07-28 (with
 * --conformance-fixtures): tools and a prompt that ask for input the
 * stateless way (input-required results, SEP-2322), a tool that needs an
 * undeclared capability (-32021), list-change triggers for
 * subscriptions/listen, per-request logging, x-mcp-header parameters
 * (SEP-2243), and the tasks extension's (SEP-2663). On the legacy path the
 * same tools ask through server -> client requests instead, and in a task
 * while it waits, so one tool serves every way (what a deskd tool that asks
 * the user does too). */

#include "server/mcp/mcp.h"
#include "server/mcp/core.h"
#include "base/clock.h"
#include "tools/tools.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- asking: inline on the legacy path, input-required when stateless ---- */

static json_t* elicit(const char* message, const char* field, const char* type)
{
	return json_pack("{s:s, s:{s:s, s:{s:s, s:{s:{s:s}}, s:[s]}}}",
			"method", "elicitation/create", "params", "message", message,
			"requestedSchema", "type", "object", "properties", field, "type", type,
			"required", field);
}

static json_t* sample(const char* text, int max_tokens)
{
	return json_pack("{s:s, s:{s:[{s:s, s:{s:s, s:s}}], s:i}}",
			"method", "sampling/createMessage", "params", "messages", "role", "user",
			"content", "type", "text", "text", text, "maxTokens", max_tokens);
}

static json_t* list_roots(void)
{
	return json_pack("{s:s, s:{}}", "method", "roots/list", "params");
}

static const char* capability_of(const char* method)
{
	return strcmp(method, "elicitation/create") == 0 ? "elicitation"
		: strcmp(method, "sampling/createMessage") == 0 ? "sampling" : "roots";
}

static bool client_can(const struct tool_ctx* ctx, const char* method)
{
	const char* cap = capability_of(method);
	return strcmp(cap, "elicitation") == 0 ? ctx->client_can_elicit
		: strcmp(cap, "sampling") == 0 ? ctx->client_can_sample : ctx->client_can_list_roots;
}

/* Get the answers to requests (stolen): 1 with *answers (new reference)
 * when every key is answered; 0 when out says what happens instead (an
 * input-required result carrying state (stolen), a missing capability, or
 * an error). */
static int gather(struct tool_ctx* ctx, json_t* requests, json_t* state,
		struct tool_result* out, json_t** answers)
{
	*answers = NULL;
	const char* key;
	json_t* r;
	if (ctx->stateless && !ctx->request_all) {
		bool all = json_is_object(ctx->input_responses);
		json_object_foreach(requests, key, r)
			all = all && json_is_object(json_object_get(ctx->input_responses, key));
		if (all) {
			*answers = json_incref(ctx->input_responses);
			json_decref(requests);
			json_decref(state);
			return 1;
		}
		bool missing = false;
		json_object_foreach(requests, key, r) {
			const char* method = json_string_value(json_object_get(r, "method"));
			if (!client_can(ctx, method)) {
				tool_result_missing_capability(out, capability_of(method));
				missing = true;
			}
		}
		if (missing) {
			json_decref(requests);
			json_decref(state);
			return 0;
		}
		tool_result_input_required(out, requests, state);
		return 0;
	}
	json_decref(state);
	if (ctx->request_all) {	/* a task: all at once, while it waits */
		json_t* error = NULL;
		*answers = ctx->request_all(ctx->notify_ud, requests, &error);
		json_decref(requests);
		if (!*answers) {
			const char* m = json_string_value(json_object_get(error, "message"));
			tool_result_error(out, TOOL_INTERNAL, NULL, "no answer: %s", m ? m : "none");
		}
		json_decref(error);
		return *answers != NULL;
	}
	if (!ctx->request) {
		json_decref(requests);
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"this tool asks the MCP client for input; call it over MCP");
		return 0;
	}
	json_t* got = json_object();
	json_object_foreach(requests, key, r) {
		const char* method = json_string_value(json_object_get(r, "method"));
		json_t* error = NULL;
		json_t* result = ctx->request(ctx->notify_ud, method,
				json_object_get(r, "params"), &error);
		if (!result) {
			const char* m = json_string_value(json_object_get(error, "message"));
			tool_result_error(out, TOOL_INTERNAL, NULL, "%s failed: %s", method,
					m ? m : "no answer");
			json_decref(error);
			json_decref(got);
			json_decref(requests);
			return 0;
		}
		json_decref(error);
		json_object_set_new(got, key, result);
	}
	json_decref(requests);
	*answers = got;
	return 1;
}

/* The accepted content field of an elicitation answer, or def. */
static const char* accepted(json_t* answers, const char* key, const char* field,
		const char* def)
{
	json_t* a = json_object_get(answers, key);
	const char* action = json_string_value(json_object_get(a, "action"));
	json_t* v = json_object_get(json_object_get(a, "content"), field);
	if (!action || strcmp(action, "accept") != 0)
		return def;
	return json_is_string(v) ? json_string_value(v) : json_is_true(v) ? "true"
		: json_is_false(v) ? "false" : def;
}

static const char* sampled(json_t* answers, const char* key)
{
	const char* t = json_string_value(json_object_get(json_object_get(
			json_object_get(answers, key), "content"), "text"));
	return t ? t : "(no text)";
}

static int text_result(struct tool_result* out, const char* fmt, ...)
		__attribute__((format(printf, 2, 3)));

static int text_result(struct tool_result* out, const char* fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tool_result_text(out, buf);
	return 0;
}

/* The state a round left, when it is this fixture's. */
static bool state_is(const struct tool_ctx* ctx, const char* kind)
{
	const char* k = json_string_value(json_object_get(ctx->input_state, "kind"));
	return k && strcmp(k, kind) == 0;
}

/* ---- the tools ---- */

static int t_missing_capability(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	if (!ctx->client_can_sample) {
		if (ctx->stateless)
			tool_result_missing_capability(out, "sampling");
		else
			tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
					"this tool needs the client's sampling capability");
		return 0;
	}
	return text_result(out, "Success: the client declared sampling");
}

static int t_elicitation(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_t* answers;
	if (!gather(ctx, json_pack("{s:o}", "user_name", elicit("What is your name?", "name",
			"string")), NULL, out, &answers))
		return 0;
	text_result(out, "Hello, %s!", accepted(answers, "user_name", "name", "stranger"));
	json_decref(answers);
	return 0;
}

static int t_sampling(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_t* answers;
	if (!gather(ctx, json_pack("{s:o}", "capital_question",
			sample("What is the capital of France?", 100)), NULL, out, &answers))
		return 0;
	text_result(out, "The model said: %s", sampled(answers, "capital_question"));
	json_decref(answers);
	return 0;
}

static int t_list_roots(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_t* answers;
	if (!gather(ctx, json_pack("{s:o}", "client_roots", list_roots()), NULL, out, &answers))
		return 0;
	json_t* roots = json_object_get(json_object_get(answers, "client_roots"), "roots");
	char list[1024] = "";
	size_t used = 0, i;
	json_t* r;
	json_array_foreach(roots, i, r) {
		const char* uri = json_string_value(json_object_get(r, "uri"));
		if (uri && used < sizeof(list))
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					used ? ", " : "", uri);
	}
	text_result(out, "The client's roots: %s", used ? list : "(none)");
	json_decref(answers);
	return 0;
}

static int t_request_state(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	/* The answer counts only with the state of the round that asked. */
	if (ctx->stateless && !state_is(ctx, "request-state")) {
		tool_result_input_required(out, json_pack("{s:o}", "confirm",
				elicit("Please confirm", "ok", "boolean")),
				json_pack("{s:s, s:i}", "kind", "request-state", "round", 1));
		return 0;
	}
	json_t* answers;
	if (!gather(ctx, json_pack("{s:o}", "confirm", elicit("Please confirm", "ok", "boolean")),
			json_pack("{s:s, s:i}", "kind", "request-state", "round", 1), out, &answers))
		return 0;
	text_result(out, "state-ok: requestState validated; confirmed=%s",
			accepted(answers, "confirm", "ok", "no"));
	json_decref(answers);
	return 0;
}

static int t_multiple(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_t* requests = json_pack("{s:o, s:o, s:o}",
			"user_name", elicit("What is your name?", "name", "string"),
			"greeting", sample("Generate a greeting", 50),
			"client_roots", list_roots());
	if (ctx->stateless && !state_is(ctx, "multiple")) {
		tool_result_input_required(out, requests, json_pack("{s:s}", "kind", "multiple"));
		return 0;
	}
	json_t* answers;
	if (!gather(ctx, requests, json_pack("{s:s}", "kind", "multiple"), out, &answers))
		return 0;
	text_result(out, "%s, %s (roots: %zu)", sampled(answers, "greeting"),
			accepted(answers, "user_name", "name", "stranger"),
			json_array_size(json_object_get(json_object_get(answers, "client_roots"), "roots")));
	json_decref(answers);
	return 0;
}

static int t_multi_round(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_t* answers;
	if (!ctx->stateless) {
		json_t* first;
		if (!gather(ctx, json_pack("{s:o}", "step1", elicit("Step 1: What is your name?",
				"name", "string")), NULL, out, &first))
			return 0;
		if (!gather(ctx, json_pack("{s:o}", "step2", elicit("Step 2: What is your "
				"favorite color?", "color", "string")), NULL, out, &answers)) {
			json_decref(first);
			return 0;
		}
		text_result(out, "%s likes %s", accepted(first, "step1", "name", "someone"),
				accepted(answers, "step2", "color", "no color"));
		json_decref(first);
		json_decref(answers);
		return 0;
	}
	json_t* st = ctx->input_state;
	int round = state_is(ctx, "multi-round")
			? (int)json_integer_value(json_object_get(st, "round")) : 0;
	if (round == 1 && json_is_object(json_object_get(ctx->input_responses, "step1"))) {
		tool_result_input_required(out, json_pack("{s:o}", "step2",
				elicit("Step 2: What is your favorite color?", "color", "string")),
				json_pack("{s:s, s:i, s:s}", "kind", "multi-round", "round", 2, "name",
					accepted(ctx->input_responses, "step1", "name", "someone")));
		return 0;
	}
	if (round == 2 && json_is_object(json_object_get(ctx->input_responses, "step2")))
		return text_result(out, "%s likes %s",
				json_string_value(json_object_get(st, "name")),
				accepted(ctx->input_responses, "step2", "color", "no color"));
	tool_result_input_required(out, json_pack("{s:o}", "step1",
			elicit("Step 1: What is your name?", "name", "string")),
			json_pack("{s:s, s:i}", "kind", "multi-round", "round", 1));
	return 0;
}

static int t_tampered(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	/* The transport rejects a tampered requestState before this runs. */
	if (ctx->stateless && (!state_is(ctx, "tamper-test")
			|| !json_is_object(json_object_get(ctx->input_responses, "confirm")))) {
		tool_result_input_required(out, json_pack("{s:o}", "confirm",
				elicit("Please confirm", "ok", "boolean")),
				json_pack("{s:s}", "kind", "tamper-test"));
		return 0;
	}
	json_t* answers;
	if (!gather(ctx, json_pack("{s:o}", "confirm", elicit("Please confirm", "ok", "boolean")),
			NULL, out, &answers))
		return 0;
	text_result(out, "integrity-ok: state verified");
	json_decref(answers);
	return 0;
}

static int t_capabilities(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_t* requests = json_object();
	if (ctx->client_can_elicit)
		json_object_set_new(requests, "elicit_input", elicit("Elicitation input", "value",
				"string"));
	if (ctx->client_can_sample)
		json_object_set_new(requests, "sample_input", sample("Sample request", 50));
	if (json_object_size(requests) == 0) {
		json_decref(requests);
		return text_result(out, "No supported capabilities declared");
	}
	json_t* answers;
	if (!gather(ctx, requests, json_pack("{s:s}", "kind", "capabilities"), out, &answers))
		return 0;
	const char* key;
	json_t* v;
	char got[256] = "";
	size_t used = 0;
	json_object_foreach(answers, key, v)
		if (used < sizeof(got))
			used += (size_t)snprintf(got + used, sizeof(got) - used, "%s%s",
					used ? "," : "", key);
	text_result(out, "capabilities-ok: received %s", got);
	json_decref(answers);
	return 0;
}

static int t_streaming_elicitation(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	if (ctx->log)
		ctx->log(ctx->notify_ud, "info", json_string("asking the user"));
	json_t* answers;
	if (!gather(ctx, json_pack("{s:o}", "answer", elicit("Anything to add?", "text",
			"string")), NULL, out, &answers))
		return 0;
	text_result(out, "Streaming complete: %s", accepted(answers, "answer", "text", "nothing"));
	json_decref(answers);
	return 0;
}

static int t_logging(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	static const char* const lines[] = { "Tool execution started", "Tool processing data",
		"Tool execution completed" };
	for (int i = 0; i < 3; i++)
		if (ctx->log)
			ctx->log(ctx->notify_ud, "info", json_string(lines[i]));
	return text_result(out, "Tool with logging executed successfully");
}

static int t_tool_change(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	mcp_modern_list_changed("tools");
	return text_result(out, "notified listeners: the tool list changed");
}

static int t_prompt_change(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	mcp_modern_list_changed("prompts");
	return text_result(out, "notified listeners: the prompt list changed");
}

static int t_custom_headers(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	char* text = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
	text_result(out, "headers-ok: %s", text ? text : "{}");
	free(text);
	return 0;
}

/* ---- the tasks extension's fixtures (SEP-2663) ---- */

/* Sleep ms unless the call is cancelled first: false when it was. */
static bool work_for(struct tool_ctx* ctx, int64_t ms)
{
	for (int64_t waited = 0; waited < ms; waited += 20) {
		if (ctx->cancelled && atomic_load(ctx->cancelled))
			return false;
		clock_sleep_ms(ms - waited < 20 ? ms - waited : 20);
	}
	return !(ctx->cancelled && atomic_load(ctx->cancelled));
}

static int cancelled_result(struct tool_result* out)
{
	tool_result_error(out, TOOL_TIMEOUT, NULL, "cancelled");
	return 0;
}

static int t_greet(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char* name = json_string_value(json_object_get(args, "name"));
	return text_result(out, "Hello, %.200s!", name ? name : "World");
}

static int t_slow_compute(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	double seconds = json_number_value(json_object_get(args, "seconds"));
	const char* label = json_string_value(json_object_get(args, "label"));
	if (!work_for(ctx, (int64_t)(seconds * 1000)))
		return cancelled_result(out);
	return text_result(out, "computed %.100s in %g s", label ? label : "", seconds);
}

static int t_failing_job(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	if (!work_for(ctx, 1000))
		return cancelled_result(out);
	tool_result_error(out, TOOL_INTERNAL, NULL, "failing_job fails on purpose");
	return 0;
}

/* A protocol error once it is a task: it needs a capability no client has. */
static int t_protocol_error_job(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	if (!work_for(ctx, 500))
		return cancelled_result(out);
	tool_result_missing_capability(out, "deskd-conformance-never");
	return 0;
}

static int t_confirm_delete(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char* file = json_string_value(json_object_get(args, "filename"));
	char question[300];
	snprintf(question, sizeof(question), "Delete %.200s?", file ? file : "the file");
	json_t* answers;
	if (!gather(ctx, json_pack("{s:o}", "confirm", elicit(question, "confirm", "boolean")),
			NULL, out, &answers))
		return 0;
	bool yes = strcmp(accepted(answers, "confirm", "confirm", "false"), "true") == 0;
	json_decref(answers);
	return text_result(out, "%s %.200s", yes ? "Deleted" : "Kept", file ? file : "the file");
}

static int t_multi_input(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_t* answers;
	if (!gather(ctx, json_pack("{s:o, s:o}", "name", elicit("Your name?", "name", "string"),
			"confirm", elicit("Proceed?", "confirm", "boolean")), NULL, out, &answers))
		return 0;
	text_result(out, "%s said %s", accepted(answers, "name", "name", "someone"),
			accepted(answers, "confirm", "confirm", "nothing"));
	json_decref(answers);
	return 0;
}

/* Input by retry first (before any task), then work long enough to be one. */
static int t_tool_with_task(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	if (!json_is_object(json_object_get(ctx->input_responses, "user_name"))) {
		tool_result_input_required(out, json_pack("{s:o}", "user_name",
				elicit("What is your name?", "name", "string")), NULL);
		return 0;
	}
	if (!work_for(ctx, 1000))
		return cancelled_result(out);
	return text_result(out, "Hello, %s!", accepted(ctx->input_responses, "user_name",
			"name", "stranger"));
}

#define FX (TOOL_FIXTURE | TOOL_NO_DISPLAY | TOOL_READ_ONLY | TOOL_IDEMPOTENT)
#define NO_ARGS "{\"type\":\"object\",\"additionalProperties\":false}"
#define MRTR(what) what " Stateless clients get an input-required result; sessions are " \
	"asked inline (conformance fixture, SEP-2322)."

const struct tool_def mcp_fixture_mrtr_tools[] = {
	{ "test_missing_capability", "Needs sampling",
	  "Works only when the client declares sampling; else -32021 (conformance fixture).",
	  NO_ARGS, NULL, FX, t_missing_capability, NULL },
	{ "test_input_required_result_elicitation", "Input: elicitation",
	  MRTR("Asks the user's name (user_name)."), NO_ARGS, NULL, FX, t_elicitation, NULL },
	{ "test_input_required_result_sampling", "Input: sampling",
	  MRTR("Asks the client's model (capital_question)."), NO_ARGS, NULL, FX, t_sampling, NULL },
	{ "test_input_required_result_list_roots", "Input: roots",
	  MRTR("Asks for the client's roots (client_roots)."), NO_ARGS, NULL, FX, t_list_roots, NULL },
	{ "test_input_required_result_request_state", "Input with state",
	  MRTR("Asks for a confirmation and needs its requestState back."), NO_ARGS, NULL, FX,
	  t_request_state, NULL },
	{ "test_input_required_result_multiple_inputs", "Several inputs",
	  MRTR("Asks the user, the model and the roots at once."), NO_ARGS, NULL, FX, t_multiple, NULL },
	{ "test_input_required_result_multi_round", "Two rounds of input",
	  MRTR("Asks twice, carrying the first answer in requestState."), NO_ARGS, NULL, FX,
	  t_multi_round, NULL },
	{ "test_input_required_result_tampered_state", "Signed state",
	  MRTR("Asks for a confirmation with an HMAC-protected requestState."), NO_ARGS, NULL, FX,
	  t_tampered, NULL },
	{ "test_input_required_result_capabilities", "Only declared input",
	  MRTR("Asks only for the kinds of input the client declared."), NO_ARGS, NULL, FX,
	  t_capabilities, NULL },
	{ "test_streaming_elicitation", "Elicitation on a stream",
	  MRTR("Logs, then asks the user."), NO_ARGS, NULL, FX, t_streaming_elicitation, NULL },
	{ "test_logging_tool", "Logging (per request)",
	  "Logs three messages; a stateless request gets them only when its _meta asks for a "
	  "log level (conformance fixture).", NO_ARGS, NULL, FX, t_logging, NULL },
	{ "test_trigger_tool_change", "Tool list change",
	  "Tells subscriptions/listen streams that asked for it that the tool list changed "
	  "(conformance fixture).", NO_ARGS, NULL, FX, t_tool_change, NULL },
	{ "test_trigger_prompt_change", "Prompt list change",
	  "Tells subscriptions/listen streams that asked for it that the prompt list changed "
	  "(conformance fixture).", NO_ARGS, NULL, FX, t_prompt_change, NULL },
	{ "test_custom_headers", "Custom headers",
	  "Echoes its arguments; region, count and verbose are mirrored in Mcp-Param-Region, "
	  "-Count and -Verbose headers over HTTP (conformance fixture, SEP-2243).",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"region\"],"
	  "\"properties\":{"
	  "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\",\"description\":\"Where\"},"
	  "\"count\":{\"type\":\"integer\",\"x-mcp-header\":\"Count\"},"
	  "\"verbose\":{\"type\":\"boolean\",\"x-mcp-header\":\"Verbose\"},"
	  "\"note\":{\"type\":\"string\",\"description\":\"Not mirrored\"}}}",
	  NULL, FX, t_custom_headers, NULL },
	{ "greet", "Greet", "Says hello to name, at once (tasks conformance fixture).",
	  "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}",
	  NULL, FX, t_greet, NULL },
	{ "slow_compute", "Slow compute", "Works for seconds (0-600), then answers; a task "
	  "when it runs long (tasks conformance fixture).",
	  "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":\"number\","
	  "\"minimum\":0,\"maximum\":600},\"label\":{\"type\":\"string\"}}}",
	  NULL, FX, t_slow_compute, NULL },
	{ "failing_job", "Failing job", "Only as a task: fails with a tool error after a "
	  "second (tasks conformance fixture).", NO_ARGS, NULL, FX | TOOL_TASK, t_failing_job,
	  NULL },
	{ "protocol_error_job", "Protocol error job", "Only as a task: ends in a protocol "
	  "error (tasks conformance fixture).", NO_ARGS, NULL, FX | TOOL_TASK,
	  t_protocol_error_job, NULL },
	{ "confirm_delete", "Confirm delete", "Asks whether to delete filename, then says "
	  "what it did (tasks conformance fixture).",
	  "{\"type\":\"object\",\"properties\":{\"filename\":{\"type\":\"string\"}}}",
	  NULL, FX, t_confirm_delete, NULL },
	{ "multi_input", "Two inputs", "Asks two questions at once (tasks conformance "
	  "fixture).", NO_ARGS, NULL, FX, t_multi_input, NULL },
	{ "test_tool_with_task", "Input, then a task", "Only as a task: asks the user's "
	  "name by retry, then works a second (tasks conformance fixture).", NO_ARGS, NULL,
	  FX | TOOL_TASK, t_tool_with_task, NULL },
	{ 0 },
};

/* ---- a prompt that asks ---- */

static json_t* prompt_text(const char* context)
{
	char text[1024];
	snprintf(text, sizeof(text), "Write with this context in mind: %s", context);
	return json_pack("[{s:s, s:{s:s, s:s}}]", "role", "user", "content", "type", "text",
			"text", text);
}

static json_t* p_input(json_t* args, struct mcp_input* in)
{
	json_t* a = json_object_get(in->responses, "user_context");
	if (json_is_object(a))
		return prompt_text(accepted(in->responses, "user_context", "context", "none"));
	if (!in->can_elicit)
		return prompt_text("none (the client cannot be asked)");
	in->requests = json_pack("{s:o}", "user_context",
			elicit("What context should the prompt use?", "context", "string"));
	return NULL;
}

static json_t* p_legacy(json_t* args)
{
	return prompt_text("none (on protocol 2026-07-28 this prompt asks for it)");
}

static const struct mcp_prompt mrtr_prompts[] = {
	{ "test_input_required_result_prompt", "Prompt that asks",
	  "Asks the user for context before it is built (conformance fixture, SEP-2322)",
	  NULL, p_legacy, p_input },
	{ 0 },
};

const struct mcp_catalog mcp_fixture_mrtr_catalog = {
	.prompts = mrtr_prompts,
};
