#pragma once

/* The tool table: one list of tools drives MCP tools/list and tools/call, the
 * REST routes (/api/v1/tools[/name]) and the dashboard. Handlers know nothing
 * of the transport: they get validated JSON arguments and fill a tool_result.
 *
 * Ownership: jansson rules. Arguments are borrowed for the call. Everything
 * put into a tool_result is owned by it; tool_result_deinit() frees it. */

#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tool_flags {
	TOOL_READ_ONLY = 1 << 0,	/* readOnlyHint; view tokens may call it */
	TOOL_DESTRUCTIVE = 1 << 1,	/* destructiveHint */
	TOOL_IDEMPOTENT = 1 << 2,	/* idempotentHint */
	TOOL_OPEN_WORLD = 1 << 3,	/* openWorldHint */
	TOOL_DESKTOP_LOCK = 1 << 4,	/* runs under the desktop lock (acts on the desktop) */
	TOOL_FIXTURE = 1 << 5,		/* only with --conformance-fixtures */
	TOOL_BATCH = 1 << 6,		/* only with --tools batch|both */
	TOOL_SPLIT = 1 << 7,		/* only with --tools split|both */
	TOOL_NO_DISPLAY = 1 << 8,	/* works without a display (status, doctor) */
	TOOL_NO_VIEW = 1 << 9,		/* read-only, but not for the view token (secrets) */
	TOOL_LARGE_ARGS = 1 << 10,	/* its arguments may exceed --max-body, up to
					 * --max-clipboard-body (full token) */
	TOOL_GROUP = 1 << 11,		/* one tool for a group of named tools: listed
					 * unless --tools split; {"op": ...} picks the
					 * member (see struct tool_group_member) */
	TOOL_GROUPED = 1 << 12,		/* a group's member: listed with --tools
					 * split|both, callable by name always */
	TOOL_OBSERVES = 1 << 13,	/* shows the screen's pixels or text (screenshot,
					 * zoom, ...): refused while a person holds
					 * control unless --control-allows-observe */
	TOOL_TASK = 1 << 14,		/* MCP 2026-07-28: only for a client that takes
					 * tasks (io.modelcontextprotocol/tasks);
					 * others get -32021 */
};

/* A group tool's member: {"op": op, ...} calls the tool named tool with the
 * other arguments. The default tools/list stays small (DESIGN.md 6) because
 * it lists the group once instead of every member with its schemas. */
struct tool_group_member {
	const char* op;
	const char* tool;
};

/* Error codes of DESIGN.md section 6.2, as strings in structuredContent. */
enum tool_code {
	TOOL_OK = 0,
	TOOL_BAD_ARGUMENTS,
	TOOL_UNKNOWN_KEY,
	TOOL_OUT_OF_BOUNDS,
	TOOL_WINDOW_NOT_FOUND,
	TOOL_WINDOW_NOT_VIEWABLE,	/* exists, but unmapped or changing: retry */
	TOOL_DISPLAY_UNAVAILABLE,
	TOOL_BAD_PATH,
	TOOL_OUTPUT_EXISTS,
	TOOL_RECORDING_ACTIVE,
	TOOL_NO_RECORDING,
	TOOL_CLIPBOARD_EMPTY,	/* nothing owns the selection, or no such format */
	TOOL_TIMEOUT,
	TOOL_FORBIDDEN,
	TOOL_NOT_FOUND,		/* no such program (launch), no such file (file_download) */
	TOOL_TOO_LARGE,		/* over --max-file-size */
	TOOL_HUMAN_IN_CONTROL,	/* a person holds the desktop (dashboard) */
	TOOL_PAUSED,		/* a person paused the agent */
	TOOL_APPROVAL_DENIED,	/* denied, or no answer in time */
	TOOL_NO_SPACE,		/* the disk (or quota) is full: ENOSPC, EDQUOT */
	/* Accessibility (tools/ui.c). */
	TOOL_NO_ACCESSIBILITY,		/* the window's app exposes no tree, or no AT-SPI bus */
	TOOL_STALE_REF,			/* the ref is unknown or its element is gone */
	TOOL_NEEDS_CONFIRMATION,	/* destructive element without allow_destructive */
	TOOL_ACTION_UNSUPPORTED,	/* the element cannot do that action */
	TOOL_ELEMENT_DISABLED,		/* the element is insensitive */
	TOOL_UNVERIFIED,		/* it ran, but the read back differs */
	TOOL_NEEDS_FOCUS,		/* background: true, and the route needs focus */
	TOOL_PROGRAM_EXITED,		/* launch: it ended with a failure before its window */
	TOOL_NO_SPARE_KEYS,	/* a character off the keymap, and no spare keycode free */
	TOOL_INTERNAL,
};

