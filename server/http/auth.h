#pragma once

/* Tokens: the full token (from --token, --token-file, or generated and saved
 * 0600 as <data-dir>/token) and the optional --view-token. */

#include <stdbool.h>

struct options;

/* Who may call a route: what a presented token grants. */
enum http_role {
	HTTP_ROLE_NONE = 0,	/* no token needed (healthz, dashboard files) */
	HTTP_ROLE_VIEW,		/* the view token or the full token */
	HTTP_ROLE_FULL,		/* the full token */
};


/** Load or create the tokens; returns 0 or -errno (logged). */
int auth_init(const struct options* opts);
void auth_deinit(void);
/** The full token, or NULL with --no-auth. */
const char* auth_token(void);
/** Role for a presented token (constant-time compare). NULL -> NONE.
 *  With --no-auth every caller is FULL. */
enum http_role auth_check_token(const char* token);
/** Compare two strings in time that depends only on their lengths. */
bool auth_token_equal(const char* a, const char* b);
