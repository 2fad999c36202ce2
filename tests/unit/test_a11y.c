/* Unit tests for a11y/ without a bus: role and state names, and that every
 * call fails fast and clearly when there is no session bus. (The walk, the
 * actions and the deadlines run against real apps in
 * tests/integration/a11y.test.mjs.) */
#include "a11y/a11y.h"
#include "base/clock.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void test_names(void)
{
	TST_EQ_STR(a11y_role_name(A11Y_ROLE_PUSH_BUTTON), "push button");
	TST_EQ_STR(a11y_role_name(A11Y_ROLE_ENTRY), "entry");
	TST_EQ_STR(a11y_role_name(A11Y_ROLE_CHECK_BOX), "check box");
	TST_EQ_STR(a11y_role_name(A11Y_ROLE_STATIC), "static");
	TST_EQ_STR(a11y_role_name(129), "push button menu");
	TST_EQ_STR(a11y_role_name(130), "unknown");
	TST_EQ_STR(a11y_role_name(-1), "unknown");
	TST_EQ_INT(a11y_role_lookup("push button"), A11Y_ROLE_PUSH_BUTTON);
	TST_EQ_INT(a11y_role_lookup("PUSH_BUTTON"), A11Y_ROLE_PUSH_BUTTON);
	TST_EQ_INT(a11y_role_lookup("combo box"), A11Y_ROLE_COMBO_BOX);
	TST_EQ_INT(a11y_role_lookup("no such role"), -1);
	TST_EQ_INT(a11y_role_lookup(""), -1);
	char longname[200];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	TST_EQ_INT(a11y_role_lookup(longname), -1);
	for (int r = 0; r < 130; r++)
		TST_EQ_INT(a11y_role_lookup(a11y_role_name(r)), r);
	TST_EQ_STR(a11y_state_name(A11Y_CHECKED), "checked");
	TST_EQ_STR(a11y_state_name(A11Y_FOCUSED), "focused");
	TST_CHECK(a11y_state_name(0) == NULL);
	TST_CHECK(a11y_state_name(A11Y_STATE_COUNT) == NULL);
	uint64_t st = (1ULL << A11Y_SHOWING) | (1ULL << A11Y_REQUIRED);
	TST_CHECK(A11Y_HAS(st, A11Y_SHOWING) && A11Y_HAS(st, A11Y_REQUIRED) && !A11Y_HAS(st, A11Y_CHECKED));
}

/* Cuts keep whole characters: 1, 2, 3 and 4-byte ones, at every offset. */
static void test_utf8_cut(void)
{
	TST_EQ_INT((int)a11y_utf8_cut("abc", 3, 10), 3);
	TST_EQ_INT((int)a11y_utf8_cut("abc", 3, 3), 3);
	TST_EQ_INT((int)a11y_utf8_cut("abc", 3, 2), 2);
	TST_EQ_INT((int)a11y_utf8_cut("abc", 3, 0), 0);
	const char* s = "a\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80z";	/* a é 日 😀 z */
	size_t len = strlen(s);
	static const int want[] = { 0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 11 };
	for (size_t max = 0; max <= len; max++)
		TST_EQ_INT((int)a11y_utf8_cut(s, len, max), want[max]);
	/* 1,024 bytes of a 3-byte character: 341 whole ones (1,023 bytes). */
	char big[3 * 400 + 1];
	for (int i = 0; i < 400; i++)
		memcpy(big + 3 * i, "\xe6\x97\xa5", 3);
	big[sizeof(big) - 1] = '\0';
	TST_EQ_INT((int)a11y_utf8_cut(big, strlen(big), A11Y_NAME_MAX), 1023);
}

