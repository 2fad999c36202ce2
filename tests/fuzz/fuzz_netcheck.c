/* libFuzzer harness over the acceptor's parsing of untrusted bytes: request
 * head classification, header and target extraction, query parameters, and
 * the Host/Origin/bearer checks on whatever those yield. Pure functions: no
 * sockets, no threads. */

#include "base/log.h"
#include "server/http/netcheck.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerInitialize(int* argc, char*** argv)
{
	log_init(LOG_ERROR, false);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	const char* buf = (const char*)data;
	char a[256], b[512], path[256], query[512];
	char allow0[] = "https://app.example.com";
	char* allow[] = { allow0 };
	struct netcheck_policy p = { .loopback = true, .listen_host = "127.0.0.1", .port = 7800,
		.allow_origins = allow, .n_allow_origins = 1 };

	netcheck_classify(buf, size, 8192);
	netcheck_head_length(buf, size);
	int hn = netcheck_head_header(buf, size, "Host", a, sizeof(a));
	int on = netcheck_head_header(buf, size, "Origin", b, sizeof(b));
	netcheck_host_allowed(&p, hn >= 0 ? a : NULL);
	netcheck_origin_allowed(&p, on >= 0 ? b : NULL, hn >= 0 ? a : NULL);
	if (netcheck_head_header(buf, size, "Authorization", b, sizeof(b)) >= 0)
		netcheck_bearer(b, a, sizeof(a));
	if (netcheck_head_header(buf, size, "Upgrade", b, sizeof(b)) >= 0)
		netcheck_has_token(b, "websocket");
	if (netcheck_head_target(buf, size, path, sizeof(path), query, sizeof(query)) == 0)
		netcheck_query_param(query, "token", b, sizeof(b));

	/* The raw bytes as one string, too. */
	char* s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	netcheck_host_allowed(&p, s);
	netcheck_origin_allowed(&p, s, s);
	netcheck_bearer(s, a, sizeof(a));
	netcheck_query_param(s, "token", b, sizeof(b));
	netcheck_has_token(s, "upgrade");
	free(s);
	return 0;
}
