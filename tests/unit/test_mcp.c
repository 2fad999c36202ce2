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
#include <strings.h>

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

static int last_status;

static void rec_status(struct mcp_sink* self, int status)
{
	last_status = status;
}

static const struct mcp_sink_impl rec_impl = { .message = rec_message, .done = rec_done,
	.status = rec_status };

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

static void test_eras(void)
{
	static const struct { const char* text; const char* header; bool modern; } cases[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
		  "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}", NULL, true },
		/* An unknown version is modern: it gets -32022 with the list. */
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
		  "{\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\"}}}", NULL, true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
		  "{\"io.modelcontextprotocol/protocolVersion\":5}}}", NULL, true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
		  "{\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\"}}}", "2026-07-28", false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", NULL, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", "2026-07-28", true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", " 2025-06-18 ", false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", NULL, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "2026-07-28", false },
		{ "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}]", "2026-07-28", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t* m = json_loads(cases[i].text, 0, NULL);
		TST_CHECK(m != NULL);
		if (mcp_is_modern(m, cases[i].header) != cases[i].modern) {
			tst_failed++;
			fprintf(stderr, "era of case %zu is wrong\n", i);
		}
		json_decref(m);
	}
	TST_CHECK(mcp_version_legacy("2024-11-05") && !mcp_version_legacy("2026-07-28"));
}

static void test_state(void)
{
	json_t* args = json_pack("{s:i, s:s}", "b", 2, "a", "x");
	json_t* same = json_pack("{s:s, s:i}", "a", "x", "b", 2);	/* key order is not part of it */
	json_t* st = json_pack("{s:s}", "kind", "k");
	char why[200];
	char* tok = mcp_state_seal(st, "tools/call", "t", args, "full");
	TST_CHECK(tok && strchr(tok, '.'));
	/* Bound to the method, the target, the arguments and the caller. */
	TST_CHECK(!mcp_state_open(tok, "prompts/get", "t", args, "full", why, sizeof(why)));
	TST_CHECK(strstr(why, "another request") != NULL);
	TST_CHECK(!mcp_state_open(tok, "tools/call", "u", args, "full", why, sizeof(why)));
	json_t* other = json_pack("{s:i}", "b", 3);
	TST_CHECK(!mcp_state_open(tok, "tools/call", "t", other, "full", why, sizeof(why)));
	TST_CHECK(strstr(why, "arguments") != NULL);
	TST_CHECK(!mcp_state_open(tok, "tools/call", "t", args, "view", why, sizeof(why)));
	TST_CHECK(strstr(why, "another caller") != NULL);
	/* Tampering anywhere fails the MAC. */
	char* bad = strdup(tok);
	bad[3] = bad[3] == 'A' ? 'B' : 'A';
	TST_CHECK(!mcp_state_open(bad, "tools/call", "t", args, "full", why, sizeof(why)));
	TST_CHECK(strstr(why, "integrity") != NULL);
	free(bad);
	TST_CHECK(!mcp_state_open("x.y", "tools/call", "t", args, "full", why, sizeof(why)));
	TST_CHECK(!mcp_state_open("", "tools/call", "t", args, "full", why, sizeof(why)));
	/* The right request opens it once. */
	json_t* got = mcp_state_open(tok, "tools/call", "t", same, "full", why, sizeof(why));
	TST_CHECK(got && json_equal(got, st));
	json_decref(got);
	TST_CHECK(!mcp_state_open(tok, "tools/call", "t", args, "full", why, sizeof(why)));
	TST_CHECK(strstr(why, "already used") != NULL);
	free(tok);
	/* No state: json null. */
	tok = mcp_state_seal(NULL, "prompts/get", "p", NULL, "stdio");
	got = mcp_state_open(tok, "prompts/get", "p", NULL, "stdio", why, sizeof(why));
	TST_CHECK(json_is_null(got));
	json_decref(got);
	free(tok);
	json_decref(args);
	json_decref(same);
	json_decref(other);
	json_decref(st);
}

/* Headers from a JSON object, case-insensitively. */
static const char* fake_header(void* ud, const char* name)
{
	const char* k;
	json_t* v;
	json_object_foreach((json_t*)ud, k, v)
		if (strcasecmp(k, name) == 0)
			return json_string_value(v);
	return NULL;
}

static json_t* modern(struct record_sink* r, const char* text, json_t* headers)
{
	struct mcp_request_env env = { .transport = headers ? "http" : "stdio",
		.principal = "full", .header = headers ? fake_header : NULL, .header_ud = headers };
	json_t* m = json_loads(text, 0, NULL);
	size_t before = json_array_size(r->out);
	last_status = 200;
	mcp_modern_handle(m, &env, &r->sink);
	json_decref(m);
	return json_array_size(r->out) > before ? json_array_get(r->out, json_array_size(r->out) - 1) : NULL;
}

