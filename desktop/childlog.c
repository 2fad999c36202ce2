/* The output of the embedded desktop's programs (Xvfb, the window manager,
 * setxkbmap, --launch programs): each child writes its stdout and stderr
 * into a pipe of its own; one reader thread splits what arrives into lines
 * and re-logs each through base/log.h naming the program, so that with
 * --log-format json every line on stderr is JSON.
 *
 * Bounded: a line is cut at CHILDLOG_LINE_MAX bytes; a program that writes
 * more than CHILDLOG_RATE lines a second has the rest dropped (counted and
 * reported once a second). The reader always drains the pipes, so a child
 * never blocks on its output because of us. Private to desktop/. */
#define _GNU_SOURCE
#include "desktop/desktop_private.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHILDLOG_MAX 48			/* pipes read at once */
#define CHILDLOG_LINE_MAX 1024		/* bytes of one line that are logged */
#define CHILDLOG_RATE 100		/* lines a second per program, then dropped */
#define CHILDLOG_READ_BUDGET 65536	/* bytes read from one pipe per turn */
#define CHILDLOG_TAIL 1024		/* the last lines of a program kept for childlog_tail */
#define CHILDLOG_ENDED 16		/* ended programs whose tails are kept */

struct source {
	int fd;				/* -1: free slot */
	bool attached;			/* the child runs: read it */
	char program[64];
	long pid;
	enum log_level level;
	char line[CHILDLOG_LINE_MAX];
	size_t len;
	bool cut;			/* the current line was too long: skip to '\n' */
	int64_t window_ms;		/* start of the current rate window */
	int lines;			/* logged in this window */
	unsigned long dropped;		/* dropped in this window */
	char tail[CHILDLOG_TAIL];	/* its last lines, whole ones, '\n'-ended */
	size_t tail_len;
};

/* An ended program's last lines, kept after its pipe closed. */
struct ended {
	long pid;
	char tail[CHILDLOG_TAIL];
	size_t len;
};

static struct {
	pthread_mutex_t mutex;		/* guards everything below */
	struct source src[CHILDLOG_MAX];
	struct ended ended[CHILDLOG_ENDED];	/* a ring, the oldest replaced */
	unsigned next_ended;
	pthread_cond_t closed;		/* a source closed (childlog_tail waits) */
	bool initialized, running, stopping;
	int wake[2];
	pthread_t thread;
} L = { .mutex = PTHREAD_MUTEX_INITIALIZER, .closed = PTHREAD_COND_INITIALIZER,
	.wake = { -1, -1 } };

static void init_slots(void)
{
	if (L.initialized)
		return;
	for (int i = 0; i < CHILDLOG_MAX; i++)
		L.src[i].fd = -1;
	L.initialized = true;
}

/* Bytes -> valid UTF-8: a byte that does not start a well-formed sequence
 * becomes U+FFFD. out has room for 3 * n + 1. */
static void utf8_clean(const unsigned char* in, size_t n, char* out)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		unsigned char c = in[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
				: (c & 0xf8) == 0xf0 ? 4 : 0;
		bool ok = len > 0 && i + len <= n;
		for (size_t k = 1; ok && k < len; k++)
			ok = (in[i + k] & 0xc0) == 0x80;
		if (ok && len > 1) {
			/* No overlong forms, surrogates or code points past U+10FFFF. */
			unsigned cp = c & (0x7f >> len);
			for (size_t k = 1; k < len; k++)
				cp = (cp << 6) | (in[i + k] & 0x3f);
			static const unsigned min[] = { 0, 0, 0x80, 0x800, 0x10000 };
			ok = cp >= min[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
		}
		if (!ok) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, in + i, len);
		o += len;
		i += len;
	}
	out[o] = '\0';
}

static void report_dropped(struct source* s)
{
	if (!s->dropped)
		return;
	char msg[160];
	snprintf(msg, sizeof(msg),
			"[deskd: %lu lines of this program's output dropped: more than %d a second]",
			s->dropped, CHILDLOG_RATE);
	log_program(LOG_WARNING, s->program, s->pid, msg);
	s->dropped = 0;
}

/* The rate window: a new one every second. */
static void roll_window(struct source* s, int64_t now)
{
	if (now - s->window_ms < 1000)
		return;
	report_dropped(s);
	s->window_ms = now;
	s->lines = 0;
}

/* Lines a program prints on every start that say nothing is wrong: logged
 * at debug, not at the program's level. */
static const struct {
	const char* program;
	const char* text;
} harmless_lines[] = {
	/* An unprivileged dbus-daemon (the session bus and the AT-SPI bus it
	 * activates) cannot raise its fd limit; it runs with the one it has. */
	{ "dbus-daemon", "Failed to set fd limit" },
};

