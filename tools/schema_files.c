/* The tools' schemas as data: loads tools/schemas/ (compiled in by
 * scripts/embed.c) and splices in the fragments they reference, so that each
 * fragment (a coordinate, a chord, a window id...) is written once and yet
 * every client gets self-contained schemas (tools/schema.h). */
#include "tools/schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper than any schema here; stops a fragment that refers to itself. */
#define MAX_DEPTH 32

struct docs {
	json_t* by_name;	/* "input.json" -> parsed file */
	char* err;
	size_t err_size;
};

__attribute__((format(printf, 2, 3)))
static void fail(struct docs* d, const char* fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->err, d->err_size, fmt, ap);
	va_end(ap);
}

/* "input.json#/fragments/x" -> the value, or NULL. */
static json_t* lookup(struct docs* d, const char* ref)
{
	const char* hash = strchr(ref, '#');
	if (!hash || hash == ref || hash[1] != '/')
		return NULL;
	char file[128];
	if ((size_t)(hash - ref) >= sizeof(file))
		return NULL;
	memcpy(file, ref, (size_t)(hash - ref));
	file[hash - ref] = '\0';
	json_t* v = json_object_get(d->by_name, file);
	/* A JSON pointer; the names here need none of its ~0 ~1 escapes. */
	for (const char* p = hash + 1; v && *p == '/';) {
		const char* end = strchr(p + 1, '/');
		size_t len = end ? (size_t)(end - p - 1) : strlen(p + 1);
		char key[128];
		if (len >= sizeof(key))
			return NULL;
		memcpy(key, p + 1, len);
		key[len] = '\0';
		v = json_object_get(v, key);
		p += len + 1;
	}
	return v;
}

/* A copy of v with every file reference spliced in. New reference or NULL. */
static json_t* resolve(struct docs* d, json_t* v, int depth)
{
	if (depth > MAX_DEPTH) {
		fail(d, "references nest deeper than %d levels", MAX_DEPTH);
		return NULL;
	}
	if (json_is_array(v)) {
		json_t* out = json_array();
		size_t i;
		json_t* item;
		json_array_foreach(v, i, item) {
			json_t* r = resolve(d, item, depth + 1);
			if (!r) {
				json_decref(out);
				return NULL;
			}
			json_array_append_new(out, r);
		}
		return out;
	}
	if (!json_is_object(v))
		return json_deep_copy(v);
	json_t* out;
	const char* ref = json_string_value(json_object_get(v, "$ref"));
	if (ref && ref[0] != '#') {
		json_t* target = lookup(d, ref);
		if (!json_is_object(target)) {
			fail(d, "\"$ref\": \"%s\" names no object", ref);
			return NULL;
		}
		out = resolve(d, target, depth + 1);
		if (!out)
			return NULL;
	} else {
		out = json_object();
		ref = NULL;
	}
	const char* key;
	json_t* member;
	json_object_foreach(v, key, member) {
		if (ref && strcmp(key, "$ref") == 0)
			continue;
		json_t* r = resolve(d, member, depth + 1);
		if (!r) {
			json_decref(out);
			return NULL;
		}
		json_object_set_new(out, key, r);
	}
	return out;
}

json_t* schema_files_tools(char* err, size_t err_size)
{
	struct docs d = { .by_name = json_object(), .err = err, .err_size = err_size };
	json_t* tools = json_object();
	for (const struct schema_file* f = schema_files; f->path; f++) {
		json_error_t jerr;
		json_t* doc = json_loadb((const char*)f->data, f->size, 0, &jerr);
		if (!json_is_object(doc)) {
			snprintf(err, err_size, "tools/schemas%s:%d:%d: %s", f->path,
					jerr.line, jerr.column, doc ? "not an object" : jerr.text);
			json_decref(doc);
			goto failed;
		}
		json_object_set_new(d.by_name, f->path + 1, doc);
	}
	const char* file;
	json_t* doc;
	json_object_foreach(d.by_name, file, doc) {
		const char* name;
		json_t* entry;
		json_object_foreach(json_object_get(doc, "tools"), name, entry) {
			if (json_object_get(tools, name)) {
				fail(&d, "tool %s has schemas in two files (%s)", name, file);
				goto failed;
			}
			json_t* r = resolve(&d, entry, 0);
			if (!r) {
				size_t used = strlen(err);
				snprintf(err + used, err_size - used, " (tool %s in %s)", name, file);
				goto failed;
			}
			json_object_set_new(tools, name, r);
		}
	}
	json_decref(d.by_name);
	return tools;
failed:
	json_decref(d.by_name);
	json_decref(tools);
	return NULL;
}
