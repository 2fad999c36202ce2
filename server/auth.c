/* STUB: replaced by the owner of this file. */
#include "server/auth.h"
#include <errno.h>
#include <stddef.h>
int auth_init(const struct options* opts) { return 0; }
void auth_deinit(void) { }
const char* auth_token(void) { return NULL; }
enum http_role auth_check_token(const char* token) { return HTTP_ROLE_NONE; }
