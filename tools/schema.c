#include "tools/schema.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define SCHEMA_MAX_DEPTH 64

struct validation {
	json_t* root;
	char* err;
	size_t err_size;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct validation* v, const char* path, const char* fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(v->err, v->err_size, "%s%s%s", path[0] ? path : "arguments",
			": ", msg);
	return -EINVAL;
}

static const char* type_of(json_t* value)
{
	switch (json_typeof(value)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "unknown";
}

static bool type_matches(const char* type, json_t* value)
{
	if (strcmp(type, "number") == 0)
		return json_is_number(value);
	if (strcmp(type, "integer") == 0) {
		if (json_is_integer(value))
			return true;
		if (json_is_real(value)) {
			double d = json_real_value(value);
			return d == floor(d) && fabs(d) < 9.007199254740992e15;
		}
		return false;
	}
	return strcmp(type, type_of(value)) == 0;
}

/* Keep error paths short and readable: "actions[2].x". */
static void child_path(char* out, size_t size, const char* path,
		const char* key, long index)
{
	if (key)
		snprintf(out, size, "%s%s%s", path, path[0] ? "." : "", key);
	else
		snprintf(out, size, "%s[%ld]", path, index);
}

static int validate(struct validation* v, json_t* schema, json_t* value,
		const char* path, int depth);

static json_t* resolve_ref(struct validation* v, json_t* schema)
{
	const char* ref = json_string_value(json_object_get(schema, "$ref"));
	if (!ref)
		return schema;
	const char* prefix = "#/$defs/";
	if (strncmp(ref, prefix, strlen(prefix)) != 0)
		return NULL;
	return json_object_get(json_object_get(v->root, "$defs"),
			ref + strlen(prefix));
}

static int validate_object(struct validation* v, json_t* schema, json_t* value,
		const char* path, int depth)
{
	json_t* props = json_object_get(schema, "properties");
	json_t* required = json_object_get(schema, "required");
	json_t* additional = json_object_get(schema, "additionalProperties");
	char sub[512];
	size_t i;
	json_t* item;

	json_array_foreach(required, i, item) {
		const char* key = json_string_value(item);
		if (key && !json_object_get(value, key)) {
			child_path(sub, sizeof(sub), path, key, 0);
			return fail(v, sub, "%s", "is required");
		}
	}
	const char* key;
	json_t* member;
	json_object_foreach(value, key, member) {
		json_t* prop = json_object_get(props, key);
		child_path(sub, sizeof(sub), path, key, 0);
		if (prop) {
			int rc = validate(v, prop, member, sub, depth + 1);
			if (rc < 0)
				return rc;
		} else if (json_is_false(additional)) {
			return fail(v, sub, "%s", "is not a known argument");
		} else if (json_is_object(additional)) {
			int rc = validate(v, additional, member, sub, depth + 1);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int validate_array(struct validation* v, json_t* schema, json_t* value,
		const char* path, int depth)
{
	json_t* min = json_object_get(schema, "minItems");
	json_t* max = json_object_get(schema, "maxItems");
	char num[32];
	if (min && (json_int_t)json_array_size(value) < json_integer_value(min)) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(min));
		return fail(v, path, "needs at least %s items", num);
	}
	if (max && (json_int_t)json_array_size(value) > json_integer_value(max)) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(max));
		return fail(v, path, "takes at most %s items", num);
	}
	json_t* items = json_object_get(schema, "items");
	if (!json_is_object(items))
		return 0;
	size_t i;
	json_t* item;
	char sub[512];
	json_array_foreach(value, i, item) {
		child_path(sub, sizeof(sub), path, NULL, (long)i);
		int rc = validate(v, items, item, sub, depth + 1);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Limits as the schema wrote them: 4294967295, not 4.29497e+09. */
static void limit_text(json_t* lim, char* buf, size_t size)
{
	if (json_is_integer(lim))
		snprintf(buf, size, "%lld", (long long)json_integer_value(lim));
	else
		snprintf(buf, size, "%.15g", json_number_value(lim));
}

static int validate_number(struct validation* v, json_t* schema, json_t* value,
		const char* path)
{
	double d = json_number_value(value);
	char num[64];
	json_t* lim;
	/* Compare integers as integers: a double cannot tell 2^53 from 2^53 + 1. */
	bool exact = json_is_integer(value);
	json_int_t i = exact ? json_integer_value(value) : 0;
#define BEYOND(l, op) (exact && json_is_integer(l) ? i op json_integer_value(l) \
		: d op json_number_value(l))
	if ((lim = json_object_get(schema, "minimum")) && json_is_number(lim) && BEYOND(lim, <)) {
		limit_text(lim, num, sizeof(num));
		return fail(v, path, "must be at least %s", num);
	}
	if ((lim = json_object_get(schema, "maximum")) && json_is_number(lim) && BEYOND(lim, >)) {
		limit_text(lim, num, sizeof(num));
		return fail(v, path, "must be at most %s", num);
	}
	if ((lim = json_object_get(schema, "exclusiveMinimum")) && json_is_number(lim)
			&& BEYOND(lim, <=)) {
		limit_text(lim, num, sizeof(num));
		return fail(v, path, "must be greater than %s", num);
	}
	if ((lim = json_object_get(schema, "exclusiveMaximum")) && json_is_number(lim)
			&& BEYOND(lim, >=)) {
		limit_text(lim, num, sizeof(num));
		return fail(v, path, "must be less than %s", num);
	}
#undef BEYOND
	return 0;
}

static size_t utf8_length(const char* s)
{
	size_t n = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

static int validate(struct validation* v, json_t* schema, json_t* value,
		const char* path, int depth)
{
	if (depth > SCHEMA_MAX_DEPTH)
		return fail(v, path, "%s", "is nested too deeply");
	if (json_is_true(schema))
		return 0;
	if (json_is_false(schema))
		return fail(v, path, "%s", "is not allowed");
	schema = resolve_ref(v, schema);
	if (!json_is_object(schema))
		return 0;

	json_t* type = json_object_get(schema, "type");
	if (json_is_string(type)) {
		if (!type_matches(json_string_value(type), value)) {
			char detail[96];
			snprintf(detail, sizeof(detail), "%s, got %s",
					json_string_value(type), type_of(value));
			return fail(v, path, "expected %s", detail);
		}
	} else if (json_is_array(type)) {
		size_t i;
		json_t* t;
		bool ok = false;
		json_array_foreach(type, i, t)
			if (json_is_string(t) && type_matches(json_string_value(t), value))
				ok = true;
		if (!ok)
			return fail(v, path, "has the wrong type (%s)", type_of(value));
	}

	json_t* allowed = json_object_get(schema, "enum");
	if (json_is_array(allowed)) {
		size_t i;
		json_t* a;
		bool ok = false;
		json_array_foreach(allowed, i, a)
			if (json_equal(a, value))
				ok = true;
		if (!ok) {
			char list[400] = "";
			json_array_foreach(allowed, i, a) {
				if (!json_is_string(a))
					continue;
				size_t n = strlen(list);
				snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "",
						json_string_value(a));
			}
			if (json_is_string(value))
				return fail(v, path, "\"%.60s\" is not one of: %s",
						json_string_value(value), list);
			return fail(v, path, "must be one of: %s", list);
		}
	}
	json_t* constant = json_object_get(schema, "const");
	if (constant && !json_equal(constant, value))
		return fail(v, path, "%s", "has the wrong value");

	int rc = 0;
	if (json_is_object(value))
		rc = validate_object(v, schema, value, path, depth);
	else if (json_is_array(value))
		rc = validate_array(v, schema, value, path, depth);
	else if (json_is_number(value))
		rc = validate_number(v, schema, value, path);
	else if (json_is_string(value)) {
		json_t* lim;
		char num[32];
		/* Counted only for a limit: a 1 MB text has none. */
		size_t len = json_object_get(schema, "minLength") || json_object_get(schema, "maxLength")
				? utf8_length(json_string_value(value)) : 0;
		if ((lim = json_object_get(schema, "minLength"))
				&& (json_int_t)len < json_integer_value(lim)) {
			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(lim));
			return fail(v, path, "must be at least %s characters", num);
		}
		if ((lim = json_object_get(schema, "maxLength"))
				&& (json_int_t)len > json_integer_value(lim)) {
			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(lim));
			return fail(v, path, "must be at most %s characters", num);
		}
	}
	if (rc < 0)
		return rc;

	json_t* any = json_object_get(schema, "anyOf");
	if (!json_is_array(any))
		any = json_object_get(schema, "oneOf");
	if (json_is_array(any) && json_array_size(any) > 0) {
		/* Report why the branch of the value's own type failed; when no
		 * branch takes that type, name the types they take instead:
		 * "expected array or string, got number". */
		size_t i;
		json_t* alt;
		char first[512] = "", types[128] = "";
		json_array_foreach(any, i, alt) {
			json_t* r = resolve_ref(v, alt);
			const char* t = json_is_object(r)
					? json_string_value(json_object_get(r, "type")) : NULL;
			if (t && !type_matches(t, value)) {
				size_t n = strlen(types);
				if (!strstr(types, t))
					snprintf(types + n, sizeof(types) - n, "%s%s", n ? " or " : "", t);
				continue;
			}
			if (validate(v, alt, value, path, depth + 1) == 0)
				return 0;
			if (!first[0])
				snprintf(first, sizeof(first), "%s", v->err);
		}
		if (first[0]) {
			snprintf(v->err, v->err_size, "%s", first);
			return -EINVAL;
		}
		char detail[200];
		snprintf(detail, sizeof(detail), "%s, got %s", types, type_of(value));
		return fail(v, path, "expected %s", detail);
	}
	return 0;
}

