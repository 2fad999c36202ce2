#pragma once

/* Metrics in Prometheus text format (GET /metrics). Series are created on
 * first use: a name plus label pairs. Any thread; cheap enough for every
 * request. Names follow Prometheus rules (deskd_..._total for counters).
 *
 *   metrics_inc("deskd_http_requests_total", "route", "/mcp", "status", "200", NULL);
 *   metrics_observe("deskd_tool_duration_seconds", 0.012, "tool", "click", NULL);
 */

#include <stddef.h>

/** Add 1 to a counter. Label arguments: name, value pairs, then NULL. */
void metrics_inc(const char* name, ...) __attribute__((sentinel));
/** Add v to a counter. */
void metrics_add(const char* name, double v, ...) __attribute__((sentinel));
/** Set a gauge. */
void metrics_set(const char* name, double v, ...) __attribute__((sentinel));
/** Record a value (seconds) in a histogram with fixed latency buckets. */
void metrics_observe(const char* name, double v, ...) __attribute__((sentinel));
/** One line of help for a metric family (optional). */
void metrics_help(const char* name, const char* help);

/** The whole exposition as text (malloc'd, caller frees); *len its length. */
char* metrics_render(size_t* len);

/** Count tool calls from activity events (call once, after events_init). */
int metrics_init(void);
/** Unsubscribe and free every series. */
void metrics_deinit(void);