/** "bad_arguments" etc. */
const char* tool_code_name(enum tool_code code);
/** The code for a backend or desktop errno (0 = TOOL_OK): -ENOENT window
 *  not found, -ENODATA window not viewable, -EINVAL/-ENOTSUP bad arguments, -ERANGE out of bounds,
 *  -ECONNRESET/-ECONNREFUSED/-EPIPE display unavailable, -ETIMEDOUT timeout,
 *  -EEXIST output exists, -EMFILE recording active, -ENOSPC/-EDQUOT no
 *  space, else internal. */
enum tool_code tool_code_for_errno(int rc);
/** The code for a failed write of a file (the errno of write, fsync, link,
 *  mkdir): no space for -ENOSPC/-EDQUOT, else internal. */
enum tool_code tool_code_for_write_errno(int rc);
/** HTTP status for REST: 400, 403, 404, 409, 413, 503, 504, 507, 500. */
int tool_code_http_status(enum tool_code code);

struct tool_session;

/* Per-call context, filled by the transport. */
struct tool_ctx {
	const char* source;		/* "mcp", "rest" or "cli" */
	const char* session_id;		/* MCP session id, or NULL */
	/* Who acts, for the events' actor (base/events.h; the transport fills
	 * it). A label the caller chose, not authentication. */
	const char* client_name;	/* MCP clientInfo.name, "dashboard"; NULL: source */
	const char* via;		/* the actor's transport when it is not source
					 * ("stdio" for MCP over stdio); NULL: source */
	bool by_person;			/* a person in the dashboard sent it */
	bool background;		/* the dashboard's own read-only refresh:
					 * counted in /metrics, not in the timeline */
	struct tool_session* session;	/* per-client state; NULL for REST */
	bool read_only;			/* the caller holds the view token */
	atomic_bool* cancelled;		/* set when the client cancels; poll it in long work */
	int64_t deadline_ms;		/* monotonic ms; 0 = none. Long waits must respect it. */

	/* Optional: progress and log notifications (MCP). May be NULL. */
	void (*progress)(void* ud, double progress, double total, const char* message);
	void (*log)(void* ud, const char* level, json_t* data); /* steals data */
	void* notify_ud;

	/* Optional: a server -> client request (MCP sampling/elicitation).
	 * Blocks until the answer; returns the result (new reference) or NULL
	 * with *error set (new reference) on failure. */
	json_t* (*request)(void* ud, const char* method, json_t* params, json_t** error);
	/* Optional: while request waits, stop waiting (an error result) as soon
	 * as this is set (the dashboard answered an approval first). */
	const atomic_bool* request_stop;
	/* Optional (an MCP task): several server -> client requests at once
	 * ({key: {method, params}}, borrowed), asked together; blocks until
	 * every one is answered (or request_stop, cancellation, the deadline);
	 * returns {key: result} (new reference), or NULL with *error set. A
	 * task sets request too, and is stateless as well: a tool in a task
	 * may ask either way, but an input-required result only before the
	 * call became a task. */
	json_t* (*request_all)(void* ud, json_t* requests, json_t** error);
	bool client_can_sample, client_can_elicit, client_can_list_roots;

