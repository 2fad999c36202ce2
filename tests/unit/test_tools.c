/* The action vocabulary (tools/actions.c): pure parsing, no display; the
 * gate of people in the loop (tools/gate.c); and the ref registry
 * (tools/refs.c); the schemas of tools/schemas/ against the tool tables
 * and what the handlers accept. */
#include "tools/actions.h"
#include "tools/refs.h"
#include "tools/schema.h"
#include "tools/tools.h"
#include "base/options.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <stdlib.h>

static struct action a;
static struct act_error e;

/* Parse one action from JSON text; 0 or -1 (e filled). */
static int parse(const char* text)
{
	static json_t* held;
	action_deinit(&a);
	json_decref(held);
	held = json_loads(text, 0, NULL);
	memset(&e, 0, sizeof(e));
	if (!held) {
		fprintf(stderr, "bad test JSON: %s\n", text);
		return -2;
	}
	return action_parse(held, false, &a, &e);
}

/* Parse must fail with code and a message containing want. */
#define REFUSED(text, c, want) do { \
	TST_EQ_INT(parse(text), -1); \
	TST_EQ_INT(e.code, c); \
	if (!strstr(e.message, want)) { \
		tst_failed++; \
		fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, e.message, want); \
	} else { tst_passed++; } \
} while (0)

static void test_names_and_aliases(void)
{
	TST_EQ_INT(parse("{\"type\":\"click\",\"x\":10,\"y\":20}"), 0);
	TST_EQ_INT(a.kind->act, ACT_CLICK);
	TST_EQ_INT(a.button, 1);
	TST_EQ_INT(a.x, 10);
	TST_EQ_INT(a.y, 20);
	TST_CHECK(a.has_xy);
	/* "action" instead of "type", coordinate instead of x and y. */
	TST_EQ_INT(parse("{\"action\":\"right_click\",\"coordinate\":[5,6]}"), 0);
	TST_EQ_INT(a.kind->act, ACT_CLICK);
	TST_EQ_INT(a.button, 3);
	TST_CHECK(a.kind->anthropic);
	TST_EQ_INT(a.x, 5);
	TST_EQ_INT(parse("{\"action\":\"middle_click\",\"coordinate\":[1,2]}"), 0);
	TST_EQ_INT(a.button, 2);
	/* Anthropic clicks may omit the position (click where the pointer is). */
	TST_EQ_INT(parse("{\"action\":\"left_click\"}"), 0);
	TST_CHECK(!a.has_xy);
	TST_EQ_INT(parse("{\"type\":\"mouse_move\",\"coordinate\":[3,4]}"), 0);
	TST_EQ_INT(a.kind->act, ACT_MOVE);
	TST_EQ_INT(parse("{\"type\":\"double_click\",\"x\":1,\"y\":1}"), 0);
	TST_EQ_INT(a.kind->act, ACT_DOUBLE_CLICK);
	TST_EQ_INT(parse("{\"type\":\"click\",\"x\":1,\"y\":1,\"button\":\"back\"}"), 0);
	TST_EQ_INT(a.button, 8);
	TST_EQ_STR(action_button_name(a.button), "back");
	TST_EQ_INT(parse("{\"type\":\"click\",\"x\":1,\"y\":1,\"button\":\"wheel\"}"), 0);
	TST_EQ_INT(a.button, 2);
	/* Integral floats are integers (some clients send 10.0). */
	TST_EQ_INT(parse("{\"type\":\"click\",\"x\":10.0,\"y\":2}"), 0);
	TST_EQ_INT(a.x, 10);
	TST_EQ_INT(parse("{\"type\":\"click\",\"x\":1,\"y\":1,\"coordinate_space\":\"desktop\"}"), 0);
	TST_CHECK(a.desktop_space);
	/* A screenshot's space token. */
	TST_EQ_INT(parse("{\"type\":\"click\",\"x\":1,\"y\":1,\"coordinate_space\":\"640x400/640\"}"), 0);
	TST_CHECK(!a.desktop_space && a.has_space);
	TST_EQ_INT(a.space_width, 640);
	TST_EQ_INT(a.space_height, 400);
	TST_EQ_INT(a.space_max, 640);
}

