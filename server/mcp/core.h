#pragma once

/* MCP core, private to server/mcp/ and the fuzz
 * harness: JSON-RPC and the lifecycle, independent of the transport.
 *
 * A transport parses messages and hands each one to mcp_session_handle()
 * together with a sink: the stream the answers to that message go to (a POST
 * response, an SSE stream, stdout). The core calls the sink's message() for
 * notifications and server -> client requests that belong to a request in
 * progress, and done() exactly once per request with its response (NULL when
 * the request was cancelled: then nothing is sent). Sinks are refcounted;
 * the core holds a reference while a request is in progress. */

#include "tools/tools.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MCP_VERSION_LATEST "2025-11-25"
#define MCP_VERSION_LEGACY "2025-03-26"

struct mcp_session;
struct mcp_sink;
struct tool_ctx;

struct mcp_sink_impl {
	/** A message (borrowed) related to a request in progress; any thread. */
	int (*message)(struct mcp_sink* self, json_t* msg);
	/** A request finished: its response (borrowed), or NULL if cancelled. */
	void (*done)(struct mcp_sink* self, json_t* response);
	/** Optional: drop the connection now but keep the stream resumable. */
	void (*close_stream)(struct mcp_sink* self);
	void (*ref)(struct mcp_sink* self);
	void (*unref)(struct mcp_sink* self);
	/** Optional (modern era over HTTP): the HTTP status for the response
	 *  the next done() carries (400, 404), when it is not 200. */
	void (*status)(struct mcp_sink* self, int status);
	/** Optional (modern era over HTTP): the request's cancellation flag;
	 *  the sink sets it when the client closes the response stream, until
	 *  done() (the flag lives that long). */
	void (*watch)(struct mcp_sink* self, atomic_bool* cancelled);
};

struct mcp_sink {
	const struct mcp_sink_impl* impl;
	bool read_only;		/* the caller holds the view token */
};

/* ---- Answers decided later (later.c) ----
 * A call over HTTP answers plain JSON when it sends nothing before its
 * result; one still running after MCP_STREAM_AFTER_MS (or that sends a
 * notification or a request first) gets an SSE stream instead. A call that
 * may become a task (tasks.c) decides sooner, after MCP_TASK_AFTER_MS, so
 * that its CreateTaskResult is plain JSON too. */
#define MCP_STREAM_AFTER_MS 250
#define MCP_TASK_AFTER_MS 150
/** After after_ms from started_ms, fire(ud) on the watcher thread unless
 *  settled(ud) says there is nothing left to decide (both are also asked
 *  meanwhile; they take ud's own locks); then unref(ud), which drops the
 *  reference the caller gave with ud. */
void mcp_later(void* ud, int64_t started_ms, int after_ms, bool (*settled)(void* ud),
		void (*fire)(void* ud), void (*unref)(void* ud));

/* JSON-RPC error codes, for both eras. */
enum mcp_rpc_code {
	RPC_PARSE_ERROR = -32700,
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_INVALID_PARAMS = -32602,
	RPC_INTERNAL = -32603,
	RPC_RESOURCE_NOT_FOUND = -32002,	/* the session era's; 2026-07-28 answers -32602 */
};

enum mcp_msg_kind {
	MCP_MSG_INVALID = 0,
	MCP_MSG_REQUEST,
	MCP_MSG_NOTIFICATION,
	MCP_MSG_RESPONSE,
};

/** Is this a protocol version we speak? */
bool mcp_version_supported(const char* version);
/** Classify a parsed message (JSON-RPC 2.0 shape checks only). */
enum mcp_msg_kind mcp_message_kind(json_t* msg);
/** {"jsonrpc":"2.0","id":id|null,"error":{code,message,data?}}; id borrowed,
 *  data stolen (may be NULL). New reference. */
json_t* mcp_error_response(json_t* id, int code, const char* message, json_t* data);
/** The -32700 response for a parse failure, with a readable reason. New reference. */
json_t* mcp_parse_error(const json_error_t* jerr);
/** Compact one-line JSON text (malloc'd), or NULL. */
char* mcp_dump(json_t* msg);
/** {"jsonrpc":"2.0","id":id,"result":result}; both borrowed. New reference,
 *  or NULL (also when result is NULL). */
json_t* mcp_result_response(json_t* id, json_t* result);
/** Build the last-resort error response now, while memory is plenty;
 *  idempotent, any thread. */
