/* libFuzzer harness over HTTP as a client sends it: each input is the raw
 * bytes of one connection (request heads, bodies, pipelined requests), sent
 * over loopback to an in-process deskd (the acceptor, libmicrohttpd, auth and
 * Host/Origin checks, every route: REST, /mcp, the dashboard, /metrics). No
 * display: tool calls stop at argument validation or "display unavailable".
 * Seeds carry the tokens "fuzz-token" (full) and "fuzz-view" (view). The
 * answer is read until the server closes, the response is complete, or a
 * short time passes; sanitizers in the server threads report as usual. */

#define _GNU_SOURCE	/* memmem */
#include "base/events.h"
#include "base/log.h"
#include "base/options.h"
#include "server/http/auth.h"
#include "server/http/http.h"
#include "server/mcp/mcp.h"
#include "server/rest.h"
#include "server/http/web.h"
#include "tools/tools.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_MS 100		/* at most this long for an answer */
#define IDLE_MS 20		/* once some came: this long with nothing more */

static int port;
static struct options opts;
static char dir[] = "/tmp/deskd-fuzz-http-XXXXXX";

/* The data dir stays empty (the token is given): remove it at exit. */
static void remove_dir(void)
{
	rmdir(dir);
}

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerInitialize(int* argc, char*** argv)
{
	log_init(LOG_ERROR, false);
	signal(SIGPIPE, SIG_IGN);
	/* Sessions opened by inputs expire soon, not after 30 minutes. */
	setenv("DESKD_MCP_IDLE_TIMEOUT_MS", "2000", 1);
	if (!mkdtemp(dir))
		exit(1);
	atexit(remove_dir);
	char* args[] = { "deskd", "--listen", "127.0.0.1:0", "--token", "fuzz-token",
		"--view-token", "fuzz-view", "--data-dir", dir, "--header-timeout", "1000",
		"--max-body", "65536", NULL };
	char err[256];
	if (options_parse(&opts, (int)(sizeof(args) / sizeof(args[0])) - 1, args, err,
			sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_http: %s\n", err);
		exit(1);	/* no server: nothing would be fuzzed */
	}
	options_set_global(&opts);
	char url[128];
	if (events_init() < 0 || tools_init() < 0 || auth_init(&opts) < 0
			|| rest_register() < 0 || mcp_http_register() < 0 || web_register() < 0
			|| http_start(&opts, url, sizeof(url)) < 0) {
		fprintf(stderr, "fuzz_http: cannot start the server\n");
		exit(1);
	}
	port = atoi(strrchr(url, ':') + 1);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Is buf[0..len) one whole response (head and Content-Length body)? */
static int complete(const char* buf, size_t len)
{
	const char* end = memmem(buf, len, "\r\n\r\n", 4);
	if (!end)
		return 0;
	size_t head = (size_t)(end - buf) + 4;
	const char* cl = memmem(buf, head, "Content-Length: ", 16);
	if (!cl)
		return 0;
	return len >= head + strtoul(cl + 16, NULL, 10);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr*)&sa, sizeof(sa)) < 0) {
		close(fd);
		return 0;
	}
	for (size_t off = 0; off < size; ) {
		ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	/* No whole head: say there is no more, so nobody waits for the rest. */
	if (!memmem(data, size, "\r\n\r\n", 4))
		shutdown(fd, SHUT_WR);
	static char buf[1 << 16];
	size_t got = 0;
	int64_t start = now_ms(), last = 0;
	for (;;) {
		int64_t now = now_ms();
		if (now - start >= READ_MS || (last && now - last >= IDLE_MS))
			break;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, last ? IDLE_MS : READ_MS) <= 0)
			continue;
		ssize_t n = recv(fd, buf + got, sizeof(buf) - got - 1, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		last = now_ms();
		if (got >= sizeof(buf) - 1)
			got = 0;	/* streams: only the end matters */
		if (complete(buf, got))
			break;
	}
	close(fd);
	return 0;
}