static void test_space_tokens(void)
{
	int w, h, m;
	TST_EQ_INT(action_space_parse("1280x800/1280", &w, &h, &m), 0);
	TST_CHECK(w == 1280 && h == 800 && m == 1280);
	TST_EQ_INT(action_space_parse("1920x1080/0", &w, &h, &m), 0);
	TST_CHECK(w == 1920 && h == 1080 && m == 0);
	const char* bad[] = { "", "x/", "1280x800", "1280x800/", "1280 x800/1280", "-1x5/5",
		"1280x800/1280 ", "+1x1/1", "0x1/1", "1x0/1", "1x1/16385", "123456x1/1",
		"1x1/1/1", "0x10x1/1", "screenshot", NULL };
	for (int i = 0; bad[i]; i++)
		TST_EQ_INT(action_space_parse(bad[i], &w, &h, &m), -1);
	TST_EQ_INT(action_space_parse(NULL, &w, &h, &m), -1);
	char out[32];
	action_space_format(out, sizeof(out), 640, 400, 640);
	TST_EQ_STR(out, "640x400/640");
	TST_EQ_INT(action_space_parse(out, &w, &h, &m), 0);
}

static void test_conflicts(void)
{
	REFUSED("{\"type\":\"click\",\"action\":\"click\",\"x\":1,\"y\":1}",
			TOOL_BAD_ARGUMENTS, "as \"type\" or \"action\", not both");
	REFUSED("{\"type\":\"click\",\"x\":1,\"y\":1,\"coordinate\":[1,1]}",
			TOOL_BAD_ARGUMENTS, "give x and y, or coordinate, not both");
	REFUSED("{\"type\":\"click\",\"x\":1}", TOOL_BAD_ARGUMENTS, "needs both x and y");
	REFUSED("{\"type\":\"click\",\"x\":1.5,\"y\":1}", TOOL_BAD_ARGUMENTS, "must be integers");
	REFUSED("{\"type\":\"click\"}", TOOL_BAD_ARGUMENTS, "click needs x and y");
	REFUSED("{\"type\":\"click\",\"x\":1,\"y\":1,\"keys\":[\"ctrl\"],\"text\":\"ctrl\"}",
			TOOL_BAD_ARGUMENTS, "keys or text, not both");
	REFUSED("{\"type\":\"type\",\"text\":\"a\",\"x\":1}", TOOL_BAD_ARGUMENTS,
			"type does not take \"x\" (it takes text, method, chord, ref)");
	REFUSED("{\"type\":\"left_click\",\"coordinate\":[1,1],\"button\":\"right\"}",
			TOOL_BAD_ARGUMENTS, "left_click does not take \"button\" "
			"(it takes x, y, coordinate, coordinate_space, keys, text, ref)");
	REFUSED("{\"type\":\"click\",\"x\":1,\"y\":1,\"button\":\"top\"}",
			TOOL_BAD_ARGUMENTS, "unknown button \"top\"");
	REFUSED("{\"type\":\"click\",\"x\":1,\"y\":1,\"coordinate_space\":\"window\"}",
			TOOL_BAD_ARGUMENTS, "coordinate_space must be");
	REFUSED("{\"type\":\"clack\"}", TOOL_BAD_ARGUMENTS,
			"unknown action type \"clack\"; valid types: screenshot, click");
	REFUSED("[1]", TOOL_BAD_ARGUMENTS, "an action must be an object");
	REFUSED("{}", TOOL_BAD_ARGUMENTS, "needs a \"type\"");
}

