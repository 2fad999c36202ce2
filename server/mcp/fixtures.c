/* The MCP conformance suite's fixtures (docs/MCP.md 11.2): tools, resources
 * and prompts, only with --conformance-fixtures. Also two tools of our own
 * for the integration tests: test_long_operation (progress, cancellation)
 * and test_structured_error (an error result from a tool with an
 * outputSchema). None of them needs the display. */

#include "server/mcp/mcp.h"
#include "server/mcp/core.h"
#include "base/clock.h"
#include "tools/tools.h"
#include "base/base64.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An 8x8 red PNG. */
static const unsigned char red_png[] = {
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49,
	0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x08, 0x08, 0x02,
	0x00, 0x00, 0x00, 0x4b, 0x6d, 0x29, 0xdc, 0x00, 0x00, 0x00, 0x12, 0x49, 0x44,
	0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0x80, 0x15, 0x61, 0x17, 0x1d,
	0xb4, 0x12, 0x00, 0x28, 0xff, 0x3f, 0xc1, 0x6e, 0xec, 0xdf, 0x61, 0x00, 0x00,
	0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};

static json_t* image_block(void)
{
	char* data = base64_encode(red_png, sizeof(red_png), NULL);
	json_t* out = data ? json_pack("{s:s, s:s, s:s}", "type", "image", "data", data,
			"mimeType", "image/png") : NULL;
	free(data);
	return out;
}

static void put_le(unsigned char* p, uint32_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A 0.1 s 8 kHz mono 8-bit WAV of a 440 Hz square wave. */
static json_t* audio_block(void)
{
	enum { RATE = 8000, SAMPLES = 800 };
	unsigned char wav[44 + SAMPLES];
	memcpy(wav, "RIFF", 4);
	put_le(wav + 4, 36 + SAMPLES, 4);
	memcpy(wav + 8, "WAVEfmt ", 8);
	put_le(wav + 16, 16, 4);	/* fmt chunk size */
	put_le(wav + 20, 1, 2);		/* PCM */
	put_le(wav + 22, 1, 2);		/* mono */
	put_le(wav + 24, RATE, 4);	/* sample rate */
	put_le(wav + 28, RATE, 4);	/* byte rate */
	put_le(wav + 32, 1, 2);		/* block align */
	put_le(wav + 34, 8, 2);		/* bits per sample */
	memcpy(wav + 36, "data", 4);
	put_le(wav + 40, SAMPLES, 4);
	for (int i = 0; i < SAMPLES; i++)
		wav[44 + i] = (i * 440 * 2 / RATE) % 2 ? 0xc0 : 0x40;
	char* data = base64_encode(wav, sizeof(wav), NULL);
	json_t* out = data ? json_pack("{s:s, s:s, s:s}", "type", "audio", "data", data,
			"mimeType", "audio/wav") : NULL;
	free(data);
	return out;
}

static json_t* embedded_resource(const char* uri, const char* text)
{
	return json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource", "resource",
			"uri", uri, "mimeType", "text/plain", "text", text);
}

static int t_simple_text(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	tool_result_text(out, "This is a simple text response for testing.");
	return 0;
}

static int t_image(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	return tool_result_image(out, red_png, sizeof(red_png), "image/png");
}

static int t_audio(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_t* block = audio_block();
	if (!block)
		return -ENOMEM;
	json_array_append_new(out->content, block);
	return 0;
}

static int t_embedded(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_array_append_new(out->content, embedded_resource("test://embedded-resource",
			"This is an embedded resource content."));
	return 0;
}

static int t_mixed(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	tool_result_text(out, "Multiple content types test:");
	json_array_append_new(out->content, image_block());
	json_array_append_new(out->content, embedded_resource("test://mixed-content-resource",
			"{\"test\":\"data\",\"value\":123}"));
	return 0;
}

static void log_text(struct tool_ctx* ctx, const char* level, const char* text)
{
	if (ctx->log)
		ctx->log(ctx->notify_ud, level, json_string(text));
}

static int t_logging(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	log_text(ctx, "info", "Tool execution started");
	clock_sleep_ms(50);
	log_text(ctx, "info", "Tool processing data");
	clock_sleep_ms(50);
	log_text(ctx, "info", "Tool execution completed");
	tool_result_text(out, "Tool with logging executed successfully");
	return 0;
}

