#define _GNU_SOURCE	/* accept4 */
#include "server/http/listener.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/metrics.h"
#include "server/http/netcheck.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define LISTENER_PEEK_MAX 8192		/* the longest head we look at */
#define LISTENER_ACCEPT_BATCH 64	/* then look at what the others sent */
#define LISTENER_HANDOFF_MS 10000	/* MHD never started it: it dropped it */
#define LISTENER_TICK_MS 1000		/* deadlines set by other threads */
#define LISTENER_FULL_PAUSE_MS 100	/* out of descriptors: stop accepting this long */
#define LISTENER_LOG_MS 10000		/* say so at most this often */
#define LISTENER_SLOT_BITS 20		/* a token: generation << bits | slot + 1 */

/* epoll data of the two fixed descriptors; a pending connection's is its token. */
#define EV_LISTEN UINT64_MAX
#define EV_WAKE (UINT64_MAX - 1)

enum conn_state {
	CONN_FREE = 0,
	CONN_PENDING,		/* ours: its head is being peeked at */
	CONN_HANDOFF,		/* given to MHD, which has not started it yet */
	CONN_HEAD,		/* MHD's, no complete request head yet */
	CONN_BODY,		/* MHD's, its request's body still coming */
	CONN_IDLE,		/* MHD's, between requests */
	CONN_BUSY,		/* MHD's, a request in progress */
	CONN_WS,		/* libwebsockets' */
};

struct conn {
	enum conn_state state;
	bool closing;		/* shut down; its owner has yet to close it */
	bool head_sent;		/* the first head was whole when handed over */
	int fd;
	uintptr_t gen;
	int64_t since;		/* accepted, or went idle: the oldest idle goes first */
	int64_t deadline;	/* PENDING, HEAD, IDLE: head due; BODY: body due;
				 * HANDOFF: give up */
	int64_t body_start;	/* BODY: when its head was read */
	uint64_t body_bytes;	/* BODY: how much has come */
	struct sockaddr_storage addr;
	socklen_t addr_len;
};

static struct {
	int listen_fd;
	int epoll_fd;
	int wake_fd;
	pthread_t thread;
	bool running;
	listener_http_fn on_http;
	listener_ws_fn on_ws;
	struct listener_limits limits;
	char buf[LISTENER_PEEK_MAX];
	int64_t paused_until;		/* accepting resumes then (0 = accepting) */
	int64_t full_logged, limit_logged;

	/* The table is shared with MHD's and lws's threads, which report on
	 * the connections they hold; it outlives listener_stop() for them. */
	pthread_mutex_t mutex;
	struct conn* conns;
	int capacity;			/* twice the limit: room for those closing */
	int n_used;			/* not free */
	int n_open;			/* not free and not closing: what the limits count */
	int hint;			/* where to look for a free slot */
	long evicted, refused, timed_out;	/* not yet in the metrics */
	int open_published;
} L = { .listen_fd = -1, .epoll_fd = -1, .wake_fd = -1,
	.mutex = PTHREAD_MUTEX_INITIALIZER, .open_published = -1 };

/* ---- the table (L.mutex held) ---- */

static listener_token conn_token(const struct conn* c)
{
	return (c->gen << LISTENER_SLOT_BITS) | (uintptr_t)(c - L.conns + 1);
}

static struct conn* conn_of(listener_token token)
{
	uintptr_t slot = token & (((uintptr_t)1 << LISTENER_SLOT_BITS) - 1);
	if (!L.conns || slot == 0 || slot > (uintptr_t)L.capacity)
		return NULL;
	struct conn* c = &L.conns[slot - 1];
	if (c->state == CONN_FREE || c->gen != token >> LISTENER_SLOT_BITS)
		return NULL;
	return c;
}

static void conn_free(struct conn* c)
{
	if (!c->closing)
		L.n_open--;
	L.n_used--;
	c->state = CONN_FREE;
	c->closing = false;
	c->fd = -1;
	c->gen++;	/* a stale token no longer matches */
}

static bool same_address(const struct sockaddr_storage* a, const struct sockaddr_storage* b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in*)a)->sin_addr.s_addr
			== ((const struct sockaddr_in*)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6*)a)->sin6_addr,
				&((const struct sockaddr_in6*)b)->sin6_addr,
				sizeof(struct in6_addr)) == 0;
	return true;
}

