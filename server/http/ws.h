#pragma once

/* WebSocket side of the one port (libwebsockets, one service thread). The
 * acceptor hands over upgraded connections; ws.c owns the lws context. */

#include <stddef.h>
#include <stdint.h>

struct options;
struct lws_protocols;

/** Start the service thread with these protocols (ended by an entry with a
 *  NULL name; copied); main.c passes the live view's. */
int ws_start(const struct options* opts, const struct lws_protocols* protocols);
void ws_stop(void);
/** Hand a connected socket whose request head (peeked, not consumed) asks for
 *  a WebSocket upgrade. Any thread; takes ownership of fd. token is the
 *  acceptor's (server/http/listener.h): on success it is released once lws
 *  closes fd; on failure (-errno, fd closed) the caller releases it. */
int ws_adopt(int fd, uintptr_t token);
