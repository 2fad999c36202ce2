/* STUB: replaced by the owner of this file. */
#include "server/mcp.h"
#include <errno.h>
#include <stddef.h>
int mcp_http_register(void) { return 0; }
int mcp_stdio_start(void) { return -ENOSYS; }
void mcp_stdio_stop(void) { }
void mcp_shutdown(void) { }
int mcp_session_count(void) { return 0; }