static int t_error(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	tool_result_error(out, TOOL_INTERNAL, NULL,
			"This tool intentionally returns an error for testing");
	return 0;
}

static int t_progress(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	for (int p = 0; p <= 100; p += 50) {
		if (ctx->progress)
			ctx->progress(ctx->notify_ud, p, 100, NULL);
		if (p < 100)
			clock_sleep_ms(50);
	}
	tool_result_text(out, "Tool with progress completed");
	return 0;
}

static int ask(struct tool_ctx* ctx, const char* method, json_t* params,
		struct tool_result* out, json_t** result)
{
	*result = NULL;
	if (!ctx->request) {
		json_decref(params);
		tool_result_error(out, TOOL_INTERNAL, NULL, "%s needs an MCP client", method);
		return 0;
	}
	json_t* error = NULL;
	*result = ctx->request(ctx->notify_ud, method, params, &error);
	json_decref(params);
	if (!*result) {
		const char* msg = json_string_value(json_object_get(error, "message"));
		tool_result_error(out, TOOL_INTERNAL, NULL, "%s failed: %s", method,
				msg ? msg : "no answer");
		json_decref(error);
		return 0;
	}
	json_decref(error);
	return 1;
}

static int t_sampling(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	const char* prompt = tool_arg_string(args, "prompt", "");
	json_t* result;
	if (!ask(ctx, "sampling/createMessage", json_pack("{s:[{s:s, s:{s:s, s:s}}], s:i}",
			"messages", "role", "user", "content", "type", "text", "text", prompt,
			"maxTokens", 100), out, &result))
		return 0;
	const char* text = json_string_value(json_object_get(
			json_object_get(result, "content"), "text"));
	char buf[4096];
	snprintf(buf, sizeof(buf), "LLM response: %s", text ? text : "(no text)");
	tool_result_text(out, buf);
	json_decref(result);
	return 0;
}

static int elicit(struct tool_ctx* ctx, json_t* params, struct tool_result* out)
{
	json_t* result;
	if (!ask(ctx, "elicitation/create", params, out, &result))
		return 0;
	const char* action = json_string_value(json_object_get(result, "action"));
	char* content = json_dumps(json_object_get(result, "content"), JSON_COMPACT | JSON_ENCODE_ANY);
	char buf[4096];
	snprintf(buf, sizeof(buf), "User response: action=%s, content=%s",
			action ? action : "?", content ? content : "{}");
	free(content);
	tool_result_text(out, buf);
	json_decref(result);
	return 0;
}

static int t_elicitation(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	return elicit(ctx, json_pack("{s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:[s,s]}}",
			"message", tool_arg_string(args, "message", "Please provide your information"),
			"requestedSchema", "type", "object", "properties",
			"username", "type", "string", "description", "User's response",
			"email", "type", "string", "description", "User's email address",
			"required", "username", "email"), out);
}

static int t_elicitation_defaults(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_error_t jerr;
	json_t* schema = json_loads("{\"type\":\"object\",\"properties\":{"
		"\"name\":{\"type\":\"string\",\"description\":\"User name\",\"default\":\"John Doe\"},"
		"\"age\":{\"type\":\"integer\",\"description\":\"User age\",\"default\":30},"
		"\"score\":{\"type\":\"number\",\"description\":\"User score\",\"default\":95.5},"
		"\"status\":{\"type\":\"string\",\"description\":\"User status\","
		"\"enum\":[\"active\",\"inactive\",\"pending\"],\"default\":\"active\"},"
		"\"verified\":{\"type\":\"boolean\",\"description\":\"Verification status\",\"default\":true}"
		"},\"required\":[]}", 0, &jerr);
	return elicit(ctx, json_pack("{s:s, s:o}", "message",
			"Test client default value handling - please accept with defaults",
			"requestedSchema", schema), out);
}

