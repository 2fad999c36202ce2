#pragma once

/* A small JSON Schema validator for tool arguments: type (incl. arrays of
 * types and "integer"), properties, required, additionalProperties (bool or
 * schema), items, minItems/maxItems, enum, const, minimum/maximum,
 * exclusiveMinimum/Maximum, minLength/maxLength, anyOf/oneOf, $ref to #/$defs. */

#include <jansson.h>
#include <stddef.h>

/** Returns 0 if value conforms, else -EINVAL with a readable reason in err
 *  naming the path, e.g. "actions[2].x: expected integer". */
int schema_validate(json_t* schema, json_t* value, char* err, size_t err_size);
/** Null means absent: drop the members of value, and of the objects the
 *  schema describes inside it (properties, items, $ref), that are null where
 *  the schema makes them optional and does not itself accept null. Some
 *  clients send null for every optional field they leave out. Returns how
 *  many were dropped. */
int schema_drop_nulls(json_t* schema, json_t* value);

/* ---- The tools' schemas as data (tools/schemas/, tools/schema_files.c) ----
 * the JSON files of tools/schemas/ are compiled into the binary at build time
 * (scripts/embed.c, the Makefile). Each group file holds {"fragments": {...},
 * "tools": {NAME: {"input": SCHEMA, "output": SCHEMA}}}; common.json holds
 * the fragments several files share. A "$ref" that names a file
 * ("common.json#/coordinate", "input.json#/fragments/x") is spliced in when
 * the files are loaded: the fragment's members first, then the ones written
 * beside the "$ref" (a description, usually). So every client sees plain,
 * inlined schemas (some do not resolve references), as when they were C
 * strings; a "$ref" to "#/..." is the schema's own and stays. */

struct schema_file {
	const char* path;	/* "/input.json" */
	const unsigned char* data;
	size_t size;
};
/** Generated at build time; ended by { 0 }. */
extern const struct schema_file schema_files[];

/** Every tool's schemas, resolved: {NAME: {"input": ..., "output": ...}}.
 *  New reference, or NULL with the reason in err (a file that does not
 *  parse, a reference to nothing, a tool in two files). */
json_t* schema_files_tools(char* err, size_t err_size);
