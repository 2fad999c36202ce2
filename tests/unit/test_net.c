/* Unit tests for the net layer's pure parts: Host/Origin policy, bearer
 * parsing, raw-head classification and parsing, token comparison and roles,
 * and the metrics text format. */
#include "server/http/auth.h"
#include "base/metrics.h"
#include "server/http/netcheck.h"
#include "base/options.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_host(void)
{
	struct netcheck_policy p = { .loopback = true, .listen_host = "127.0.0.1", .port = 7800 };
	TST_CHECK(netcheck_host_allowed(&p, NULL));
	TST_CHECK(netcheck_host_allowed(&p, "127.0.0.1"));
	TST_CHECK(netcheck_host_allowed(&p, "127.0.0.1:7800"));
	TST_CHECK(netcheck_host_allowed(&p, "localhost:9000"));	/* ssh -L */
	TST_CHECK(netcheck_host_allowed(&p, "LocalHost"));
	TST_CHECK(netcheck_host_allowed(&p, "[::1]"));
	TST_CHECK(netcheck_host_allowed(&p, "[::1]:7800"));
	TST_CHECK(!netcheck_host_allowed(&p, "::1"));
	TST_CHECK(!netcheck_host_allowed(&p, "evil.example"));
	TST_CHECK(!netcheck_host_allowed(&p, "evil.example:7800"));
	TST_CHECK(!netcheck_host_allowed(&p, "localhost.evil.example"));
	TST_CHECK(!netcheck_host_allowed(&p, "127.0.0.1.nip.io"));
	TST_CHECK(!netcheck_host_allowed(&p, "127.0.0.2"));
	TST_CHECK(!netcheck_host_allowed(&p, "localhost:"));
	TST_CHECK(!netcheck_host_allowed(&p, "localhost:80x"));
	TST_CHECK(!netcheck_host_allowed(&p, ""));
	TST_CHECK(!netcheck_host_allowed(&p, "[::1"));

	struct netcheck_policy q = { .loopback = true, .listen_host = "127.0.0.5", .port = 1 };
	TST_CHECK(netcheck_host_allowed(&q, "127.0.0.5:1"));
	struct netcheck_policy v6 = { .loopback = true, .listen_host = "::1", .port = 1 };
	TST_CHECK(netcheck_host_allowed(&v6, "[::1]:1"));
	struct netcheck_policy any = { .loopback = false, .listen_host = "0.0.0.0", .port = 1 };
	TST_CHECK(netcheck_host_allowed(&any, "evil.example"));
}

static void test_origin(void)
{
	char a[] = "https://app.example.com", b[] = "http://tool.local:3000/";
	char* extra[] = { a, b };
	struct netcheck_policy p = { .loopback = true, .listen_host = "127.0.0.1", .port = 7800,
		.allow_origins = extra, .n_allow_origins = 2 };
	TST_CHECK(netcheck_origin_allowed(&p, NULL, "127.0.0.1:7800"));
	TST_CHECK(netcheck_origin_allowed(&p, "http://127.0.0.1:7800", NULL));
	TST_CHECK(netcheck_origin_allowed(&p, "http://localhost:7800", NULL));
	TST_CHECK(netcheck_origin_allowed(&p, "http://[::1]:7800", NULL));
	TST_CHECK(netcheck_origin_allowed(&p, "HTTP://LOCALHOST:7800", NULL));
	TST_CHECK(netcheck_origin_allowed(&p, "https://app.example.com", NULL));
	TST_CHECK(netcheck_origin_allowed(&p, "http://tool.local:3000", NULL));
	/* Through a tunnel: the origin is the Host the browser used. */
	TST_CHECK(netcheck_origin_allowed(&p, "http://localhost:9000", "localhost:9000"));
	TST_CHECK(!netcheck_origin_allowed(&p, "http://evil.example:7800", "evil.example:7800"));
	TST_CHECK(!netcheck_origin_allowed(&p, "http://127.0.0.1:7801", "127.0.0.1:7800"));
	TST_CHECK(!netcheck_origin_allowed(&p, "http://127.0.0.1", NULL));
	TST_CHECK(!netcheck_origin_allowed(&p, "null", NULL));
	TST_CHECK(!netcheck_origin_allowed(&p, "http://localhost:7800.evil.example", NULL));
	TST_CHECK(!netcheck_origin_allowed(&p, "https://app.example.com.evil", NULL));
	TST_CHECK(!netcheck_origin_allowed(&p, "", NULL));
}

