#define _GNU_SOURCE	/* accept4 */
#include "server/http/listener.h"
#include "base/clock.h"
#include "base/log.h"
#include "server/http/netcheck.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define LISTENER_PEEK_MAX 8192		/* the longest head we look at */
#define LISTENER_PENDING_MAX 256	/* connections being classified at once */
#define LISTENER_DEADLINE_MS 5000	/* then it goes to MHD as plain HTTP */
#define LISTENER_FULL_PAUSE_MS 100	/* out of descriptors: stop accepting this long */
#define LISTENER_FULL_LOG_MS 10000	/* and say so at most this often */

enum { SLOT_LISTEN = 0, SLOT_WAKE = 1, SLOT_FIRST = 2 };

struct pending {
	int fd;			/* -1 = free */
	int64_t deadline;
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
	struct pending pending[LISTENER_PENDING_MAX];
	int n_pending;
	char buf[LISTENER_PEEK_MAX];
	int64_t paused_until;		/* accepting resumes then (0 = accepting) */
	int64_t full_logged;
} L = { .listen_fd = -1, .epoll_fd = -1, .wake_fd = -1 };

static void pending_release(struct pending* p)
{
	epoll_ctl(L.epoll_fd, EPOLL_CTL_DEL, p->fd, NULL);
	p->fd = -1;
	L.n_pending--;
}

static void route_http(struct pending* p)
{
	int fd = p->fd;
	struct sockaddr_storage addr = p->addr;
	socklen_t len = p->addr_len;
	pending_release(p);
	L.on_http(fd, (struct sockaddr*)&addr, len);
}

/* Look at what the client sent so far; route it when we know enough. */
static void pending_check(struct pending* p, bool expired, bool hangup)
{
	ssize_t n;
	do
		n = recv(p->fd, L.buf, sizeof(L.buf), MSG_PEEK);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		n = 0;
	else if (n <= 0) {
		/* Gone (EOF with nothing, or an error): nobody to answer. */
		int fd = p->fd;
		pending_release(p);
		close(fd);
		return;
	}
	enum netcheck_head kind = n > 0
		? netcheck_classify(L.buf, (size_t)n, sizeof(L.buf))
		: NETCHECK_HEAD_INCOMPLETE;
	if (kind == NETCHECK_HEAD_WEBSOCKET) {
		int fd = p->fd;
		pending_release(p);
		L.on_ws(fd, L.buf, netcheck_head_length(L.buf, (size_t)n));
		return;
	}
	if (hangup && (kind == NETCHECK_HEAD_INCOMPLETE
			|| !netcheck_head_length(L.buf, (size_t)n)
			|| strspn(L.buf, "\r\n") == (size_t)n)) {
		/* No whole request and the client will send no more. */
		int fd = p->fd;
		pending_release(p);
		close(fd);
		return;
	}
	if (kind == NETCHECK_HEAD_HTTP || expired)
		route_http(p);
}

/* Out of descriptors (or memory): the listening socket stays readable, so
 * polling it would spin and log in a loop. Stop polling it for a while; the
 * connections wait in the backlog. */
static void accept_pause(int err)
{
	struct epoll_event ev = { .events = 0, .data.u64 = SLOT_LISTEN };
	epoll_ctl(L.epoll_fd, EPOLL_CTL_MOD, L.listen_fd, &ev);
	int64_t now = clock_ms();
	L.paused_until = now + LISTENER_FULL_PAUSE_MS;
	if (!L.full_logged || now - L.full_logged >= LISTENER_FULL_LOG_MS) {
		L.full_logged = now;
		log_warn("accept: %s; new connections wait until some close (raise ulimit -n)",
				strerror(err));
	}
}

static void accept_resume(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SLOT_LISTEN };
	L.paused_until = 0;
	if (epoll_ctl(L.epoll_fd, EPOLL_CTL_MOD, L.listen_fd, &ev) < 0)
		log_warn("epoll_ctl: %s", strerror(errno));
}

