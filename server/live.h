#pragma once

/* The live view protocol on /live (DESIGN.md section 7), driven by ws.c:
 * the lws callbacks run on ws.c's service thread only. */

#include <jansson.h>

struct lws_protocols;

/** The lws protocol table for the vhost ws.c creates (ends with a zeroed
 *  entry). Its first entry, "deskd.live", also takes connections that name no
 *  subprotocol (token in the query). */
const struct lws_protocols* live_protocols(void);
/** Subscribe to activity events; before ws_start(). Returns 0 or -errno. */
int live_init(void);
/** After ws_stop(): stop the capture threads (bounded wait), free the rest. */
void live_deinit(void);
/** Counters: clients, feeds, captures, encodes, frames_sent, frames_skipped,
 *  ... (new reference). Any thread. */
json_t* live_stats(void);