static bool is_idle(const struct conn* c)
{
	/* A whole head MHD has yet to read is a request, not idle. */
	return !c->closing && (c->state == CONN_PENDING || c->state == CONN_IDLE
			|| c->state == CONN_BODY || (c->state == CONN_HEAD && !c->head_sent));
}

/* Close an idle connection: ours at once; MHD's by shutting it down, so
 * MHD sees the end and closes it (the fd stays valid until MHD reports). */
static void conn_drop(struct conn* c)
{
	if (c->state == CONN_PENDING) {
		epoll_ctl(L.epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		conn_free(c);
		return;
	}
	shutdown(c->fd, SHUT_RDWR);
	c->closing = true;
	L.n_open--;
}

/* Close the oldest idle connection (of that address, if given) to make
 * room. Returns the state it was in, or CONN_FREE if none was idle. */
static enum conn_state evict_oldest(const struct sockaddr_storage* addr)
{
	struct conn* oldest = NULL;
	for (int i = 0; i < L.capacity; i++) {
		struct conn* c = &L.conns[i];
		if (is_idle(c) && (!addr || same_address(&c->addr, addr))
				&& (!oldest || c->since < oldest->since))
			oldest = c;
	}
	if (!oldest)
		return CONN_FREE;
	enum conn_state was = oldest->state;
	conn_drop(oldest);
	L.evicted++;
	return was;
}

static void limit_log(int open, const char* what)
{
	int64_t now = clock_ms();
	if (L.limit_logged && now - L.limit_logged < LISTENER_LOG_MS)
		return;
	L.limit_logged = now;
	log_warn("%d connections open (limits: --max-connections %d, --max-connections-per-ip %d): %s",
			open, L.limits.max_connections, L.limits.max_per_ip, what);
}

/* Count a new connection in, making room if need be. Returns it (PENDING),
 * or NULL if every connection is busy (the caller closes fd). */
static struct conn* admit(int fd, const struct sockaddr_storage* addr, socklen_t len)
{
	int same = 0;
	for (int i = 0; i < L.capacity; i++)
		if (L.conns[i].state != CONN_FREE && !L.conns[i].closing
				&& same_address(&L.conns[i].addr, addr))
			same++;
	if (same >= L.limits.max_per_ip) {
		int open = L.n_open;
		bool room = evict_oldest(addr) != CONN_FREE;
		limit_log(open, room ? "closed the oldest idle connection from the same address"
				: "every connection from one address is busy; refusing more from it");
		if (!room)
			return NULL;
	}
	if (L.n_open >= L.limits.max_connections) {
		int open = L.n_open;
		bool room = evict_oldest(NULL) != CONN_FREE;
		limit_log(open, room ? "closed the oldest idle connection"
				: "every connection is busy; refusing new ones");
		if (!room)
			return NULL;
	}
	if (L.n_used >= L.capacity) {
		/* Those shut down have not been closed by their owner yet. */
		limit_log(L.n_open, "connections shut down are still closing; refusing new ones");
		return NULL;
	}
	struct conn* c = NULL;
	for (int k = 0; k < L.capacity && !c; k++) {
		int i = (L.hint + k) % L.capacity;
		if (L.conns[i].state == CONN_FREE)
			c = &L.conns[i];
	}
	L.hint = (int)(c - L.conns + 1) % L.capacity;
	int64_t now = clock_ms();
	c->state = CONN_PENDING;
	c->closing = false;
	c->head_sent = false;
	c->fd = fd;
	c->since = now;
	c->deadline = now + L.limits.header_timeout_ms;
	c->addr = *addr;
	c->addr_len = len;
	L.n_used++;
	L.n_open++;
	return c;
}

/* ---- pending connections (acceptor thread) ---- */

static void pending_close(struct conn* c)
{
	pthread_mutex_lock(&L.mutex);
	epoll_ctl(L.epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	conn_free(c);
	pthread_mutex_unlock(&L.mutex);
}

static void route_http(struct conn* c, bool head_sent)
{
	pthread_mutex_lock(&L.mutex);
	epoll_ctl(L.epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	/* MHD starts it on its own thread, maybe before on_http returns. */
	c->state = CONN_HANDOFF;
	c->head_sent = head_sent;
	c->deadline = clock_ms() + LISTENER_HANDOFF_MS;
	listener_token token = conn_token(c);
	int fd = c->fd;
	struct sockaddr_storage addr = c->addr;
	socklen_t len = c->addr_len;
	pthread_mutex_unlock(&L.mutex);
	if (L.on_http(fd, (struct sockaddr*)&addr, len) < 0) {
		pthread_mutex_lock(&L.mutex);
		struct conn* again = conn_of(token);
		if (again && again->state == CONN_HANDOFF)
			conn_free(again);	/* MHD closed fd */
		pthread_mutex_unlock(&L.mutex);
	}
}

static void route_ws(struct conn* c, size_t head_len)
{
	pthread_mutex_lock(&L.mutex);
	epoll_ctl(L.epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	c->state = CONN_WS;
	listener_token token = conn_token(c);
	int fd = c->fd;
	pthread_mutex_unlock(&L.mutex);
	if (L.on_ws(fd, L.buf, head_len, token) < 0)
		listener_release(token);
}

/* The head did not come in time: say so, and close. */
static void pending_expire(struct conn* c)
{
	static const char timeout[] = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n"
		"Content-Length: 0\r\n\r\n";
	if (send(c->fd, timeout, sizeof(timeout) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("408 to a slow client: %s", strerror(errno));
	/* The head was only peeked at: a close with unread bytes sends a reset,
	 * which can reach the client before the 408 does (and makes it drop
	 * the answer). Read them, then end our side with a FIN. */
	while (recv(c->fd, L.buf, sizeof(L.buf), MSG_DONTWAIT) > 0) {
	}
	shutdown(c->fd, SHUT_WR);
	pthread_mutex_lock(&L.mutex);
	L.timed_out++;
	pthread_mutex_unlock(&L.mutex);
	pending_close(c);
}

/* Look at what the client sent so far; route it when we know enough. */
static void pending_check(struct conn* c, bool expired, bool hangup)
{
	ssize_t n;
	do
		n = recv(c->fd, L.buf, sizeof(L.buf), MSG_PEEK);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		n = 0;
	else if (n <= 0) {
		/* Gone (EOF with nothing, or an error): nobody to answer. */
		pending_close(c);
		return;
	}
	enum netcheck_head kind = n > 0
		? netcheck_classify(L.buf, (size_t)n, sizeof(L.buf))
		: NETCHECK_HEAD_INCOMPLETE;
	if (kind == NETCHECK_HEAD_WEBSOCKET) {
		route_ws(c, netcheck_head_length(L.buf, (size_t)n));
		return;
	}
	if (hangup && (kind == NETCHECK_HEAD_INCOMPLETE
			|| !netcheck_head_length(L.buf, (size_t)n)
			|| strspn(L.buf, "\r\n") == (size_t)n)) {
		/* No whole request and the client will send no more. */
		pending_close(c);
		return;
	}
	if (kind == NETCHECK_HEAD_HTTP)
		route_http(c, netcheck_head_length(L.buf, (size_t)n) > 0);
	else if (expired)
		pending_expire(c);
}

/* ---- accepting ---- */

/* Out of descriptors (or memory): the listening socket stays readable, so
 * polling it would spin and log in a loop. Stop polling it for a while; the
 * connections wait in the backlog. */
static void accept_pause(int err)
{
	struct epoll_event ev = { .events = 0, .data.u64 = EV_LISTEN };
	epoll_ctl(L.epoll_fd, EPOLL_CTL_MOD, L.listen_fd, &ev);
	int64_t now = clock_ms();
	L.paused_until = now + LISTENER_FULL_PAUSE_MS;
	if (!L.full_logged || now - L.full_logged >= LISTENER_LOG_MS) {
		L.full_logged = now;
		log_warn("accept: %s; new connections wait until some close (raise ulimit -n)",
				strerror(err));
	}
}

static void accept_resume(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_LISTEN };
	L.paused_until = 0;
	if (epoll_ctl(L.epoll_fd, EPOLL_CTL_MOD, L.listen_fd, &ev) < 0)
		log_warn("epoll_ctl: %s", strerror(errno));
}

static void accept_some(void)
{
	/* A batch at a time, level-triggered: what pending clients sent is
	 * looked at in between, so a flood cannot push them out unread. */
	for (int k = 0; k < LISTENER_ACCEPT_BATCH; k++) {
		struct sockaddr_storage addr;
		socklen_t len = sizeof(addr);
		int fd = accept4(L.listen_fd, (struct sockaddr*)&addr, &len,
				SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS
					|| errno == ENOMEM) {
				int err = errno;
				/* An idle one of ours frees a descriptor at once. */
				pthread_mutex_lock(&L.mutex);
				enum conn_state was = evict_oldest(NULL);
				pthread_mutex_unlock(&L.mutex);
				if (was == CONN_PENDING)
					continue;
				accept_pause(err);
				return;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warn("accept: %s", strerror(errno));
			return;
		}
		pthread_mutex_lock(&L.mutex);
		struct conn* c = admit(fd, &addr, len);
		if (!c) {
			L.refused++;
			pthread_mutex_unlock(&L.mutex);
			close(fd);
			continue;
		}
		/* Edge-triggered: peeking leaves the bytes queued, and each new
		 * arrival raises a fresh edge, so we never spin or sleep. */
		struct epoll_event ev = {
			.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
			.data.u64 = (uint64_t)conn_token(c),
		};
		if (epoll_ctl(L.epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			log_warn("epoll_ctl: %s", strerror(errno));
			close(fd);
			conn_free(c);
		}
		pthread_mutex_unlock(&L.mutex);
	}
}

/* Deadlines: heads that did not come, MHD's connections idle too long,
 * handoffs MHD never started. Returns the next deadline. */
static int64_t expire(int64_t now)
{
	int64_t next = INT64_MAX;
	pthread_mutex_lock(&L.mutex);
	for (int i = 0; i < L.capacity; i++) {
		struct conn* c = &L.conns[i];
		if (c->state == CONN_FREE || c->state == CONN_BUSY || c->state == CONN_WS
				|| c->closing)
			continue;
		if (c->deadline > now) {
			if (c->deadline < next)
				next = c->deadline;
			continue;
		}
		if (c->state == CONN_PENDING) {
			pthread_mutex_unlock(&L.mutex);
			pending_check(c, true, false);
			pthread_mutex_lock(&L.mutex);
		} else if (c->state == CONN_HANDOFF) {
			conn_free(c);	/* MHD closed it without a word; fd is not ours */
		} else {
			conn_drop(c);	/* HEAD, BODY or IDLE past its deadline */
			L.timed_out++;
		}
	}
	pthread_mutex_unlock(&L.mutex);
	return next;
}

static void publish_metrics(void)
{
	pthread_mutex_lock(&L.mutex);
	int open = L.n_open;
	long evicted = L.evicted, refused = L.refused, timed_out = L.timed_out;
	L.evicted = L.refused = L.timed_out = 0;
	pthread_mutex_unlock(&L.mutex);
	if (open != L.open_published) {
		metrics_set("deskd_http_connections_open", open, NULL);
		L.open_published = open;
	}
	if (evicted)
		metrics_add("deskd_http_connections_closed_total", (double)evicted,
				"reason", "evicted", NULL);
	if (refused)
		metrics_add("deskd_http_connections_closed_total", (double)refused,
				"reason", "refused", NULL);
	if (timed_out)
		metrics_add("deskd_http_connections_closed_total", (double)timed_out,
				"reason", "header_timeout", NULL);
}

static void* listener_main(void* arg)
{
	(void)arg;
	struct epoll_event events[64];
	int64_t next = INT64_MAX;
	for (;;) {
		int64_t now = clock_ms();
		if (L.paused_until && L.paused_until < next)
			next = L.paused_until;
		int timeout = -1;
		pthread_mutex_lock(&L.mutex);
		bool any = L.n_used > 0;
		pthread_mutex_unlock(&L.mutex);
		if (any || next != INT64_MAX) {
			int64_t wait = next == INT64_MAX ? LISTENER_TICK_MS : next - now;
			if (any && wait > LISTENER_TICK_MS)
				wait = LISTENER_TICK_MS;
			timeout = wait < 0 ? 0 : (int)wait;
		}
		int n = epoll_wait(L.epoll_fd, events, 64, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("epoll_wait: %s", strerror(errno));
			break;
		}
		bool stop = false, accept = false;
		for (int i = 0; i < n; i++) {
			uint64_t data = events[i].data.u64;
			if (data == EV_WAKE) {
				stop = true;
			} else if (data == EV_LISTEN) {
				accept = true;	/* after reading those who sent something */
			} else {
				pthread_mutex_lock(&L.mutex);
				struct conn* c = conn_of((listener_token)data);
				bool pending = c && c->state == CONN_PENDING;
				pthread_mutex_unlock(&L.mutex);
				/* A client that closed its side will send no more. */
				bool done = events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
				if (pending)
					pending_check(c, false, done);
			}
		}
		if (stop)
			break;
		if (accept)
			accept_some();
		now = clock_ms();
		if (L.paused_until && now >= L.paused_until)
			accept_resume();
		next = expire(now);
		publish_metrics();
	}
	return NULL;
}

int listener_capacity(const struct listener_limits* limits)
{
	/* Each open connection, plus as many shut down but not yet closed. */
	return 2 * limits->max_connections;
}

listener_token listener_http_started(int fd)
{
	listener_token token = 0;
	pthread_mutex_lock(&L.mutex);
	struct conn* found = NULL;
	/* The newest: an older entry with this fd is one MHD dropped silently. */
	for (int i = 0; L.conns && i < L.capacity; i++) {
		struct conn* c = &L.conns[i];
		if (c->state == CONN_HANDOFF && c->fd == fd
				&& (!found || c->since > found->since))
			found = c;
	}
	if (found) {
		found->state = CONN_HEAD;
		/* A whole head: MHD reads it now. Otherwise the rest is due by the
		 * deadline counted from accept. */
		found->deadline = (found->head_sent ? clock_ms() : found->since)
			+ L.limits.header_timeout_ms;
		token = conn_token(found);
	}
	pthread_mutex_unlock(&L.mutex);
	return token;
}

void listener_http_reading(listener_token token, size_t bytes)
{
	pthread_mutex_lock(&L.mutex);
	struct conn* c = conn_of(token);
	int64_t now = clock_ms();
	int64_t timeout = L.limits.header_timeout_ms;
	if (c && c->state != CONN_BODY && c->state != CONN_WS && c->state != CONN_PENDING) {
		c->state = CONN_BODY;
		c->since = c->body_start = now;
		c->body_bytes = 0;
	}
	if (c && c->state == CONN_BODY) {
		/* A minimum rate, not inactivity (a byte a second is activity),
		 * and never more than a timeout ahead (an early burst is no
		 * licence to stall). */
		c->body_bytes += bytes;
		int64_t due = c->body_start + timeout
			+ (int64_t)(c->body_bytes * 1000 / LISTENER_BODY_RATE);
		c->deadline = due < now + timeout ? due : now + timeout;
	}
	pthread_mutex_unlock(&L.mutex);
}

void listener_http_busy(listener_token token, bool busy)
{
	pthread_mutex_lock(&L.mutex);
	struct conn* c = conn_of(token);
	if (c && (c->state == CONN_HEAD || c->state == CONN_BODY || c->state == CONN_IDLE
			|| c->state == CONN_BUSY)) {
		if (busy) {
			c->state = CONN_BUSY;
		} else {
			int64_t now = clock_ms();
			c->state = CONN_IDLE;
			c->since = now;
			c->deadline = now + L.limits.header_timeout_ms;
		}
	}
	pthread_mutex_unlock(&L.mutex);
}

void listener_release(listener_token token)
{
	pthread_mutex_lock(&L.mutex);
	struct conn* c = conn_of(token);
	if (c)
		conn_free(c);
	pthread_mutex_unlock(&L.mutex);
}

static int bind_listen(const char* host, int* port)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
	};
	struct addrinfo* res;
	char service[16];
	snprintf(service, sizeof(service), "%d", *port);
	int rc = getaddrinfo(host, service, &hints, &res);
	if (rc != 0) {
		log_error("cannot resolve %s: %s", host, gai_strerror(rc));
		return -EADDRNOTAVAIL;
	}
	int err = -EADDRNOTAVAIL;
	int fd = -1;
	for (struct addrinfo* ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 512) == 0)
			break;
		err = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return err;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr*)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET)
			*port = ntohs(((struct sockaddr_in*)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			*port = ntohs(((struct sockaddr_in6*)&ss)->sin6_port);
	}
	return fd;
}

int listener_start(const char* host, int* port, const struct listener_limits* limits,
		listener_http_fn on_http, listener_ws_fn on_websocket)
{
	int rc;
	if (limits->max_connections < 1 || limits->max_per_ip < 1
			|| limits->header_timeout_ms < 1
			|| listener_capacity(limits) >= (1 << LISTENER_SLOT_BITS))
		return -EINVAL;
	pthread_mutex_lock(&L.mutex);
	if (L.n_used > 0) {
		pthread_mutex_unlock(&L.mutex);
		return -EBUSY;
	}
	free(L.conns);
	L.capacity = listener_capacity(limits);
	L.conns = calloc((size_t)L.capacity, sizeof(*L.conns));
	for (int i = 0; L.conns && i < L.capacity; i++) {
		L.conns[i].fd = -1;
		L.conns[i].gen = 1;
	}
	L.n_used = L.n_open = L.hint = 0;
	L.evicted = L.refused = L.timed_out = 0;
	pthread_mutex_unlock(&L.mutex);
	if (!L.conns)
		return -ENOMEM;
	L.limits = *limits;
	L.paused_until = L.full_logged = L.limit_logged = 0;
	L.open_published = -1;
	L.on_http = on_http;
	L.on_ws = on_websocket;
	metrics_help("deskd_http_connections_open", "Connections open (HTTP and WebSocket).");
	metrics_help("deskd_http_connections_closed_total",
			"Connections deskd closed: evicted (oldest idle, at a limit), refused (all "
			"busy), header_timeout (head or body too slow).");

	L.listen_fd = bind_listen(host, port);
	if (L.listen_fd < 0) {
		rc = L.listen_fd;
		goto bind_failure;
	}
	L.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (L.epoll_fd < 0) {
		rc = -errno;
		goto epoll_failure;
	}
	L.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (L.wake_fd < 0) {
		rc = -errno;
		goto wake_failure;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_LISTEN };
	struct epoll_event wev = { .events = EPOLLIN, .data.u64 = EV_WAKE };
	if (epoll_ctl(L.epoll_fd, EPOLL_CTL_ADD, L.listen_fd, &ev) < 0
			|| epoll_ctl(L.epoll_fd, EPOLL_CTL_ADD, L.wake_fd, &wev) < 0) {
		rc = -errno;
		goto thread_failure;
	}
	rc = -pthread_create(&L.thread, NULL, listener_main, NULL);
	if (rc < 0)
		goto thread_failure;
	L.running = true;
	return 0;

thread_failure:
	close(L.wake_fd);
	L.wake_fd = -1;
wake_failure:
	close(L.epoll_fd);
	L.epoll_fd = -1;
epoll_failure:
	close(L.listen_fd);
	L.listen_fd = -1;
bind_failure:
	return rc;
}

void listener_stop(void)
{
	if (!L.running)
		return;
	uint64_t one = 1;
	if (write(L.wake_fd, &one, sizeof(one)) < 0)
		log_warn("listener wake: %s", strerror(errno));
	pthread_join(L.thread, NULL);
	L.running = false;
	/* Closing a listening socket resets what waits in its backlog: take
	 * those first, so their clients see an orderly close. */
	for (int fd; (fd = accept4(L.listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0; )
		close(fd);
	close(L.listen_fd);
	/* Ours are closed; MHD's idle ones shut down, so its own stop has
	 * only busy ones left to finish. */
	pthread_mutex_lock(&L.mutex);
	for (int i = 0; i < L.capacity; i++) {
		struct conn* c = &L.conns[i];
		if (c->state == CONN_PENDING) {
			close(c->fd);
			conn_free(c);
		} else if (is_idle(c)) {
			conn_drop(c);
		}
	}
	pthread_mutex_unlock(&L.mutex);
	close(L.epoll_fd);
	close(L.wake_fd);
	L.listen_fd = L.epoll_fd = L.wake_fd = -1;
}