static void test_bearer(void)
{
	char tok[32];
	TST_EQ_INT(netcheck_bearer("Bearer abc", tok, sizeof(tok)), 3);
	TST_EQ_STR(tok, "abc");
	TST_EQ_INT(netcheck_bearer("bearer   abc  ", tok, sizeof(tok)), 3);
	TST_EQ_STR(tok, "abc");
	TST_EQ_INT(netcheck_bearer("Basic abc", tok, sizeof(tok)), -1);
	TST_EQ_INT(netcheck_bearer("Bearer", tok, sizeof(tok)), -1);
	TST_EQ_INT(netcheck_bearer("Bearerabc", tok, sizeof(tok)), -1);
	TST_EQ_INT(netcheck_bearer("Bearer a b", tok, sizeof(tok)), -1);
	TST_EQ_INT(netcheck_bearer("Bearer 0123456789012345678901234567890123456789", tok,
			sizeof(tok)), -1);
	TST_EQ_INT(netcheck_bearer(NULL, tok, sizeof(tok)), -1);
}

static void test_head(void)
{
	static const char ws[] = "GET /live?token=a%2Bb&x=1 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n"
		"Connection: keep-alive, Upgrade\r\nupgrade:  WebSocket \r\n"
		"Sec-WebSocket-Protocol: deskd.live\r\nSec-WebSocket-Protocol: bearer.t\r\n\r\n";
	size_t n = strlen(ws);
	TST_EQ_INT(netcheck_classify(ws, n, 8192), NETCHECK_HEAD_WEBSOCKET);
	TST_EQ_INT(netcheck_classify(ws, n - 2, 8192), NETCHECK_HEAD_INCOMPLETE);
	TST_EQ_INT(netcheck_classify(ws, 2, 8192), NETCHECK_HEAD_INCOMPLETE);
	TST_EQ_INT(netcheck_classify(ws, n - 2, n - 2), NETCHECK_HEAD_HTTP);
	TST_EQ_INT(netcheck_classify("POST /mcp HTTP/1.1\r\n", 20, 8192), NETCHECK_HEAD_HTTP);
	TST_EQ_INT(netcheck_classify("\x16\x03\x01", 3, 8192), NETCHECK_HEAD_HTTP);
	static const char plain[] = "GET / HTTP/1.1\r\nHost: x\r\nX-Upgrade: websocket\r\n\r\n";
	TST_EQ_INT(netcheck_classify(plain, strlen(plain), 8192), NETCHECK_HEAD_HTTP);
	static const char lf[] = "GET /live HTTP/1.1\nUpgrade: websocket\n\n";
	TST_EQ_INT(netcheck_classify(lf, strlen(lf), 8192), NETCHECK_HEAD_WEBSOCKET);
	TST_EQ_INT(netcheck_head_length(ws, n), n);

	char v[128], path[64], query[64];
	TST_EQ_INT(netcheck_head_header(ws, n, "host", v, sizeof(v)), 12);
	TST_EQ_STR(v, "127.0.0.1:80");
	TST_CHECK(netcheck_head_header(ws, n, "Upgrade", v, sizeof(v)) > 0);
	TST_EQ_STR(v, "WebSocket");
	TST_CHECK(netcheck_head_header(ws, n, "Sec-WebSocket-Protocol", v, sizeof(v)) > 0);
	TST_EQ_STR(v, "deskd.live, bearer.t");
	TST_EQ_INT(netcheck_head_header(ws, n, "Origin", v, sizeof(v)), -1);
	TST_EQ_INT(netcheck_head_header(ws, n, "Host", v, 4), -1);
	TST_EQ_INT(netcheck_head_target(ws, n, path, sizeof(path), query, sizeof(query)), 0);
	TST_EQ_STR(path, "/live");
	TST_EQ_STR(query, "token=a%2Bb&x=1");
	TST_EQ_INT(netcheck_query_param(query, "token", v, sizeof(v)), 3);
	TST_EQ_STR(v, "a+b");
	TST_EQ_INT(netcheck_query_param(query, "x", v, sizeof(v)), 1);
	TST_EQ_INT(netcheck_query_param(query, "tok", v, sizeof(v)), -1);
	TST_EQ_INT(netcheck_query_param("a&token=", "token", v, sizeof(v)), 0);
	TST_EQ_INT(netcheck_head_target("GARBAGE\r\n\r\n", 11, path, sizeof(path), query,
			sizeof(query)), -1);
	TST_EQ_INT(netcheck_pct_decode("t%2Fk(1)%3D%22%2541%2Cx", v, sizeof(v)), 13);
	TST_EQ_STR(v, "t/k(1)=\"%41,x");
	TST_EQ_INT(netcheck_pct_decode("plain", v, sizeof(v)), 5);
	TST_EQ_STR(v, "plain");
	TST_EQ_INT(netcheck_pct_decode("50%", v, sizeof(v)), 3);	/* a lone '%' stays */
	TST_EQ_STR(v, "50%");
	TST_EQ_INT(netcheck_pct_decode("%4", v, sizeof(v)), 2);
	TST_EQ_INT(netcheck_pct_decode("a%00b", v, sizeof(v)), -1);	/* no hidden NUL */
	TST_EQ_INT(netcheck_pct_decode("abcd", v, 4), -1);
	TST_EQ_INT(netcheck_pct_decode("", v, 0), -1);
	TST_CHECK(netcheck_has_token("keep-alive, Upgrade", "upgrade"));
	TST_CHECK(!netcheck_has_token("keep-alive, Upgraded", "upgrade"));
}

