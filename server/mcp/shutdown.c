/* MCP's shutdown order, above both eras: the 2026-07-28 era's listen
 * streams and calls first, its tasks, then the sessions, then the core's caches. */

#include "server/mcp/mcp.h"
#include "server/mcp/core.h"

void mcp_shutdown(void)
{
	mcp_modern_shutdown();
	mcp_tasks_shutdown();
	mcp_sessions_shutdown();
	mcp_methods_shutdown();
}