static void test_drag_and_scroll(void)
{
	TST_EQ_INT(parse("{\"type\":\"drag\",\"path\":[{\"x\":1,\"y\":2},[3,4],{\"x\":5,\"y\":6}]}"), 0);
	TST_EQ_INT(a.n_path, 3);
	TST_EQ_INT(a.px[1], 3);
	TST_EQ_INT(a.py[2], 6);
	TST_EQ_INT(parse("{\"action\":\"left_click_drag\",\"start_coordinate\":[1,2],\"coordinate\":[7,8]}"), 0);
	TST_EQ_INT(a.n_path, 2);
	TST_EQ_INT(a.px[0], 1);
	TST_EQ_INT(a.px[1], 7);
	REFUSED("{\"type\":\"drag\",\"path\":[[1,1]]}", TOOL_BAD_ARGUMENTS, "at least 2 points");
	REFUSED("{\"type\":\"drag\",\"path\":[[1,1],[2,2]],\"start_coordinate\":[1,1]}",
			TOOL_BAD_ARGUMENTS, "not both");
	REFUSED("{\"type\":\"drag\",\"path\":[[1,1],\"x\"]}", TOOL_BAD_ARGUMENTS, "path[1] must be");
	REFUSED("{\"type\":\"drag\",\"x\":1,\"y\":1}", TOOL_BAD_ARGUMENTS, "not x and y");

	/* Pixels (OpenAI): 100 px a notch, at least one when non-zero. */
	TST_EQ_INT(parse("{\"type\":\"scroll\",\"x\":1,\"y\":1,\"scroll_y\":250}"), 0);
	TST_EQ_INT(a.notches_y, input_pixels_to_notches(250));
	TST_EQ_INT(a.notches_x, 0);
	TST_EQ_INT(parse("{\"type\":\"scroll\",\"x\":1,\"y\":1,\"scroll_x\":-1}"), 0);
	TST_EQ_INT(a.notches_x, -1);
	/* Direction and notches (Anthropic). */
	TST_EQ_INT(parse("{\"type\":\"scroll\",\"coordinate\":[1,1],\"scroll_direction\":\"up\",\"scroll_amount\":3}"), 0);
	TST_EQ_INT(a.notches_y, -3);
	TST_EQ_INT(parse("{\"type\":\"scroll\",\"coordinate\":[1,1],\"scroll_direction\":\"left\",\"scroll_amount\":2}"), 0);
	TST_EQ_INT(a.notches_x, -2);
	REFUSED("{\"type\":\"scroll\",\"x\":1,\"y\":1,\"scroll_y\":5,\"scroll_direction\":\"up\"}",
			TOOL_BAD_ARGUMENTS, "not both");
	REFUSED("{\"type\":\"scroll\",\"x\":1,\"y\":1,\"scroll_direction\":\"sideways\",\"scroll_amount\":1}",
			TOOL_BAD_ARGUMENTS, "must be up, down, left or right");
	REFUSED("{\"type\":\"scroll\",\"x\":1,\"y\":1,\"scroll_direction\":\"up\"}",
			TOOL_BAD_ARGUMENTS, "with scroll_amount");
	REFUSED("{\"type\":\"scroll\",\"x\":1,\"y\":1}", TOOL_BAD_ARGUMENTS, "scroll needs");
	REFUSED("{\"type\":\"scroll\",\"x\":1,\"y\":1,\"scroll_y\":1e9}", TOOL_BAD_ARGUMENTS,
			"notches");
}