#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
	"\"io.modelcontextprotocol/clientCapabilities\":{}}"

static void test_modern(void)
{
	struct record_sink r = { { &rec_impl, false }, json_array() };
	json_t* a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}", NULL);
	json_t* res = json_object_get(a, "result");
	TST_EQ_STR(json_string_value(json_object_get(res, "resultType")), "complete");
	TST_EQ_STR(json_string_value(json_array_get(json_object_get(res, "supportedVersions"), 0)), "2026-07-28");
	TST_EQ_STR(json_string_value(json_object_get(res, "cacheScope")), "public");
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}", NULL);
	TST_EQ_INT(error_code(a), -32602);
	TST_EQ_INT(last_status, 400);
	TST_EQ_INT(json_integer_value(json_object_get(a, "id")), 2);
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{" META "}}", NULL);
	TST_EQ_INT(error_code(a), -32601);
	TST_EQ_INT(last_status, 404);
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{\"_meta\":"
			"{\"io.modelcontextprotocol/protocolVersion\":\"2030-01-01\","
			"\"io.modelcontextprotocol/clientCapabilities\":{}}}}", NULL);
	TST_EQ_INT(error_code(a), -32022);
	TST_EQ_STR(json_string_value(json_object_get(json_object_get(json_object_get(a, "error"),
			"data"), "requested")), "2030-01-01");
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/templates/list\",\"params\":{" META "}}", NULL);
	TST_CHECK(json_is_array(json_object_get(json_object_get(a, "result"), "resourceTemplates")));
	/* Headers (HTTP): each must match the body. */
	json_t* h = json_pack("{s:s, s:s}", "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list");
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\",\"params\":{" META "}}", h);
	TST_EQ_STR(json_string_value(json_object_get(json_object_get(a, "result"), "resultType")), "complete");
	json_object_set_new(h, "Mcp-Method", json_string("=?base64?dG9vbHMvbGlzdA==?="));
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{" META "}}", h);
	TST_CHECK(json_object_get(a, "result") != NULL);
	json_object_set_new(h, "Mcp-Method", json_string("=?base64?dG9vbHMvbGlzdA?="));
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\",\"params\":{" META "}}", h);
	TST_EQ_INT(error_code(a), -32020);
	TST_EQ_INT(last_status, 400);
	json_object_set_new(h, "Mcp-Method", json_string("tools/list"));
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"prompts/get\",\"params\":{\"name\":\"x\"," META "}}", h);
	TST_EQ_INT(error_code(a), -32020);	/* Mcp-Method differs (and no Mcp-Name) */
	json_object_set_new(h, "Mcp-Method", json_string("prompts/get"));
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"prompts/get\",\"params\":{\"name\":\"x\"," META "}}", h);
	TST_EQ_INT(error_code(a), -32020);	/* no Mcp-Name */
	json_object_set_new(h, "Mcp-Name", json_string("computer_use_guide"));
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"prompts/get\",\"params\":{\"name\":\"computer_use_guide\"," META "}}", h);
	TST_CHECK(json_is_array(json_object_get(json_object_get(a, "result"), "messages")));
	json_decref(h);
	/* Notifications get nothing; an invalid id gets null. */
	size_t n = json_array_size(r.out);
	modern(&r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1," META "}}", NULL);
	TST_EQ_INT(json_array_size(r.out), n);
	a = modern(&r, "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"tools/list\",\"params\":{" META "}}", NULL);
	TST_EQ_INT(error_code(a), -32600);
	TST_CHECK(json_is_null(json_object_get(a, "id")));
	json_decref(r.out);
}

/* C8: progress values print short: whole numbers as integers, the rest at
 * millisecond precision, never jansson's %.17g. */
static void test_progress_numbers(void)
{
	struct record_sink r = { { &rec_impl, false }, json_array() };
	json_t* token = json_string("t");
	mcp_send_progress(&r.sink, token, 0.1 + 0.2, 60.0, NULL);
	mcp_send_progress(&r.sink, token, 5.0004999, 0, "waiting");
	mcp_send_progress(&r.sink, token, 50, 100, NULL);
	const char* want[] = {
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
		"{\"progressToken\":\"t\",\"progress\":0.3,\"total\":60}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
		"{\"progressToken\":\"t\",\"progress\":5,\"message\":\"waiting\"}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
		"{\"progressToken\":\"t\",\"progress\":50,\"total\":100}}",
	};
	TST_EQ_INT((int)json_array_size(r.out), 3);
	for (size_t i = 0; i < json_array_size(r.out) && i < 3; i++) {
		char* text = mcp_dump(json_array_get(r.out, i));
		TST_EQ_STR(text, want[i]);
		free(text);
	}
	json_decref(token);
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
	test_eras();
	test_state();
	test_modern();
	test_progress_numbers();
	TST_END();
}