static void test_auth(void)
{
	TST_CHECK(auth_token_equal("abc", "abc"));
	TST_CHECK(!auth_token_equal("abc", "abd"));
	TST_CHECK(!auth_token_equal("abc", "abcd"));
	TST_CHECK(!auth_token_equal("abcd", "abc"));
	TST_CHECK(!auth_token_equal("", "abc"));
	TST_CHECK(!auth_token_equal("abc", ""));
	TST_CHECK(auth_token_equal("", ""));

	struct options o;
	char err[256];
	char** argv = (char**)(const char*[]){ "deskd", "--token", "agent-token", "--view-token",
		"view-token", "--person-token", "person-token", NULL };
	TST_EQ_INT(options_parse(&o, 7, argv, err, sizeof(err)), 0);
	TST_EQ_INT(auth_init(&o), 0);
	TST_EQ_STR(auth_token(), "agent-token");
	TST_EQ_STR(auth_person_token(), "person-token");
	TST_EQ_INT(auth_check_token("agent-token"), HTTP_ROLE_AGENT);
	TST_EQ_INT(auth_check_token("person-token"), HTTP_ROLE_PERSON);
	TST_EQ_INT(auth_check_token("view-token"), HTTP_ROLE_VIEW);
	TST_EQ_INT(auth_check_token("agent-toke"), HTTP_ROLE_NONE);
	TST_EQ_INT(auth_check_token(NULL), HTTP_ROLE_NONE);
	TST_EQ_STR(auth_role_name(HTTP_ROLE_PERSON), "person");
	auth_deinit();
	options_deinit(&o);

	/* Every role's token differs from the others'. */
	static const char* const same_pairs[][4] = {
		{ "--token", "t", "--view-token", "t" },
		{ "--token", "t", "--person-token", "t" },
		{ "--person-token", "t", "--view-token", "t" },
	};
	for (size_t i = 0; i < sizeof(same_pairs) / sizeof(same_pairs[0]); i++) {
		char** same = (char**)(const char*[]){ "deskd", "--token", "a", "--person-token", "p",
			same_pairs[i][0], same_pairs[i][1], same_pairs[i][2], same_pairs[i][3], NULL };
		TST_EQ_INT(options_parse(&o, 9, same, err, sizeof(err)), 0);
		TST_CHECK(auth_init(&o) < 0);
		options_deinit(&o);
	}

	char** none = (char**)(const char*[]){ "deskd", "--no-auth", NULL };
	TST_EQ_INT(options_parse(&o, 2, none, err, sizeof(err)), 0);
	TST_EQ_INT(auth_init(&o), 0);
	TST_CHECK(auth_token() == NULL);
	TST_EQ_INT(auth_check_token(NULL), HTTP_ROLE_PERSON);
	auth_deinit();
	options_deinit(&o);
}