static void test_keys_text_and_waits(void)
{
	TST_EQ_INT(parse("{\"type\":\"keypress\",\"keys\":[\"ctrl\",\"shift\",\"t\"]}"), 0);
	TST_EQ_INT(a.chord.n, 3);
	TST_EQ_INT(parse("{\"type\":\"key\",\"text\":\"ctrl+c\"}"), 0);
	TST_EQ_INT(a.kind->act, ACT_KEYPRESS);
	TST_EQ_INT(a.chord.n, 2);
	REFUSED("{\"type\":\"keypress\",\"keys\":[\"ctlr\"]}", TOOL_UNKNOWN_KEY, "keys[0]");
	REFUSED("{\"type\":\"keypress\",\"keys\":[]}", TOOL_BAD_ARGUMENTS, "non-empty array");
	REFUSED("{\"type\":\"keypress\"}", TOOL_BAD_ARGUMENTS, "needs keys");
	/* Held keys on a pointer action. */
	TST_EQ_INT(parse("{\"type\":\"click\",\"x\":1,\"y\":1,\"keys\":[\"shift\"]}"), 0);
	TST_EQ_INT(a.mods.n, 1);
	TST_EQ_INT(parse("{\"type\":\"hold_key\",\"text\":\"shift\",\"duration\":0.25}"), 0);
	TST_EQ_INT(a.ms, 250);
	REFUSED("{\"type\":\"hold_key\",\"text\":\"shift\",\"duration\":31}", TOOL_BAD_ARGUMENTS,
			"outside 0..30 s");
	REFUSED("{\"type\":\"hold_key\",\"text\":\"shift\"}", TOOL_BAD_ARGUMENTS, "needs duration");

	TST_EQ_INT(parse("{\"type\":\"type\",\"text\":\"h\\u00e9llo \\ud83d\\ude00\\n\"}"), 0);
	TST_EQ_INT(a.text_len, strlen("h\xc3\xa9llo \xf0\x9f\x98\x80\n"));
	REFUSED("{\"type\":\"type\",\"text\":\"a\\u0001b\"}", TOOL_BAD_ARGUMENTS,
			"control character 0x01 at byte 1");
	REFUSED("{\"type\":\"type\"}", TOOL_BAD_ARGUMENTS, "type needs text");

	TST_EQ_INT(parse("{\"type\":\"wait\"}"), 0);
	TST_EQ_INT(a.ms, 1000);
	TST_EQ_INT(parse("{\"type\":\"wait\",\"duration\":1.5}"), 0);
	TST_EQ_INT(a.ms, 1500);
	TST_EQ_INT(parse("{\"type\":\"wait\",\"ms\":20}"), 0);
	TST_EQ_INT(a.ms, 20);
	REFUSED("{\"type\":\"wait\",\"ms\":1,\"duration\":1}", TOOL_BAD_ARGUMENTS, "not both");
	REFUSED("{\"type\":\"wait\",\"ms\":30001}", TOOL_BAD_ARGUMENTS, "outside 0..30000 ms");

	TST_EQ_INT(parse("{\"type\":\"screenshot\",\"max_dimension\":640}"), 0);
	TST_EQ_INT(a.max_dimension, 640);
	TST_EQ_INT(parse("{\"type\":\"screenshot\"}"), 0);
	TST_EQ_INT(a.max_dimension, -1);
	TST_EQ_INT(parse("{\"type\":\"zoom\",\"region\":[0,0,10,10]}"), 0);
	REFUSED("{\"type\":\"zoom\",\"region\":[0,0,10]}", TOOL_BAD_ARGUMENTS, "zoom needs region");
	REFUSED("{\"type\":\"screenshot\",\"max_dimension\":-1}", TOOL_BAD_ARGUMENTS,
			"non-negative");
}

static void test_paste(void)
{
	TST_EQ_INT(parse("{\"type\":\"paste\",\"text\":\" a\\r\\n\\tb \\u0001\"}"), 0);
	TST_EQ_INT(a.kind->act, ACT_PASTE);
	TST_CHECK(a.paste);
	TST_CHECK(!a.has_chord);
	TST_EQ_INT(a.text_len, 8);	/* control characters are fine in a paste */
	TST_EQ_INT(parse("{\"type\":\"paste\",\"text\":\"\",\"chord\":\"ctrl+shift+v\"}"), 0);
	TST_CHECK(a.has_chord);
	TST_EQ_INT(a.chord.n, 3);
	TST_EQ_INT(parse("{\"type\":\"paste\",\"text\":\"x\",\"chord\":[\"shift\",\"Insert\"]}"), 0);
	TST_EQ_INT(a.chord.n, 2);
	/* type with method paste is a paste; method keys is typing. */
	TST_EQ_INT(parse("{\"type\":\"type\",\"text\":\"x\",\"method\":\"paste\"}"), 0);
	TST_EQ_INT(a.kind->act, ACT_TYPE);
	TST_CHECK(a.paste);
	TST_EQ_INT(parse("{\"type\":\"type\",\"text\":\"x\",\"method\":\"keys\"}"), 0);
	TST_CHECK(!a.paste);
	REFUSED("{\"type\":\"paste\"}", TOOL_BAD_ARGUMENTS, "paste needs text");
	/* A NUL (deskd's JSON parsers refuse \\u0000; a table caller might not). */
	json_t* nul = json_pack("{s:s, s:s#}", "type", "paste", "text", "a\0b", (size_t)3);
	action_deinit(&a);
	TST_EQ_INT(action_parse(nul, false, &a, &e), -1);
	TST_CHECK(strstr(e.message, "NUL") != NULL);
	json_decref(nul);
	REFUSED("{\"type\":\"paste\",\"text\":\"a\",\"chord\":\"ctrl+nosuchkey\"}",
			TOOL_UNKNOWN_KEY, "chord");
	REFUSED("{\"type\":\"paste\",\"text\":\"a\",\"x\":1}", TOOL_BAD_ARGUMENTS,
			"does not take \"x\"");
	REFUSED("{\"type\":\"type\",\"text\":\"a\",\"method\":\"telepathy\"}",
			TOOL_BAD_ARGUMENTS, "method must be");
	REFUSED("{\"type\":\"type\",\"text\":\"a\",\"chord\":\"ctrl+v\"}",
			TOOL_BAD_ARGUMENTS, "chord goes with method");
	/* A paste may be longer than a typed text (64 KiB). */
	size_t n = 200000;
	char* text = malloc(n + 64);
	int off = snprintf(text, 64, "{\"type\":\"paste\",\"text\":\"");
	memset(text + off, 'x', n);
	memcpy(text + off + n, "\"}", 3);
	TST_EQ_INT(parse(text), 0);
	TST_EQ_INT(a.text_len, n);
	free(text);
}

