/* The action vocabulary parser (tools/actions.h). */
#include "tools/actions.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACT_NAME_ROW(name, act, button, anthropic) { name, act, button, anthropic },
static const struct act_name act_names[] = { ACTION_NAMES(ACT_NAME_ROW, ) };
#undef ACT_NAME_ROW
#define N_ACT_NAMES (sizeof(act_names) / sizeof(act_names[0]))

static const struct {
	const char* name;
	int button;
} buttons[] = {
	{ "left", 1 }, { "middle", 2 }, { "wheel", 2 }, { "right", 3 },
	{ "back", 8 }, { "forward", 9 },
};

const char* action_button_name(int b)
{
	switch (b) {
	case 1: return "left";
	case 2: return "middle";
	case 3: return "right";
	case 8: return "back";
	case 9: return "forward";
	default: return "?";
	}
}


void action_deinit(struct action* a)
{
	free(a->px);
	free(a->py);
	a->px = a->py = NULL;
}


int action_fail(struct act_error* e, enum tool_code code, const char* fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	e->code = code;
	return -1;
}

static bool is_int(json_t* v)
{
	return json_is_integer(v) || (json_is_real(v)
			&& json_real_value(v) == floor(json_real_value(v))
			&& fabs(json_real_value(v)) < 1e9);
}

static int int_of(json_t* v)
{
	return json_is_integer(v) ? (int)json_integer_value(v) : (int)json_real_value(v);
}

/* An [x, y] array or an {x, y} object. */
static bool point_of(json_t* v, int* x, int* y)
{
	json_t *jx, *jy;
	if (json_is_array(v) && json_array_size(v) == 2) {
		jx = json_array_get(v, 0);
		jy = json_array_get(v, 1);
	} else if (json_is_object(v)) {
		jx = json_object_get(v, "x");
		jy = json_object_get(v, "y");
	} else {
		return false;
	}
	if (!is_int(jx) || !is_int(jy))
		return false;
	*x = int_of(jx);
	*y = int_of(jy);
	return true;
}

/* Keys given as an array (["ctrl","c"], OpenAI) or a chord string
 * ("ctrl+c", xdotool/Anthropic). */
static int parse_keys(json_t* v, const char* field, struct input_chord* out,
		struct act_error* e)
{
	char err[512];
	out->n = 0;
	if (json_is_string(v)) {
		int rc = input_chord_parse(out, json_string_value(v), err, sizeof(err));
		if (rc < 0)
			return action_fail(e, rc == -ENOENT ? TOOL_UNKNOWN_KEY : TOOL_BAD_ARGUMENTS,
					"%s: %s", field, err);
		return 0;
	}
	if (!json_is_array(v) || json_array_size(v) == 0)
		return action_fail(e, TOOL_BAD_ARGUMENTS,
				"%s must be a non-empty array of key names like [\"ctrl\", \"c\"] or a chord like \"ctrl+c\"",
				field);
	size_t i;
	json_t* item;
	json_array_foreach(v, i, item) {
		if (!json_is_string(item))
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s[%zu] must be a key name",
					field, i);
		int rc = input_chord_add(out, json_string_value(item), err, sizeof(err));
		if (rc < 0)
			return action_fail(e, rc == -ENOENT ? TOOL_UNKNOWN_KEY : TOOL_BAD_ARGUMENTS,
					"%s[%zu]: %s", field, i, err);
	}
	input_chord_normalize(out);
	return 0;
}

static const struct act_name* find_act(const char* name)
{
	for (size_t i = 0; i < N_ACT_NAMES; i++)
		if (strcmp(act_names[i].name, name) == 0)
			return &act_names[i];
	return NULL;
}

/* Digits only (no sign, no space), at most 5 of them; returns the end or NULL. */
static const char* space_number(const char* s, unsigned* v)
{
	unsigned n = 0;
	int digits = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (++digits > 5)
			return NULL;
		n = n * 10 + (unsigned)(*s - '0');
	}
	*v = n;
	return digits ? s : NULL;
}

int action_space_parse(const char* s, int* width, int* height, int* max_dimension)
{
	unsigned w, h, m;
	if (!s || !(s = space_number(s, &w)) || *s++ != 'x' || !(s = space_number(s, &h))
			|| *s++ != '/' || !(s = space_number(s, &m)) || *s)
		return -1;
	if (w < 1 || h < 1 || m > 16384)
		return -1;
	*width = (int)w;
	*height = (int)h;
	*max_dimension = (int)m;
	return 0;
}

