#pragma once

/* The acceptor: one thread owns the listening socket. Each new connection is
 * peeked at (MSG_PEEK, never consumed) in a non-blocking epoll state machine
 * with a deadline per connection, so a silent client never delays others.
 * Once its request head is complete (or it cannot be an upgrade) the
 * connection is routed: on_websocket or on_http.
 *
 * Every connection is counted from accept to close, also after it was handed
 * to libmicrohttpd or libwebsockets: their owners report back with the
 * connection's token. The limits hold at the acceptor, below MHD's own
 * (which wedges MHD when reached): at the total or per-IP limit the oldest
 * idle connection (still in its head or body, or between requests) is closed
 * to make room; a connection that has not completed a request head within the
 * header timeout of opening, or of its previous response, is closed, and so is
 * one whose body falls that far behind LISTENER_BODY_RATE. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define LISTENER_BODY_RATE 1024	/* bytes/s a request body must keep up */

/** Names a counted connection; 0 is none. */
typedef uintptr_t listener_token;

struct listener_limits {
	int max_connections;		/* open at once, HTTP and WebSocket */
	int max_per_ip;			/* open at once from one address */
	int header_timeout_ms;		/* to complete a request head; a body
					 * may not fall further behind than this
					 * at LISTENER_BODY_RATE bytes/s */
};

/** Takes ownership of fd (also on failure). Returns 0, or -1 if fd was not
 *  taken into service (already closed). Acceptor thread: must not block. */
typedef int (*listener_http_fn)(int fd, const struct sockaddr* addr, socklen_t len);
/** Takes ownership of fd; head/len are the peeked request head. Returns 0 if
 *  the connection went into service (its owner calls listener_release(token)
 *  once fd is closed), or -1 if fd was closed (the acceptor releases token).
 *  Acceptor thread. */
typedef int (*listener_ws_fn)(int fd, const char* head, size_t len, listener_token token);

/** Bind host:port (port 0 picks one), listen and start the acceptor thread.
 *  *port receives the bound port. Returns 0 or -errno. */
int listener_start(const char* host, int* port, const struct listener_limits* limits,
		listener_http_fn on_http, listener_ws_fn on_websocket);
/** Stop the thread and close the listening socket and the connections it
 *  still holds. Those handed over stay counted until their owner reports. */
void listener_stop(void);
/** How many connections may be open at once under these limits, counting
 *  those shut down but not yet closed by their owner: a connection limit for
 *  MHD that the acceptor keeps it from reaching. */
int listener_capacity(const struct listener_limits* limits);

/** MHD started serving fd (its notify-connection callback): the token to
 *  pass below, or 0 if fd is not one of ours. Any thread. */
listener_token listener_http_started(int fd);
/** A request's head was read and bytes of its body arrived (0 on the head):
 *  until it is busy, the body must keep coming (see listener_limits).
 *  Any thread. */
void listener_http_reading(listener_token token, size_t bytes);
/** The whole request is in and being answered (busy: no deadline), or it
 *  finished (idle: the next head is due within the header timeout). */
void listener_http_busy(listener_token token, bool busy);
/** The connection is closed, or about to be by its owner (MHD's
 *  notify-connection "closed", libwebsockets' destroy). Any thread. */
void listener_release(listener_token token);