static int write_file(const char* path, const char* text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) && chmod(path, mode) == 0 ? 0 : -1;
}

static int auth_with_data_dir(const char* dir)
{
	struct options o;
	char err[256];
	char** argv = (char**)(const char*[]){ "deskd", "--data-dir", dir, NULL };
	if (options_parse(&o, 3, argv, err, sizeof(err)) < 0)
		return -100;
	int rc = auth_init(&o);
	options_deinit(&o);
	return rc;
}

/* The token deskd keeps in its data dir is never a symlink, never readable by
 * others, and the data dir is never writable by others: a planted token must
 * not be used. */
static void test_token_file(void)
{
	char dir[] = "/tmp/deskd-test-auth-XXXXXX";
	TST_CHECK(mkdtemp(dir) != NULL);
	char token[300], planted[256], sub[256];
	snprintf(token, sizeof(token), "%s/token", dir);
	snprintf(planted, sizeof(planted), "%s/planted", dir);
	snprintf(sub, sizeof(sub), "%s/state", dir);

	/* Generated, 0600, reused: the agent's and the person's, different. */
	char person[300];
	snprintf(person, sizeof(person), "%s/person-token", dir);
	TST_EQ_INT(auth_with_data_dir(dir), 0);
	char first[128] = "", first_person[128] = "";
	if (auth_token())
		snprintf(first, sizeof(first), "%s", auth_token());
	if (auth_person_token())
		snprintf(first_person, sizeof(first_person), "%s", auth_person_token());
	TST_EQ_INT(strlen(first), 64);
	TST_EQ_INT(strlen(first_person), 64);
	TST_CHECK(strcmp(first, first_person) != 0);
	TST_EQ_INT(auth_token_source(NULL), AUTH_TOKEN_GENERATED);
	TST_EQ_INT(auth_person_token_source(NULL), AUTH_TOKEN_GENERATED);
	auth_deinit();
	struct stat st;
	TST_EQ_INT(stat(token, &st), 0);
	TST_EQ_INT(st.st_mode & 0777, 0600);
	TST_EQ_INT(stat(person, &st), 0);
	TST_EQ_INT(st.st_mode & 0777, 0600);
	TST_EQ_INT(auth_with_data_dir(dir), 0);
	TST_EQ_STR(auth_token(), first);
	TST_EQ_STR(auth_person_token(), first_person);
	TST_EQ_INT(auth_person_token_source(NULL), AUTH_TOKEN_SAVED);
	auth_deinit();
	/* A person's token readable by others: refused too. */
	TST_EQ_INT(chmod(person, 0644), 0);
	TST_EQ_INT(auth_with_data_dir(dir), -EPERM);
	TST_EQ_INT(chmod(person, 0600), 0);

	/* Readable by others: refused, not used. */
	TST_EQ_INT(chmod(token, 0644), 0);
	TST_EQ_INT(auth_with_data_dir(dir), -EPERM);
	TST_CHECK(auth_token() == NULL);
	unlink(token);

	/* A symlink to a token someone else knows: refused. */
	TST_EQ_INT(write_file(planted, "planted-token\n", 0600), 0);
	TST_EQ_INT(symlink(planted, token), 0);
	TST_EQ_INT(auth_with_data_dir(dir), -ELOOP);
	TST_CHECK(auth_token() == NULL);
	unlink(token);
	/* A dangling symlink: refused, not followed to create the file. */
	TST_EQ_INT(symlink(sub, token), 0);
	TST_CHECK(auth_with_data_dir(dir) < 0);
	TST_CHECK(access(sub, F_OK) != 0);
	unlink(token);

	/* A FIFO: refused at once (no blocking open). */
	TST_EQ_INT(mkfifo(token, 0600), 0);
	TST_EQ_INT(auth_with_data_dir(dir), -EINVAL);
	unlink(token);

	/* A data dir others may write to: refused. */
	TST_EQ_INT(mkdir(sub, 0700), 0);
	TST_EQ_INT(chmod(sub, 0777), 0);
	TST_EQ_INT(auth_with_data_dir(sub), -EPERM);
	snprintf(token, sizeof(token), "%s/token", sub);
	TST_CHECK(access(token, F_OK) != 0);
	rmdir(sub);

	/* --token-file may be a symlink (a mounted secret). */
	snprintf(token, sizeof(token), "%s/secret", dir);
	TST_EQ_INT(symlink(planted, token), 0);
	struct options o;
	char err[256];
	char** argv = (char**)(const char*[]){ "deskd", "--token-file", token, "--person-token",
		"p", NULL };
	TST_EQ_INT(options_parse(&o, 5, argv, err, sizeof(err)), 0);
	TST_EQ_INT(auth_init(&o), 0);
	TST_EQ_STR(auth_token(), "planted-token");
	auth_deinit();
	options_deinit(&o);
	unlink(token);
	unlink(planted);
	snprintf(token, sizeof(token), "%s/token", dir);
	unlink(token);
	unlink(person);
	TST_EQ_INT(rmdir(dir), 0);
}