static enum log_level line_level(const struct source* s, const char* line)
{
	for (size_t i = 0; i < sizeof(harmless_lines) / sizeof(harmless_lines[0]); i++)
		if (strcmp(s->program, harmless_lines[i].program) == 0
				&& strstr(line, harmless_lines[i].text))
			return LOG_DEBUG;
	return s->level;
}

/* Keep a line (clean UTF-8) at the end of the source's tail, dropping the
 * oldest whole lines to make room; a line longer than the tail is cut. */
static void keep_tail(struct source* s, const char* line)
{
	size_t n = strlen(line);
	if (n > CHILDLOG_TAIL - 1)
		n = CHILDLOG_TAIL - 1;
	while (s->tail_len + n + 1 > CHILDLOG_TAIL) {
		char* nl = memchr(s->tail, '\n', s->tail_len);
		size_t drop = nl ? (size_t)(nl - s->tail) + 1 : s->tail_len;
		memmove(s->tail, s->tail + drop, s->tail_len - drop);
		s->tail_len -= drop;
	}
	memcpy(s->tail + s->tail_len, line, n);
	s->tail_len += n;
	s->tail[s->tail_len++] = '\n';
}

static void emit_line(struct source* s, bool cut)
{
	size_t n = s->len;
	while (n > 0 && (s->line[n - 1] == '\r' || s->line[n - 1] == ' '
			|| s->line[n - 1] == '\t'))
		n--;
	s->len = 0;
	if (n == 0)
		return;
	char clean[3 * CHILDLOG_LINE_MAX + 16];
	utf8_clean((const unsigned char*)s->line, n, clean);
	if (cut)
		strcat(clean, " [...]");
	keep_tail(s, clean);
	if (!log_enabled(s->level))
		return;
	roll_window(s, clock_ms());
	if (s->lines >= CHILDLOG_RATE) {
		s->dropped++;
		return;
	}
	s->lines++;
	enum log_level level = line_level(s, clean);
	if (log_enabled(level))
		log_program(level, s->program, s->pid, clean);
}

static void take_bytes(struct source* s, const char* p, size_t n)
{
	while (n > 0) {
		const char* nl = memchr(p, '\n', n);
		size_t part = nl ? (size_t)(nl - p) : n;
		if (!s->cut) {
			size_t room = sizeof(s->line) - s->len;
			size_t copy = part < room ? part : room;
			memcpy(s->line + s->len, p, copy);
			s->len += copy;
			if (part > room || (s->len == sizeof(s->line) && !nl)) {
				emit_line(s, true);
				s->cut = true;
			}
		}
		if (!nl)
			return;
		if (s->cut)
			s->cut = false;
		else
			emit_line(s, false);
		p = nl + 1;
		n -= part + 1;
	}
}

static void close_source(struct source* s)
{
	if (s->len && !s->cut)
		emit_line(s, false);
	report_dropped(s);
	close(s->fd);
	if (s->pid > 0) {
		struct ended* e = &L.ended[L.next_ended++ % CHILDLOG_ENDED];
		e->pid = s->pid;
		memcpy(e->tail, s->tail, s->tail_len);
		e->len = s->tail_len;
	}
	s->fd = -1;
	s->attached = false;
	s->len = 0;
	s->cut = false;
	s->tail_len = 0;
	pthread_cond_broadcast(&L.closed);
}

size_t childlog_tail(long pid, int wait_ms, char* out, size_t size)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	size_t n = 0;
	pthread_mutex_lock(&L.mutex);
	for (;;) {
		const char* tail = NULL;
		size_t len = 0;
		bool open = false;
		for (int i = 0; i < CHILDLOG_MAX && L.initialized; i++) {
			if (L.src[i].fd >= 0 && L.src[i].attached && L.src[i].pid == pid) {
				tail = L.src[i].tail;
				len = L.src[i].tail_len;
				open = true;
			}
		}
		for (unsigned k = 0; k < CHILDLOG_ENDED && !open; k++) {
			const struct ended* e = &L.ended[(L.next_ended - 1 - k) % CHILDLOG_ENDED];
			if (e->pid == pid && e->len) {
				tail = e->tail;
				len = e->len;
				break;
			}
		}
		/* An ended program's pipe closes once the reader saw the end of
		 * its output: wait for that (bounded), else give what is there. */
		if (!open || pthread_cond_timedwait(&L.closed, &L.mutex, &until) != 0) {
			n = len < size ? len : (size ? size - 1 : 0);
			if (size) {
				memcpy(out, tail ? tail : "", n);
				out[n] = '\0';
			}
			break;
		}
	}
	pthread_mutex_unlock(&L.mutex);
	return n;
}

