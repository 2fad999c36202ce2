/* STUB: replaced by the owner of this file. */
#include "server/http.h"
#include <errno.h>
#include <stddef.h>
int http_add_route(const struct http_route* route) { (void)route; return 0; }
int http_start(const struct options* opts, char* url, size_t url_size) { return -ENOSYS; }
void http_stop(void) { }
const char* http_own_origin(void) { return ""; }
const char* http_request_method(const struct http_request* req) { return ""; }
const char* http_request_path(const struct http_request* req) { return ""; }
const char* http_request_header(const struct http_request* req, const char* name) { return NULL; }
const char* http_request_query(const struct http_request* req, const char* name) { return NULL; }
const char* http_request_body(const struct http_request* req, size_t* len) { return ""; }
enum http_role http_request_role(const struct http_request* req) { return HTTP_ROLE_NONE; }
void http_respond(struct http_request* req, int status, const char* content_type,
		const void* body, size_t len, const char* const* headers) { }
void http_respond_json(struct http_request* req, int status, json_t* body,
		const char* const* headers) { json_decref(body); }
void http_respond_error(struct http_request* req, int status, const char* code,
		const char* message) { }
struct http_stream* http_respond_stream(struct http_request* req, int status,
		const char* content_type, const char* const* headers,
		http_stream_close_fn on_close, void* ud) { return NULL; }
int http_stream_write(struct http_stream* self, const void* data, size_t len) { return -EPIPE; }
void http_stream_end(struct http_stream* self) { }
bool http_stream_is_closed(const struct http_stream* self) { return true; }
void http_stream_ref(struct http_stream* self) { }
void http_stream_unref(struct http_stream* self) { }
