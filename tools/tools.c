#define _GNU_SOURCE
#include "tools/tools.h"
#include "desktop/desktop.h"
#include "base/jsonmem.h"
#include "base/clock.h"
#include "base/events.h"
#include "base/log.h"
#include "base/options.h"
#include "base/text.h"
#include "tools/schema.h"
#include "base/base64.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char* const code_names[] = {
	[TOOL_OK] = "ok",
	[TOOL_BAD_ARGUMENTS] = "bad_arguments",
	[TOOL_UNKNOWN_KEY] = "unknown_key",
	[TOOL_OUT_OF_BOUNDS] = "out_of_bounds",
	[TOOL_WINDOW_NOT_FOUND] = "window_not_found",
	[TOOL_WINDOW_NOT_VIEWABLE] = "window_not_viewable",
	[TOOL_DISPLAY_UNAVAILABLE] = "display_unavailable",
	[TOOL_BAD_PATH] = "bad_path",
	[TOOL_OUTPUT_EXISTS] = "output_exists",
	[TOOL_RECORDING_ACTIVE] = "recording_active",
	[TOOL_NO_RECORDING] = "no_recording",
	[TOOL_CLIPBOARD_EMPTY] = "clipboard_empty",
	[TOOL_TIMEOUT] = "timeout",
	[TOOL_NO_ACCESSIBILITY] = "no_accessibility",
	[TOOL_STALE_REF] = "stale_ref",
	[TOOL_NEEDS_CONFIRMATION] = "needs_confirmation",
	[TOOL_ACTION_UNSUPPORTED] = "action_unsupported",
	[TOOL_ELEMENT_DISABLED] = "element_disabled",
	[TOOL_UNVERIFIED] = "unverified",
	[TOOL_NEEDS_FOCUS] = "needs_focus",
	[TOOL_PROGRAM_EXITED] = "program_exited",
	[TOOL_NO_SPARE_KEYS] = "no_spare_keys",
	[TOOL_FORBIDDEN] = "forbidden",
	[TOOL_NOT_FOUND] = "not_found",
	[TOOL_TOO_LARGE] = "too_large",
	[TOOL_HUMAN_IN_CONTROL] = "human_in_control",
	[TOOL_PAUSED] = "paused",
	[TOOL_APPROVAL_DENIED] = "approval_denied",
	[TOOL_NO_SPACE] = "no_space",
	[TOOL_INTERNAL] = "internal",
};

const char* tool_code_name(enum tool_code code)
{
	if ((size_t)code >= sizeof(code_names) / sizeof(code_names[0]))
		return "internal";
	return code_names[code];
}

enum tool_code tool_code_for_errno(int rc)
{
	switch (rc) {
	case 0: return TOOL_OK;
	case -ENOENT: return TOOL_WINDOW_NOT_FOUND;
	case -ENODATA: return TOOL_WINDOW_NOT_VIEWABLE;
	case -EINVAL:
	case -ENOTSUP: return TOOL_BAD_ARGUMENTS;
	case -ERANGE: return TOOL_OUT_OF_BOUNDS;
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -EPIPE: return TOOL_DISPLAY_UNAVAILABLE;
	case -ETIMEDOUT: return TOOL_TIMEOUT;
	case -EEXIST: return TOOL_OUTPUT_EXISTS;
	case -EMFILE: return TOOL_RECORDING_ACTIVE;
	case -ENOSPC:
	case -EDQUOT: return TOOL_NO_SPACE;
	default: return TOOL_INTERNAL;
	}
}

enum tool_code tool_code_for_write_errno(int rc)
{
	return rc == -ENOSPC || rc == -EDQUOT ? TOOL_NO_SPACE : TOOL_INTERNAL;
}

int tool_code_http_status(enum tool_code code)
{
	switch (code) {
	case TOOL_OK: return 200;
	case TOOL_BAD_ARGUMENTS:
	case TOOL_UNKNOWN_KEY:
	case TOOL_OUT_OF_BOUNDS:
	case TOOL_BAD_PATH: return 400;
	case TOOL_FORBIDDEN:
	case TOOL_APPROVAL_DENIED: return 403;
	case TOOL_HUMAN_IN_CONTROL:
	case TOOL_PAUSED: return 409;
	case TOOL_WINDOW_NOT_FOUND:
	case TOOL_NO_RECORDING:
	case TOOL_CLIPBOARD_EMPTY:
	case TOOL_NOT_FOUND: return 404;
	case TOOL_TOO_LARGE: return 413;
	case TOOL_WINDOW_NOT_VIEWABLE:
	case TOOL_OUTPUT_EXISTS:
	case TOOL_RECORDING_ACTIVE: return 409;
	case TOOL_DISPLAY_UNAVAILABLE: return 503;
	case TOOL_TIMEOUT: return 504;
	case TOOL_NO_SPACE: return 507;	/* Insufficient Storage (RFC 4918) */
	case TOOL_ACTION_UNSUPPORTED: return 400;
	case TOOL_STALE_REF: return 404;
	case TOOL_NO_ACCESSIBILITY:
	case TOOL_NEEDS_CONFIRMATION:
	case TOOL_ELEMENT_DISABLED:
	case TOOL_UNVERIFIED:
	case TOOL_NEEDS_FOCUS:
	case TOOL_NO_SPARE_KEYS: return 409;
	case TOOL_PROGRAM_EXITED: return 422;
	case TOOL_INTERNAL: return 500;
	}
	return 500;
}