void action_space_format(char* out, size_t size, int width, int height, int max_dimension)
{
	snprintf(out, size, "%dx%d/%d", width, height, max_dimension);
}

/* paste, or type with method "paste": any UTF-8 text but NUL (X
 * selections carry it, but applications cut text at it), an optional chord. */
static int parse_paste(json_t* j, const char* tname, struct action* a, struct act_error* e)
{
	json_t* t = json_object_get(j, "text");
	if (!json_is_string(t))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "%s needs text (a string)", tname);
	a->paste = true;
	a->text = json_string_value(t);
	a->text_len = json_string_length(t);
	if (a->text_len > ACTION_MAX_PASTE_BYTES)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "text is %zu bytes; a paste takes at most %d",
				a->text_len, ACTION_MAX_PASTE_BYTES);
	size_t bad = 0;
	if (input_utf8_validate(a->text, a->text_len, &bad) < 0)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "text is not valid UTF-8 at byte %zu", bad);
	if (memchr(a->text, '\0', a->text_len))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "text has a NUL character, which "
				"applications cut pasted text at");
	json_t* chord = json_object_get(j, "chord");
	if (chord) {
		if (parse_keys(chord, "chord", &a->chord, e) < 0)
			return -1;
		a->has_chord = true;
	}
	return 0;
}

/* ---- The kinds of action: one row each ------------------------------------------------ */

/* Which fields each kind takes besides type/action, and its parser: the
 * steps every action goes through (position, ref, coordinate_space, held
 * keys, button) have run; it reads the fields only it has. */
typedef int (*kind_parse_fn)(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e);

struct act_kind {
	bool pointer;			/* a position or ref, held keys: pointer_fields */
	bool button_field;		/* button, unless the alias implies one (left_click) */
	const char* const* fields;	/* its own, NULL-ended; may be NULL */
	kind_parse_fn parse;		/* NULL: nothing more to read */
};

static const char* const pointer_fields[] = { "x", "y", "coordinate", "coordinate_space", "keys",
	"text", "ref", NULL };

static int parse_click(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e)
{
	if (!a->has_xy && !k->anthropic)	/* Anthropic's left_click clicks where the pointer is */
		return action_fail(e, TOOL_BAD_ARGUMENTS, "click needs x and y (or coordinate [x, y])");
	return 0;
}

static int parse_move(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e)
{
	if (!a->has_xy)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "%s needs x and y (or coordinate [x, y])", tname);
	return 0;
}

/* path (OpenAI) or start_coordinate and coordinate (Anthropic). */
static int parse_drag(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e)
{
	json_t* path = json_object_get(j, "path");
	json_t* start = json_object_get(j, "start_coordinate");
	json_t* end = json_object_get(j, "coordinate");
	if (path && (start || end))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "%s: give path, or start_coordinate and coordinate, not both", tname);
	if (a->has_xy)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "%s takes path (or start_coordinate and coordinate), not x and y", tname);
	size_t n;
	if (path) {
		if (!json_is_array(path) || json_array_size(path) < 2)
			return action_fail(e, TOOL_BAD_ARGUMENTS, "drag needs a path of at least 2 points, like [{\"x\":10,\"y\":10},{\"x\":200,\"y\":10}]");
		n = json_array_size(path);
		if (n > ACTION_MAX_PATH_POINTS)
			return action_fail(e, TOOL_BAD_ARGUMENTS, "drag path has %zu points; at most %d", n, ACTION_MAX_PATH_POINTS);
	} else {
		if (!start || !end)
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s needs path (>= 2 points) or start_coordinate and coordinate", tname);
		n = 2;
	}
	a->px = calloc(n, sizeof(int));
	a->py = calloc(n, sizeof(int));
	if (!a->px || !a->py)
		return action_fail(e, TOOL_INTERNAL, "out of memory");
	a->n_path = n;
	for (size_t i = 0; i < n; i++) {
		json_t* p = path ? json_array_get(path, i) : i == 0 ? start : end;
		if (!point_of(p, &a->px[i], &a->py[i])) {
			if (path)
				return action_fail(e, TOOL_BAD_ARGUMENTS, "path[%zu] must be {\"x\": int, \"y\": int} or [x, y]", i);
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s must be [x, y] (integers)",
					i == 0 ? "start_coordinate" : "coordinate");
		}
	}
	return 0;
}

