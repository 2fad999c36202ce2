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