/* The table in force, with parsed schemas kept beside each tool. */
struct tool_entry {
	const struct tool_def* def;
	json_t* input_schema;
	json_t* output_schema;	/* success shape anyOf the error shape, or NULL */
	unsigned flags;		/* def's; a group's hints and body rule come
				 * from its members */
	bool listed;		/* in tools/list (else callable by name only) */
	char* description;	/* a group's: def's plus what each op takes; else NULL */
};

/* Callable tools: the listed ones first, in table order, then the unlisted
 * group members. */
static struct tool_entry* entries;
static size_t n_entries, n_listed;

static json_t* parse_schema(const char* name, const char* text)
{
	json_error_t jerr;
	json_t* schema = json_loads(text, 0, &jerr);
	if (!schema)
		log_panic("tool %s: bad schema at %d:%d: %s", name, jerr.line,
				jerr.column, jerr.text);
	return schema;
}

/* SDK clients validate error results against outputSchema too, so every
 * output schema also accepts {code, message}. */
static json_t* output_schema_with_errors(json_t* success)
{
	json_t* error_shape = json_pack("{s:[s,s]}", "required", "code", "message");
	/* The root says object once; the success branch need not repeat it. */
	json_t* type = json_object_get(success, "type");
	if (json_is_string(type) && strcmp(json_string_value(type), "object") == 0)
		json_object_del(success, "type");
	json_t* out = json_pack("{s:s, s:[o,o]}", "type", "object", "anyOf",
			success, error_shape);
	/* Hoist $defs so $ref inside the success shape still resolves. */
	json_t* defs = json_object_get(success, "$defs");
	if (defs) {
		json_object_set(out, "$defs", defs);
		json_object_del(success, "$defs");
	}
	return out;
}

static bool wanted(const struct tool_def* def, const struct options* opts)
{
	return !(def->flags & TOOL_FIXTURE) || (opts && opts->conformance_fixtures);
}

/* Every surface takes every name; --tools says which are listed: batch
 * (the default) lists computer_use and the groups, split the single tools
 * (computer_click, window_focus, ...), both all of them. */
static bool listed(const struct tool_def* def, const struct options* opts)
{
	if (!opts || opts->tools == OPTIONS_TOOLS_BOTH)
		return true;
	if (opts->tools == OPTIONS_TOOLS_BATCH)
		return !(def->flags & (TOOL_GROUPED | TOOL_SPLIT));
	return !(def->flags & (TOOL_BATCH | TOOL_GROUP));
}

static struct tool_entry* find_entry_named(const char* name)
{
	for (size_t i = 0; i < n_entries; i++)
		if (strcmp(entries[i].def->name, name) == 0)
			return &entries[i];
	return NULL;
}

static bool is_required(json_t* schema, const char* key)
{
	size_t i;
	json_t* r;
	json_array_foreach(json_object_get(schema, "required"), i, r)
		if (json_is_string(r) && strcmp(json_string_value(r), key) == 0)
			return true;
	return false;
}

/* The schema's properties, "?" after the optional ones, sep between them
 * (skip: leave out those it has, or NULL), appended to out. */
static void append_args(char* out, size_t size, json_t* schema, const char* sep, json_t* skip)
{
	size_t o = strlen(out), first = o;
	const char* key;
	json_t* value;
	json_object_foreach(json_object_get(schema, "properties"), key, value) {
		if (skip && json_object_get(skip, key))
			continue;
		int n = snprintf(out + o, size > o ? size - o : 0, "%s%s%s", o > first ? sep : "",
				key, is_required(schema, key) ? "" : "?");
		if (n < 0 || (size_t)n >= size - o)
			break;
		o += (size_t)n;
	}
}

/* A group's description: def's, then what each op takes, from the
 * members' schemas (the union schema cannot say it), "?" after an
 * optional argument: "Args: focus|raise() move(x? y?) list(pid?); window:
 * all but list". Ops that take the same arguments share them; an argument
 * most ops take is said once, with the ops that do not, when that is
 * shorter. malloc'd. */
enum { DESC_OPS = 16, DESC_ARGS = 24, DESC_ARG_MAX = 48 };

struct desc_op {
	const char* name;
	char args[DESC_ARGS][DESC_ARG_MAX];	/* "window", "timeout_ms?" */
	int n;
	bool factored[DESC_ARGS];
};