/* The gate: what a person holding the desktop or a pause refuses. */
static int gate_changes;
static void gate_count(void)
{
	gate_changes++;
}

static void test_gate(void)
{
	static const struct tool_def acting = { .name = "computer_click", .flags = TOOL_DESKTOP_LOCK };
	static const struct tool_def looking = { .name = "screenshot",
		.flags = TOOL_READ_ONLY | TOOL_OBSERVES };
	static const struct tool_def a11y = { .name = "ui_snapshot", .flags = TOOL_READ_ONLY };
	static const struct tool_def listing = { .name = "windows", .flags = TOOL_READ_ONLY };
	struct options opts = { 0 };
	options_set_global(&opts);
	tools_gate_listen(gate_count);
	struct tool_ctx ctx = { .source = "test" };
	struct tool_result out;

	tools_gate_set_held(true, NULL);
	TST_EQ_INT(gate_changes, 1);
	const struct tool_def* refused[] = { &acting, &looking, &a11y };
	for (size_t i = 0; i < 3; i++) {
		tool_result_init(&out);
		TST_CHECK(!tools_gate_admit(refused[i], &ctx, NULL, &out));
		TST_EQ_INT(out.code, TOOL_HUMAN_IN_CONTROL);
		TST_EQ_INT(tool_code_http_status(out.code), 409);
		TST_CHECK(strstr(json_string_value(json_object_get(out.structured, "message")),
				"request_human_help") != NULL);
		tool_result_deinit(&out);
	}
	tool_result_init(&out);
	TST_CHECK(tools_gate_admit(&listing, &ctx, NULL, &out));
	TST_CHECK(!out.is_error);
	TST_CHECK(!tools_gate_recheck(&acting, &ctx, &out));
	tool_result_deinit(&out);
	opts.control_allows_observe = true;
	tool_result_init(&out);
	TST_CHECK(tools_gate_admit(&looking, &ctx, NULL, &out));
	TST_CHECK(!tools_gate_admit(&acting, &ctx, NULL, &out));
	tool_result_deinit(&out);
	opts.control_allows_observe = false;

	/* The hand-back note goes to the first successful acting call only. */
	tools_gate_set_held(false, "done");
	tool_result_init(&out);
	TST_CHECK(tools_gate_admit(&acting, &ctx, NULL, &out));
	tools_gate_finish(&listing, &ctx, &out);
	TST_CHECK(out.structured == NULL);
	tools_gate_finish(&acting, &ctx, &out);
	json_t* hc = json_object_get(out.structured, "human_control");
	TST_EQ_STR(json_string_value(json_object_get(hc, "note")), "done");
	tool_result_deinit(&out);
	tool_result_init(&out);
	tools_gate_finish(&acting, &ctx, &out);
	TST_CHECK(out.structured == NULL);
	tool_result_deinit(&out);

	/* Every actor refused during a hold gets the note once, whoever came
	 * first after the hand-back; the person's own calls take nothing. */
	struct tool_ctx mcp = { .source = "mcp", .session_id = "s1" };
	struct tool_ctx rest = { .source = "rest" };
	struct tool_ctx person = { .source = "rest", .client_name = "dashboard", .by_person = true };
	struct tool_ctx page = { .source = "rest", .client_name = "dashboard", .background = true };
	tools_gate_set_held(true, NULL);
	for (int i = 0; i < 2; i++) {
		tool_result_init(&out);
		TST_CHECK(!tools_gate_admit(&acting, i ? &rest : &mcp, NULL, &out));
		tool_result_deinit(&out);
	}
	tools_gate_set_held(false, "both");
	struct tool_ctx* order[] = { &person, &page, &rest, &rest, &ctx, &mcp, &mcp };
	bool told[] = { false, false, true, false, false, true, false };
	for (size_t i = 0; i < 7; i++) {
		tool_result_init(&out);
		tools_gate_finish(&acting, order[i], &out);
		hc = json_object_get(out.structured, "human_control");
		TST_CHECK((hc != NULL) == told[i]);
		if (hc)
			TST_EQ_STR(json_string_value(json_object_get(hc, "note")), "both");
		tool_result_deinit(&out);
	}

	/* Pause refuses acting calls only. */
	tools_gate_set_paused(true);
	tool_result_init(&out);
	TST_CHECK(!tools_gate_admit(&acting, &ctx, NULL, &out));
	TST_EQ_INT(out.code, TOOL_PAUSED);
	tool_result_deinit(&out);
	tool_result_init(&out);
	TST_CHECK(tools_gate_admit(&looking, &ctx, NULL, &out));
	tool_result_deinit(&out);
	tools_gate_set_paused(false);
	json_t* state = tools_gate_state();
	TST_CHECK(json_is_false(json_object_get(state, "paused")));
	TST_EQ_INT(json_array_size(json_object_get(state, "help")), 0);
	json_decref(state);
	TST_EQ_INT(tools_gate_dismiss(12345, NULL), -ENOENT);
	TST_EQ_INT(tools_gate_answer(12345, true), -ENOENT);
	tools_gate_listen(NULL);
	options_set_global(NULL);
}

