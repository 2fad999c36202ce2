/* libFuzzer harness over the stateless (2026-07-28) path: an input is HTTP
 * header lines ("Name: value"), an empty line, and one JSON-RPC message,
 * handled as a POST would be (the header checks, Base64 sentinels, _meta,
 * x-mcp-header); without the empty line it is one stdio line. The body is
 * also tried as a requestState token. No network, no X, no tool table;
 * workers are drained after each input, listen streams ended. */

#include "base/log.h"
#include "base/worker.h"
#include "server/mcp/core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int discard_message(struct mcp_sink* self, json_t* msg)
{
	free(mcp_dump(msg));
	return 0;
}

static void discard_done(struct mcp_sink* self, json_t* response)
{
	if (response)
		free(mcp_dump(response));
}

static void discard_status(struct mcp_sink* self, int status)
{
}

static const struct mcp_sink_impl discard_impl = {
	.message = discard_message,
	.done = discard_done,
	.status = discard_status,
};

/* Static: a worker may still answer after the input returns (it is
 * drained, but only with a bound). */
static struct mcp_sink sink = { &discard_impl, false };

#define MAX_HEADERS 16

struct headers {
	char* names[MAX_HEADERS];
	char* values[MAX_HEADERS];
	int n;
};

static const char* header(void* ud, const char* name)
{
	struct headers* h = ud;
	for (int i = 0; i < h->n; i++)
		if (strcasecmp(h->names[i], name) == 0)
			return h->values[i];
	return NULL;
}

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerInitialize(int* argc, char*** argv)
{
	log_init(LOG_ERROR, false);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	char* text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	struct headers h = { .n = 0 };
	char* body = text;
	char* split = strstr(text, "\n\n");
	bool http = split != NULL;
	if (http) {
		*split = '\0';
		body = split + 2;
		for (char* line = strtok(text, "\n"); line && h.n < MAX_HEADERS; line = strtok(NULL, "\n")) {
			char* colon = strchr(line, ':');
			if (!colon)
				continue;
			*colon = '\0';
			h.names[h.n] = line;
			h.values[h.n] = colon + 1;
			h.n++;
		}
	}
	struct mcp_request_env env = {
		.transport = http ? "http" : "stdio",
		.principal = "full",
		.header = http ? header : NULL,
		.header_ud = &h,
	};
	json_error_t jerr;
	json_t* msg = json_loads(body, JSON_DECODE_ANY, &jerr);
	if (msg) {
		(void)mcp_is_modern(msg, header(&h, "MCP-Protocol-Version"));
		mcp_modern_handle(msg, &env, &sink);
		if (json_is_string(msg)) {
			char why[200];
			json_t* st = mcp_state_open(json_string_value(msg), "tools/call", "t", NULL,
					"full", why, sizeof(why));
			json_decref(st);
		}
		json_decref(msg);
	}
	worker_drain(2000);
	mcp_modern_reset();
	free(text);
	return 0;
}
