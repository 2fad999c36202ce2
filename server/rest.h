#pragma once

/* REST: /api/v1/... (tools, screenshot, windows, recordings, events),
 * /healthz, /metrics. */

/** Register the routes; before http_start(). */
int rest_register(void);
