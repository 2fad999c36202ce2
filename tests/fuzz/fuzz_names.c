/* libFuzzer harness over the name comparison ui_find's exact match and
 * ui_act select's options use (a11y_name_eq, a11y_name_trim in
 * a11y/names.c): whatever the bytes, no read past the string; the trimmed
 * range lies inside it and starts and ends on non-space bytes; a name
 * equals itself, its trimmed core and itself with padding added, and the
 * relation is symmetric. */

#include "a11y/a11y.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static int space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	/* Two names: split at the first NUL (or in the middle). */
	const uint8_t* nul = memchr(data, 0, size);
	size_t la = nul ? (size_t)(nul - data) : size / 2;
	size_t lb = size - la - (nul ? 1 : 0);
	char* a = malloc(la + 1);
	char* b = malloc(lb + 1);
	char* padded = malloc(la + 5);
	if (!a || !b || !padded)
		abort();
	memcpy(a, data, la);
	a[la] = '\0';
	memcpy(b, data + size - lb, lb);
	b[lb] = '\0';
	size_t start;
	size_t end = a11y_name_trim(a, &start);
	size_t len = strlen(a);
	if (start > end || end > len)
		abort();
	if (start < end && (space(a[start]) || space(a[end - 1])))
		abort();
	for (size_t i = 0; i < start; i++)
		if (!space(a[i]))
			abort();
	for (size_t i = end; i < len; i++)
		if (!space(a[i]))
			abort();
	if (!a11y_name_eq(a, a) || a11y_name_eq(a, b) != a11y_name_eq(b, a))
		abort();
	memcpy(padded, " \t", 2);
	memcpy(padded + 2, a + start, end - start);
	memcpy(padded + 2 + (end - start), "  ", 3);
	if (!a11y_name_eq(padded, a))
		abort();
	free(a);
	free(b);
	free(padded);
	return 0;
}
