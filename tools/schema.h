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