static struct a11y_id element_id(const char* bus, int i)
{
	struct a11y_id id;
	snprintf(id.bus, sizeof(id.bus), "%s", bus);
	snprintf(id.path, sizeof(id.path), "/org/a11y/atspi/accessible/%d", i);
	return id;
}

static void test_refs(void)
{
	TST_EQ_INT(refs_parse("e12"), 12);
	TST_EQ_INT(refs_parse("e0"), 0);
	TST_EQ_INT(refs_parse("e12x"), 0);
	TST_EQ_INT(refs_parse("12"), 0);
	TST_EQ_INT(refs_parse("e99999999999"), 0);
	TST_EQ_INT(refs_parse(NULL), 0);

	struct a11y_id ok = element_id(":1.5", 1), cancel = element_id(":1.5", 2);
	refs_lock();
	unsigned n_ok = refs_number_locked(&ok, 7, 100, 43, "OK", "push button:OK:0");
	unsigned n_cancel = refs_number_locked(&cancel, 7, 100, 43, "Cancel", NULL);
	/* The same element keeps its number; what was seen is updated. */
	unsigned again = refs_number_locked(&ok, 8, 100, 43, "Okay", NULL);
	refs_unlock();
	TST_CHECK(n_ok != 0 && n_cancel != 0 && n_ok != n_cancel);
	TST_EQ_INT(again, n_ok);
	struct ref r;
	TST_CHECK(refs_get(n_ok, &r));
	TST_EQ_STR(r.name, "Okay");
	TST_EQ_STR(r.locator, "push button:OK:0");	/* NULL keeps the locator */
	TST_EQ_INT(r.window, 8);
	ref_clear(&r);
	TST_CHECK(refs_get(n_cancel, &r));
	TST_EQ_STR(r.locator, "");
	ref_clear(&r);

	/* Moved onto cancel's path: cancel's ref is forgotten. */
	refs_move(n_ok, &cancel);
	TST_CHECK(!refs_get(n_cancel, &r));
	TST_CHECK(refs_get(n_ok, &r));
	TST_EQ_STR(r.id.path, cancel.path);
	ref_clear(&r);
	refs_lock();
	TST_EQ_INT(refs_number_locked(&cancel, 8, 100, 43, "Okay", NULL), n_ok);
	refs_unlock();

	/* At most REFS_MAX: the oldest go first, numbers are never reused. */
	unsigned last = 0;
	refs_lock();
	for (int i = 0; i < REFS_MAX + 1; i++) {
		struct a11y_id id = element_id(":1.9", i);
		last = refs_number_locked(&id, 9, 200, 43, "x", NULL);
	}
	refs_unlock();
	TST_CHECK(last > n_ok + REFS_MAX);
	TST_CHECK(!refs_get(n_ok, &r));
	TST_CHECK(refs_get(last, &r));
	ref_clear(&r);
	TST_CHECK(!refs_get(last + 1, &r));
}