static void test_metrics(void)
{
	metrics_help("t_requests_total", "Requests.");
	metrics_inc("t_requests_total", "route", "/a", "status", "200", NULL);
	metrics_inc("t_requests_total", "route", "/a", "status", "200", NULL);
	metrics_inc("t_requests_total", "route", "/b\"x", NULL);
	metrics_observe("t_seconds", 0.003, NULL);
	metrics_observe("t_seconds", 2, NULL);
	metrics_set("t_gauge", 5, NULL);
	size_t len;
	char* text = metrics_render(&len);
	TST_CHECK(text != NULL);
	if (text) {
		TST_EQ_INT(strlen(text), len);
		TST_CHECK(strstr(text, "# HELP t_requests_total Requests.\n"));
		TST_CHECK(strstr(text, "# TYPE t_requests_total counter\n"));
		TST_CHECK(strstr(text, "t_requests_total{route=\"/a\",status=\"200\"} 2\n"));
		TST_CHECK(strstr(text, "t_requests_total{route=\"/b\\\"x\"} 1\n"));
		TST_CHECK(strstr(text, "# TYPE t_seconds histogram\n"));
		TST_CHECK(strstr(text, "t_seconds_bucket{le=\"0.0025\"} 0\n"));
		TST_CHECK(strstr(text, "t_seconds_bucket{le=\"0.005\"} 1\n"));
		TST_CHECK(strstr(text, "t_seconds_bucket{le=\"+Inf\"} 2\n"));
		TST_CHECK(strstr(text, "t_seconds_count 2\n"));
		TST_CHECK(strstr(text, "t_gauge 5\n"));
		free(text);
	}
	metrics_deinit();
}

int main(void)
{
	test_host();
	test_origin();
	test_bearer();
	test_head();
	test_auth();
	test_token_file();
	test_metrics();
	TST_END();
}