/* Read what the pipe has (up to the budget); closes it at EOF. */
static void drain(struct source* s)
{
	char buf[4096];
	size_t total = 0;
	while (total < CHILDLOG_READ_BUDGET) {
		ssize_t r = read(s->fd, buf, sizeof(buf));
		if (r > 0) {
			take_bytes(s, buf, (size_t)r);
			total += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		close_source(s);	/* EOF or an error */
		return;
	}
}

static void* reader_main(void* ud)
{
	(void)ud;
	for (;;) {
		struct pollfd pfd[CHILDLOG_MAX + 1];
		int slot[CHILDLOG_MAX];
		int n = 0;
		pthread_mutex_lock(&L.mutex);
		bool stopping = L.stopping;
		for (int i = 0; i < CHILDLOG_MAX; i++) {
			if (L.src[i].fd < 0 || !L.src[i].attached)
				continue;
			pfd[n] = (struct pollfd){ L.src[i].fd, POLLIN, 0 };
			slot[n++] = i;
		}
		pthread_mutex_unlock(&L.mutex);
		if (stopping)
			break;
		pfd[n] = (struct pollfd){ L.wake[0], POLLIN, 0 };
		int rc = poll(pfd, (nfds_t)n + 1, 1000);
		if (rc < 0 && errno != EINTR)
			clock_sleep_ms(10);

		pthread_mutex_lock(&L.mutex);
		if (pfd[n].revents & POLLIN) {
			char junk[64];
			while (read(L.wake[0], junk, sizeof(junk)) > 0)
				;
		}
		int64_t now = clock_ms();
		for (int k = 0; k < n; k++) {
			struct source* s = &L.src[slot[k]];
			if (s->fd != pfd[k].fd)
				continue;
			if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
				drain(s);
			if (s->fd >= 0)
				roll_window(s, now);
		}
		pthread_mutex_unlock(&L.mutex);
	}

	/* Stopping: log what is left and close every pipe. */
	pthread_mutex_lock(&L.mutex);
	for (int i = 0; i < CHILDLOG_MAX; i++) {
		if (L.src[i].fd < 0 || !L.src[i].attached)
			continue;
		drain(&L.src[i]);
		if (L.src[i].fd >= 0)
			close_source(&L.src[i]);
	}
	pthread_mutex_unlock(&L.mutex);
	return NULL;
}

/* Under L.mutex. */
static int start_reader(void)
{
	if (L.running)
		return 0;
	if (L.wake[0] < 0 && pipe2(L.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		L.wake[0] = L.wake[1] = -1;
		return -errno;
	}
	L.stopping = false;
	int rc = pthread_create(&L.thread, NULL, reader_main, NULL);
	if (rc != 0)
		return -rc;
	L.running = true;
	return 0;
}

int childlog_open(const char* program, enum log_level level, int* write_fd)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -errno;
	int fl = fcntl(fds[0], F_GETFL);
	if (fl < 0 || fcntl(fds[0], F_SETFL, fl | O_NONBLOCK) != 0) {
		int err = -errno;
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	pthread_mutex_lock(&L.mutex);
	init_slots();
	int slot = -1;
	for (int i = 0; i < CHILDLOG_MAX && slot < 0; i++)
		if (L.src[i].fd < 0)
			slot = i;
	int rc = slot >= 0 ? start_reader() : -ENOSPC;
	if (rc < 0) {
		pthread_mutex_unlock(&L.mutex);
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	struct source* s = &L.src[slot];
	memset(s, 0, sizeof(*s));
	s->fd = fds[0];
	snprintf(s->program, sizeof(s->program), "%s", program);
	s->level = level;
	pthread_mutex_unlock(&L.mutex);
	*write_fd = fds[1];
	return slot;
}

void childlog_attach(int handle, long pid)
{
	pthread_mutex_lock(&L.mutex);
	struct source* s = &L.src[handle];
	s->pid = pid;
	s->window_ms = clock_ms();
	s->attached = true;
	if (start_reader() < 0)	/* stopped meanwhile (a stuck watcher): again */
		log_warn("cannot read the output of %s (pid %ld)", s->program, pid);
	if (write(L.wake[1], "a", 1) < 0) {
		/* Full: the reader is awake anyway. */
	}
	pthread_mutex_unlock(&L.mutex);
}

void childlog_cancel(int handle)
{
	pthread_mutex_lock(&L.mutex);
	struct source* s = &L.src[handle];
	close(s->fd);
	s->fd = -1;
	s->attached = false;
	pthread_mutex_unlock(&L.mutex);
}

void childlog_stop(void)
{
	pthread_mutex_lock(&L.mutex);
	if (!L.running) {
		pthread_mutex_unlock(&L.mutex);
		return;
	}
	L.stopping = true;
	if (write(L.wake[1], "s", 1) < 0) {
		/* Full: the reader is awake anyway. */
	}
	pthread_mutex_unlock(&L.mutex);
	/* The reader never blocks but on stderr, so this is prompt. */
	pthread_join(L.thread, NULL);
	pthread_mutex_lock(&L.mutex);
	L.running = false;
	L.stopping = false;
	pthread_mutex_unlock(&L.mutex);
}
