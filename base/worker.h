#pragma once

/* Work that may block (tool calls) runs off the HTTP/WebSocket threads, on
 * short-lived detached threads, at most WORKER_MAX at once. */

#define WORKER_MAX 64

/** Run fn(ud) on a worker thread. Returns 0, or -EAGAIN when WORKER_MAX are
 *  busy (the caller answers 503), or -errno. */
int worker_spawn(void (*fn)(void* ud), void* ud);
/** Wait (bounded, ms) until all workers have finished; for shutdown. */
void worker_drain(int timeout_ms);