static int desc_ops(const struct tool_def* group, struct desc_op* ops)
{
	int n = 0;
	for (const struct tool_group_member* m = group->members; m && m->op && n < DESC_OPS; m++) {
		struct tool_entry* e = find_entry_named(m->tool);
		if (!e)
			continue;
		struct desc_op* d = &ops[n++];
		memset(d, 0, sizeof(*d));
		d->name = m->op;
		const char* key;
		json_t* v;
		json_object_foreach(json_object_get(e->input_schema, "properties"), key, v)
			if (d->n < DESC_ARGS)
				snprintf(d->args[d->n++], DESC_ARG_MAX, "%s%s", key,
						is_required(e->input_schema, key) ? "" : "?");
	}
	return n;
}

static bool desc_has(const struct desc_op* d, const char* arg)
{
	for (int k = 0; k < d->n; k++)
		if (strcmp(d->args[k], arg) == 0)
			return true;
	return false;
}

/* Say arg once if that is shorter than in each op: true, with the ops
 * that lack it in but (" list"), and it is marked factored in the others. */
static bool desc_factor(struct desc_op* ops, int n, const char* arg, char* but, size_t size)
{
	int with = 0;
	size_t without = 0;
	for (int i = 0; i < n; i++) {
		if (desc_has(&ops[i], arg))
			with++;
		else
			without += strlen(ops[i].name) + 1;
	}
	size_t inline_cost = (size_t)with * (strlen(arg) + 1);
	size_t once_cost = strlen(arg) + 7 + (with < n ? 5 + without : 0);
	if (with < 2 || once_cost >= inline_cost)
		return false;
	size_t o = 0;
	but[0] = '\0';
	for (int i = 0; i < n; i++) {
		bool has = false;
		for (int k = 0; k < ops[i].n; k++) {
			if (strcmp(ops[i].args[k], arg) == 0) {
				ops[i].factored[k] = true;
				has = true;
			}
		}
		if (!has && o < size)
			o += (size_t)snprintf(but + o, size - o, " %s", ops[i].name);
	}
	return true;
}

static void desc_signature(const struct desc_op* d, char* out, size_t size)
{
	size_t o = 0;
	out[0] = '\0';
	for (int k = 0; k < d->n && o < size; k++)
		if (!d->factored[k])
			o += (size_t)snprintf(out + o, size - o, "%s%s", o ? " " : "", d->args[k]);
}

static char* group_description(const struct tool_def* group)
{
	struct desc_op ops[DESC_OPS];
	int n = desc_ops(group, ops);
	/* the arguments said once, those with the same exceptions together:
	 * "; window? timeout_ms?: all" */
	char once[DESC_ARGS][DESC_ARG_MAX], but[DESC_ARGS][128];
	int n_once = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < ops[i].n && n_once < DESC_ARGS; k++)
			if (!ops[i].factored[k] && desc_factor(ops, n, ops[i].args[k], but[n_once],
					sizeof(but[n_once])))
				snprintf(once[n_once++], DESC_ARG_MAX, "%s", ops[i].args[k]);
	char tail[1024] = "";
	size_t t = 0;
	for (int i = 0; i < n_once && t < sizeof(tail); i++) {
		bool said = false;
		for (int j = 0; j < i && !said; j++)
			said = strcmp(but[i], but[j]) == 0;
		if (said)
			continue;
		t += (size_t)snprintf(tail + t, sizeof(tail) - t, "; %s", once[i]);
		for (int j = i + 1; j < n_once && t < sizeof(tail); j++)
			if (strcmp(but[i], but[j]) == 0)
				t += (size_t)snprintf(tail + t, sizeof(tail) - t, " %s", once[j]);
		if (t < sizeof(tail))
			t += (size_t)snprintf(tail + t, sizeof(tail) - t, ": all%s%s",
					but[i][0] ? " but" : "", but[i]);
	}
	char sig[DESC_OPS][512];
	for (int i = 0; i < n; i++)
		desc_signature(&ops[i], sig[i], sizeof(sig[i]));
	char args[2048] = "";
	size_t o = 0;
	for (int i = 0; i < n && o < sizeof(args); i++) {
		bool said = false;
		for (int j = 0; j < i && !said; j++)
			said = strcmp(sig[i], sig[j]) == 0;
		if (said)
			continue;
		o += (size_t)snprintf(args + o, sizeof(args) - o, "%s%s", o ? " " : "", ops[i].name);
		for (int j = i + 1; j < n && o < sizeof(args); j++)
			if (strcmp(sig[i], sig[j]) == 0)
				o += (size_t)snprintf(args + o, sizeof(args) - o, "|%s", ops[j].name);
		if (o < sizeof(args) && sig[i][0])
			o += (size_t)snprintf(args + o, sizeof(args) - o, "(%s)", sig[i]);
	}
	char* out = NULL;
	if (asprintf(&out, "%s Args: %s%s", group->description ? group->description : group->name,
			args, tail) < 0)
		log_panic("out of memory");
	return out;
}

/* A group's schema: {"op": one of the members' ops} and the union of the
 * members' properties, each said once (so the members must agree on a
 * property they share). The member's own schema checks the call. */
