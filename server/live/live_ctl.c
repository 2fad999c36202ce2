/* The control channel's messages without state: see live_ctl.h. */
#include "server/live/live_ctl.h"
#include "desktop/desktop.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char* name;
	enum live_ctl_kind kind;
} live_ctl_types[] = {
	{ "take", LIVE_CTL_TAKE }, { "release", LIVE_CTL_RELEASE },
	{ "pause", LIVE_CTL_PAUSE }, { "resume", LIVE_CTL_RESUME },
	{ "help_dismiss", LIVE_CTL_HELP_DISMISS }, { "approve", LIVE_CTL_APPROVE },
	{ "deny", LIVE_CTL_DENY }, { "move", LIVE_CTL_MOVE }, { "button", LIVE_CTL_BUTTON },
	{ "wheel", LIVE_CTL_WHEEL }, { "key", LIVE_CTL_KEY }, { "text", LIVE_CTL_TEXT },
	{ "paste", LIVE_CTL_PASTE },
};

bool live_ctl_kind_of(const char* type, enum live_ctl_kind* kind)
{
	for (size_t i = 0; type && i < sizeof(live_ctl_types) / sizeof(live_ctl_types[0]); i++)
		if (strcmp(type, live_ctl_types[i].name) == 0) {
			*kind = live_ctl_types[i].kind;
			return true;
		}
	return false;
}

bool live_ctl_role_may(enum http_role role, enum live_ctl_kind kind)
{
	(void)kind;	/* every control message is the person's */
	return role == HTTP_ROLE_PERSON;
}

bool live_ctl_is_input(enum live_ctl_kind kind)
{
	return kind >= LIVE_CTL_MOVE;
}

static int clamp_notches(int n)
{
	return n > LIVE_CTL_MAX_NOTCHES ? LIVE_CTL_MAX_NOTCHES
		: n < -LIVE_CTL_MAX_NOTCHES ? -LIVE_CTL_MAX_NOTCHES : n;
}

enum tool_code live_ctl_parse_pointer(enum live_ctl_kind kind, json_t* msg, int w, int h,
		struct live_ctl_pointer* out, char* err, size_t size)
{
	memset(out, 0, sizeof(*out));
	if (kind == LIVE_CTL_BUTTON) {
		json_t* b = json_object_get(msg, "button");
		json_t* d = json_object_get(msg, "down");
		json_int_t n = json_is_integer(b) ? json_integer_value(b) : 0;
		if (!(n == 1 || n == 2 || n == 3 || n == 8 || n == 9) || !json_is_boolean(d)) {
			snprintf(err, size, "button needs \"button\" (1, 2, 3, 8 or 9) and \"down\" (boolean)");
			return TOOL_BAD_ARGUMENTS;
		}
		out->button = (int)n;
		out->down = json_is_true(d);
	} else if (kind == LIVE_CTL_WHEEL) {
		json_t* jx = json_object_get(msg, "dx");
		json_t* jy = json_object_get(msg, "dy");
		if ((jx && !json_is_number(jx)) || (jy && !json_is_number(jy))) {
			snprintf(err, size, "wheel needs numbers dx, dy (pixels)");
			return TOOL_BAD_ARGUMENTS;
		}
		out->notches_x = clamp_notches(desktop_pixels_to_notches(jx ? json_number_value(jx) : 0));
		out->notches_y = clamp_notches(desktop_pixels_to_notches(jy ? json_number_value(jy) : 0));
	} else if (kind != LIVE_CTL_MOVE) {
		snprintf(err, size, "not a pointer message");
		return TOOL_BAD_ARGUMENTS;
	}
	json_t* jx = json_object_get(msg, "x");
	json_t* jy = json_object_get(msg, "y");
	if (!json_is_integer(jx) || !json_is_integer(jy)) {
		snprintf(err, size, "x and y must be integers (frame pixels)");
		return TOOL_BAD_ARGUMENTS;
	}
	json_int_t x = json_integer_value(jx), y = json_integer_value(jy);
	if (x < 0 || y < 0 || x >= w || y >= h) {
		snprintf(err, size, "(%lld, %lld) is outside the frame (0..%d, 0..%d); nothing was done",
				(long long)x, (long long)y, w - 1, h - 1);
		return TOOL_OUT_OF_BOUNDS;
	}
	out->x = (int)x;
	out->y = (int)y;
	return TOOL_OK;
}

enum tool_code live_ctl_parse_text(enum live_ctl_kind kind, json_t* msg, const char** text,
		size_t* len, char* err, size_t size)
{
	const char* type = kind == LIVE_CTL_PASTE ? "paste" : "text";
	size_t max = kind == LIVE_CTL_PASTE ? LIVE_CTL_MAX_PASTE : LIVE_CTL_MAX_TEXT;
	json_t* jt = json_object_get(msg, "text");
	*text = json_string_value(jt);
	*len = json_string_length(jt);
	if (!*text || *len > max) {
		snprintf(err, size, "%s needs \"text\", at most %zu bytes", type, max);
		return TOOL_BAD_ARGUMENTS;
	}
	size_t bad = 0;
	if (*len && desktop_text_check(*text, *len, &bad) < 0) {
		snprintf(err, size, "the text has a character that cannot be typed at byte %zu", bad);
		return TOOL_BAD_ARGUMENTS;
	}
	return TOOL_OK;
}
