#pragma once

/* The acceptor: one thread owns the listening socket. Each new connection is
 * peeked at (MSG_PEEK, never consumed) in a non-blocking epoll state machine
 * with a deadline per connection, so a silent client never delays others.
 * Once its request head is complete (or the deadline passes, or it cannot be
 * an upgrade) the connection is routed: on_websocket or on_http. */

#include <stddef.h>
#include <sys/socket.h>

/** Takes ownership of fd. Runs on the acceptor thread: must not block. */
typedef void (*listener_http_fn)(int fd, const struct sockaddr* addr, socklen_t len);
/** Takes ownership of fd; head/len are the peeked request head. Acceptor thread. */
typedef void (*listener_ws_fn)(int fd, const char* head, size_t len);

/** Bind host:port (port 0 picks one), listen and start the acceptor thread.
 *  *port receives the bound port. Returns 0 or -errno. */
int listener_start(const char* host, int* port, listener_http_fn on_http,
		listener_ws_fn on_websocket);
/** Stop the thread and close the listening socket and pending connections. */
void listener_stop(void);