static json_t* group_schema(const struct tool_def* group, unsigned* flags, char** description)
{
	json_t* ops = json_array();
	json_t* props = json_object();
	unsigned all = TOOL_READ_ONLY | TOOL_IDEMPOTENT, any = 0;
	json_object_set_new(props, "op", json_pack("{s:s, s:o}", "type", "string",
			"enum", ops));
	for (const struct tool_group_member* m = group->members; m && m->op; m++) {
		struct tool_entry* member = find_entry_named(m->tool);
		if (!member)
			continue;	/* not in this build or surface */
		if (!(member->def->flags & TOOL_GROUPED))
			log_panic("tool group %s: %s is not marked TOOL_GROUPED",
					group->name, m->tool);
		json_array_append_new(ops, json_string(m->op));
		all &= member->flags;
		any |= member->flags;
		const char* key;
		json_t* value;
		json_object_foreach(json_object_get(member->input_schema, "properties"), key, value) {
			json_t* seen = json_object_get(props, key);
			if (!seen)
				json_object_set(props, key, value);
			else if (!json_equal(seen, value))
				log_panic("tool group %s: members disagree on the schema of '%s' (%s)",
						group->name, key, m->tool);
		}
	}
	if (json_array_size(ops) == 0)
		log_panic("tool group %s has no members in this build", group->name);
	*description = group_description(group);
	*flags = (group->flags & ~(TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_DESTRUCTIVE
				| TOOL_OPEN_WORLD | TOOL_LARGE_ARGS | TOOL_NO_DISPLAY))
			| (all & (TOOL_READ_ONLY | TOOL_IDEMPOTENT | TOOL_NO_DISPLAY))
			| (any & (TOOL_DESTRUCTIVE | TOOL_OPEN_WORLD | TOOL_LARGE_ARGS));
	return json_pack("{s:s, s:b, s:[s], s:o}", "type", "object",
			"additionalProperties", 0, "required", "op", "properties", props);
}

/* An argument of the group's union schema that this op does not take:
 * refused naming the ops that do and what this one takes (the union
 * alone says neither). true when it filled out. */
static bool group_misplaced(const struct tool_def* group, const struct tool_def* member,
		const char* op, json_t* args, struct tool_result* out)
{
	struct tool_entry* me = find_entry_named(member->name);
	json_t* props = me ? json_object_get(me->input_schema, "properties") : NULL;
	const char* key;
	json_t* value;
	json_object_foreach(args, key, value) {
		if (strcmp(key, "op") == 0 || json_object_get(props, key))
			continue;
		char owners[256] = "", takes[512] = "";
		size_t o = 0;
		for (const struct tool_group_member* m = group->members; m && m->op; m++) {
			struct tool_entry* e = find_entry_named(m->tool);
			if (!e || !json_object_get(json_object_get(e->input_schema, "properties"), key))
				continue;
			int n = snprintf(owners + o, sizeof(owners) - o, "%s%s", o ? ", " : "", m->op);
			if (n > 0 && (size_t)n < sizeof(owners) - o)
				o += (size_t)n;
		}
		if (!owners[0])
			return false;	/* unknown everywhere: the schema says so */
		append_args(takes, sizeof(takes), me ? me->input_schema : NULL, ", ", NULL);
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "%s: '%s' is for %s, not %s; %s takes %s",
				group->name, key, owners, op, op, takes[0] ? takes : "nothing but op");
		return true;
	}
	return false;
}

#define MAX_ADDED 8

static const struct tool_def* added[MAX_ADDED];
static size_t n_added;

int tools_add(const struct tool_def* table)
{
	if (n_added >= MAX_ADDED)
		return -ENOSPC;
	added[n_added++] = table;
	return 0;
}