static int t_elicitation_enums(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	json_error_t jerr;
	json_t* schema = json_loads("{\"type\":\"object\",\"properties\":{"
		"\"untitledSingle\":{\"type\":\"string\",\"description\":\"Pick one\","
		"\"enum\":[\"option1\",\"option2\",\"option3\"]},"
		"\"titledSingle\":{\"type\":\"string\",\"description\":\"Pick one\",\"oneOf\":["
		"{\"const\":\"value1\",\"title\":\"First Option\"},"
		"{\"const\":\"value2\",\"title\":\"Second Option\"},"
		"{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
		"\"legacyEnum\":{\"type\":\"string\",\"description\":\"Pick one\","
		"\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
		"\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
		"\"untitledMulti\":{\"type\":\"array\",\"description\":\"Pick some\","
		"\"items\":{\"type\":\"string\",\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
		"\"titledMulti\":{\"type\":\"array\",\"description\":\"Pick some\",\"items\":{\"anyOf\":["
		"{\"const\":\"value1\",\"title\":\"First Choice\"},"
		"{\"const\":\"value2\",\"title\":\"Second Choice\"},"
		"{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}"
		"},\"required\":[]}", 0, &jerr);
	return elicit(ctx, json_pack("{s:s, s:o}", "message",
			"Test enum schema variants - please pick options", "requestedSchema", schema), out);
}

static int t_schema_2020(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	char* text = json_dumps(args, JSON_COMPACT);
	char buf[2048];
	snprintf(buf, sizeof(buf), "Received: %s", text ? text : "{}");
	free(text);
	tool_result_text(out, buf);
	return 0;
}

static int t_reconnection(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	/* Close the POST stream before the result (SEP-1699 polling); the
	 * client gets the result by resuming with Last-Event-ID. */
	mcp_tool_close_stream(ctx);
	clock_sleep_ms(100);
	tool_result_text(out, "Reconnection test completed successfully");
	return 0;
}

static int t_long(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	int64_t duration = tool_arg_int(args, "duration_ms", 10000);
	int64_t start = clock_ms();
	int64_t next_progress = start;
	log_text(ctx, "info", "long operation started");
	for (;;) {
		int64_t now = clock_ms();
		if (ctx->cancelled && atomic_load(ctx->cancelled)) {
			tool_result_error(out, TOOL_TIMEOUT, NULL, "cancelled after %lld ms",
					(long long)(now - start));
			return 0;
		}
		if (now - start >= duration)
			break;
		if (now >= next_progress && ctx->progress) {
			ctx->progress(ctx->notify_ud, (double)(now - start), (double)duration,
					"working");
			next_progress = now + 100;
		}
		clock_sleep_ms(20);
	}
	if (ctx->progress)
		ctx->progress(ctx->notify_ud, (double)duration, (double)duration, "done");
	char buf[128];
	snprintf(buf, sizeof(buf), "long operation finished after %lld ms",
			(long long)(clock_ms() - start));
	tool_result_text(out, buf);
	return 0;
}

static int t_structured(struct tool_ctx* ctx, json_t* args, struct tool_result* out)
{
	if (tool_arg_bool(args, "fail", false)) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "asked to fail");
		return 0;
	}
	tool_result_ok(out, json_pack("{s:i}", "value", 42));
	return 0;
}

#define FX (TOOL_FIXTURE | TOOL_NO_DISPLAY | TOOL_READ_ONLY | TOOL_IDEMPOTENT)
#define NO_ARGS "{\"type\":\"object\",\"additionalProperties\":false}"

