#pragma once

/* Pure helpers of the HTTP layer, kept apart so unit tests reach them without
 * threads or sockets: Host and Origin policy (DNS rebinding, cross-site
 * requests), bearer parsing, and reading a raw request head that the
 * acceptor peeked at (classification and the WebSocket gate). */

#include <stdbool.h>
#include <stddef.h>

struct netcheck_policy {
	bool loopback;			/* Host is enforced only on loopback */
	const char* listen_host;	/* as given to --listen, no brackets */
	int port;			/* the bound port */
	char* const* allow_origins;	/* --allow-origin values */
	int n_allow_origins;
};

/** Is this Host header acceptable? "name", "name:port", "[v6]" or
 *  "[v6]:port" naming the listen address, localhost, 127.0.0.1 or [::1].
 *  Always true when not listening on loopback. NULL (HTTP/1.0) is accepted. */
bool netcheck_host_allowed(const struct netcheck_policy* p, const char* host);

/** Is this Origin acceptable? NULL (no Origin) is. Allowed: our own origins
 *  (http://127.0.0.1:PORT, http://localhost:PORT, http://[::1]:PORT, the listen
 *  address), http(s)://<Host> when that Host is allowed, and --allow-origin. */
bool netcheck_origin_allowed(const struct netcheck_policy* p, const char* origin,
		const char* host);

/** Extract the token of "Bearer <token>" (scheme case-insensitive) into out.
 *  Returns the token length, or -1 if absent, malformed or too long. */
int netcheck_bearer(const char* authorization, char* out, size_t size);

enum netcheck_head {
	NETCHECK_HEAD_INCOMPLETE = 0,	/* wait for more bytes */
	NETCHECK_HEAD_HTTP,		/* hand to libmicrohttpd (also garbage) */
	NETCHECK_HEAD_WEBSOCKET,	/* a complete GET head with Upgrade: websocket */
};

/** Classify the first len bytes of a connection; cap is the most that will
 *  ever be looked at (a full buffer without a complete head is HTTP). */
enum netcheck_head netcheck_classify(const char* buf, size_t len, size_t cap);

/** Length of the head including its blank line, or 0 if incomplete. */
size_t netcheck_head_length(const char* buf, size_t len);

/** Value of header name in a raw head (case-insensitive; repeated headers
 *  joined with ", "), trimmed, into out. Returns its length or -1. */
int netcheck_head_header(const char* buf, size_t len, const char* name,
		char* out, size_t size);

/** Split the request target of a raw head into path and query (without the
 *  '?'; "" if none). Returns 0 or -1. */
int netcheck_head_target(const char* buf, size_t len, char* path, size_t path_size,
		char* query, size_t query_size);

/** Decoded value of name in a query string ("a=1&b=x%20y"). Returns its
 *  length or -1 if absent or too long. */
int netcheck_query_param(const char* query, const char* name, char* out, size_t size);

/** Percent-decode in ("%2F" -> "/"; a '%' not followed by two hex digits
 *  stays) into out. Returns the length, or -1 if too long or the result
 *  would hold a NUL. (Browsers' subprotocols carry only token characters:
 *  the dashboard percent-encodes a token's other characters.) */
int netcheck_pct_decode(const char* in, char* out, size_t size);

/** Does a comma-separated header value contain token (case-insensitive)? */
bool netcheck_has_token(const char* value, const char* token);