int tools_init(void)
{
#define TOOLS_TABLE(name) name,
	static const struct tool_def* const builtin[] = {
#include "tools/tables.def"
	};
#undef TOOLS_TABLE
	const size_t n_builtin = sizeof(builtin) / sizeof(builtin[0]);
	const struct tool_def* tables[MAX_ADDED + sizeof(builtin) / sizeof(builtin[0])];
	size_t n_tables = 0;
	for (size_t i = 0; i < n_added; i++)
		tables[n_tables++] = added[i];
	for (size_t i = 0; i < n_builtin; i++)
		tables[n_tables++] = builtin[i];
	const struct options* opts = options_get();
	size_t cap = 0;
	for (size_t t = 0; t < n_tables; t++)
		for (const struct tool_def* d = tables[t]; d->name; d++)
			cap++;
	char err[256];
	json_t* from_files = schema_files_tools(err, sizeof(err));
	if (!from_files)
		log_panic("tools/schemas: %s", err);
	entries = calloc(cap ? cap : 1, sizeof(*entries));
	if (!entries) {
		json_decref(from_files);
		return -ENOMEM;
	}
	n_entries = n_listed = 0;
	/* Two passes keep the listed tools first, in table order. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t t = 0; t < n_tables; t++) {
			for (const struct tool_def* d = tables[t]; d->name; d++) {
				if (!wanted(d, opts) || listed(d, opts) != (pass == 0))
					continue;
				if (find_entry_named(d->name))
					log_panic("two tools are named %s", d->name);
				/* One approval rule for a member and its batch form
				 * (computer_use is destructive): --approve destructive
				 * must not be skipped by calling the split tool. */
				if ((d->flags & TOOL_SPLIT) && !(d->flags & TOOL_READ_ONLY)
						&& !(d->flags & TOOL_DESTRUCTIVE))
					log_panic("%s acts but is not TOOL_DESTRUCTIVE like computer_use",
							d->name);
				struct tool_entry* e = &entries[n_entries++];
				e->def = d;
				e->flags = d->flags;
				e->listed = pass == 0;
				/* The schemas are in tools/schemas/ under the tool's
				 * name, or (tables of the layers above) JSON text in
				 * the def: one copy, never both. */
				json_t* file = json_object_get(from_files, d->name);
				if (file && (d->input_schema || d->output_schema))
					log_panic("tool %s: schemas both in tools/schemas/ and in its table",
							d->name);
				json_t* input = json_object_get(file, "input");
				json_t* output = json_object_get(file, "output");
				if (d->flags & TOOL_GROUP)
					;	/* made from its members' below */
				else if (input)
					e->input_schema = json_incref(input);
				else
					e->input_schema = parse_schema(d->name, d->input_schema
							? d->input_schema
							: "{\"type\":\"object\",\"additionalProperties\":false}");
				if (output)
					e->output_schema = output_schema_with_errors(json_incref(output));
				else if (d->output_schema)
					e->output_schema = output_schema_with_errors(
							parse_schema(d->name, d->output_schema));
			}
		}
		if (pass == 0)
			n_listed = n_entries;
	}
	json_decref(from_files);
	/* Groups last: their schemas come from their members'. */
	for (size_t i = 0; i < n_entries; i++)
		if (entries[i].def->flags & TOOL_GROUP)
			entries[i].input_schema = group_schema(entries[i].def, &entries[i].flags,
					&entries[i].description);
	return 0;
}

void tools_deinit(void)
{
	for (size_t i = 0; i < n_entries; i++) {
		json_decref(entries[i].input_schema);
		json_decref(entries[i].output_schema);
		free(entries[i].description);
	}
	free(entries);
	entries = NULL;
	n_entries = n_listed = 0;
	n_added = 0;
}

size_t tools_count(void)
{
	return n_listed;
}

const struct tool_def* tools_at(size_t i)
{
	return i < n_listed ? entries[i].def : NULL;
}

size_t tools_callable_count(void)
{
	return n_entries;
}

const struct tool_def* tools_callable_at(size_t i)
{
	return i < n_entries ? entries[i].def : NULL;
}

static struct tool_entry* find_entry(const struct tool_def* def)
{
	for (size_t i = 0; i < n_entries; i++)
		if (entries[i].def == def)
			return &entries[i];
	return NULL;
}

const struct tool_def* tools_find(const char* name)
{
	struct tool_entry* e = name ? find_entry_named(name) : NULL;
	return e ? e->def : NULL;
}

const struct tool_def* tools_group_member(const struct tool_def* group, const char* op)
{
	if (!group || !(group->flags & TOOL_GROUP) || !op)
		return NULL;
	for (const struct tool_group_member* m = group->members; m && m->op; m++)
		if (strcmp(m->op, op) == 0)
			return tools_find(m->tool);
	return NULL;
}

unsigned tools_flags(const struct tool_def* tool)
{
	struct tool_entry* e = find_entry(tool);
	return e ? e->flags : tool ? tool->flags : 0;
}

json_t* tools_input_schema(const struct tool_def* tool)
{
	struct tool_entry* e = find_entry(tool);
	return e ? e->input_schema : NULL;
}

json_t* tools_describe(const struct tool_def* tool)
{
	struct tool_entry* e = find_entry(tool);
	if (!e)
		return NULL;
	unsigned f = e->flags;
	/* destructiveHint and idempotentHint mean something only when
	 * readOnlyHint is false (MCP spec), so read-only tools leave them out;
	 * destructiveHint and openWorldHint default to true, so they are always
	 * said, and readOnlyHint too, for clients that test it as a boolean. */
	json_t* hints = (f & TOOL_READ_ONLY)
			? json_pack("{s:b, s:b}", "readOnlyHint", 1,
				"openWorldHint", (f & TOOL_OPEN_WORLD) != 0)
			: json_pack("{s:b, s:b, s:b}", "readOnlyHint", 0,
				"destructiveHint", (f & TOOL_DESTRUCTIVE) != 0,
				"openWorldHint", (f & TOOL_OPEN_WORLD) != 0);
	if ((f & (TOOL_READ_ONLY | TOOL_IDEMPOTENT)) == TOOL_IDEMPOTENT)
		json_object_set_new(hints, "idempotentHint", json_true());	/* false is the default */
	json_t* out = json_pack("{s:s, s:s, s:O, s:o}",
			"name", tool->name,
			"description", e->description ? e->description
					: tool->description ? tool->description : tool->name,
			"inputSchema", e->input_schema,
			"annotations", hints);
	/* The title once, at the top (MCP 2025-06-18); annotations.title would
	 * repeat it in every tools/list. */
	if (tool->title)
		json_object_set_new(out, "title", json_string(tool->title));
	if (e->output_schema)
		json_object_set(out, "outputSchema", e->output_schema);
	return out;
}

