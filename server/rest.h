#pragma once

/* REST: /api/v1/... (tools, screenshot, windows, recordings, events),
 * /healthz, /metrics. */

/** Register the routes; before http_start(). */
int rest_register(void);
/** Cancel the tool calls in progress and refuse new ones; at shutdown, so
 *  that SIGTERM never waits for a long call (a wait, a type, a
 *  wait_for_change) to run its course. */
void rest_shutdown(void);
