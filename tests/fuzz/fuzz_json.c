/* libFuzzer harness, differential: jsonmem_load (its fast parse, else
 * jansson) against json_loadb on the same bytes, with and without
 * JSON_REJECT_DUPLICATES: the same tree, or the same error text and
 * position. Each tree parsed is dumped by jsonmem_dumps and json_dumps,
 * which must give the same bytes. */

#include "base/jsonmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void same_dumps(json_t* j)
{
	char* a = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	char* b = jsonmem_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!a || !b || strcmp(a, b) != 0)
		abort();
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	const size_t flags[] = { 0, JSON_REJECT_DUPLICATES };
	for (size_t i = 0; i < 2; i++) {
		json_error_t e1, e2;
		enum jsonmem_status st;
		json_t* want = json_loadb((const char*)data, size, flags[i], &e1);
		json_t* got = jsonmem_load((const char*)data, size, flags[i], &e2, &st);
		if (want) {
			if (!got || st != JSONMEM_OK || !json_equal(want, got))
				abort();
			same_dumps(want);
			same_dumps(got);
		} else if (got || st != JSONMEM_INVALID || strcmp(e1.text, e2.text) != 0
				|| e1.position != e2.position) {
			abort();
		}
		json_decref(want);
		json_decref(got);
	}
	return 0;
}