static bool has_null(json_t* v, int depth)
{
	if (json_is_null(v))
		return true;
	if (depth > 64)
		return false;
	const char* key;
	json_t* member;
	size_t i;
	if (json_is_object(v))
		json_object_foreach(v, key, member)
			if (has_null(member, depth + 1))
				return true;
	if (json_is_array(v))
		json_array_foreach(v, i, member)
			if (has_null(member, depth + 1))
				return true;
	return false;
}

void tools_call(const struct tool_def* tool, struct tool_ctx* ctx, json_t* args,
		struct tool_result* out)
{
	tool_result_init(out);
	json_t* owned = NULL;
	if (!args)
		args = owned = json_object();
	struct tool_entry* e = find_entry(tool);
	/* Null is absent for optional arguments (DESIGN.md 6): some clients
	 * send null for every field they leave out. On a copy: args are borrowed. */
	if (e && json_is_object(args) && has_null(args, 0)) {
		json_t* copy = json_deep_copy(args);
		if (copy) {
			schema_drop_nulls(e->input_schema, copy);
			json_decref(owned);
			args = owned = copy;
		}
	}

	/* A group runs its member, which checks, logs and locks as if called
	 * by name. */
	if (tool->flags & TOOL_GROUP && json_is_object(args)) {
		const char* op = json_string_value(json_object_get(args, "op"));
		const struct tool_def* member = tools_group_member(tool, op);
		if (member && group_misplaced(tool, member, op, args, out)) {
			json_decref(owned);
			return;
		}
		if (member) {
			json_t* rest = json_copy(args);
			json_object_del(rest, "op");
			tool_result_deinit(out);
			tools_call(member, ctx, rest, out);
			json_decref(rest);
			json_decref(owned);
			return;
		}
	}

	/* Only read-only calls may hide from the timeline as a refresh. */
	struct events_actor actor = {
		.kind = ctx->by_person ? EVENTS_ACTOR_PERSON : EVENTS_ACTOR_AGENT,
		.name = ctx->client_name, .session = ctx->session_id,
		.via = ctx->via ? ctx->via : ctx->source,
		.background = ctx->background && (tool->flags & TOOL_READ_ONLY),
	};
	uint64_t event = events_tool_start(&actor, tool->name, args);
	ctx->event_id = event;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);

	char err[512];
	if (ctx->read_only && !(tool->flags & TOOL_READ_ONLY)) {
		tool_result_error(out, TOOL_FORBIDDEN, NULL,
				"the view token may only call read-only tools; %s acts on the desktop",
				tool->name);
	} else if (ctx->read_only && (tool->flags & TOOL_NO_VIEW)) {
		tool_result_error(out, TOOL_FORBIDDEN, NULL,
				"the view token may not call %s (it may reveal secrets such as passwords)",
				tool->name);
	} else if (ctx->read_only && json_object_get(args, "out")) {
		tool_result_error(out, TOOL_FORBIDDEN, NULL,
				"the view token may not write files ('out')");
	} else if (!json_is_object(args)) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL,
				"arguments must be a JSON object");
	} else if (e && schema_validate(e->input_schema, args, err, sizeof(err)) < 0) {
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "%s", err);
	} else if (tool->flags & TOOL_GROUP) {
		/* The schema knows the ops, so only a member missing from this
		 * build gets here. */
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, "%s: no such op '%s'",
				tool->name, json_string_value(json_object_get(args, "op")));
	} else if (!(tool->flags & TOOL_NO_DISPLAY) && !desktop_available()) {
		char why[256];
		if (desktop_unavailable_reason(why, sizeof(why)))
			tool_result_error(out, TOOL_DISPLAY_UNAVAILABLE, NULL, "%s", why);
		else
			tool_result_error(out, TOOL_DISPLAY_UNAVAILABLE, NULL,
					"the X display is not reachable; deskd reconnects when it is back");
	} else if (!tools_gate_admit(tool, ctx, args, out)) {
		/* a person holds the desktop, paused the agent or denied it */
	} else {
		bool locked = tool->flags & TOOL_DESKTOP_LOCK;
		if (locked)
			desktop_lock();
		/* An action whose caller gave up while it waited never starts: a
		 * click queued behind a hung display would land later on whatever
		 * is there then. */
		int rc = 0;
		int64_t now = clock_ms();
		if (ctx->cancelled && atomic_load(ctx->cancelled))
			tool_result_error(out, TOOL_TIMEOUT, NULL, "cancelled before it started");
		else if (ctx->deadline_ms && now > ctx->deadline_ms)
			tool_result_error(out, TOOL_TIMEOUT, NULL,
					"its deadline passed before it started; nothing was done");
		else if (locked && !desktop_available())
			tool_result_error(out, TOOL_DISPLAY_UNAVAILABLE, NULL,
					"the X display went away while this call waited; nothing was done");
		else if (locked && !tools_gate_recheck(tool, ctx, out))
			;	/* a person took the desktop while this call waited */
		else
			rc = tool->handler(ctx, args, out);
		if (locked)
			desktop_unlock();
		if (rc < 0 && !out->is_error)
			tool_result_error(out, TOOL_INTERNAL, NULL, "%s failed: %s",
					tool->name, strerror(-rc));
		tools_gate_finish(tool, ctx, out);
	}

	/* Input requests and missing capabilities only mean something to a
	 * stateless MCP client; anyone else gets an error result. */
	if (!ctx->stateless && (out->input_requests || out->missing_capabilities)) {
		bool caps = out->missing_capabilities != NULL;
		json_decref(out->input_requests);
		json_decref(out->input_state);
		json_decref(out->missing_capabilities);
		out->input_requests = out->input_state = out->missing_capabilities = NULL;
		tool_result_error(out, TOOL_BAD_ARGUMENTS, NULL, caps
				? "%s needs a client capability this client did not declare"
				: "%s needs input from the user or the client's model, which this "
				"client cannot give (MCP sessions answer it inline; REST cannot)",
				tool->name);
	}
	bool pending = out->input_requests || out->missing_capabilities;
	/* Guarantee the shape MCP clients validate. */
	if (!out->is_error && !pending && e && e->output_schema && !out->structured)
		out->structured = json_object();
	if (json_array_size(out->content) == 0)
		tool_result_text(out, out->is_error ? "error" : "ok");

	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3
			+ (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	const char* message = out->is_error && out->structured
			? json_string_value(json_object_get(out->structured, "message")) : NULL;
	events_tool_end(event, &actor, tool->name,
			out->is_error ? tool_code_name(out->code)
			: out->input_requests ? "input_required"
			: out->missing_capabilities ? "missing_capability" : "ok", ms, message,
			actor.kind == EVENTS_ACTOR_AGENT && !actor.background
			? tools_thumbnail(ctx, out, event) : NULL);
	json_decref(owned);
}

