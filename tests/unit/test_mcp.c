/* Unit tests for the MCP core (server/mcp/mcp.c): message classification, error
 * shapes, base64, and the lifecycle through an inline session whose sink
 * records every answer. No network, no X, no tool table. */
#include "server/mcp/mcp.h"
#include "server/mcp/core.h"
#include "base/log.h"
#include "tools/tools.h"
#include "tests/unit/tst.h"
#include "base/base64.h"

#include <stdlib.h>

struct record_sink {
	struct mcp_sink sink;
	json_t* out;	/* array of everything sent */
};

static int rec_message(struct mcp_sink* self, json_t* msg)
{
	json_array_append(((struct record_sink*)self)->out, msg);
	return 0;
}

static void rec_done(struct mcp_sink* self, json_t* response)
{
	json_array_append(((struct record_sink*)self)->out, response ? response : json_null());
}

static const struct mcp_sink_impl rec_impl = { .message = rec_message, .done = rec_done };

/* Send one line; return the last answer (borrowed from the sink). */
static json_t* send(struct mcp_session* s, struct record_sink* r, const char* text)
{
	size_t before = json_array_size(r->out);
	mcp_session_handle_text(s, text, strlen(text), &r->sink);
	return json_array_size(r->out) > before ? json_array_get(r->out, json_array_size(r->out) - 1) : NULL;
}

static int error_code(json_t* resp)
{
	return (int)json_integer_value(json_object_get(json_object_get(resp, "error"), "code"));
}

static void test_kinds(void)
{
	const struct { const char* text; enum mcp_msg_kind kind; } cases[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", MCP_MSG_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\",\"params\":{}}", MCP_MSG_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", MCP_MSG_NOTIFICATION },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", MCP_MSG_RESPONSE },
		{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1,\"message\":\"x\"}}", MCP_MSG_RESPONSE },
		{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MCP_MSG_INVALID },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MCP_MSG_INVALID },
		{ "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", MCP_MSG_INVALID },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":3}", MCP_MSG_INVALID },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}", MCP_MSG_INVALID },
		{ "[1]", MCP_MSG_INVALID },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t* m = json_loads(cases[i].text, 0, NULL);
		TST_EQ_INT(mcp_message_kind(m), cases[i].kind);
		json_decref(m);
	}
	TST_CHECK(mcp_version_supported("2025-11-25"));
	TST_CHECK(mcp_version_supported("2025-03-26"));
	TST_CHECK(!mcp_version_supported("2026-07-28"));
	TST_CHECK(!mcp_version_supported(NULL));
}

static void test_base64(void)
{
	const char* in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	const char* out[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	for (size_t i = 0; i < 7; i++) {
		size_t n = 99;
		char* b = base64_encode(in[i], strlen(in[i]), &n);
		TST_EQ_STR(b, out[i]);
		TST_EQ_INT((int)n, (int)strlen(out[i]));
		free(b);
	}
}

static void test_lifecycle(void)
{
	struct mcp_session* s = mcp_session_new();
	TST_CHECK(s != NULL);
	mcp_session_set_inline(s, true);
	struct record_sink r = { { &rec_impl, false }, json_array() };

	json_t* a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	TST_EQ_INT(error_code(a), -32600);
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
	TST_CHECK(json_is_object(json_object_get(a, "result")) && json_object_size(json_object_get(a, "result")) == 0);
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"server/discover\"}");
	TST_EQ_INT(error_code(a), -32601);
	TST_CHECK(mcp_session_version(s) == NULL);

	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":"
			"{\"protocolVersion\":\"1999-01-01\",\"capabilities\":{}}}");
	TST_EQ_STR(json_string_value(json_object_get(json_object_get(a, "result"), "protocolVersion")),
			"2025-11-25");
	TST_EQ_STR(mcp_session_version(s), "2025-11-25");
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\",\"params\":"
			"{\"protocolVersion\":\"2025-06-18\"}}");
	TST_EQ_INT(error_code(a), -32600);

	size_t n = json_array_size(r.out);
	send(s, &r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	TST_EQ_INT(json_array_size(r.out), n);	/* notifications get no answer */

	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/list\"}");
	TST_CHECK(json_is_array(json_object_get(json_object_get(a, "result"), "tools")));
	TST_EQ_STR(json_string_value(json_object_get(a, "id")), "x");
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\",\"params\":{\"cursor\":\"zz\"}}");
	TST_EQ_INT(error_code(a), -32602);
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}");
	TST_EQ_INT(error_code(a), -32602);
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"loud\"}}");
	TST_EQ_INT(error_code(a), -32602);
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"error\"}}");
	TST_CHECK(json_object_get(a, "result") != NULL);
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"prompts/get\",\"params\":{\"name\":\"computer_use_guide\"}}");
	TST_CHECK(strstr(json_string_value(json_object_get(json_object_get(json_array_get(
			json_object_get(json_object_get(a, "result"), "messages"), 0), "content"), "text")),
			"screenshot") != NULL);
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"resources/read\",\"params\":{\"uri\":\"deskd://recordings/none\"}}");
	TST_EQ_INT(error_code(a), -32002);

	a = send(s, &r, "{\"jsonrpc\":");
	TST_EQ_INT(error_code(a), -32700);
	TST_CHECK(json_is_null(json_object_get(a, "id")));
	a = send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xc3\x28\"}");
	TST_EQ_INT(error_code(a), -32700);
	TST_CHECK(strstr(json_string_value(json_object_get(json_object_get(json_object_get(a,
			"error"), "data"), "reason")), "UTF-8") != NULL);
	a = send(s, &r, "[{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"ping\"}]");
	TST_EQ_INT(error_code(a), -32600);	/* no batches after 2025-03-26 */

	mcp_session_end(s);
	TST_CHECK(mcp_session_ended(s));
	mcp_session_unref(s);
	json_decref(r.out);
}

static void test_legacy_batch(void)
{
	struct mcp_session* s = mcp_session_new();
	mcp_session_set_inline(s, true);
	struct record_sink r = { { &rec_impl, false }, json_array() };
	send(s, &r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
			"{\"protocolVersion\":\"2025-03-26\"}}");
	TST_EQ_STR(mcp_session_version(s), "2025-03-26");
	size_t n = json_array_size(r.out);
	send(s, &r, "[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"},"
			"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
			"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}]");
	TST_EQ_INT(json_array_size(r.out), n + 2);
	json_t* a = send(s, &r, "[]");
	TST_EQ_INT(error_code(a), -32600);
	mcp_session_end(s);
	mcp_session_unref(s);
	json_decref(r.out);
}

int main(void)
{
	log_init(LOG_ERROR, false);
	mcp_catalog_add(&mcp_deskd_catalog);
	test_kinds();
	test_base64();
	test_lifecycle();
	test_legacy_batch();
	TST_END();
}