/* ---- tools/schemas/ -------------------------------------------------------------------- */

#define TOOLS_TABLE(name) name,
static const struct tool_def* const builtin_tables[] = {
#include "tools/tables.def"
};
#undef TOOLS_TABLE

static const struct tool_def* builtin_tool(const char* name)
{
	for (size_t t = 0; t < sizeof(builtin_tables) / sizeof(builtin_tables[0]); t++)
		for (const struct tool_def* d = builtin_tables[t]; d->name; d++)
			if (strcmp(d->name, name) == 0)
				return d;
	return NULL;
}

#define SCHEMA_FAIL(...) do { \
	tst_failed++; \
	fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); \
	fputc('\n', stderr); \
} while (0)

/* Every name of props (an object schema's properties) is in names (ended by
 * NULL) or in also (may be NULL); what names the schema of what. */
static void props_within(json_t* props, const char* const* names, const char* const* also,
		const char* what)
{
	const char* key;
	json_t* v;
	json_object_foreach(props, key, v) {
		bool found = false;
		for (int i = 0; names[i] && !found; i++)
			found = strcmp(names[i], key) == 0;
		for (int i = 0; also && also[i] && !found; i++)
			found = strcmp(also[i], key) == 0;
		if (found)
			tst_passed++;
		else
			SCHEMA_FAIL("%s: the schema offers \"%s\", which the handler refuses", what, key);
	}
}

/* The shapes every tool schema has: an object; inputs closed (the tools
 * refuse unknown keys) with required names among the properties. */
static void check_shape(const char* name, json_t* entry)
{
	json_t* in = json_object_get(entry, "input");
	json_t* out = json_object_get(entry, "output");
	const char* key;
	json_t* v;
	json_object_foreach(entry, key, v)
		if (strcmp(key, "input") != 0 && strcmp(key, "output") != 0)
			SCHEMA_FAIL("%s: unknown member \"%s\" (input, output)", name, key);
	if (!in) {
		SCHEMA_FAIL("%s: no input schema", name);
		return;
	}
	TST_EQ_STR(json_string_value(json_object_get(in, "type")), "object");
	TST_CHECK(json_is_false(json_object_get(in, "additionalProperties")));
	json_t* props = json_object_get(in, "properties");
	size_t i;
	json_array_foreach(json_object_get(in, "required"), i, v)
		if (!json_object_get(props, json_string_value(v)))
			SCHEMA_FAIL("%s: requires \"%s\", which is not a property", name,
					json_string_value(v));
	if (out)
		TST_EQ_STR(json_string_value(json_object_get(out, "type")), "object");
}

/* The batch and split tools against the action parser's field lists
 * (action_fields), which refuse any other field: a property the schema
 * offers must be one the action takes, and the batch action object offers
 * every field of every type. */
