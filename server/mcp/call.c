/* A request in progress, for both eras: tools/call's argument checks, the
 * tool context's progress and log notifications, cancellation, the run on
 * a worker, result shaping and the one answer. The era adapters (mcp.c,
 * modern.c) embed struct mcp_call, keep their own list of calls and fill
 * struct mcp_call_ops; see core.h. */

#include "server/mcp/core.h"
#include "base/log.h"
#include "base/worker.h"
#include "tools/tools.h"

#include <errno.h>
#include <string.h>

void mcp_call_init(struct mcp_call* c, const struct mcp_call_ops* ops, struct mcp_sink* sink,
		json_t* id, json_t* params)
{
	c->ops = ops;
	mcp_sink_ref(sink);
	c->sink = sink;
	c->id = json_incref(id);
	c->params = json_incref(params);
	json_t* token = json_object_get(json_object_get(params, "_meta"), "progressToken");
	if (json_is_string(token) || json_is_integer(token))
		c->progress_token = json_incref(token);
	atomic_init(&c->cancelled, false);
	atomic_init(&c->finished, false);
	atomic_init(&c->answered, false);
}

/* Notifications go to the request's stream while it waits for its answer. */
static bool call_streams(struct mcp_call* c)
{
	return !atomic_load(&c->cancelled) && !atomic_load(&c->finished)
			&& !atomic_load(&c->answered);
}

enum mcp_tool_check mcp_call_check_tool(json_t* params, const struct tool_def** tool,
		json_t** args)
{
	const char* name = json_string_value(json_object_get(params, "name"));
	*tool = name ? tools_find(name) : NULL;
	*args = json_object_get(params, "arguments");
	if (json_is_null(*args))
		*args = NULL;
	if (!name)
		return MCP_TOOL_NO_NAME;
	if (!*tool)
		return MCP_TOOL_UNKNOWN;
	if (*args && !json_is_object(*args))
		return MCP_TOOL_BAD_ARGUMENTS;
	return MCP_TOOL_OK;
}

static void call_progress(void* ud, double progress, double total, const char* message)
{
	struct mcp_call* c = ud;
	if (c->progress_token && call_streams(c))
		mcp_send_progress(c->sink, c->progress_token, progress, total, message);
}

/* notifications/message at or above the level the era says (none below 0). */
static void call_log(void* ud, const char* level, json_t* data)
{
	struct mcp_call* c = ud;
	int li = mcp_log_level_index(level);
	if (li < 0)
		li = 1;
	int min = c->ops->log_level(c);
	if (min < 0 || li < min || !call_streams(c)) {
		json_decref(data);
		return;
	}
	json_t* params = json_pack("{s:s, s:s, s:o}", "level", mcp_log_level_name(li),
			"logger", "deskd", "data", data ? data : json_null());
	if (params)
		mcp_send_notification(c->sink, "notifications/message", params);
}

struct tool_ctx mcp_call_ctx(struct mcp_call* c)
{
	return (struct tool_ctx){
		.source = "mcp",
		.cancelled = &c->cancelled,
		.progress = call_progress,
		.log = call_log,
		.notify_ud = c,
	};
}

void mcp_tool_close_stream(struct tool_ctx* ctx)
{
	if (!ctx || !ctx->source || strcmp(ctx->source, "mcp") != 0 || !ctx->notify_ud)
		return;
	struct mcp_call* c = ctx->notify_ud;
	if (c->sink->impl->close_stream)
		c->sink->impl->close_stream(c->sink);
}

void mcp_call_cancel(struct mcp_call* c)
{
	atomic_store(&c->cancelled, true);
}

void mcp_call_finish(struct mcp_call* c, int status, json_t* response)
{
	atomic_store(&c->finished, true);
	c->ops->unlink(c);
	if (atomic_load(&c->answered)) {
		/* answered already (a task): nothing more to send */
	} else if (atomic_load(&c->cancelled)) {
		c->sink->impl->done(c->sink, NULL);
	} else {
		if (!response)
			response = mcp_error_response(NULL, RPC_INTERNAL,
					"Internal error: out of memory", NULL);
		if (status != 200 && c->sink->impl->status)
			c->sink->impl->status(c->sink, status);
		c->sink->impl->done(c->sink, response);
	}
	json_decref(response);
	mcp_sink_unref(c->sink);
	json_decref(c->id);
	json_decref(c->params);
	json_decref(c->progress_token);
	c->ops->release(c);
}

void mcp_call_answer(struct mcp_call* c, json_t* response)
{
	if (!response)
		response = mcp_error_response(c->id, RPC_INTERNAL, "Internal error: out of memory",
				NULL);
	atomic_store(&c->answered, true);
	c->sink->impl->done(c->sink, response);
	json_decref(response);
}

/* The plain JSON-RPC shapes (the session era's). */
static json_t* plain_tool_response(struct mcp_call* c, struct tool_result* res, int* status)
{
	json_t* result = tool_result_to_json(res);
	json_t* response = result ? mcp_result_response(c->id, result) : NULL;
	json_decref(result);
	return response ? response : mcp_error_response(c->id, RPC_INTERNAL, "out of memory", NULL);
}

static json_t* plain_method_response(struct mcp_call* c, json_t* result,
		struct mcp_rpc_error* err, int* status)
{
	json_t* response = result ? mcp_result_response(c->id, result)
			: mcp_error_response(c->id, err->code, err->message, NULL);
	json_decref(err->data);
	json_decref(result);
	return response ? response : mcp_error_response(c->id, RPC_INTERNAL, "out of memory", NULL);
}

void mcp_call_run(void* ud)
{
	struct mcp_call* c = ud;
	json_t* response;
	int status = 200;
	if (c->tool) {
		struct tool_result res;
		tools_call(c->tool, &c->ctx, c->args, &res);
		response = (c->ops->tool_response ? c->ops->tool_response
				: plain_tool_response)(c, &res, &status);
		tool_result_deinit(&res);
	} else if (c->job) {
		struct mcp_rpc_error err = { RPC_INTERNAL, "internal error", NULL };
		json_t* result = c->job->fn(c->params, &err);
		response = (c->ops->method_response ? c->ops->method_response
				: plain_method_response)(c, result, &err, &status);
	} else {
		/* A call with nothing to run is a bug here, not a crash. */
		response = mcp_error_response(c->id, RPC_INTERNAL,
				"Internal error: nothing to run", NULL);
	}
	mcp_call_finish(c, status, response);
}

void mcp_call_start(struct mcp_call* c, bool inline_mode, int busy_status)
{
	if (inline_mode) {
		mcp_call_run(c);
		return;
	}
	/* Never run a tool on the transport's thread: answer busy instead. */
	int rc = worker_spawn(mcp_call_run, c);
	if (rc < 0) {
		log_warn("mcp: cannot start %s: %s", c->tool ? c->tool->name : "a request",
				rc == -EAGAIN ? "all workers busy" : strerror(-rc));
		mcp_call_finish(c, busy_status, mcp_error_response(c->id, RPC_INTERNAL,
				rc == -EAGAIN ? "Server busy: too many requests in progress; retry shortly"
				: "Internal error: cannot start a worker", NULL));
	}
}