/* scroll_direction + scroll_amount: notches. */
static int parse_scroll_notches(json_t* dir, json_t* amount, struct action* a, struct act_error* e)
{
	const char* d = json_string_value(dir);
	if (!d || !amount)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "scroll needs scroll_direction (up, down, left, right) with scroll_amount (notches)");
	if (!is_int(amount) || int_of(amount) < 0 || int_of(amount) > INPUT_MAX_NOTCHES)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "scroll_amount must be an integer number of notches, 0..%d", INPUT_MAX_NOTCHES);
	int n = int_of(amount);
	if (strcmp(d, "down") == 0)
		a->notches_y = n;
	else if (strcmp(d, "up") == 0)
		a->notches_y = -n;
	else if (strcmp(d, "right") == 0)
		a->notches_x = n;
	else if (strcmp(d, "left") == 0)
		a->notches_x = -n;
	else
		return action_fail(e, TOOL_BAD_ARGUMENTS, "scroll_direction must be up, down, left or right, not \"%s\"", d);
	return 0;
}

/* scroll_x/scroll_y (pixels, OpenAI) or scroll_direction + scroll_amount
 * (notches, Anthropic). */
static int parse_scroll(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e)
{
	json_t* sx = json_object_get(j, "scroll_x");
	json_t* sy = json_object_get(j, "scroll_y");
	json_t* dir = json_object_get(j, "scroll_direction");
	json_t* amount = json_object_get(j, "scroll_amount");
	if ((sx || sy) && (dir || amount))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "scroll: give scroll_x/scroll_y (pixels) or scroll_direction + scroll_amount (notches), not both");
	if (dir || amount)
		return parse_scroll_notches(dir, amount, a, e);
	if (!sx && !sy)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "scroll needs scroll_x and/or scroll_y (pixels; positive = right/down) or scroll_direction + scroll_amount");
	if ((sx && !json_is_number(sx)) || (sy && !json_is_number(sy)))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "scroll_x and scroll_y must be numbers (pixels)");
	a->notches_x = input_pixels_to_notches(sx ? json_number_value(sx) : 0);
	a->notches_y = input_pixels_to_notches(sy ? json_number_value(sy) : 0);
	if (abs(a->notches_x) > INPUT_MAX_NOTCHES || abs(a->notches_y) > INPUT_MAX_NOTCHES)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "scroll of more than %d notches (%d px) per axis",
				INPUT_MAX_NOTCHES, INPUT_MAX_NOTCHES * INPUT_PIXELS_PER_NOTCH);
	return 0;
}

static int parse_paste_kind(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e)
{
	return parse_paste(j, tname, a, e);
}

/* type: keys, or method "paste" (as the paste action). */
static int parse_type(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e)
{
	json_t* t = json_object_get(j, "text");
	if (!json_is_string(t))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "type needs text (a string)");
	json_t* method = json_object_get(j, "method");
	if (method && (!json_is_string(method) || (strcmp(json_string_value(method), "keys")
			&& strcmp(json_string_value(method), "paste"))))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "type: method must be \"keys\" (the default) or \"paste\"");
	if (method && strcmp(json_string_value(method), "paste") == 0)
		return parse_paste(j, tname, a, e);
	if (json_object_get(j, "chord"))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "type: chord goes with method \"paste\"");
	a->text = json_string_value(t);
	a->text_len = json_string_length(t);
	if (a->text_len > ACTION_MAX_TYPE_BYTES)
		return action_fail(e, TOOL_BAD_ARGUMENTS,
				"text is %zu bytes; type takes at most %d bytes per action (split it)",
				a->text_len, ACTION_MAX_TYPE_BYTES);
	size_t bad = 0;
	int rc = input_text_check(a->text, a->text_len, &bad);
	if (rc == -EILSEQ)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "text is not valid UTF-8 at byte %zu", bad);
	if (rc < 0)
		return action_fail(e, TOOL_BAD_ARGUMENTS,
				"text has control character 0x%02x at byte %zu, which no key types (\\n, \\t, \\b and ESC are fine)",
				(unsigned char)a->text[bad], bad);
	return 0;
}

