#pragma once

/* Tiny unit-test helpers. Each test binary: TST_BEGIN(); ... TST_END();
 * prints "N passed, N failed" and exits non-zero on failure. */

#include <stdio.h>
#include <string.h>

static int tst_passed, tst_failed;

#define TST_CHECK(cond) do { \
	if (cond) { tst_passed++; } \
	else { tst_failed++; fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define TST_EQ_INT(a, b) do { \
	long long tst_a = (long long)(a), tst_b = (long long)(b); \
	if (tst_a == tst_b) { tst_passed++; } \
	else { tst_failed++; fprintf(stderr, "%s:%d: %s == %s: %lld != %lld\n", __FILE__, __LINE__, #a, #b, tst_a, tst_b); } \
} while (0)

#define TST_EQ_STR(a, b) do { \
	const char* tst_a = (a); const char* tst_b = (b); \
	if (tst_a && tst_b && strcmp(tst_a, tst_b) == 0) { tst_passed++; } \
	else { tst_failed++; fprintf(stderr, "%s:%d: %s == %s: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b, tst_a ? tst_a : "(null)", tst_b ? tst_b : "(null)"); } \
} while (0)

#define TST_END() do { \
	printf("%d passed, %d failed\n", tst_passed, tst_failed); \
	return tst_failed ? 1 : 0; \
} while (0)
