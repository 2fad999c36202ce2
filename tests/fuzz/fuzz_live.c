/* libFuzzer harness over the control channel's messages (server/live_ctl.c):
 * each input is a frame size (4 bytes) and one /live text frame as JSON.
 * Whatever it says, the invariants of docs/CONTROL.md hold: only the
 * person's token may send a control message; a parsed point is inside the
 * frame, a button one of 1, 2, 3, 8, 9, wheel notches bounded; text within
 * its limit. Pure: no sockets, no display. */

#include "server/live/live_ctl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	if (size < 4)
		return 0;
	int w = 1 + ((data[0] << 8 | data[1]) % 8192), h = 1 + ((data[2] << 8 | data[3]) % 8192);
	json_t* msg = json_loadb((const char*)data + 4, size - 4, JSON_REJECT_DUPLICATES, NULL);
	if (!msg)
		return 0;
	enum live_ctl_kind kind;
	if (!live_ctl_kind_of(json_string_value(json_object_get(msg, "type")), &kind)) {
		json_decref(msg);
		return 0;
	}
	static const enum http_role roles[] = { HTTP_ROLE_NONE, HTTP_ROLE_VIEW, HTTP_ROLE_AGENT,
		HTTP_ROLE_PERSON };
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (live_ctl_role_may(roles[i], kind) != (roles[i] == HTTP_ROLE_PERSON))
			abort();	/* someone other than the person may control */
	char err[256];
	struct live_ctl_pointer p;
	if (kind == LIVE_CTL_MOVE || kind == LIVE_CTL_BUTTON || kind == LIVE_CTL_WHEEL) {
		enum tool_code code = live_ctl_parse_pointer(kind, msg, w, h, &p, err, sizeof(err));
		if (code == TOOL_OK) {
			if (p.x < 0 || p.y < 0 || p.x >= w || p.y >= h)
				abort();
			if (kind == LIVE_CTL_BUTTON && !(p.button == 1 || p.button == 2 || p.button == 3
					|| p.button == 8 || p.button == 9))
				abort();
			if (abs(p.notches_x) > LIVE_CTL_MAX_NOTCHES || abs(p.notches_y) > LIVE_CTL_MAX_NOTCHES)
				abort();
		} else if (strlen(err) == 0) {
			abort();	/* every refusal says why */
		}
	}
	if (kind == LIVE_CTL_TEXT || kind == LIVE_CTL_PASTE) {
		const char* text;
		size_t len;
		if (live_ctl_parse_text(kind, msg, &text, &len, err, sizeof(err)) == TOOL_OK
				&& (!text || len > (kind == LIVE_CTL_PASTE ? LIVE_CTL_MAX_PASTE
					: LIVE_CTL_MAX_TEXT)))
			abort();
	}
	json_decref(msg);
	return 0;
}