const struct tool_def mcp_fixture_tools[] = {
	{ "test_simple_text", "Simple text", "Returns a simple text response (conformance fixture).",
	  NO_ARGS, NULL, FX, t_simple_text, NULL },
	{ "test_image_content", "Image content", "Returns an image (conformance fixture).",
	  NO_ARGS, NULL, FX, t_image, NULL },
	{ "test_audio_content", "Audio content", "Returns a short WAV clip (conformance fixture).",
	  NO_ARGS, NULL, FX, t_audio, NULL },
	{ "test_embedded_resource", "Embedded resource",
	  "Returns an embedded text resource (conformance fixture).", NO_ARGS, NULL, FX, t_embedded, NULL },
	{ "test_multiple_content_types", "Mixed content",
	  "Returns text, an image and a resource (conformance fixture).", NO_ARGS, NULL, FX, t_mixed, NULL },
	{ "test_tool_with_logging", "Logging", "Sends three log notifications (conformance fixture).",
	  NO_ARGS, NULL, FX, t_logging, NULL },
	{ "test_error_handling", "Error", "Always returns an error result (conformance fixture).",
	  NO_ARGS, NULL, FX, t_error, NULL },
	{ "test_tool_with_progress", "Progress",
	  "Reports progress 0, 50, 100 of 100 (conformance fixture).", NO_ARGS, NULL, FX, t_progress, NULL },
	{ "test_sampling", "Sampling", "Asks the client's LLM via sampling/createMessage "
	  "(conformance fixture).",
	  "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\","
	  "\"description\":\"The prompt to send\"}},\"required\":[\"prompt\"]}", NULL, FX, t_sampling, NULL },
	{ "test_elicitation", "Elicitation", "Asks the user via elicitation/create (conformance fixture).",
	  "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\","
	  "\"description\":\"The message to show the user\"}},\"required\":[\"message\"]}",
	  NULL, FX, t_elicitation, NULL },
	{ "test_elicitation_sep1034_defaults", "Elicitation defaults",
	  "Elicitation with default values (conformance fixture, SEP-1034).",
	  NO_ARGS, NULL, FX, t_elicitation_defaults, NULL },
	{ "test_elicitation_sep1330_enums", "Elicitation enums",
	  "Elicitation with the enum schema variants (conformance fixture, SEP-1330).",
	  NO_ARGS, NULL, FX, t_elicitation_enums, NULL },
	{ "json_schema_2020_12_tool", "JSON Schema 2020-12",
	  "Tool with JSON Schema 2020-12 features (conformance fixture).",
	  "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
	  "\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\",\"properties\":{"
	  "\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
	  "\"properties\":{\"name\":{\"type\":\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"},"
	  "\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},"
	  "\"phone\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},"
	  "\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"
	  "\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},\"required\":[\"contactMethod\"]},"
	  "\"then\":{\"required\":[\"phone\"]},\"else\":{\"required\":[\"email\"]},"
	  "\"additionalProperties\":false}", NULL, FX, t_schema_2020, NULL },
	{ "test_reconnection", "Reconnection",
	  "Closes its SSE stream before the result; resume with Last-Event-ID "
	  "(conformance fixture, SEP-1699).", NO_ARGS, NULL, FX, t_reconnection, NULL },
	{ "test_long_operation", "Long operation",
	  "Runs for duration_ms (default 10000), reporting progress; stops when cancelled "
	  "(test fixture).",
	  "{\"type\":\"object\",\"properties\":{\"duration_ms\":{\"type\":\"integer\","
	  "\"minimum\":0,\"maximum\":60000}},\"additionalProperties\":false}", NULL, FX, t_long, NULL },
	{ "test_structured_error", "Structured error",
	  "Returns structuredContent {value}, or an error result when fail is true (test fixture).",
	  "{\"type\":\"object\",\"properties\":{\"fail\":{\"type\":\"boolean\"}},"
	  "\"additionalProperties\":false}",
	  "{\"type\":\"object\",\"properties\":{\"value\":{\"type\":\"integer\"}},"
	  "\"required\":[\"value\"]}", FX, t_structured, NULL },
	{ 0 },
};

/* Resources. */
static json_t* fixture_resources(void)
{
	return json_pack("[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]",
			"uri", "test://static-text", "name", "Static text",
			"description", "A static text resource (conformance fixture)",
			"mimeType", "text/plain",
			"uri", "test://static-binary", "name", "Static binary",
			"description", "A static PNG (conformance fixture)", "mimeType", "image/png",
			"uri", "test://watched-resource", "name", "Watched resource",
			"description", "A resource to subscribe to (conformance fixture)",
			"mimeType", "text/plain");
}

static json_t* fixture_resource_templates(void)
{
	return json_pack("[{s:s, s:s, s:s, s:s}]", "uriTemplate", "test://template/{id}/data",
			"name", "Template data", "description",
			"Data for an id (conformance fixture)", "mimeType", "application/json");
}