/* keypress and hold_key: keys (OpenAI) or text (Anthropic); hold_key a duration. */
static int parse_chord(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e)
{
	json_t* keys = json_object_get(j, "keys");
	json_t* text = json_object_get(j, "text");
	if (keys && text)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "%s: give keys or text, not both", tname);
	if (!keys && !text)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "%s needs keys (like [\"ctrl\", \"c\"]) or text (like \"ctrl+c\")", tname);
	if (parse_keys(keys ? keys : text, keys ? "keys" : "text", &a->chord, e) < 0)
		return -1;
	if (k->act != ACT_HOLD_KEY)
		return 0;
	json_t* d = json_object_get(j, "duration");
	if (!json_is_number(d))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "hold_key needs duration (seconds)");
	double s = json_number_value(d);
	if (s < 0 || s * 1000 > ACTION_MAX_WAIT_MS)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "hold_key duration %g s is outside 0..%d s", s, ACTION_MAX_WAIT_MS / 1000);
	a->ms = (int)lround(s * 1000);
	return 0;
}

static int parse_wait(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e)
{
	json_t* ms = json_object_get(j, "ms");
	json_t* d = json_object_get(j, "duration");
	if (ms && d)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "wait: give ms or duration (seconds), not both");
	double wait_ms = 1000;
	if (ms) {
		if (!json_is_number(ms))
			return action_fail(e, TOOL_BAD_ARGUMENTS, "wait: ms must be a number");
		wait_ms = json_number_value(ms);
	} else if (d) {
		if (!json_is_number(d))
			return action_fail(e, TOOL_BAD_ARGUMENTS, "wait: duration must be a number of seconds");
		wait_ms = json_number_value(d) * 1000;
	}
	if (wait_ms < 0 || wait_ms > ACTION_MAX_WAIT_MS)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "wait of %g ms is outside 0..%d ms", wait_ms, ACTION_MAX_WAIT_MS);
	a->ms = (int)lround(wait_ms);
	return 0;
}

/* screenshot and zoom: max_dimension; zoom a region. */
static int parse_image(json_t* j, const char* tname, const struct act_name* k, struct action* a,
		struct act_error* e)
{
	json_t* m = json_object_get(j, "max_dimension");
	if (m) {
		if (!is_int(m) || int_of(m) < 0)
			return action_fail(e, TOOL_BAD_ARGUMENTS, "max_dimension must be a non-negative integer (0 = native)");
		a->max_dimension = int_of(m);
	}
	if (k->act != ACT_ZOOM)
		return 0;
	json_t* r = json_object_get(j, "region");
	bool ok = json_is_array(r) && json_array_size(r) == 4;
	for (size_t i = 0; ok && i < 4; i++)
		ok = is_int(json_array_get(r, i));
	if (!ok)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "zoom needs region [x0, y0, x1, y1] (integers, screenshot space, end-exclusive)");
	return 0;
}

#define FIELDS(...) (const char* const[]){ __VA_ARGS__, NULL }
static const struct act_kind act_kinds[] = {
	[ACT_SCREENSHOT] = { .fields = FIELDS("max_dimension"), .parse = parse_image },
	[ACT_CLICK] = { .pointer = true, .button_field = true, .parse = parse_click },
	[ACT_DOUBLE_CLICK] = { .pointer = true },
	[ACT_TRIPLE_CLICK] = { .pointer = true },
	[ACT_MOVE] = { .pointer = true, .parse = parse_move },
	/* button even for left_click_drag: it was always taken there */
	[ACT_DRAG] = { .pointer = true, .fields = FIELDS("path", "start_coordinate", "button"), .parse = parse_drag },
	[ACT_MOUSE_DOWN] = { .pointer = true, .button_field = true },
	[ACT_MOUSE_UP] = { .pointer = true, .button_field = true },
	[ACT_SCROLL] = { .pointer = true, .fields = FIELDS("scroll_x", "scroll_y", "scroll_direction", "scroll_amount"),
		.parse = parse_scroll },
	[ACT_TYPE] = { .fields = FIELDS("text", "method", "chord", "ref"), .parse = parse_type },
	[ACT_KEYPRESS] = { .fields = FIELDS("keys", "text"), .parse = parse_chord },
	[ACT_HOLD_KEY] = { .fields = FIELDS("keys", "text", "duration"), .parse = parse_chord },
	[ACT_WAIT] = { .fields = FIELDS("ms", "duration"), .parse = parse_wait },
	[ACT_CURSOR_POSITION] = { 0 },
	[ACT_ZOOM] = { .fields = FIELDS("region", "max_dimension"), .parse = parse_image },
	[ACT_PASTE] = { .fields = FIELDS("text", "chord"), .parse = parse_paste_kind },
};
#undef FIELDS
_Static_assert(sizeof(act_kinds) / sizeof(act_kinds[0]) == ACT_PASTE + 1, "a row for every enum act");

