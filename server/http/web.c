/* The dashboard's static files: GET / (index.html) and GET /static/<file>,
 * served from the table scripts/embed.c generates from web/ at build time.
 *
 * Every response carries a strict Content-Security-Policy (no inline script
 * or style, nothing from elsewhere), nosniff and no-referrer. Files are
 * revalidated on each load (Cache-Control: no-cache) against a strong ETag
 * computed from their bytes, so a reload after an upgrade never mixes old
 * and new files, and an unchanged file costs a 304. */

#include "server/http/web.h"
#include "server/http/http.h"
#include "server/http/auth.h"
#include "base/log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define WEB_MAX_ASSETS 64

struct web_entry {
	const struct web_asset* asset;
	const char* type;
	char etag[24];		/* "\"" + 16 hex digits + "\"" */
};

static struct web_entry web_entries[WEB_MAX_ASSETS];
static size_t web_n_entries;

static const struct {
	const char* ext;
	const char* type;
} web_types[] = {
	{ ".html", "text/html; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" },
	{ ".js", "text/javascript; charset=utf-8" },
	{ ".svg", "image/svg+xml" },
	{ ".ico", "image/x-icon" },
};

static const char* web_type_for(const char* path)
{
	size_t len = strlen(path);
	for (size_t i = 0; i < sizeof(web_types) / sizeof(web_types[0]); i++) {
		size_t n = strlen(web_types[i].ext);
		if (len > n && strcmp(path + len - n, web_types[i].ext) == 0)
			return web_types[i].type;
	}
	return "application/octet-stream";
}

/* FNV-1a, 64 bits: stable across builds for identical bytes. */
static uint64_t web_hash(const unsigned char* data, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < size; i++) {
		h ^= data[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static const struct web_entry* web_find(const char* path)
{
	for (size_t i = 0; i < web_n_entries; i++)
		if (strcmp(web_entries[i].asset->path, path) == 0)
			return &web_entries[i];
	return NULL;
}

/* Only characters that can appear in a host[:port] may reach the CSP header. */
static bool web_host_is_plain(const char* host)
{
	if (!host || !*host || strlen(host) > 255)
		return false;
	for (const char* p = host; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
				|| (c >= '0' && c <= '9') || c == '.' || c == '-'
				|| c == ':' || c == '[' || c == ']';
		if (!ok)
			return false;
	}
	return true;
}

/* Does If-None-Match name this ETag (a list, or "*")? */
static bool web_etag_matches(const char* header, const char* etag)
{
	if (!header)
		return false;
	if (strcmp(header, "*") == 0)
		return true;
	/* A weak validator W/"..." compares equal for GET (RFC 9110 13.1.2). */
	return strstr(header, etag) != NULL;
}

static void web_serve(struct http_request* req, const struct web_entry* e)
{
	/* The live view connects to ws://<this host>/live; 'self' covers it in
	 * current browsers, the explicit origin covers older ones. */
	char csp[768];
	const char* host = http_request_header(req, "Host");
	if (web_host_is_plain(host))
		snprintf(csp, sizeof(csp),
				"default-src 'self'; script-src 'self'; style-src 'self'; "
				"img-src 'self' blob: data:; media-src 'self' blob:; "
				"connect-src 'self' ws://%s wss://%s; font-src 'self'; "
				"object-src 'none'; base-uri 'none'; form-action 'none'; "
				"frame-ancestors 'none'", host, host);
	else
		snprintf(csp, sizeof(csp),
				"default-src 'self'; script-src 'self'; style-src 'self'; "
				"img-src 'self' blob: data:; media-src 'self' blob:; "
				"connect-src 'self' ws: wss:; font-src 'self'; "
				"object-src 'none'; base-uri 'none'; form-action 'none'; "
				"frame-ancestors 'none'");

	const char* const headers[] = {
		"Content-Security-Policy", csp,
		"X-Content-Type-Options", "nosniff",
		"Referrer-Policy", "no-referrer",
		"X-Frame-Options", "DENY",
		"Cross-Origin-Opener-Policy", "same-origin",
		"Cache-Control", "no-cache",
		"ETag", e->etag,
		NULL,
	};
	if (web_etag_matches(http_request_header(req, "If-None-Match"), e->etag)) {
		http_respond(req, 304, NULL, NULL, 0, headers);
		return;
	}
	http_respond(req, 200, e->type, e->asset->data, e->asset->size, headers);
}

static void web_index(struct http_request* req, void* ud)
{
	const char* path = http_request_path(req);
	const struct web_entry* e = web_find("/index.html");
	if (!path || strcmp(path, "/") != 0 || !e) {
		http_respond_error(req, 404, "not_found", "no such page");
		return;
	}
	web_serve(req, e);
}

static void web_static(struct http_request* req, void* ud)
{
	const char* path = http_request_path(req);
	const char* prefix = "/static";
	const struct web_entry* e = NULL;
	if (path && strncmp(path, prefix, strlen(prefix)) == 0
			&& path[strlen(prefix)] == '/')
		e = web_find(path + strlen(prefix));
	if (!e) {
		http_respond_error(req, 404, "not_found", "no such file");
		return;
	}
	web_serve(req, e);
}

/* GET /api/v1/token-help, no token: what the wrong-token page says about
 * where the person's token (the dashboard's) is. Never the token; the path of its file (the banner
 * prints it too), which reading needs a shell on the machine anyway. */
static void web_token_help(struct http_request* req, void* ud)
{
	(void)ud;
	const char* path = NULL;
	enum auth_token_source source = auth_person_token_source(&path);
	static const char* const names[] = {
		[AUTH_TOKEN_NONE] = "none", [AUTH_TOKEN_GENERATED] = "generated",
		[AUTH_TOKEN_SAVED] = "saved", [AUTH_TOKEN_FILE] = "file",
		[AUTH_TOKEN_GIVEN] = "given",
	};
	json_t* body = json_pack("{s:b, s:s}", "auth", source != AUTH_TOKEN_NONE,
			"source", (unsigned)source < sizeof(names) / sizeof(names[0]) && names[source]
			? names[source] : "unknown");
	if (body && path) {
		json_object_set_new(body, "path", json_string(path));
		char cmd[4200];
		snprintf(cmd, sizeof(cmd), "cat %s", path);
		json_object_set_new(body, "print", json_string(cmd));
	}
	static const char* const headers[] = { "Cache-Control", "no-store", NULL };
	http_respond_json(req, 200, body, headers);
}

int web_register(void)
{
	web_n_entries = 0;
	for (const struct web_asset* a = web_assets; a->path; a++) {
		if (web_n_entries == WEB_MAX_ASSETS) {
			log_error("too many dashboard files (more than %d); raise WEB_MAX_ASSETS",
					WEB_MAX_ASSETS);
			return -E2BIG;
		}
		struct web_entry* e = &web_entries[web_n_entries++];
		e->asset = a;
		e->type = web_type_for(a->path);
		snprintf(e->etag, sizeof(e->etag), "\"%016llx\"",
				(unsigned long long)web_hash(a->data, a->size));
	}
	if (!web_find("/index.html"))
		log_warn("the dashboard has no index.html; GET / will answer 404");

	static const struct http_route routes[] = {
		{ "GET", "/", HTTP_ROLE_NONE, 0, web_index, NULL },
		{ "GET", "/static/", HTTP_ROLE_NONE, HTTP_ROUTE_PREFIX, web_static, NULL },
		{ "GET", "/api/v1/token-help", HTTP_ROLE_NONE, 0, web_token_help, NULL },
	};
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		int rc = http_add_route(&routes[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}
