#pragma once

/* MCP: JSON-RPC 2.0 and the lifecycle, over Streamable HTTP (/mcp) and stdio. */

struct options;

/** Register POST/GET/DELETE /mcp; before http_start(). */
int mcp_http_register(void);
/** Serve MCP on stdin/stdout on a thread of its own; on EOF it raises
 *  SIGTERM so main shuts down. */
int mcp_stdio_start(void);
void mcp_stdio_stop(void);
/** Live MCP sessions (HTTP and stdio), for status. */
int mcp_session_count(void);
/** End all sessions (finalizes their recordings); at shutdown. */
void mcp_shutdown(void);