static bool in_list(const char* const* list, const char* f)
{
	for (int i = 0; list && list[i]; i++)
		if (strcmp(list[i], f) == 0)
			return true;
	return false;
}

static bool field_allowed(const struct act_name* k, const char* f)
{
	const struct act_kind* kind = &act_kinds[k->act];
	return strcmp(f, "type") == 0 || strcmp(f, "action") == 0
			|| (kind->pointer && in_list(pointer_fields, f))
			|| (kind->button_field && !k->button && strcmp(f, "button") == 0)
			|| in_list(kind->fields, f);
}

/* "x, y, coordinate, ..." the fields k takes, for the error that names one
 * it does not. */
static void fields_taken(const struct act_name* k, char* out, size_t size)
{
	static const char* const button[] = { "button", NULL };
	const struct act_kind* kind = &act_kinds[k->act];
	const char* const* lists[] = { kind->pointer ? pointer_fields : NULL,
		kind->button_field && !k->button ? button : NULL, kind->fields };
	size_t used = 0;
	out[0] = '\0';
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
		for (int i = 0; lists[l] && lists[l][i] && used < size; i++)
			used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ", " : "", lists[l][i]);
}

int action_fields(const char* type, const char** out, int max)
{
	static const char* const button[] = { "button", NULL };
	const struct act_name* k = find_act(type);
	if (!k)
		return -1;
	const struct act_kind* kind = &act_kinds[k->act];
	const char* const* lists[] = { kind->pointer ? pointer_fields : NULL,
		kind->button_field && !k->button ? button : NULL, kind->fields };
	int n = 0;
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
		for (int i = 0; lists[l] && lists[l][i]; i++, n++)
			if (n < max)
				out[n] = lists[l][i];
	return n;
}

/* ---- The steps every action goes through ------------------------------------------------ */

/* The kind from type (or action, Anthropic), and no field it does not take. */
static int parse_kind(json_t* j, struct action* a, const char** tname, struct act_error* e)
{
	json_t* jt = json_object_get(j, "type");
	json_t* ja = json_object_get(j, "action");
	if (jt && ja)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "give the action type as \"type\" or \"action\", not both");
	if (!jt)
		jt = ja;
	if (!json_is_string(jt))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "needs a \"type\" (e.g. \"click\", \"type\", \"keypress\", \"screenshot\")");
	*tname = json_string_value(jt);
	a->kind = find_act(*tname);
	if (!a->kind) {
		char list[512] = "";
		size_t used = 0;
		for (size_t i = 0; i < N_ACT_NAMES && used < sizeof(list); i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					i ? ", " : "", act_names[i].name);
		return action_fail(e, TOOL_BAD_ARGUMENTS, "unknown action type \"%s\"; valid types: %s",
				*tname, list);
	}
	const char* f;
	json_t* v;
	json_object_foreach(j, f, v) {
		if (!field_allowed(a->kind, f)) {
			char taken[256];
			fields_taken(a->kind, taken, sizeof(taken));
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s does not take \"%s\" (it takes %s)", *tname, f,
					taken[0] ? taken : "nothing more");
		}
	}
	return 0;
}

/* Position: x and y, or coordinate [x, y] (not drag's: its end); or ref, an
 * element's centre, resolved when the action runs. */