void mcp_jsonrpc_init(void);
/** The sink's ref()/unref(), when it has them. */
void mcp_sink_ref(struct mcp_sink* sink);
void mcp_sink_unref(struct mcp_sink* sink);
/** The index of an MCP log level name (debug 0 ... emergency 7), or -1. */
int mcp_log_level_index(const char* name);
/** The name of a log level index from mcp_log_level_index(). */
const char* mcp_log_level_name(int index);

/** A random UUIDv4 (sessions, tasks), from getrandom. */
void mcp_uuid(char out[40]);
/** A new session with a random UUIDv4 id (one reference). NULL on failure. */
struct mcp_session* mcp_session_new(void);
void mcp_session_ref(struct mcp_session* self);
void mcp_session_unref(struct mcp_session* self);
const char* mcp_session_id(const struct mcp_session* self);
/** The transport's name in events' actor ("mcp" unless set; stdio: "stdio").
 *  via must be a literal. Before the first request. */
void mcp_session_set_via(struct mcp_session* self, const char* via);
/** The negotiated version, or NULL before initialize. Stable once set. */
const char* mcp_session_version(struct mcp_session* self);
/** Run tool calls and other work on the calling thread and fail server ->
 *  client requests at once (fuzzing: no client, no workers). */
void mcp_session_set_inline(struct mcp_session* self, bool on);
/** Transport data: end_fn runs when the session ends (close its streams),
 *  free_fn when the session is freed. Either may be NULL. */
void mcp_session_set_transport(struct mcp_session* self, void* data,
		void (*end_fn)(void* data), void (*free_fn)(void* data));
void* mcp_session_transport(struct mcp_session* self);
/** Optional: busy_fn(data) says whether the transport has a stream open (a
 *  client still connected): such a session is not idle, so it neither
 *  expires nor is ended to make room. Any thread; takes only its own locks. */
void mcp_session_set_transport_busy(struct mcp_session* self, bool (*busy_fn)(void* data));
/** Milliseconds since the last message; 0 while a request is in progress or
 *  the transport is busy. */
int64_t mcp_session_idle_ms(struct mcp_session* self);
/** End the session: cancel calls in progress, wake their pending server ->
 *  client requests, finalize its recordings. Idempotent; may block briefly. */
void mcp_session_end(struct mcp_session* self);
bool mcp_session_ended(struct mcp_session* self);

/** Handle one parsed message (borrowed). Returns 1 if it was a request or
 *  invalid (sink->done will be called exactly once, maybe before this
 *  returns), 0 for a notification or a response. */
int mcp_session_handle(struct mcp_session* self, json_t* msg, struct mcp_sink* sink);
/** Parse text (one message or a batch) and handle it. Parse errors and bad
 *  batches are answered through sink->done. For stdio and fuzzing. */
void mcp_session_handle_text(struct mcp_session* self, const char* text,
		size_t len, struct mcp_sink* sink);

/* The session registry (HTTP sessions; stdio's one session counts too). */
/** Add a pinned session (stdio's: never expires, never ended to make room);
 *  takes its own reference. */
int mcp_registry_add(struct mcp_session* session);
/** Add a session of quota class owner (>= 0; HTTP: the token's role), making
 *  room first: when owner holds owner_max sessions, or all hold total_max,
 *  one idle session (no call in progress, no open stream; never-used ones
 *  first, then the least recently active) of that owner, or of any owner
 *  when the total is the limit, leaves the registry and is returned in
 *  *evicted for the caller to end off its thread. -EBUSY when none is idle.
 *  Takes its own reference to session. */
int mcp_registry_admit(struct mcp_session* session, int owner, int owner_max,
		int total_max, struct mcp_session** evicted);
/** Find by id: a new reference, or NULL. */
struct mcp_session* mcp_registry_find(const char* id);
/** Remove by id: returns the registry's reference, or NULL. */
struct mcp_session* mcp_registry_remove(const char* id);
/** At shutdown (mcp_shutdown): stop the reaper, end every session. */
void mcp_sessions_shutdown(void);
/** Start the reaper thread (idle expiry: --session-timeout, and
 *  --new-session-timeout for sessions that made no request). */
int mcp_registry_start(void);

/** Send a JSON-RPC notification on the sink (params stolen); both eras. */
void mcp_send_notification(struct mcp_sink* sink, const char* method, json_t* params);
/** notifications/progress for token (borrowed); total <= 0 and message
 *  NULL are left out. */
void mcp_send_progress(struct mcp_sink* sink, json_t* token, double progress, double total,
		const char* message);

/** For fixtures: close the current tool call's SSE connection now (the
 *  result is delivered when the client resumes with Last-Event-ID). */