static void accept_all(void)
{
	for (;;) {
		struct sockaddr_storage addr;
		socklen_t len = sizeof(addr);
		int fd = accept4(L.listen_fd, (struct sockaddr*)&addr, &len,
				SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS
					|| errno == ENOMEM) {
				accept_pause(errno);
				return;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warn("accept: %s", strerror(errno));
			return;
		}
		if (L.n_pending >= LISTENER_PENDING_MAX) {
			/* Too many undecided: this one goes to MHD unclassified. */
			L.on_http(fd, (struct sockaddr*)&addr, len);
			continue;
		}
		int slot = 0;
		while (L.pending[slot].fd >= 0)
			slot++;
		struct pending* p = &L.pending[slot];
		p->fd = fd;
		p->addr = addr;
		p->addr_len = len;
		p->deadline = clock_ms() + LISTENER_DEADLINE_MS;
		/* Edge-triggered: peeking leaves the bytes queued, and each new
		 * arrival raises a fresh edge, so we never spin or sleep. */
		struct epoll_event ev = {
			.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
			.data.u64 = (uint64_t)(SLOT_FIRST + slot),
		};
		if (epoll_ctl(L.epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			log_warn("epoll_ctl: %s", strerror(errno));
			p->fd = -1;
			L.on_http(fd, (struct sockaddr*)&addr, len);
			continue;
		}
		L.n_pending++;
	}
}

static void* listener_main(void* arg)
{
	(void)arg;
	struct epoll_event events[64];
	for (;;) {
		int timeout = -1;
		if (L.n_pending > 0 || L.paused_until) {
			int64_t now = clock_ms(), next = L.paused_until ? L.paused_until : INT64_MAX;
			for (int i = 0; L.n_pending > 0 && i < LISTENER_PENDING_MAX; i++)
				if (L.pending[i].fd >= 0 && L.pending[i].deadline < next)
					next = L.pending[i].deadline;
			timeout = next <= now ? 0 : (int)(next - now);
		}
		int n = epoll_wait(L.epoll_fd, events, 64, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("epoll_wait: %s", strerror(errno));
			break;
		}
		bool stop = false;
		for (int i = 0; i < n; i++) {
			uint64_t slot = events[i].data.u64;
			if (slot == SLOT_WAKE) {
				stop = true;
			} else if (slot == SLOT_LISTEN) {
				accept_all();
			} else {
				struct pending* p = &L.pending[slot - SLOT_FIRST];
				/* A client that closed its side will send no more. */
				bool done = events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
				if (p->fd >= 0)
					pending_check(p, false, done);
			}
		}
		if (stop)
			break;
		int64_t now = clock_ms();
		if (L.paused_until && now >= L.paused_until)
			accept_resume();
		for (int i = 0; i < LISTENER_PENDING_MAX; i++)
			if (L.pending[i].fd >= 0 && L.pending[i].deadline <= now)
				pending_check(&L.pending[i], true, false);
	}
	return NULL;
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

int listener_start(const char* host, int* port, listener_http_fn on_http,
		listener_ws_fn on_websocket)
{
	int rc;
	for (int i = 0; i < LISTENER_PENDING_MAX; i++)
		L.pending[i].fd = -1;
	L.n_pending = 0;
	L.paused_until = L.full_logged = 0;
	L.on_http = on_http;
	L.on_ws = on_websocket;

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
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SLOT_LISTEN };
	struct epoll_event wev = { .events = EPOLLIN, .data.u64 = SLOT_WAKE };
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
	for (int i = 0; i < LISTENER_PENDING_MAX; i++)
		if (L.pending[i].fd >= 0) {
			close(L.pending[i].fd);
			L.pending[i].fd = -1;
		}
	L.n_pending = 0;
	close(L.listen_fd);
	close(L.epoll_fd);
	close(L.wake_fd);
	L.listen_fd = L.epoll_fd = L.wake_fd = -1;
}
