#pragma once

/* MCP: JSON-RPC 2.0 and the lifecycle, over Streamable HTTP (/mcp) and stdio. */

#include "tools/tools.h"

struct options;

struct mcp_catalog;

/** The conformance fixtures (--conformance-fixtures): tools for tools_add(),
 *  prompts and resources for mcp_catalog_add(). */
extern const struct tool_def mcp_fixture_tools[];
extern const struct mcp_catalog mcp_fixture_catalog;
/** The 2026-07-28 fixtures (input-required results, list-change triggers,
 *  x-mcp-header), with --conformance-fixtures too. */
extern const struct tool_def mcp_fixture_mrtr_tools[];
extern const struct mcp_catalog mcp_fixture_mrtr_catalog;
/** deskd's own prompts and resources (the recordings). */
extern const struct mcp_catalog mcp_deskd_catalog;
/** Serve this catalog's prompts and resources; before serving, in the order
 *  they should be listed. Returns 0 or -ENOSPC. */
int mcp_catalog_add(const struct mcp_catalog* catalog);

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
