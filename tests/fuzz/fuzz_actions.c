/* libFuzzer harness over the action vocabulary parser (tools/actions.c):
 * each input is one JSON value parsed as an action, in both coordinate
 * spaces. Pure: no display, no threads. */

#include "tools/actions.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
	json_t* j = json_loadb((const char*)data, size, JSON_DECODE_ANY, NULL);
	if (!j)
		return 0;
	for (int desktop = 0; desktop < 2; desktop++) {
		struct action a;
		struct act_error e;
		if (action_parse(j, desktop, &a, &e) < 0)
			(void)strlen(e.message);	/* the message is a C string */
		action_deinit(&a);
	}
	json_decref(j);
	return 0;
}