	/* MCP 2026-07-28 (stateless): no session and no server -> client
	 * requests (request is NULL). A tool that needs the user or the
	 * client's model returns tool_result_input_required() instead, and the
	 * client calls it again with the answers (multi round-trip requests);
	 * a tool that cannot work without a client capability says so with
	 * tool_result_missing_capability(). */
	/* REST PUT /api/v1/files/<path>: the raw body as file_upload's data
	 * (borrowed for the call); NULL elsewhere. */
	const void* raw_data;
	size_t raw_len;

	bool stateless;
	json_t* input_responses;	/* the retry's inputResponses (object), or NULL */
	json_t* input_state;		/* the state this tool attached to the input
					 * request this retry answers, verified by the
					 * transport (integrity, expiry, same request,
					 * used once), or NULL */
	uint64_t event_id;		/* this call's activity event (tools_call sets
					 * it): a tool's own events name it as "call" */
};

struct tool_result {
	json_t* content;	/* array of content blocks */
	json_t* structured;	/* structuredContent object, or NULL */
	bool is_error;
	enum tool_code code;	/* TOOL_OK unless is_error */
	/* Extra: the first image's bytes, for REST GET /api/v1/screenshot
	 * (borrowed by no one: owned here, freed by deinit). */
	unsigned char* image;
	size_t image_len;
	const char* image_mime;
	/* MCP 2026-07-28: the call needs input first (see tool_ctx.stateless). */
	json_t* input_requests;		/* InputRequests map {key: {method, params}} */
	json_t* input_state;		/* JSON to get back as tool_ctx.input_state */
	json_t* missing_capabilities;	/* ClientCapabilities the call needs */
};

/** Handler: fill out and return 0, or return 0 after tool_result_error().
 *  Runs on a worker thread, never the HTTP or WebSocket thread. */
typedef int (*tool_handler_fn)(struct tool_ctx* ctx, json_t* args,
		struct tool_result* out);

struct tool_def {
	const char* name;
	const char* title;
	const char* description;
	/* The built-in tools' schemas are data: the JSON files of tools/schemas/, under
	 * the tool's name (tools/schema.h). A table of a layer above may give
	 * them here as JSON text instead (never both). */
	const char* input_schema;	/* JSON text, or NULL: tools/schemas/, else no
					 * arguments; validated before the handler runs */
	const char* output_schema;	/* JSON text of the success shape, or NULL
					 * (tools/schemas/, else none); the error shape
					 * is added automatically */
	unsigned flags;			/* enum tool_flags */
	tool_handler_fn handler;	/* NULL for a TOOL_GROUP */
	const struct tool_group_member* members;	/* TOOL_GROUP: ended by { 0 } */
};

/* Each tool file contributes one table, ended by { 0 }: the built-in ones
 * are listed in tools/tables.def, the layers above add theirs. */
#define TOOLS_TABLE(name) extern const struct tool_def name[];
#include "tools/tables.def"
#undef TOOLS_TABLE

/** Add a table (ended by { 0 }, not copied) before tools_init(); added
 *  tables come first in tools/list, in the order added. Returns 0 or
 *  -ENOSPC (at most 8). */
int tools_add(const struct tool_def* table);
/** Build the table for the options in force (surface, fixtures) from the
 *  added tables and then the built-in ones; call once. */
int tools_init(void);
void tools_deinit(void);

/** The tools MCP tools/list shows, in table order, filtered by options. */
size_t tools_count(void);
const struct tool_def* tools_at(size_t i);
/** Every tool that may be called: the listed ones and the members of groups
 *  that the surface does not list (REST lists these). */
size_t tools_callable_count(void);
const struct tool_def* tools_callable_at(size_t i);
/** Any callable tool by name. */
const struct tool_def* tools_find(const char* name);
/** The group tool's member for an op, or NULL. */
const struct tool_def* tools_group_member(const struct tool_def* group, const char* op);

/** The flags in force: a group's hints and TOOL_LARGE_ARGS come from its
 *  members. */
