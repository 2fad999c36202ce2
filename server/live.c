/* Minimal live view: answers a /live WebSocket with the hello message.
 * The live helper replaces this file; all lws plumbing stays in ws.c. The
 * protocol must keep the name "deskd.live" (the subprotocol clients ask for). */
#include "server/live.h"
#include "server/desktop.h"
#include "server/log.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <string.h>

struct live_session {
	char msg[LWS_PRE + 256];
	size_t len;
	bool sent;
};

static int live_callback(struct lws* wsi, enum lws_callback_reasons reason, void* user,
		void* in, size_t len)
{
	struct live_session* s = user;
	switch (reason) {
	case LWS_CALLBACK_ESTABLISHED: {
		int w = 0, h = 0;
		desktop_screen_size(&w, &h);
		int n = snprintf(s->msg + LWS_PRE, sizeof(s->msg) - LWS_PRE,
				"{\"type\":\"hello\",\"screen\":{\"width\":%d,\"height\":%d},\"windows\":[]}",
				w, h);
		s->len = n > 0 ? (size_t)n : 0;
		s->sent = false;
		lws_callback_on_writable(wsi);
		break;
	}
	case LWS_CALLBACK_SERVER_WRITEABLE:
		if (!s->sent) {
			if (lws_write(wsi, (unsigned char*)s->msg + LWS_PRE, s->len, LWS_WRITE_TEXT)
					< (int)s->len)
				return -1;
			s->sent = true;
		}
		break;
	case LWS_CALLBACK_RECEIVE:
		break;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
	return 0;
}

static const struct lws_protocols live__protocols[] = {
	{
		.name = "deskd.live",
		.callback = live_callback,
		.per_session_data_size = sizeof(struct live_session),
		.rx_buffer_size = 4096,
	},
	{ 0 },
};

const struct lws_protocols* live_protocols(void)
{
	return live__protocols;
}

int live_init(void)
{
	return 0;
}

void live_deinit(void)
{
}