void tool_result_init(struct tool_result* self)
{
	memset(self, 0, sizeof(*self));
	self->content = json_array();
}

void tool_result_deinit(struct tool_result* self)
{
	json_decref(self->content);
	json_decref(self->structured);
	json_decref(self->input_requests);
	json_decref(self->input_state);
	json_decref(self->missing_capabilities);
	free(self->image);
	memset(self, 0, sizeof(*self));
}

void tool_result_text(struct tool_result* self, const char* text)
{
	json_array_append_new(self->content,
			json_pack("{s:s, s:s}", "type", "text", "text", text));
}

void tool_result_ok(struct tool_result* self, json_t* structured)
{
	json_decref(self->structured);
	self->structured = structured;
	/* Models read this text: 15 digits print rounded reals short (1.333333,
	 * not 1.3333330000000001) and still read back as the same numbers. */
	char* text = jsonmem_dumps(structured, JSON_COMPACT | JSON_REAL_PRECISION(15));
	if (text) {
		tool_result_text(self, text);
		free(text);
	}
}

int tool_result_image(struct tool_result* self, const void* bytes, size_t len,
		const char* mime)
{
	size_t n;
	char* b64 = base64_encode(bytes, len, &n);
	if (!b64)
		return -ENOMEM;
	json_array_append_new(self->content, json_pack("{s:s, s:s%, s:s}",
			"type", "image", "data", b64, n, "mimeType", mime));
	free(b64);
	if (!self->image) {
		self->image = malloc(len ? len : 1);
		if (!self->image)
			return -ENOMEM;
		memcpy(self->image, bytes, len);
		self->image_len = len;
		self->image_mime = strcmp(mime, "image/png") == 0 ? "image/png"
				: strcmp(mime, "image/jpeg") == 0 ? "image/jpeg"
				: "application/octet-stream";
	}
	return 0;
}

void tool_result_error(struct tool_result* self, enum tool_code code,
		json_t* extra, const char* fmt, ...)
{
	char message[1024];
	va_list ap;
	va_start(ap, fmt);
	text_vformat(message, sizeof(message), fmt, ap);	/* quotes the client, maybe cut */
	va_end(ap);

	json_decref(self->structured);
	self->structured = json_pack("{s:s, s:s}", "code", tool_code_name(code),
			"message", message);
	if (extra) {
		json_object_update_missing(self->structured, extra);
		json_decref(extra);
	}
	self->is_error = true;
	self->code = code;
	char text[1200];
	snprintf(text, sizeof(text), "%s: %s", tool_code_name(code), message);
	/* The error text comes first so clients that show content[0] see it. */
	json_array_insert_new(self->content, 0,
			json_pack("{s:s, s:s}", "type", "text", "text", text));
}