int schema_validate(json_t* schema, json_t* value, char* err, size_t err_size)
{
	struct validation v = { .root = schema, .err = err, .err_size = err_size };
	if (err_size)
		err[0] = '\0';
	return validate(&v, schema, value, "", 0);
}

static bool is_required(json_t* required, const char* key)
{
	size_t i;
	json_t* item;
	json_array_foreach(required, i, item)
		if (json_is_string(item) && strcmp(json_string_value(item), key) == 0)
			return true;
	return false;
}

static int drop_nulls(struct validation* v, json_t* schema, json_t* value, int depth)
{
	if (depth > SCHEMA_MAX_DEPTH)
		return 0;
	schema = resolve_ref(v, schema);
	if (!json_is_object(schema))
		return 0;
	int n = 0;
	if (json_is_object(value)) {
		json_t* props = json_object_get(schema, "properties");
		json_t* required = json_object_get(schema, "required");
		const char* key;
		json_t* member;
		void* tmp;
		json_object_foreach_safe(value, tmp, key, member) {
			json_t* prop = json_object_get(props, key);
			if (!prop)
				continue;
			if (!json_is_null(member)) {
				n += drop_nulls(v, prop, member, depth + 1);
				continue;
			}
			/* A property that takes null keeps it; a required one is
			 * left for validation to refuse. */
			if (is_required(required, key) || validate(v, prop, member, "", depth + 1) == 0)
				continue;
			json_object_del(value, key);
			n++;
		}
	} else if (json_is_array(value)) {
		json_t* items = json_object_get(schema, "items");
		size_t i;
		json_t* item;
		if (json_is_object(items))
			json_array_foreach(value, i, item)
				n += drop_nulls(v, items, item, depth + 1);
	}
	return n;
}

int schema_drop_nulls(json_t* schema, json_t* value)
{
	char scratch[256];
	struct validation v = { .root = schema, .err = scratch, .err_size = sizeof(scratch) };
	return drop_nulls(&v, schema, value, 0);
}
