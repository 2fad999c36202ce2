/* STUB: replaced by the owner of this file. */
#include "server/http.h"
#include <errno.h>
#include <stddef.h>
int http_add_route(const struct http_route* route) { (void)route; return 0; }
int http_start(const struct options* opts, char* url, size_t url_size) { return -ENOSYS; }
void http_stop(void) { }
const char* http_own_origin(void) { return ""; }
