/* JSON-RPC 2.0 for both eras: message shapes, responses and errors,
 * notifications on a sink, and the MCP log levels. See core.h. */

#include "server/mcp/core.h"
#include "base/jsonmem.h"
#include "base/text.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char* const log_levels[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};

int mcp_log_level_index(const char* name)
{
	for (size_t i = 0; name && i < sizeof(log_levels) / sizeof(log_levels[0]); i++)
		if (strcmp(log_levels[i], name) == 0)
			return (int)i;
	return -1;
}

const char* mcp_log_level_name(int index)
{
	return log_levels[index];
}

/* ---- JSON-RPC helpers ---- */

static bool valid_id(json_t* id)
{
	return json_is_string(id) || json_is_integer(id);
}

enum mcp_msg_kind mcp_message_kind(json_t* msg)
{
	if (!json_is_object(msg))
		return MCP_MSG_INVALID;
	json_t* version = json_object_get(msg, "jsonrpc");
	if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0)
		return MCP_MSG_INVALID;
	json_t* method = json_object_get(msg, "method");
	json_t* id = json_object_get(msg, "id");
	json_t* params = json_object_get(msg, "params");
	if (method) {
		if (!json_is_string(method))
			return MCP_MSG_INVALID;
		if (params && !json_is_object(params) && !json_is_array(params))
			return MCP_MSG_INVALID;
		if (!id)
			return MCP_MSG_NOTIFICATION;
		return valid_id(id) ? MCP_MSG_REQUEST : MCP_MSG_INVALID;
	}
	json_t* result = json_object_get(msg, "result");
	json_t* error = json_object_get(msg, "error");
	if ((result != NULL) == (error != NULL))
		return MCP_MSG_INVALID;
	if (!valid_id(id) && !(error && json_is_null(id)))
		return MCP_MSG_INVALID;
	return MCP_MSG_RESPONSE;
}

/* Built once, early: what an error becomes when nothing else can be built. */
static json_t* fallback_error;
static pthread_once_t fallback_once = PTHREAD_ONCE_INIT;

static void fallback_init(void)
{
	fallback_error = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
			"error", "code", -32603, "message", "Internal error");
}

json_t* mcp_error_response(json_t* id, int code, const char* message, json_t* data)
{
	/* Messages quote the client (names, URIs) and may have been cut:
	 * repair them instead of failing. Never NULL, which sinks read as
	 * "cancelled" and would answer nothing. */
	json_t* err = json_pack("{s:i, s:o}", "code", code, "message",
			text_json_string(message ? message : "Internal error"));
	if (err && data)
		json_object_set_new(err, "data", data);
	else
		json_decref(data);
	json_t* out = err ? json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0",
			"id", valid_id(id) ? id : json_null(), "error", err) : NULL;
	if (!out) {
		pthread_once(&fallback_once, fallback_init);
		out = json_incref(fallback_error);
	}
	return out;
}

void mcp_jsonrpc_init(void)
{
	pthread_once(&fallback_once, fallback_init);
}

json_t* mcp_result_response(json_t* id, json_t* result)
{
	return result ? json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", id,
			"result", result) : NULL;
}

/* 15 significant digits: every double prints as the shortest text that
 * reads back the same for the values deskd sends (0.3, not jansson's
 * default %.17g 0.29999999999999999). */
char* mcp_dump(json_t* msg)
{
	return jsonmem_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
}

json_t* mcp_parse_error(const json_error_t* jerr)
{
	char reason[256];
	switch (json_error_code(jerr)) {
	case json_error_invalid_utf8:
		snprintf(reason, sizeof(reason), "invalid UTF-8 at byte %d", jerr->position);
		break;
	case json_error_premature_end_of_input:
		snprintf(reason, sizeof(reason), "the JSON text ends early (byte %d)", jerr->position);
		break;
	default:
		snprintf(reason, sizeof(reason), "%s (byte %d)", jerr->text, jerr->position);
		break;
	}
	return mcp_error_response(NULL, RPC_PARSE_ERROR, "Parse error",
			json_pack("{s:s}", "reason", reason));
}

void mcp_sink_ref(struct mcp_sink* sink)
{
	if (sink->impl->ref)
		sink->impl->ref(sink);
}

void mcp_sink_unref(struct mcp_sink* sink)
{
	if (sink->impl->unref)
		sink->impl->unref(sink);
}

void mcp_send_notification(struct mcp_sink* sink, const char* method, json_t* params)
{
	json_t* msg = json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0",
			"method", method, "params", params);
	if (msg)
		sink->impl->message(sink, msg);
	json_decref(msg);
}

/* A whole number as an integer, else milliseconds' precision (seconds
 * waited are the usual progress). */
static json_t* progress_number(double v)
{
	double ms = round(v * 1000.0) / 1000.0;
	return ms == floor(ms) && fabs(ms) < 9e15 ? json_integer((json_int_t)ms) : json_real(ms);
}

void mcp_send_progress(struct mcp_sink* sink, json_t* token, double progress, double total,
		const char* message)
{
	json_t* params = json_pack("{s:O, s:o}", "progressToken", token, "progress",
			progress_number(progress));
	if (!params)
		return;
	if (total > 0)
		json_object_set_new(params, "total", progress_number(total));
	if (message)
		json_object_set_new(params, "message", json_string(message));
	mcp_send_notification(sink, "notifications/progress", params);
}