void tool_result_input_required(struct tool_result* self, json_t* requests, json_t* state)
{
	json_decref(self->input_requests);
	json_decref(self->input_state);
	self->input_requests = requests ? requests : json_object();
	self->input_state = state;
}

void tool_result_missing_capability(struct tool_result* self, const char* capability)
{
	if (!self->missing_capabilities)
		self->missing_capabilities = json_object();
	json_object_set_new(self->missing_capabilities, capability, json_object());
}

json_t* tool_result_to_json(const struct tool_result* self)
{
	json_t* out = json_pack("{s:O}", "content", self->content);
	if (self->structured)
		json_object_set(out, "structuredContent", self->structured);
	if (self->is_error)
		json_object_set_new(out, "isError", json_true());
	return out;
}

/* Sessions: small per-client state. */
#define SESSION_TARGETS 16
#define SESSION_RECORDINGS 16

struct tool_session {
	pthread_mutex_t mutex;
	struct {
		uint32_t window;
		int max_dimension;
	} targets[SESSION_TARGETS];
	int n_targets;
	int next_evict;
	char* recordings[SESSION_RECORDINGS];
	int n_recordings;
};

struct tool_session* tool_session_new(void)
{
	struct tool_session* self = calloc(1, sizeof(*self));
	if (!self)
		return NULL;
	pthread_mutex_init(&self->mutex, NULL);
	return self;
}

void tool_session_destroy(struct tool_session* self)
{
	if (!self)
		return;
	for (int i = 0; i < self->n_recordings; i++)
		free(self->recordings[i]);
	pthread_mutex_destroy(&self->mutex);
	free(self);
}

int tool_session_max_dimension(struct tool_session* self, uint32_t window)
{
	const struct options* opts = options_get();
	int def = opts ? opts->max_image_dimension : 1280;
	if (!self)
		return def;
	pthread_mutex_lock(&self->mutex);
	for (int i = 0; i < self->n_targets; i++) {
		if (self->targets[i].window == window) {
			def = self->targets[i].max_dimension;
			break;
		}
	}
	pthread_mutex_unlock(&self->mutex);
	return def;
}

void tool_session_set_max_dimension(struct tool_session* self, uint32_t window,
		int max_dimension)
{
	if (!self)
		return;
	pthread_mutex_lock(&self->mutex);
	int slot = -1;
	for (int i = 0; i < self->n_targets; i++)
		if (self->targets[i].window == window)
			slot = i;
	if (slot < 0) {
		if (self->n_targets < SESSION_TARGETS) {
			slot = self->n_targets++;
		} else {
			slot = self->next_evict;
			self->next_evict = (self->next_evict + 1) % SESSION_TARGETS;
		}
	}
	self->targets[slot].window = window;
	self->targets[slot].max_dimension = max_dimension;
	pthread_mutex_unlock(&self->mutex);
}

void tool_session_add_recording(struct tool_session* self, const char* id)
{
	if (!self)
		return;
	pthread_mutex_lock(&self->mutex);
	if (self->n_recordings < SESSION_RECORDINGS) {
		char* copy = strdup(id);
		if (copy)
			self->recordings[self->n_recordings++] = copy;
	}
	pthread_mutex_unlock(&self->mutex);
}

void tool_session_end(struct tool_session* self)
{
	if (!self)
		return;
	pthread_mutex_lock(&self->mutex);
	if (self->n_recordings)
		desktop_recordings_end(self->recordings, (size_t)self->n_recordings);
	for (int i = 0; i < self->n_recordings; i++)
		free(self->recordings[i]);
	self->n_recordings = 0;
	pthread_mutex_unlock(&self->mutex);
}

int64_t tool_arg_int(json_t* args, const char* key, int64_t def)
{
	json_t* v = json_object_get(args, key);
	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	return def;
}

double tool_arg_double(json_t* args, const char* key, double def)
{
	json_t* v = json_object_get(args, key);
	return json_is_number(v) ? json_number_value(v) : def;
}

bool tool_arg_bool(json_t* args, const char* key, bool def)
{
	json_t* v = json_object_get(args, key);
	return json_is_boolean(v) ? json_is_true(v) : def;
}

const char* tool_arg_string(json_t* args, const char* key, const char* def)
{
	json_t* v = json_object_get(args, key);
	return json_is_string(v) ? json_string_value(v) : def;
}

bool tool_arg_window(json_t* args, uint32_t* window)
{
	json_t* v = json_object_get(args, "window");
	*window = 0;
	if (!v)
		return true;
	if (!json_is_integer(v) && !(json_is_real(v) && json_real_value(v) >= 0
			&& json_real_value(v) <= UINT32_MAX))
		return false;
	int64_t w = tool_arg_int(args, "window", 0);
	if (w < 0 || w > UINT32_MAX)
		return false;
	*window = (uint32_t)w;
	return true;
}