void mcp_tool_close_stream(struct tool_ctx* ctx);

/* Prompts (catalog.c has deskd's, fixtures.c the fixtures'). */
struct mcp_prompt_arg {
	const char* name;
	const char* description;
	bool required;
};

struct mcp_input;

struct mcp_prompt {
	const char* name;
	const char* title;
	const char* description;
	const struct mcp_prompt_arg* args;	/* ended by { 0 }, or NULL */
	/** Messages array (new reference); args is an object of strings in
	 *  which every required argument is present. */
	json_t* (*get)(json_t* args);
	/** Optional, used instead of get on the modern path: may ask the client
	 *  for input (set in->requests and return NULL). */
	json_t* (*get_input)(json_t* args, struct mcp_input* in);
};

/* JSON-RPC error codes a catalog may answer with. */
enum {
	MCP_INTERNAL = -32603,
	MCP_RESOURCE_NOT_FOUND = -32002,
};

/* Content besides tools: prompts and resources. The core serves what the
 * registered catalogs (mcp_catalog_add) offer, in the order added; deskd's
 * own is catalog.c, the conformance fixtures' fixtures.c. */
struct mcp_catalog {
	const struct mcp_prompt* prompts;	/* ended by { 0 }, or NULL */
	/** Resource objects / ResourceTemplate objects (new references). */
	json_t* (*resources)(void);
	json_t* (*resource_templates)(void);
	/** The resources/read result for uri (new reference). NULL with *code
	 *  0 when uri is not this catalog's; else NULL with *code (JSON-RPC),
	 *  message, and optionally *data (new reference) set. */
	json_t* (*resource_read)(const char* uri, int* code, char* message,
			size_t size, json_t** data);
	/** Append completion values (strings starting with prefix) for argument
	 *  of uri_template; false when the template is not this catalog's. */
	bool (*complete)(const char* uri_template, const char* argument,
			const char* prefix, json_t* values);
};

/* ---- MCP 2026-07-28: the modern, stateless era (modern.c) ----
 * A request whose params._meta names a protocol version that is not a
 * legacy one (or, over HTTP, whose MCP-Protocol-Version header does) is
 * served statelessly: no session, no initialize, per-request capabilities,
 * input-required results instead of server -> client requests. Everything
 * else keeps the legacy session path (docs/MCP.md 10). */

#define MCP_VERSION_MODERN "2026-07-28"
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"

enum {
	MCP_HEADER_MISMATCH = -32020,
	MCP_MISSING_CAPABILITY = -32021,
	MCP_UNSUPPORTED_VERSION = -32022,
};

/** A protocol version of the initialize era (2025-11-25 and earlier)? */
bool mcp_version_legacy(const char* version);
/** Does an MCP-Protocol-Version header (NULL: absent) name a version that is
 *  not a legacy one? */
bool mcp_header_modern(const char* header_version);
/** Does this message ask for the modern era? header_version is the HTTP
 *  MCP-Protocol-Version header (NULL on stdio or when absent). Arrays,
 *  responses and anything naming a legacy version are legacy. */
bool mcp_is_modern(json_t* msg, const char* header_version);

/* Where a modern request came from. */
struct mcp_request_env {
	const char* transport;		/* "http" or "stdio" */
	const char* principal;		/* the caller's role ("agent", "person", "view", "stdio"):
					 * requestState is bound to it */
	bool read_only;			/* the view token */
	/* HTTP: header lookup for the SEP-2243 checks; NULL on stdio. */
	const char* (*header)(void* ud, const char* name);
	void* header_ud;
};

/** Handle one parsed modern message (borrowed). For a request, sink->done
 *  is called exactly once (after sink->impl->status when the answer is not
 *  a 200 over HTTP); returns 1. Notifications: 0. */
int mcp_modern_handle(json_t* msg, const struct mcp_request_env* env, struct mcp_sink* sink);
/** notifications/cancelled on stdio: stop the modern call or end the
 *  subscriptions/listen stream with this id (no response follows). */
void mcp_modern_cancel(json_t* request_id);
/** A list changed ("tools", "prompts", "resources"): notify the listen
 *  streams that asked for it. */
void mcp_modern_list_changed(const char* kind);
/** At shutdown: end every listen stream (cancelled notification and the
 *  graceful result), cancel modern calls. */
void mcp_modern_shutdown(void);
/** For tests and fuzzing: end every listen stream as at shutdown, but keep
 *  serving. */
