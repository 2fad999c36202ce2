#define _GNU_SOURCE
/* MCP over stdio: newline-delimited JSON-RPC on stdin, one compact message
 * per line on stdout (nothing else goes to stdout). One session; requests
 * run concurrently (tool calls on workers), so ping answers during work. */

#include "server/mcp/mcp.h"
#include "server/mcp/core.h"
#include "base/jsonmem.h"
#include "base/log.h"
#include "base/options.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	pthread_t thread;
	bool running;
	int wake[2];
	struct mcp_session* session;
	pthread_mutex_t out_mutex;
} stdio_ = { .wake = { -1, -1 }, .out_mutex = PTHREAD_MUTEX_INITIALIZER };

static void write_line(json_t* msg)
{
	char* text = mcp_dump(msg);
	if (!text)
		return;
	size_t len = strlen(text);
	pthread_mutex_lock(&stdio_.out_mutex);
	const char* p = text;
	size_t left = len;
	bool ok = true;
	while (left > 0) {
		ssize_t n = write(STDOUT_FILENO, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ok = false;
			break;
		}
		p += n;
		left -= (size_t)n;
	}
	while (ok && write(STDOUT_FILENO, "\n", 1) < 0 && errno == EINTR)
		;
	pthread_mutex_unlock(&stdio_.out_mutex);
	free(text);
}

static int stdio_message(struct mcp_sink* self, json_t* msg)
{
	write_line(msg);
	return 0;
}

static void stdio_done(struct mcp_sink* self, json_t* response)
{
	if (response)
		write_line(response);
}

static const struct mcp_sink_impl stdio_sink_impl = {
	.message = stdio_message,
	.done = stdio_done,
};

static struct mcp_sink stdio_sink = { .impl = &stdio_sink_impl };

static const struct mcp_request_env stdio_env = {
	.transport = "stdio",
	.principal = "stdio",
};

/* Each line picks its era (docs/MCP.md 10): modern _meta is served
 * statelessly, anything else by the process's one legacy session, which
 * initialize starts. notifications/cancelled may name a call of either. */
static void handle_line(char* line, size_t len)
{
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (len == 0)
		return;
	json_error_t jerr;
	enum jsonmem_status st;
	json_t* msg = jsonmem_load(line, len, 0, &jerr, &st);
	if (json_is_object(msg)) {
		const char* method = json_string_value(json_object_get(msg, "method"));
		if (mcp_is_modern(msg, NULL)) {
			mcp_modern_handle(msg, &stdio_env, &stdio_sink);
		} else {
			if (method && strcmp(method, "notifications/cancelled") == 0
					&& !json_object_get(msg, "id"))
				mcp_modern_cancel(json_object_get(json_object_get(msg, "params"),
						"requestId"));
			mcp_session_handle(stdio_.session, msg, &stdio_sink);
		}
	} else {
		/* Batches and parse errors (over the JSON budget too): the legacy
		 * rules answer them. */
		mcp_session_handle_text(stdio_.session, line, len, &stdio_sink);
	}
	json_decref(msg);
}

/* The id of a request whose line is too long to parse, from the bytes read
 * so far (it usually comes first): a top-level "id" with a number or string
 * value in the first 64 KiB, or NULL. */
static json_t* leading_id(const char* p, size_t n)
{
	int depth = 0;
	n = n < 65536 ? n : 65536;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '{' || p[i] == '[') {
			depth++;
		} else if (p[i] == '}' || p[i] == ']') {
			depth--;
		} else if (p[i] == '"') {
			size_t start = ++i;
			while (i < n && p[i] != '"')
				i += p[i] == '\\' ? 2 : 1;
			if (i >= n)
				return NULL;
			if (depth != 1 || i - start != 2 || memcmp(p + start, "id", 2) != 0)
				continue;
			size_t v = i + 1;
			while (v < n && (p[v] == ' ' || p[v] == '\t' || p[v] == '\r'))
				v++;
			if (v >= n || p[v] != ':')
				continue;	/* "id" was a value */
			for (v++; v < n && (p[v] == ' ' || p[v] == '\t' || p[v] == '\r'); v++)
				;
			size_t end = v;
			if (end < n && p[end] == '"') {
				for (end++; end < n && p[end] != '"'; end += p[end] == '\\' ? 2 : 1)
					;
				end++;
			} else {
				while (end < n && strchr("-0123456789", p[end]))
					end++;
			}
			json_t* id = end <= n ? json_loadb(p + v, end - v, JSON_DECODE_ANY, NULL) : NULL;
			if (json_is_integer(id) || json_is_string(id))
				return id;
			json_decref(id);
			return NULL;
		}
	}
	return NULL;
}

