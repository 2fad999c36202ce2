/* The methods that need no session, for both eras: the tools/list pages,
 * the registered catalogs' prompts and resources, completion. See core.h. */

#include "server/mcp/mcp.h"
#include "server/mcp/core.h"
#include "base/text.h"
#include "tools/tools.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOLS_PAGE 50

/* ---- Methods that need no session (both eras) ---- */

json_t* mcp_fail(struct mcp_rpc_error* err, int code, const char* fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	text_vformat(err->message, sizeof(err->message), fmt, ap);	/* may quote the client */
	va_end(ap);
	err->code = code;
	return NULL;
}

/* Prompts and resources come from the registered catalogs, in order. */
#define MAX_CATALOGS 4

static const struct mcp_catalog* catalogs[MAX_CATALOGS];
static size_t n_catalogs;

int mcp_catalog_add(const struct mcp_catalog* catalog)
{
	if (n_catalogs >= MAX_CATALOGS)
		return -ENOSPC;
	catalogs[n_catalogs++] = catalog;
	return 0;
}

/* Every catalog's resources (or resource templates) in one array. */
static json_t* catalog_lists(bool templates)
{
	json_t* out = json_array();
	for (size_t i = 0; i < n_catalogs; i++) {
		json_t* (*fn)(void) = templates ? catalogs[i]->resource_templates
				: catalogs[i]->resources;
		json_t* list = fn ? fn() : NULL;
		json_array_extend(out, list);
		json_decref(list);
	}
	return out;
}

/* Cursors are opaque to clients: "dt" + the offset in hex, stable because
 * the table does not change while deskd runs. */
static int parse_cursor(json_t* params, size_t* offset)
{
	json_t* cursor = json_object_get(params, "cursor");
	*offset = 0;
	if (!cursor || json_is_null(cursor))
		return 0;
	const char* c = json_string_value(cursor);
	if (!c || strncmp(c, "dt", 2) != 0 || !c[2] || strlen(c) > 10)
		return -EINVAL;
	char* end;
	unsigned long v = strtoul(c + 2, &end, 16);
	if (*end || v == 0)
		return -EINVAL;
	*offset = v;
	return 0;
}

/* tools/list pages never change while deskd runs: build each once. */
#define TOOLS_PAGES_MAX 64
static pthread_mutex_t pages_mutex = PTHREAD_MUTEX_INITIALIZER;
static json_t* tools_pages[TOOLS_PAGES_MAX];

static json_t* build_tools_page(size_t offset, size_t n)
{
	json_t* list = json_array();
	size_t end = offset + TOOLS_PAGE < n ? offset + TOOLS_PAGE : n;
	for (size_t i = offset; i < end; i++)
		json_array_append_new(list, tools_describe(tools_at(i)));
	json_t* out = json_pack("{s:o}", "tools", list);
	if (out && end < n) {
		char next[32];
		snprintf(next, sizeof(next), "dt%zx", end);
		json_object_set_new(out, "nextCursor", json_string(next));
	}
	return out;
}

static json_t* m_tools_list(json_t* params, struct mcp_rpc_error* err)
{
	size_t offset;
	size_t n = tools_count();
	if (parse_cursor(params, &offset) < 0 || offset > n || offset % TOOLS_PAGE)
		return mcp_fail(err, RPC_INVALID_PARAMS, "invalid cursor");
	size_t page = offset / TOOLS_PAGE;
	if (page >= TOOLS_PAGES_MAX)
		return build_tools_page(offset, n);
	pthread_mutex_lock(&pages_mutex);
	if (!tools_pages[page])
		tools_pages[page] = build_tools_page(offset, n);
	json_t* out = json_incref(tools_pages[page]);
	pthread_mutex_unlock(&pages_mutex);
	return out;
}

static json_t* m_resources_list(json_t* params, struct mcp_rpc_error* err)
{
	size_t offset;
	if (parse_cursor(params, &offset) < 0)
		return mcp_fail(err, RPC_INVALID_PARAMS, "invalid cursor");
	return json_pack("{s:o}", "resources", catalog_lists(false));
}

static json_t* m_resource_templates(json_t* params, struct mcp_rpc_error* err)
{
	return json_pack("{s:o}", "resourceTemplates", catalog_lists(true));
}

static json_t* m_resources_read(json_t* params, struct mcp_rpc_error* err)
{
	const char* uri = json_string_value(json_object_get(params, "uri"));
	if (!uri)
		return mcp_fail(err, RPC_INVALID_PARAMS, "resources/read needs params.uri");
	for (size_t i = 0; i < n_catalogs; i++) {
		if (!catalogs[i]->resource_read)
			continue;
		int code = 0;
		char message[sizeof(err->message)] = "";
		json_t* result = catalogs[i]->resource_read(uri, &code, message,
				sizeof(message), &err->data);
		if (result)
			return result;
		if (code)
			return mcp_fail(err, code, "%s", message);
	}
	err->data = json_pack("{s:s}", "uri", uri);
	return mcp_fail(err, RPC_RESOURCE_NOT_FOUND, "Resource not found: %s", uri);
}

static const struct mcp_prompt* find_prompt(const char* name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < n_catalogs; i++)
		for (const struct mcp_prompt* p = catalogs[i]->prompts; p && p->name; p++)
			if (strcmp(p->name, name) == 0)
				return p;
	return NULL;
}

