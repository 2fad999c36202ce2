/* The WebSocket side of the one port: one libwebsockets context with no
 * listening socket of its own, one vhost whose protocols come from live.c,
 * and one service thread. lws is single-threaded (PITFALLS 3): the acceptor
 * only queues sockets here and calls lws_cancel_service(); the service thread
 * adopts them when LWS_CALLBACK_EVENT_WAIT_CANCELLED fires. The head is
 * peeked, never consumed, so lws reads the whole handshake itself. */
#include "server/http/ws.h"
#include "server/http/listener.h"
#include "base/log.h"
#include "base/options.h"

#include <errno.h>
#include <libwebsockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WS_MAX_PROTOCOLS 8
#define WS_QUEUE_MAX 256

static struct {
	pthread_mutex_t mutex;
	struct lws_context* context;
	struct lws_vhost* vhost;
	pthread_t thread;
	bool running;
	atomic_bool stop;
	int queue[WS_QUEUE_MAX];
	uintptr_t tokens[WS_QUEUE_MAX];
	int n_queue;
	uintptr_t adopting;		/* the token of the socket being adopted */
	/* live.c's protocols, plus ours (last) to hear WAIT_CANCELLED even if
	 * live.c has none; each entry's callback goes through ws_callback. */
	struct lws_protocols protocols[WS_MAX_PROTOCOLS + 2];
	lws_callback_function* callbacks[WS_MAX_PROTOCOLS + 2];
} W = { .mutex = PTHREAD_MUTEX_INITIALIZER };

/* Adopt every queued socket; service thread only. Idempotent: the callback
 * fires once per protocol. */
static void drain_queue(void)
{
	int fds[WS_QUEUE_MAX];
	uintptr_t tokens[WS_QUEUE_MAX];
	pthread_mutex_lock(&W.mutex);
	int n = W.n_queue;
	memcpy(fds, W.queue, (size_t)n * sizeof(int));
	memcpy(tokens, W.tokens, (size_t)n * sizeof(uintptr_t));
	W.n_queue = 0;
	pthread_mutex_unlock(&W.mutex);
	if (n)
		log_debug("adopting %d WebSocket connection(s)", n);
	for (int i = 0; i < n; i++) {
		/* WSI_DESTROY may come inside the call: it takes W.adopting then. */
		W.adopting = tokens[i];
		/* A frame is a header message and then its JPEG: with Nagle on,
		 * the JPEG waited for the viewer's delayed ACK of the header
		 * (40 ms) about every other frame. lws does not set it on an
		 * adopted socket. */
		int one = 1;
		if (setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
			log_debug("TCP_NODELAY on a WebSocket: %s", strerror(errno));
		struct lws* wsi = lws_adopt_socket_vhost(W.vhost, fds[i]);	/* closes fd on failure */
		if (!wsi)
			log_warn("libwebsockets could not adopt a connection");
		if (wsi && W.adopting)
			lws_set_opaque_user_data(wsi, (void*)W.adopting);
		else if (W.adopting)
			listener_release(W.adopting);
		W.adopting = 0;
	}
}

static int ws_callback(struct lws* wsi, enum lws_callback_reasons reason, void* user,
		void* in, size_t len)
{
	if (reason == LWS_CALLBACK_EVENT_WAIT_CANCELLED)
		drain_queue();
	if (reason == LWS_CALLBACK_WSI_DESTROY) {
		/* fd is closed: the acceptor may count it out. */
		uintptr_t token = (uintptr_t)lws_get_opaque_user_data(wsi);
		if (!token) {
			token = W.adopting;
			W.adopting = 0;
		}
		lws_set_opaque_user_data(wsi, NULL);
		if (token)
			listener_release(token);
	}
	/* lws may copy the table, so find the entry by name. */
	const struct lws_protocols* p = lws_get_protocol(wsi);
	for (size_t i = 0; p && p->name && W.protocols[i].name; i++) {
		if (p != &W.protocols[i] && strcmp(p->name, W.protocols[i].name) != 0)
			continue;
		if (W.callbacks[i])
			return W.callbacks[i](wsi, reason, user, in, len);
		/* Our own entry: nobody may speak this protocol. */
		if (reason == LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION)
			return -1;
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static void* ws_main(void* arg)
{
	(void)arg;
	while (!atomic_load(&W.stop))
		if (lws_service(W.context, 0) < 0)
			break;
	return NULL;
}

static void ws_log(int level, const char* line)
{
	size_t n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		n--;
	if (level & LLL_ERR)
		log_warn("libwebsockets: %.*s", (int)n, line);
	else
		log_debug("libwebsockets: %.*s", (int)n, line);
}

int ws_start(const struct options* opts, const struct lws_protocols* protocols)
{
	(void)opts;
	int rc;
	if (W.running)
		return -EBUSY;
	lws_set_log_level(getenv("DESKD_LWS_DEBUG") ? 0x3ff : (LLL_ERR | LLL_WARN), ws_log);

	const struct lws_protocols* live = protocols;
	size_t n = 0;
	for (; live && live[n].name && n < WS_MAX_PROTOCOLS; n++) {
		W.protocols[n] = live[n];
		W.callbacks[n] = live[n].callback;
		W.protocols[n].callback = ws_callback;
	}
	W.protocols[n] = (struct lws_protocols){
		.name = "deskd-internal",
		.callback = ws_callback,
	};
	W.callbacks[n] = NULL;
	memset(&W.protocols[n + 1], 0, sizeof(W.protocols[n + 1]));

	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_VALIDATE_UTF8;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	info.max_http_header_data = 8192;
	W.context = lws_create_context(&info);
	if (!W.context) {
		log_error("cannot create the libwebsockets context");
		return -ENOMEM;
	}
	struct lws_context_creation_info vinfo;
	memset(&vinfo, 0, sizeof(vinfo));
	vinfo.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	vinfo.protocols = W.protocols;
	vinfo.vhost_name = "deskd";
	W.vhost = lws_create_vhost(W.context, &vinfo);
	if (!W.vhost) {
		log_error("cannot create the libwebsockets vhost");
		rc = -ENOMEM;
		goto vhost_failure;
	}
	atomic_store(&W.stop, false);
	rc = -pthread_create(&W.thread, NULL, ws_main, NULL);
	if (rc < 0)
		goto vhost_failure;
	W.running = true;
	return 0;

vhost_failure:
	lws_context_destroy(W.context);
	W.context = NULL;
	W.vhost = NULL;
	return rc;
}

void ws_stop(void)
{
	if (!W.running)
		return;
	atomic_store(&W.stop, true);
	lws_cancel_service(W.context);
	pthread_join(W.thread, NULL);
	W.running = false;
	pthread_mutex_lock(&W.mutex);
	for (int i = 0; i < W.n_queue; i++) {
		close(W.queue[i]);
		listener_release(W.tokens[i]);
	}
	W.n_queue = 0;
	pthread_mutex_unlock(&W.mutex);
	/* The service thread is gone; destroying on this thread is safe. */
	lws_context_destroy(W.context);
	W.context = NULL;
	W.vhost = NULL;
}

int ws_adopt(int fd, uintptr_t token)
{
	pthread_mutex_lock(&W.mutex);
	if (!W.running || atomic_load(&W.stop) || W.n_queue >= WS_QUEUE_MAX) {
		pthread_mutex_unlock(&W.mutex);
		close(fd);
		return W.running ? -EAGAIN : -ESHUTDOWN;
	}
	W.tokens[W.n_queue] = token;
	W.queue[W.n_queue++] = fd;
	pthread_mutex_unlock(&W.mutex);
	lws_cancel_service(W.context);
	return 0;
}
