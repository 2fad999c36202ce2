#pragma once

/* The live view protocol on /live (DESIGN.md section 7), driven by ws.c:
 * the lws callbacks run on ws.c's service thread only.
 *
 * Server -> client (text unless noted):
 *   {"type":"hello","screen":{width,height},"windows":[...],"role":"full"|"view",
 *    "max_image_dimension","display"}                       first, always
 *   {"type":"event",...}            activity events; recent history after hello
 *   {"type":"frame","seq","target","window"?,"width","height",
 *    "cursor":{x,y,visible},"format":"jpeg"}  then one binary message: the JPEG
 *   {"type":"cursor","target","window"?,"x","y","visible"}  pointer moved, no
 *                                   pixel changed (JPEG pixels of the last frame)
 *   {"type":"error","code","message","target"?,"window"?}  a bad message, or the
 *                                   watched target went away (watch again)
 * Client -> server:
 *   {"type":"watch","target":"screen"|"window","window"?,"fps"? (1-60, 15),
 *    "quality"? (1-100, 70),"max_dimension"? (0 = native; --max-image-dimension)}
 *   {"type":"unwatch"}
 * Frames go out only after the target changed, at most fps a second; a slow
 * client gets the newest frame when it can take one. */

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