static void test_no_bus(void)
{
	unsetenv("AT_SPI_BUS_ADDRESS");
	a11y_configure(NULL);
	char err[256] = "";
	int64_t t0 = clock_ms();
	struct a11y_query q = { .pid = 1 };
	struct a11y_tree tree;
	TST_EQ_INT(a11y_snapshot(&q, &tree, err, sizeof(err)), -ENOTCONN);
	TST_CHECK(strstr(err, "session bus") != NULL);
	a11y_tree_free(&tree);
	struct a11y_id id = { ":1.1", "/x" };
	struct a11y_node n;
	TST_EQ_INT(a11y_read(&id, 100, 0, &n, err, sizeof(err)), -ENOTCONN);
	a11y_node_clear(&n);
	bool ok;
	struct a11y_act act = { .op = A11Y_GRAB_FOCUS };
	TST_EQ_INT(a11y_act(&id, &act, 0, &ok, err, sizeof(err)), -ENOTCONN);
	struct a11y_status s;
	a11y_status(&s, 200);
	TST_CHECK(!s.registry && !s.session_bus && s.reason[0]);
	/* A session bus address nobody listens on: refused at once. */
	a11y_configure("unix:path=/nonexistent/deskd-test-bus");
	TST_EQ_INT(a11y_snapshot(&q, &tree, err, sizeof(err)), -ENOTCONN);
	a11y_tree_free(&tree);
	TST_CHECK(clock_ms() - t0 < 1000);
	a11y_shutdown();
}

/* A bus that accepts connections (the kernel's backlog) and never answers,
 * like a stopped dbus-daemon: every call still ends within its bound (the
 * bus registration, Hello, was libdbus's 25 s). */
static void test_silent_bus(void)
{
	char path[] = "/tmp/deskd-test-silent-bus-XXXXXX";
	int tmp = mkstemp(path);
	TST_CHECK(tmp >= 0);
	close(tmp);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	TST_CHECK(fd >= 0 && bind(fd, (struct sockaddr*)&sa, sizeof(sa)) == 0 && listen(fd, 16) == 0);
	char addr[128];
	snprintf(addr, sizeof(addr), "unix:path=%s", path);
	unsetenv("AT_SPI_BUS_ADDRESS");
	a11y_configure(addr);
	char err[256] = "";
	int64_t t0 = clock_ms();
	struct a11y_query q = { .pid = 1, .deadline_ms = clock_ms() + 500 };
	struct a11y_tree tree;
	int rc = a11y_snapshot(&q, &tree, err, sizeof(err));
	TST_CHECK(rc == -ENOTCONN || rc == -ETIMEDOUT);
	a11y_tree_free(&tree);
	struct a11y_status s;
	a11y_status(&s, 300);
	TST_CHECK(!s.registry && s.reason[0]);
	int64_t took = clock_ms() - t0;
	TST_CHECK(took < 4000);
	if (took >= 4000)
		fprintf(stderr, "a silent bus took %lld ms\n", (long long)took);
	a11y_shutdown();
	close(fd);
	unlink(path);
}

/* Names compare equal but for ASCII white space around them (mousepad's
 * "Save      "); inside, and non-ASCII spaces, count. */
static void test_name_eq(void)
{
	TST_CHECK(a11y_name_eq("Save      ", "Save"));
	TST_CHECK(a11y_name_eq("  Save\t\n", " Save "));
	TST_CHECK(a11y_name_eq("", "   "));
	TST_CHECK(a11y_name_eq("", ""));
	TST_CHECK(!a11y_name_eq("Save As", "Save  As"));
	TST_CHECK(!a11y_name_eq("Save", "save"));
	TST_CHECK(!a11y_name_eq("Save\xc2\xa0", "Save"));	/* U+00A0 is kept */
	TST_CHECK(!a11y_name_eq("Sav", "Save"));
	size_t start = 99;
	TST_EQ_INT((int)a11y_name_trim("  ab c \t", &start), 6);
	TST_EQ_INT((int)start, 2);
	TST_EQ_INT((int)a11y_name_trim("    ", &start), 4);
	TST_EQ_INT((int)start, 4);
	TST_EQ_INT((int)a11y_name_trim("x", NULL), 1);
	/* Every split of padding around every prefix: equal exactly to the
	 * trimmed core, never to a longer or shorter one. */
	const char* core = "Open Recent";
	char buf[64];
	for (int l = 0; l < 4; l++)
		for (int r = 0; r < 4; r++) {
			snprintf(buf, sizeof(buf), "%*s%s%*s", l, "", core, r, "");
			TST_CHECK(a11y_name_eq(buf, core));
			TST_CHECK(a11y_name_eq(core, buf));
			TST_CHECK(!a11y_name_eq(buf, "Open Recen"));
			TST_CHECK(!a11y_name_eq(buf, "Open Recent."));
		}
}

int main(void)
{
	test_names();
	test_utf8_cut();
	test_name_eq();
	test_no_bus();
	test_silent_bus();
	TST_END();
}