static void* stdio_main(void* arg)
{
	const struct options* opts = options_get();
	/* The local client is the agent: clipboard_write's limit. */
	size_t max = opts && opts->max_clipboard_body_bytes > opts->max_body_bytes
		? (size_t)opts->max_clipboard_body_bytes
		: opts && opts->max_body_bytes > 0 ? (size_t)opts->max_body_bytes : 16u << 20;
	size_t cap = 64 * 1024, len = 0;
	char* buf = malloc(cap);
	bool discarding = false, eof = false;
	if (!buf) {
		log_error("stdio: out of memory");
		kill(getpid(), SIGTERM);
		return NULL;
	}
	while (!eof) {
		struct pollfd fds[2] = {
			{ .fd = STDIN_FILENO, .events = POLLIN },
			{ .fd = stdio_.wake[0], .events = POLLIN },
		};
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[1].revents)
			goto stopped;
		if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (cap - len < 4096) {
			size_t ncap = cap * 2;
			char* nbuf = ncap <= max + 65536 ? realloc(buf, ncap) : NULL;
			if (!nbuf) {
				/* Too long: answer once (its id when it can be read),
				 * skip to the next newline. */
				json_t* id = leading_id(buf, len);
				char msg[160];
				snprintf(msg, sizeof(msg), "Invalid Request: the message is larger than "
						"the %zu-byte limit; it was skipped", max);
				json_t* resp = mcp_error_response(id, -32600, msg, NULL);
				write_line(resp);
				json_decref(resp);
				json_decref(id);
				log_warn("stdio: a message over %zu bytes: answered -32600 and skipped", max);
				discarding = true;
				len = 0;
			} else {
				buf = nbuf;
				cap = ncap;
			}
		}
		ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			break;
		}
		if (n == 0) {
			eof = true;
			if (len && !discarding)
				handle_line(buf, len);
			break;
		}
		size_t start = 0, scan = len;
		len += (size_t)n;
		for (size_t i = scan; i < len; i++) {
			if (buf[i] != '\n')
				continue;
			if (!discarding)
				handle_line(buf + start, i - start);
			discarding = false;
			start = i + 1;
		}
		if (discarding) {
			len = 0;
		} else if (start > 0) {
			memmove(buf, buf + start, len - start);
			len -= start;
		}
	}
	log_info("stdio: end of input, shutting down");
	kill(getpid(), SIGTERM);
stopped:
	free(buf);
	return NULL;
}

int mcp_stdio_start(void)
{
	if (pipe2(stdio_.wake, O_CLOEXEC) < 0)
		return -errno;
	stdio_.session = mcp_session_new();
	if (!stdio_.session)
		goto session_failure;
	mcp_session_set_via(stdio_.session, "stdio");
	if (mcp_registry_add(stdio_.session) < 0)
		goto registry_failure;
	mcp_registry_start();
	int rc = pthread_create(&stdio_.thread, NULL, stdio_main, NULL);
	if (rc != 0)
		goto thread_failure;
	stdio_.running = true;
	return 0;

thread_failure:
	mcp_session_unref(mcp_registry_remove(mcp_session_id(stdio_.session)));
registry_failure:
	mcp_session_unref(stdio_.session);
	stdio_.session = NULL;
session_failure:
	close(stdio_.wake[0]);
	close(stdio_.wake[1]);
	stdio_.wake[0] = stdio_.wake[1] = -1;
	return -ENOMEM;
}

void mcp_stdio_stop(void)
{
	if (!stdio_.running)
		return;
	stdio_.running = false;
	while (write(stdio_.wake[1], "x", 1) < 0 && errno == EINTR)
		;
	pthread_join(stdio_.thread, NULL);
	close(stdio_.wake[0]);
	close(stdio_.wake[1]);
	stdio_.wake[0] = stdio_.wake[1] = -1;
	struct mcp_session* s = mcp_registry_remove(mcp_session_id(stdio_.session));
	mcp_session_end(stdio_.session);
	mcp_session_unref(s);
	mcp_session_unref(stdio_.session);
	stdio_.session = NULL;
}
