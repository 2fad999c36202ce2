#pragma once

/* The live view protocol on /live (DESIGN.md section 7), driven by ws.c. */

struct lws_protocols;

/** The lws protocol table entries for /live (ends with a zeroed entry). */
const struct lws_protocols* live_protocols(void);
int live_init(void);
void live_deinit(void);