unsigned tools_flags(const struct tool_def* tool);
/** The tool's parsed input schema (borrowed; lives as long as the table). */
json_t* tools_input_schema(const struct tool_def* tool);
/** The MCP Tool object (name, title, description, inputSchema, outputSchema
 *  that also accepts the error shape, annotations). New reference. */
json_t* tools_describe(const struct tool_def* tool);

/** Validate args, enforce view-only, take the desktop lock if flagged, emit
 *  activity events, run the handler, and guarantee a well-formed result
 *  (content array; structuredContent on success when the tool has an output
 *  schema). args may be NULL (treated as {}). Always returns a filled result. */
void tools_call(const struct tool_def* tool, struct tool_ctx* ctx, json_t* args,
		struct tool_result* out);

/* Result builders, for handlers. */
void tool_result_init(struct tool_result* self);
void tool_result_deinit(struct tool_result* self);
/** Success: structured (stolen) becomes structuredContent and a text block. */
void tool_result_ok(struct tool_result* self, json_t* structured);
/** Append a text block. */
void tool_result_text(struct tool_result* self, const char* text);
/** Append an image block (base64 of bytes); keeps a copy of the bytes for REST
 *  if it is the first image. */
int tool_result_image(struct tool_result* self, const void* bytes, size_t len,
		const char* mime);
/** Error: isError, a text block "code: message", structuredContent
 *  {code, message} plus extra's fields (extra stolen, may be NULL). */
