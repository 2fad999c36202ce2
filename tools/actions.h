#pragma once

/* The action vocabulary of computer_use and the computer_<type> tools: the
 * OpenAI computer-use names with the Anthropic computer_20251124 names as
 * aliases. Parsing is pure (no X, no state): it validates one action object
 * into a struct action, or says exactly what is wrong. Private to tools/
 * (tools/input_tools.c runs the actions; tests/unit/test_tools.c and
 * tests/fuzz/fuzz_actions.c exercise the parser). */

#include "tools/tools.h"
#include "input/input.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ACTION_MAX_PATH_POINTS 1000	/* drag path */
#define ACTION_MAX_WAIT_MS 30000	/* wait, hold_key */
#define ACTION_MAX_TYPE_BYTES 65536	/* type: longer text is refused */
#define ACTION_MAX_PASTE_BYTES (8 << 20)	/* paste: the clipboard's limit */

enum act {
	ACT_SCREENSHOT, ACT_CLICK, ACT_DOUBLE_CLICK, ACT_TRIPLE_CLICK, ACT_MOVE,
	ACT_DRAG, ACT_MOUSE_DOWN, ACT_MOUSE_UP, ACT_SCROLL, ACT_TYPE,
	ACT_KEYPRESS, ACT_HOLD_KEY, ACT_WAIT, ACT_CURSOR_POSITION, ACT_ZOOM,
	ACT_PASTE,
};

/* Every name an action's type may have, in the order the batch schema's
 * type enum lists them (tools/input_tools.c makes it from this list, and
 * actions.c its table): X(name, act, implied button, Anthropic alias), SEP
 * between rows (nothing, or "," for JSON). */
#define ACTION_NAMES(X, SEP) \
	X("screenshot", ACT_SCREENSHOT, 0, false) SEP \
	X("click", ACT_CLICK, 0, false) SEP \
	X("double_click", ACT_DOUBLE_CLICK, 1, false) SEP \
	X("triple_click", ACT_TRIPLE_CLICK, 1, false) SEP \
	X("move", ACT_MOVE, 0, false) SEP \
	X("drag", ACT_DRAG, 0, false) SEP \
	X("mouse_down", ACT_MOUSE_DOWN, 0, false) SEP \
	X("mouse_up", ACT_MOUSE_UP, 0, false) SEP \
	X("scroll", ACT_SCROLL, 0, false) SEP \
	X("type", ACT_TYPE, 0, false) SEP \
	X("keypress", ACT_KEYPRESS, 0, false) SEP \
	X("hold_key", ACT_HOLD_KEY, 0, false) SEP \
	X("wait", ACT_WAIT, 0, false) SEP \
	X("cursor_position", ACT_CURSOR_POSITION, 0, false) SEP \
	X("zoom", ACT_ZOOM, 0, false) SEP \
	X("paste", ACT_PASTE, 0, false) SEP \
	/* Anthropic computer_20251124 names */ \
	X("left_click", ACT_CLICK, 1, true) SEP \
	X("right_click", ACT_CLICK, 3, true) SEP \
	X("middle_click", ACT_CLICK, 2, true) SEP \
	X("mouse_move", ACT_MOVE, 0, true) SEP \
	X("left_click_drag", ACT_DRAG, 1, true) SEP \
	X("left_mouse_down", ACT_MOUSE_DOWN, 1, true) SEP \
	X("left_mouse_up", ACT_MOUSE_UP, 1, true) SEP \
	X("key", ACT_KEYPRESS, 0, true)

struct act_name {
	const char* name;
	enum act act;
	int button;	/* implied button for aliases, 0 = from `button` */
	bool anthropic;
};

/* One validated action. Strings are borrowed from the JSON arguments. */
struct action {
	const struct act_name* kind;
	json_t* json;
	bool has_xy, desktop_space;
	/* coordinate_space given as a screenshot's space token: the image
	 * size and max dimension it names (has_space). */
	bool has_space;
	int space_width, space_height, space_max;
	int x, y;
	int button;
	struct input_chord mods;	/* held during pointer actions */
	struct input_chord chord;	/* keypress, hold_key */
	int* px;			/* drag path */
	int* py;
	size_t n_path;
	int notches_x, notches_y;
	const char* text;
	size_t text_len;
	bool paste;			/* paste, or type with method "paste" */
	bool has_chord;			/* paste: chord given (else ctrl+v, or
					 * shift+Insert in a terminal) */
	int ms;
	int max_dimension;		/* screenshot, zoom: -1 = none given */
	const char* ref;		/* pointer actions, type: an element ref (ui tools) instead of x, y */
};

/* Errors carry a code and a message; the batch adds the index. */
struct act_error {
	enum tool_code code;
	char message[768];
};

/** Validate one action object j (borrowed; a keeps pointers into it) into a.
 *  batch_desktop: the batch's coordinate_space is "desktop". Returns 0, or -1
 *  with e filled (a may hold allocations: action_deinit it either way). */
int action_parse(json_t* j, bool batch_desktop, struct action* a,
		struct act_error* e);
/** A coordinate space token, "<width>x<height>/<max_dimension>": the size
 *  of a target's screenshots at that max dimension (0 = native). Screenshot
 *  and zoom results name their space this way; actions and zoom accept it
 *  as coordinate_space, so a client without a session (MCP 2026-07-28,
 *  REST) maps exactly what it saw. Returns 0, or -1 when s is not one. */
int action_space_parse(const char* s, int* width, int* height, int* max_dimension);
void action_space_format(char* out, size_t size, int width, int height, int max_dimension);
/** The fields an action of type takes besides "type" and "action" (its
 *  own, a pointer action's, button unless the name implies one): the list
 *  parsing holds it to. Fills up to max names, returns how many it has, or
 *  -1 for an unknown type. The tools' schemas must agree with it
 *  (tests/unit/test_tools.c). */
int action_fields(const char* type, const char** out, int max);
/** Free what action_parse allocated (the drag path). */
void action_deinit(struct action* a);
/** "left", "middle", "right", "back", "forward" for an X button number. */
const char* action_button_name(int button);
/** Fill e with code and the message; returns -1. */
int action_fail(struct act_error* e, enum tool_code code, const char* fmt, ...)
		__attribute__((format(printf, 3, 4)));

/** The centre of element ref ("e12", tools/ui.c) in desktop pixels, read
 *  now. 0, or -1 with e filled (stale_ref, timeout, no_accessibility, ...). */
int tools_ui_ref_point(const char* ref, int* x, int* y, struct act_error* e);