static int parse_position(json_t* j, const char* tname, struct action* a, struct act_error* e)
{
	const struct act_name* k = a->kind;
	json_t* jx = json_object_get(j, "x");
	json_t* jy = json_object_get(j, "y");
	json_t* jc = json_object_get(j, "coordinate");
	if ((jx || jy) && jc)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "%s: give x and y, or coordinate, not both", tname);
	if (jx || jy) {
		if (!jx || !jy)
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s needs both x and y", tname);
		if (!is_int(jx) || !is_int(jy))
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s: x and y must be integers (pixels)", tname);
		a->x = int_of(jx);
		a->y = int_of(jy);
		a->has_xy = true;
	} else if (jc && k->act != ACT_DRAG) {
		if (!point_of(jc, &a->x, &a->y) || !json_is_array(jc))
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s: coordinate must be [x, y] (integers)", tname);
		a->has_xy = true;
	}
	json_t* jref = json_object_get(j, "ref");
	if (jref) {
		if (!json_is_string(jref))
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s: ref must be a string like \"e12\"", tname);
		if (jx || jy || jc)
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s: give ref or a position, not both", tname);
		if (k->act == ACT_DRAG)
			return action_fail(e, TOOL_BAD_ARGUMENTS, "%s does not take \"ref\"", tname);
		a->ref = json_string_value(jref);
		a->has_xy = true;
	}
	return 0;
}

/* "desktop", "screenshot" or a screenshot's space token. */
static int parse_space(json_t* j, struct action* a, struct act_error* e)
{
	json_t* jspace = json_object_get(j, "coordinate_space");
	const char* space = json_string_value(jspace);
	if (jspace && !space)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "coordinate_space must be a string");
	if (!space)
		return 0;
	if (strcmp(space, "desktop") == 0) {
		a->desktop_space = true;
	} else if (strcmp(space, "screenshot") == 0) {
		a->desktop_space = false;
	} else if (action_space_parse(space, &a->space_width, &a->space_height, &a->space_max) == 0) {
		a->desktop_space = false;
		a->has_space = true;
	} else {
		return action_fail(e, TOOL_BAD_ARGUMENTS, "coordinate_space must be \"screenshot\", "
				"\"desktop\" or the coordinate_space of a screenshot result "
				"(like \"1280x800/1280\"), not \"%.60s\"", space);
	}
	return 0;
}

/* Held keys on pointer actions: keys (OpenAI) or text (Anthropic). */
static int parse_held_keys(json_t* j, const char* tname, struct action* a, struct act_error* e)
{
	if (!act_kinds[a->kind->act].pointer)
		return 0;
	json_t* keys = json_object_get(j, "keys");
	json_t* text = json_object_get(j, "text");
	if (keys && text)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "%s: give held keys as keys or text, not both", tname);
	if ((keys || text) && parse_keys(keys ? keys : text, keys ? "keys" : "text", &a->mods, e) < 0)
		return -1;
	return 0;
}

/* The button: the alias's, else button's, else left. */
static int parse_button(json_t* j, struct action* a, struct act_error* e)
{
	a->button = a->kind->button ? a->kind->button : 1;
	const char* b = json_string_value(json_object_get(j, "button"));
	if (json_object_get(j, "button") && !b)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "button must be one of left, right, middle, wheel, back, forward");
	if (!b)
		return 0;
	a->button = 0;
	for (size_t i = 0; i < sizeof(buttons) / sizeof(buttons[0]); i++)
		if (strcmp(buttons[i].name, b) == 0)
			a->button = buttons[i].button;
	if (!a->button)
		return action_fail(e, TOOL_BAD_ARGUMENTS, "unknown button \"%s\"; use left, right, middle, wheel, back or forward", b);
	return 0;
}

int action_parse(json_t* j, bool batch_desktop, struct action* a,
		struct act_error* e)
{
	memset(a, 0, sizeof(*a));
	a->json = j;
	a->max_dimension = -1;
	a->desktop_space = batch_desktop;
	if (!json_is_object(j))
		return action_fail(e, TOOL_BAD_ARGUMENTS, "an action must be an object like {\"type\":\"click\",\"x\":10,\"y\":20}");
	const char* tname = NULL;
	if (parse_kind(j, a, &tname, e) < 0 || parse_position(j, tname, a, e) < 0 || parse_space(j, a, e) < 0
			|| parse_held_keys(j, tname, a, e) < 0 || parse_button(j, a, e) < 0)
		return -1;
	kind_parse_fn parse = act_kinds[a->kind->act].parse;
	return parse ? parse(j, tname, a->kind, a, e) : 0;
}