static void check_actions(json_t* tools)
{
	enum { MAX_FIELDS = 32 };
	const char* fields[MAX_FIELDS];
	static const char* const type_and_action[] = { "type", "action", NULL };
	json_t* item = json_object_get(json_object_get(json_object_get(json_object_get(
			json_object_get(json_object_get(tools, "computer_use"), "input"),
			"properties"), "actions"), "items"), "properties");
	TST_CHECK(json_is_object(item));
	/* The type enum is actions.h's list, in its order. */
	json_t* types = json_object_get(json_object_get(item, "type"), "enum");
#define ACTION_NAME_STR(name, ...) name,
	static const char* const names[] = { ACTION_NAMES(ACTION_NAME_STR, ) };
#undef ACTION_NAME_STR
	const size_t n_names = sizeof(names) / sizeof(names[0]);
	TST_EQ_INT((int)json_array_size(types), (int)n_names);
	for (size_t i = 0; i < n_names && i < json_array_size(types); i++)
		TST_EQ_STR(json_string_value(json_array_get(types, i)), names[i]);
	/* The action object: every field some type takes, and no other. */
	const char* all[MAX_FIELDS * 4];
	size_t n_all = 0;
	for (size_t t = 0; t < n_names; t++) {
		int n = action_fields(names[t], fields, MAX_FIELDS);
		TST_CHECK(n >= 0 && n <= MAX_FIELDS);
		for (int f = 0; f < n && f < MAX_FIELDS; f++) {
			if (!json_object_get(item, fields[f]))
				SCHEMA_FAIL("computer_use: %s takes \"%s\", the action object lacks it",
						names[t], fields[f]);
			bool seen = false;
			for (size_t j = 0; j < n_all && !seen; j++)
				seen = strcmp(all[j], fields[f]) == 0;
			if (!seen && n_all + 1 < sizeof(all) / sizeof(all[0]))
				all[n_all++] = fields[f];
		}
	}
	all[n_all] = NULL;
	props_within(item, all, type_and_action, "computer_use actions[]");
	/* Each split tool computer_<type>: run_split drops window and sets type. */
	static const char* const window[] = { "window", NULL };
	int n_split = 0;
	const char* name;
	json_t* entry;
	json_object_foreach(tools, name, entry) {
		if (strncmp(name, "computer_", 9) != 0 || strcmp(name, "computer_use") == 0)
			continue;
		const char* type = name + 9;
		json_t* props = json_object_get(json_object_get(entry, "input"), "properties");
		n_split++;
		if (strcmp(type, "screenshot") == 0 || strcmp(type, "zoom") == 0) {
			/* The screenshot and zoom tools' handlers run these. */
			json_t* own = json_object_get(json_object_get(json_object_get(tools, type),
					"input"), "properties");
			const char* key;
			json_t* v;
			json_object_foreach(props, key, v)
				if (!json_object_get(own, key))
					SCHEMA_FAIL("%s offers \"%s\", which %s refuses", name, key, type);
			continue;
		}
		int n = action_fields(type, fields, MAX_FIELDS - 1);
		if (n < 0 || n > MAX_FIELDS - 1) {
			SCHEMA_FAIL("%s: no action type %s (or more than %d fields)", name, type,
					MAX_FIELDS - 1);
			continue;
		}
		fields[n] = NULL;
		props_within(props, fields, window, name);
		/* And it offers all of them but these, left out on purpose: ref
		 * (a ui element; the batch takes it, the split tools keep to
		 * pixels) and drag's x, y (its points are path, or
		 * start_coordinate and coordinate). */
		for (int f = 0; fields[f]; f++) {
			bool omitted = strcmp(fields[f], "ref") == 0 || (strcmp(type, "drag") == 0
					&& (strcmp(fields[f], "x") == 0 || strcmp(fields[f], "y") == 0));
			if (!omitted && !json_object_get(props, fields[f]))
				SCHEMA_FAIL("%s: the action takes \"%s\", the schema lacks it", name, fields[f]);
		}
	}
	TST_EQ_INT(n_split, 16);
}

static void test_schema_files(void)
{
	char err[256] = "";
	json_t* tools = schema_files_tools(err, sizeof(err));
	if (!tools) {
		SCHEMA_FAIL("tools/schemas: %s", err);
		return;
	}
	int n_files = 0;
	for (const struct schema_file* f = schema_files; f->path; f++)
		n_files++;
	TST_CHECK(n_files >= 2);
	/* Each entry is a built-in tool's, with its schemas only there. */
	const char* name;
	json_t* entry;
	json_object_foreach(tools, name, entry) {
		const struct tool_def* d = builtin_tool(name);
		if (!d) {
			SCHEMA_FAIL("tools/schemas: %s is no built-in tool", name);
			continue;
		}
		TST_CHECK(!(d->flags & TOOL_GROUP));	/* made from the members' */
		TST_CHECK(!d->input_schema && !d->output_schema);
		check_shape(name, entry);
	}
	/* And every built-in tool but a group has its entry. */
	for (size_t t = 0; t < sizeof(builtin_tables) / sizeof(builtin_tables[0]); t++)
		for (const struct tool_def* d = builtin_tables[t]; d->name; d++)
			if (!(d->flags & TOOL_GROUP) && !json_object_get(tools, d->name))
				SCHEMA_FAIL("tool %s has no schemas in tools/schemas/", d->name);
	check_actions(tools);
	/* The fragments are spliced in: no file reference is left. */
	char* text = json_dumps(tools, JSON_COMPACT);
	TST_CHECK(text && !strstr(text, ".json#"));
	free(text);
	json_decref(tools);
}

int main(void)
{
	test_schema_files();
	test_refs();
	test_paste();
	test_gate();
	test_names_and_aliases();
	test_conflicts();
	test_drag_and_scroll();
	test_keys_text_and_waits();
	test_space_tokens();
	action_deinit(&a);
	TST_END();
}
