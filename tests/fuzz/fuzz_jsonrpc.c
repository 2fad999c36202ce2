/* libFuzzer harness over the MCP message handler: each input is a sequence of
 * newline-separated messages (one JSON value or batch per line) handed to a
 * fresh session whose sink discards (but serializes) every answer. No network,
 * no X, no worker threads (inline session). The tool table is loaded, so known
 * tools reach argument validation (and, without a display, stop there); the
 * corpus has a seed for each path that quotes client text in a message. */

#include "base/log.h"
#include "server/mcp/core.h"
#include "tools/tools.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static const struct mcp_sink_impl discard_impl = {
	.message = discard_message,
	.done = discard_done,
};

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerInitialize(int* argc, char*** argv)
{
	log_init(LOG_ERROR, false);
	return tools_init() < 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	struct mcp_session* s = mcp_session_new();
	if (!s)
		return 0;
	mcp_session_set_inline(s, true);
	struct mcp_sink sink = { &discard_impl, false };
	const char* text = (const char*)data;
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i < size && text[i] != '\n')
			continue;
		if (i > start)
			mcp_session_handle_text(s, text + start, i - start, &sink);
		start = i + 1;
	}
	mcp_session_end(s);
	mcp_session_unref(s);
	return 0;
}