static json_t* describe_prompt(const struct mcp_prompt* p)
{
	json_t* out = json_pack("{s:s, s:s}", "name", p->name,
			"description", p->description);
	if (p->title)
		json_object_set_new(out, "title", json_string(p->title));
	if (p->args && p->args[0].name) {
		json_t* args = json_array();
		for (const struct mcp_prompt_arg* a = p->args; a->name; a++)
			json_array_append_new(args, json_pack("{s:s, s:s, s:b}", "name", a->name,
					"description", a->description ? a->description : a->name,
					"required", a->required));
		json_object_set_new(out, "arguments", args);
	}
	return out;
}

static json_t* m_prompts_list(json_t* params, struct mcp_rpc_error* err)
{
	size_t offset;
	if (parse_cursor(params, &offset) < 0)
		return mcp_fail(err, RPC_INVALID_PARAMS, "invalid cursor");
	json_t* list = json_array();
	for (size_t i = 0; i < n_catalogs; i++)
		for (const struct mcp_prompt* p = catalogs[i]->prompts; p && p->name; p++)
			json_array_append_new(list, describe_prompt(p));
	return json_pack("{s:o}", "prompts", list);
}

static json_t* m_prompts_get(json_t* params, struct mcp_rpc_error* err)
{
	const char* name = json_string_value(json_object_get(params, "name"));
	const struct mcp_prompt* p = find_prompt(name);
	if (!p)
		return mcp_fail(err, RPC_INVALID_PARAMS, "Unknown prompt: %s", name ? name : "(none)");
	json_t* args = json_object_get(params, "arguments");
	if (args && !json_is_object(args) && !json_is_null(args))
		return mcp_fail(err, RPC_INVALID_PARAMS, "arguments must be an object of strings");
	const char* key;
	json_t* v;
	json_object_foreach(args, key, v) {
		if (!json_is_string(v))
			return mcp_fail(err, RPC_INVALID_PARAMS, "argument %s must be a string", key);
	}
	for (const struct mcp_prompt_arg* a = p->args; a && a->name; a++)
		if (a->required && !json_object_get(args, a->name))
			return mcp_fail(err, RPC_INVALID_PARAMS, "prompt %s needs argument %s",
					p->name, a->name);
	json_t* empty = json_is_object(args) ? NULL : json_object();
	json_t* messages = p->get(empty ? empty : args);
	json_decref(empty);
	if (!messages)
		return mcp_fail(err, RPC_INTERNAL, "cannot build prompt %s", p->name);
	return json_pack("{s:s, s:o}", "description", p->description, "messages", messages);
}

static json_t* m_complete(json_t* params, struct mcp_rpc_error* err)
{
	json_t* ref = json_object_get(params, "ref");
	const char* type = json_string_value(json_object_get(ref, "type"));
	json_t* argument = json_object_get(params, "argument");
	const char* arg = json_string_value(json_object_get(argument, "name"));
	const char* value = json_string_value(json_object_get(argument, "value"));
	if (!type || !arg)
		return mcp_fail(err, RPC_INVALID_PARAMS, "completion/complete needs ref.type and argument.name");
	if (!value)
		value = "";
	json_t* values = json_array();
	if (strcmp(type, "ref/prompt") == 0) {
		const char* name = json_string_value(json_object_get(ref, "name"));
		if (!find_prompt(name)) {
			json_decref(values);
			return mcp_fail(err, RPC_INVALID_PARAMS, "Unknown prompt: %s", name ? name : "(none)");
		}
	} else if (strcmp(type, "ref/resource") == 0) {
		const char* uri = json_string_value(json_object_get(ref, "uri"));
		for (size_t i = 0; uri && i < n_catalogs; i++)
			if (catalogs[i]->complete
					&& catalogs[i]->complete(uri, arg, value, values))
				break;
	} else {
		json_decref(values);
		return mcp_fail(err, RPC_INVALID_PARAMS, "ref.type must be ref/prompt or ref/resource");
	}
	size_t n = json_array_size(values);
	return json_pack("{s:{s:o, s:I, s:b}}", "completion", "values", values,
			"total", (json_int_t)n, "hasMore", 0);
}

/* The methods that need no session, for both eras. */
static const struct mcp_method core_methods[] = {
	{ "tools/list", m_tools_list, false },
	{ "resources/list", m_resources_list, false },
	{ "resources/templates/list", m_resource_templates, false },
	{ "resources/read", m_resources_read, true },
	{ "prompts/list", m_prompts_list, false },
	{ "prompts/get", m_prompts_get, false },
	{ "completion/complete", m_complete, false },
};

const struct mcp_method* mcp_method_find(const char* name)
{
	for (size_t i = 0; name && i < sizeof(core_methods) / sizeof(core_methods[0]); i++)
		if (strcmp(core_methods[i].name, name) == 0)
			return &core_methods[i];
	return NULL;
}

json_t* mcp_method_call(const char* method, json_t* params, int* code, char* msg,
		size_t msg_size, json_t** data)
{
	*data = NULL;
	const struct mcp_method* m = mcp_method_find(method);
	if (!m) {
		*code = RPC_METHOD_NOT_FOUND;
		snprintf(msg, msg_size, "Method not found: %.200s", method ? method : "");
		return NULL;
	}
	struct mcp_rpc_error err = { RPC_INTERNAL, "internal error", NULL };
	json_t* result = m->fn(params, &err);
	if (!result) {
		*code = err.code;
		snprintf(msg, msg_size, "%s", err.message);
		*data = err.data;
	}
	return result;
}

const struct mcp_prompt* mcp_prompt_find(const char* name)
{
	return find_prompt(name);
}

void mcp_methods_shutdown(void)
{
	pthread_mutex_lock(&pages_mutex);
	for (size_t i = 0; i < TOOLS_PAGES_MAX; i++) {
		json_decref(tools_pages[i]);
		tools_pages[i] = NULL;
	}
	pthread_mutex_unlock(&pages_mutex);
}