void mcp_modern_reset(void);
/** Open listen streams (for status and tests). */
int mcp_modern_listeners(void);

/* The methods that need no session (tools/list, resources/list,
 * resources/templates/list, resources/read, prompts/list, prompts/get,
 * completion/complete): one table for both eras. */
struct mcp_rpc_error {
	int code;
	char message[512];
	json_t* data;		/* new reference, or NULL */
};

/** Fill err (the message may quote the client: it is repaired) and return
 *  NULL, for a method to return. */
json_t* mcp_fail(struct mcp_rpc_error* err, int code, const char* fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct mcp_method {
	const char* name;
	/** The result (new reference), or NULL with err filled. params may be
	 *  NULL; any thread. */
	json_t* (*fn)(json_t* params, struct mcp_rpc_error* err);
	bool async;		/* may block: the session era runs it on a worker */
};

/** The method of that name, or NULL. */
const struct mcp_method* mcp_method_find(const char* name);
/** Run the method of that name; NULL with *code, msg and *data (new
 *  reference or NULL) on error, -32601 when there is no such method. */
json_t* mcp_method_call(const char* method, json_t* params, int* code, char* msg,
		size_t msg_size, json_t** data);
struct mcp_prompt;
/** A prompt of the registered catalogs by name, or NULL. */
const struct mcp_prompt* mcp_prompt_find(const char* name);
/** At shutdown: drop the cached tools/list pages. */
void mcp_methods_shutdown(void);

/* ---- A request in progress, for both eras (call.c) ----
 * An era adapter embeds struct mcp_call as its first member, fills it with
 * mcp_call_init() and its tool context with mcp_call_ctx(), links it into
 * its own list of calls and starts it; the core runs it and answers once
 * through mcp_call_finish(), which calls back into the era's ops. */

struct mcp_call;

struct mcp_call_ops {
	/** The lowest log level index to send as notifications/message now,
	 *  or -1 for none; any thread. */
	int (*log_level)(struct mcp_call* c);
	/** Optional: a tool's result as the response (new reference, or NULL
	 *  when out of memory) and its HTTP status in *status (200 as given).
	 *  NULL: the plain JSON-RPC result. */
	json_t* (*tool_response)(struct mcp_call* c, struct tool_result* res, int* status);
	/** Optional: a method's result (stolen; NULL on error with err filled,
	 *  its data stolen) as the response. NULL: the plain JSON-RPC shape,
	 *  error data left out. */
	json_t* (*method_response)(struct mcp_call* c, json_t* result,
			struct mcp_rpc_error* err, int* status);
	/** The call is finished: take it off the era's list (before the answer). */
	void (*unlink)(struct mcp_call* c);
	/** Free the era's part and c itself (after the answer). */
	void (*release)(struct mcp_call* c);
};

struct mcp_call {
	const struct mcp_call_ops* ops;
	struct mcp_call* next;		/* the era's list of calls in progress */
	struct mcp_sink* sink;		/* reference */
	json_t* id;
	json_t* params;			/* the request's params (reference) */
	json_t* progress_token;		/* params._meta.progressToken, or NULL */
	const struct tool_def* tool;	/* tools/call: the tool ... */
	json_t* args;			/* ... and params.arguments (borrowed), or NULL */
	const struct mcp_method* job;	/* or a method to run */
	atomic_bool cancelled;
	atomic_bool finished;
	atomic_bool answered;		/* mcp_call_answer() ran: finish sends nothing */
	struct mcp_task* task;		/* the task it may become (tasks.c), or NULL */
	struct tool_ctx ctx;		/* the era fills it from mcp_call_ctx() */
};

/** Take references to sink, id and params; pick the progress token. */
void mcp_call_init(struct mcp_call* c, const struct mcp_call_ops* ops, struct mcp_sink* sink,
		json_t* id, json_t* params);

enum mcp_tool_check {
	MCP_TOOL_OK = 0,
	MCP_TOOL_NO_NAME,		/* params.name is missing */
	MCP_TOOL_UNKNOWN,		/* no tool of that name */
	MCP_TOOL_BAD_ARGUMENTS,		/* params.arguments is not an object */
};

/** tools/call's params: the tool, and its arguments (borrowed; NULL when
 *  absent or null). The era words the refusal. */
enum mcp_tool_check mcp_call_check_tool(json_t* params, const struct tool_def** tool,
		json_t** args);
/** The tool context's MCP part: source, cancellation, progress and log
 *  notifications; the era adds the rest. */
struct tool_ctx mcp_call_ctx(struct mcp_call* c);
/** Run the call (tool or method) on this thread and finish it. */
void mcp_call_run(void* call);
/** Run the call on a worker (inline_mode: here); when no worker can take it,
 *  finish it with busy_status and a "Server busy" error. */
void mcp_call_start(struct mcp_call* c, bool inline_mode, int busy_status);
/** Ask the call to stop; any thread. */
void mcp_call_cancel(struct mcp_call* c);
/** Answer the call (response stolen; NULL: out of memory) with this HTTP
 *  status, or nothing when cancelled or answered already; then free it.
 *  Once per call. */
void mcp_call_finish(struct mcp_call* c, int status, json_t* response);
/** Answer now (response stolen), before the call ends: a task's
 *  CreateTaskResult. The call runs on; it sends nothing more (no progress,
 *  no log) and its finish only frees it. At most once, before finish. */
void mcp_call_answer(struct mcp_call* c, json_t* response);

/* Input for a prompt on the modern path (multi round-trip requests). */
struct mcp_input {
	json_t* responses;		/* inputResponses of the retry, or NULL */
	json_t* state;			/* verified state from the last round, or NULL */
	bool can_elicit, can_sample, can_list_roots;
	json_t* requests;		/* out: InputRequests to ask for (stolen) */
	json_t* new_state;		/* out: state for the next round (stolen) */
};

/* requestState (state.c): integrity-protected, short-lived, single-use
 * state a stateless server hands the client with an input-required result.
 * The token is base64(payload) "." base64(HMAC-SHA-256(payload)) under a
 * per-process key from getrandom(); the payload binds the method, the
 * target (tool or prompt name), a SHA-256 of the canonical arguments, the
 * caller's principal, an expiry and a nonce. */
/** Seal state (borrowed, may be NULL) for a retry of this request.
 *  malloc'd token, or NULL when out of memory. */
char* mcp_state_seal(json_t* state, const char* method, const char* target,
		json_t* args, const char* principal);
/** Verify and consume a token for this request: the state (new reference;
 *  json null when none was sealed), or NULL with a reason in why (tampered,
 *  expired, another request, already used). */
json_t* mcp_state_open(const char* token, const char* method, const char* target,
		json_t* args, const char* principal, char* why, size_t why_size);

/* ---- Tasks (tasks.c): the io.modelcontextprotocol/tasks extension ----
 * A modern tools/call whose request declares the extension gets a task
 * that stays unseen unless the call outlives MCP_TASK_AFTER_MS or asks the
 * client for input while it runs; then its request is answered with a
 * CreateTaskResult and the outcome goes to the task (tasks/get). */
#define MCP_TASKS_EXTENSION "io.modelcontextprotocol/tasks"
struct mcp_task;
/** A task for c (before it starts) of this principal (the token's role:
 *  only it sees the task), with the call's reference; NULL when out of
 *  memory (the call stays a call). */
struct mcp_task* mcp_task_new(struct mcp_call* c, const char* principal);
/** Make c's tool context ask through the task (request, request_all). */
void mcp_task_attach(struct mcp_call* c, struct mcp_task* t);
/** Before the call starts: it becomes a task MCP_TASK_AFTER_MS after
 *  started_ms if it still runs. */
void mcp_task_watch(struct mcp_task* t, int64_t started_ms);
/** The call's outcome, on its worker: true when the call is a task (which
 *  keeps it; the request was answered), false when it is answered as a
 *  call (it never becomes a task). */
bool mcp_task_take_result(struct mcp_task* t, struct tool_result* res);
/** The call is being freed: drop its reference (t may be NULL). */
void mcp_task_detach(struct mcp_task* t);
/** tasks/get, tasks/update (inputResponses borrowed), tasks/cancel for a
 *  principal's task: the result (new reference), or NULL with *code and
 *  msg (an unknown id: -32602). */
json_t* mcp_task_get(const char* id, const char* principal, int* code, char* msg, size_t size);
json_t* mcp_task_update(const char* id, const char* principal, json_t* responses, int* code,
		char* msg, size_t size);
json_t* mcp_task_cancel(const char* id, const char* principal, int* code, char* msg,
		size_t size);
/** Tasks kept (running and ended), for status and tests. */
int mcp_tasks_count(void);
/** At shutdown: cancel the running tasks, drop every task. */
void mcp_tasks_shutdown(void);

struct http_request;
/** mcp_http.c: serve a POST whose body (borrowed, one message) is modern. */
void mcp_http_modern(struct http_request* req, json_t* msg);
