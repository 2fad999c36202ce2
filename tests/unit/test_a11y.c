/* Unit tests for a11y/ without a bus: role and state names, and that every
 * call fails fast and clearly when there is no session bus. (The walk, the
 * actions and the deadlines run against real apps in
 * tests/integration/a11y.test.mjs.) */
#include "a11y/a11y.h"
#include "base/clock.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
	test_names();
	test_no_bus();
	TST_END();
}