static json_t* fixture_contents(const char* uri)
{
	if (strcmp(uri, "test://static-text") == 0)
		return json_pack("[{s:s, s:s, s:s}]", "uri", uri, "mimeType", "text/plain",
				"text", "This is the content of the static text resource.");
	if (strcmp(uri, "test://watched-resource") == 0)
		return json_pack("[{s:s, s:s, s:s}]", "uri", uri, "mimeType", "text/plain",
				"text", "Watched resource content.");
	if (strcmp(uri, "test://static-binary") == 0) {
		char* data = base64_encode(red_png, sizeof(red_png), NULL);
		json_t* out = data ? json_pack("[{s:s, s:s, s:s}]", "uri", uri,
				"mimeType", "image/png", "blob", data) : NULL;
		free(data);
		return out;
	}
	const char* prefix = "test://template/", *suffix = "/data";
	size_t plen = strlen(prefix), slen = strlen(suffix), len = strlen(uri);
	if (len > plen + slen && strncmp(uri, prefix, plen) == 0
			&& strcmp(uri + len - slen, suffix) == 0) {
		char id[256];
		size_t n = len - plen - slen;
		if (n >= sizeof(id) || memchr(uri + plen, '/', n))
			return NULL;
		memcpy(id, uri + plen, n);
		id[n] = '\0';
		char data[512];
		snprintf(data, sizeof(data), "Data for ID: %s", id);
		json_t* obj = json_pack("{s:s, s:b, s:s}", "id", id, "templateTest", 1, "data", data);
		char* text = json_dumps(obj, JSON_COMPACT);
		json_decref(obj);
		json_t* out = text ? json_pack("[{s:s, s:s, s:s}]", "uri", uri,
				"mimeType", "application/json", "text", text) : NULL;
		free(text);
		return out;
	}
	return NULL;
}

/* Prompts. */
static json_t* text_message(const char* text)
{
	return json_pack("{s:s, s:{s:s, s:s}}", "role", "user", "content",
			"type", "text", "text", text);
}

static json_t* p_simple(json_t* args)
{
	return json_pack("[o]", text_message("This is a simple prompt for testing."));
}

static json_t* p_args(json_t* args)
{
	char text[2048];
	snprintf(text, sizeof(text), "Prompt with arguments: arg1='%s', arg2='%s'",
			json_string_value(json_object_get(args, "arg1")),
			json_string_value(json_object_get(args, "arg2")));
	return json_pack("[o]", text_message(text));
}

static json_t* p_resource(json_t* args)
{
	const char* uri = json_string_value(json_object_get(args, "resourceUri"));
	return json_pack("[{s:s, s:o}, o]", "role", "user", "content",
			embedded_resource(uri, "Embedded resource content for testing."),
			text_message("Please process the embedded resource above."));
}

static json_t* p_image(json_t* args)
{
	return json_pack("[{s:s, s:o}, o]", "role", "user", "content", image_block(),
			text_message("Please analyze the image above."));
}

static const struct mcp_prompt_arg args_args[] = {
	{ "arg1", "First test argument", true },
	{ "arg2", "Second test argument", true },
	{ 0 },
};

static const struct mcp_prompt_arg resource_args[] = {
	{ "resourceUri", "URI of the resource to embed", true },
	{ 0 },
};

static const struct mcp_prompt fixture_prompts[] = {
	{ "test_simple_prompt", "Simple prompt", "A simple prompt without arguments (conformance fixture)",
	  NULL, p_simple, NULL },
	{ "test_prompt_with_arguments", "Prompt with arguments",
	  "A prompt with required arguments (conformance fixture)", args_args, p_args, NULL },
	{ "test_prompt_with_embedded_resource", "Prompt with resource",
	  "A prompt with an embedded resource (conformance fixture)", resource_args, p_resource, NULL },
	{ "test_prompt_with_image", "Prompt with image", "A prompt with an image (conformance fixture)",
	  NULL, p_image, NULL },
	{ 0 },
};

static json_t* fixture_resource_read(const char* uri, int* code, char* message,
		size_t size, json_t** data)
{
	json_t* contents = fixture_contents(uri);
	return contents ? json_pack("{s:o}", "contents", contents) : NULL;
}

const struct mcp_catalog mcp_fixture_catalog = {
	.prompts = fixture_prompts,
	.resources = fixture_resources,
	.resource_templates = fixture_resource_templates,
	.resource_read = fixture_resource_read,
};