void tool_result_error(struct tool_result* self, enum tool_code code,
		json_t* extra, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
/** Stateless MCP only: the call needs the client to answer requests
 *  (requests: {key: {method: "elicitation/create" | "sampling/createMessage"
 *  | "roots/list", params}}, stolen) and to call again with inputResponses;
 *  state (stolen, may be NULL) comes back as tool_ctx.input_state. Only ask
 *  for what the client declared (tool_ctx.client_can_*). Elsewhere (REST,
 *  MCP sessions, which use tool_ctx.request) tools_call() turns it into an
 *  error result. */
void tool_result_input_required(struct tool_result* self, json_t* requests, json_t* state);
/** Stateless MCP only: the call needs a client capability the request did
 *  not declare ("sampling", "elicitation", "roots"); the client gets
 *  MissingRequiredClientCapabilityError. Elsewhere an error result. */
void tool_result_missing_capability(struct tool_result* self, const char* capability);
/** The whole result as MCP CallToolResult JSON. New reference. */
json_t* tool_result_to_json(const struct tool_result* self);

/* Per-client state kept across calls (MCP session; REST has none). */
struct tool_session* tool_session_new(void);
void tool_session_destroy(struct tool_session* self);
/** The max dimension in effect for a target (window 0 = screen): the session's
 *  last max_dimension for it, else --max-image-dimension. self may be NULL. */
int tool_session_max_dimension(struct tool_session* self, uint32_t window);
void tool_session_set_max_dimension(struct tool_session* self, uint32_t window,
		int max_dimension);
/** Opaque slot for the recorder: the recording ids this session started. */
void tool_session_add_recording(struct tool_session* self, const char* id);
/** Called when the session ends: finalizes its recordings. */
void tool_session_end(struct tool_session* self);

/* Argument helpers: return the value or the default when absent. Validation
 * against the schema has already run, so types are right. */
int64_t tool_arg_int(json_t* args, const char* key, int64_t def);
double tool_arg_double(json_t* args, const char* key, double def);
bool tool_arg_bool(json_t* args, const char* key, bool def);
const char* tool_arg_string(json_t* args, const char* key, const char* def);
/** The window argument, 0 (the screen) when absent; false when the value is
 *  no X window id (below 0 or above 4294967295), which a cast would wrap. */
bool tool_arg_window(json_t* args, uint32_t* window);

struct capture_window_info;
/** One window as the windows tool shows it ({id, pid, title, app, x, y,
 *  width, height, focused, visible}); the live view's list uses it too. New
 *  reference. */
json_t* tools_window_json(const struct capture_window_info* w);
struct a11y_app;
/** The pid of the accessible app of w (of a11y_apps with names when w has no
 *  pid of its own): w's pid, else the one app named as its instance or class
 *  (GNOME 46's portal dialogs; X11 windows without _NET_WM_PID), else 0. */
int tools_window_app_pid(const struct capture_window_info* w, const struct a11y_app* apps,
		size_t n);

/** After a successful call that returned a screenshot to an agent: starts
 *  making a small JPEG of that image for the timeline (tools/thumbs.c; on a
 *  worker, kept under event id, GET /api/v1/events/{id}/thumbnail shortly
 *  after). Returns what the end event adds ({"screenshot": {window,
 *  thumbnail: true when one is being made}}, new reference) or NULL. */
json_t* tools_thumbnail(const struct tool_ctx* ctx, const struct tool_result* res,
		uint64_t event_id);
/* Files under --files-root (tools/files.c), for REST's raw downloads. */
/** Open the file at rel (relative to the files root) for reading: a
 *  regular file within --max-file-size, no symlink on the way. Returns
 *  TOOL_OK with *fd (the caller closes it) and *size, or the code
 *  (bad_path, not_found, too_large, internal) with the reason in err. */
enum tool_code tools_file_open(const char* rel, int* fd, long long* size,
		char* err, size_t err_size);
/* ---- People in the loop (tools/gate.c, docs/CONTROL.md) ----------------
 * The live view tells the gate when a person holds the desktop or paused the
 * agent and passes on the person's answers; tools_call() asks the gate
 * before a call runs (refused at once, never queued) and after it succeeds
 * (the note after a hand-back). Any thread. */

/** A person took the desktop (held) or handed it back (note for the agent,
 *  may be NULL): pending help requests end as handed_back with the note. */
void tools_gate_set_held(bool held, const char* note);
void tools_gate_set_paused(bool paused);
bool tools_gate_held(void);
/** End help request id as dismissed; 0 or -ENOENT (not pending). */
int tools_gate_dismiss(uint64_t id, const char* note);
/** Answer approval id; 0 or -ENOENT. */
int tools_gate_answer(uint64_t id, bool approve);
/** {held, paused, approve, help: [...], approvals: [...]}. New reference. */
json_t* tools_gate_state(void);
/** The one listener called (any thread, no lock held) after every change. */
void tools_gate_listen(void (*fn)(void));
/** tools_call: may the call run? Waits for an approval when one is needed;
 *  false with out filled (human_in_control, paused, approval_denied). */
bool tools_gate_admit(const struct tool_def* tool, struct tool_ctx* ctx,
		json_t* args, struct tool_result* out);
/** tools_call, holding the desktop lock: false with out filled when a
 *  person took the desktop while the call waited for the lock. */
bool tools_gate_recheck(const struct tool_def* tool, const struct tool_ctx* ctx,
		struct tool_result* out);
/** Between the steps of an agent's acting call (each action of a batch,
 *  each chunk of type, the steps of a wait, before a paste's chord): has a
 *  person taken the desktop or paused the agent since it was admitted? True
 *  with *code (human_in_control or paused) and *why set: the call stops
 *  there. A person's own call (ctx->by_person) is never interrupted. */
bool tools_gate_interrupted(const struct tool_ctx* ctx, enum tool_code* code,
		const char** why);
/** tools_call, after the handler: a successful acting or observing call
 *  after a hand-back gets the note (text + structured human_control) when
 *  it is the first one, or its actor (source and MCP session or client
 *  name) was refused during a hold and was not told since. */
void tools_gate_finish(const struct tool_def* tool, const struct tool_ctx* ctx,
		struct tool_result* out);

/* Recordings as the tools show them, for status, MCP resources and REST
 * (tools/record.c, over desktop/'s registry). */
/** Array of {id, window, path, state, frames, duration_seconds, bytes, ...}. New reference. */
json_t* tools_record_list(void);
/** Path of a finished recording's published file; 0 or -ENOENT. */
int tools_record_path(const char* id, char* path, size_t size);
