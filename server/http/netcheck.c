#define _GNU_SOURCE	/* memmem, strncasecmp */
#include "server/http/netcheck.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Split a Host value into its name (brackets removed) and check the port
 * part is empty or digits. Returns 0 or -1. */
static int split_host(const char* host, char* name, size_t size)
{
	const char* end;
	const char* port;
	if (host[0] == '[') {
		end = strchr(host, ']');
		if (!end)
			return -1;
		host++;
		port = end + 1;
	} else {
		end = strchr(host, ':');
		if (!end)
			end = host + strlen(host);
		port = end;
	}
	size_t n = (size_t)(end - host);
	if (n == 0 || n >= size)
		return -1;
	memcpy(name, host, n);
	name[n] = '\0';
	if (*port) {
		if (*port != ':' || !port[1])
			return -1;
		for (const char* p = port + 1; *p; p++)
			if (!isdigit((unsigned char)*p))
				return -1;
		if (strlen(port + 1) > 5)
			return -1;
	}
	return 0;
}

bool netcheck_host_allowed(const struct netcheck_policy* p, const char* host)
{
	if (!p->loopback || !host)
		return true;
	char name[256];
	if (split_host(host, name, sizeof(name)) < 0)
		return false;
	/* An unbracketed IPv6 literal has a ':' that split_host took for the port. */
	if (host[0] != '[' && strchr(name, ':'))
		return false;
	if (strcasecmp(name, "localhost") == 0 || strcmp(name, "127.0.0.1") == 0)
		return true;
	if (host[0] == '[' && strcmp(name, "::1") == 0)
		return true;
	if (p->listen_host && strcasecmp(name, p->listen_host) == 0)
		return true;
	return false;
}

/* Compare an origin with "scheme://host:port", ignoring case and one
 * trailing slash. */
static bool origin_equal(const char* origin, const char* want)
{
	size_t n = strlen(want);
	while (n > 0 && want[n - 1] == '/')
		n--;
	size_t m = strlen(origin);
	while (m > 0 && origin[m - 1] == '/')
		m--;
	return n == m && strncasecmp(origin, want, n) == 0;
}

bool netcheck_origin_allowed(const struct netcheck_policy* p, const char* origin,
		const char* host)
{
	if (!origin)
		return true;
	char want[320];
	static const char* const own[] = { "127.0.0.1", "localhost", "[::1]" };
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		snprintf(want, sizeof(want), "http://%s:%d", own[i], p->port);
		if (origin_equal(origin, want))
			return true;
	}
	if (p->listen_host && *p->listen_host) {
		bool v6 = strchr(p->listen_host, ':') != NULL;
		snprintf(want, sizeof(want), "http://%s%s%s:%d", v6 ? "[" : "",
				p->listen_host, v6 ? "]" : "", p->port);
		if (origin_equal(origin, want))
			return true;
	}
	if (host && *host && strlen(host) < 256 && netcheck_host_allowed(p, host)
			&& !strpbrk(host, "/?#@ \t")) {
		snprintf(want, sizeof(want), "http://%s", host);
		if (origin_equal(origin, want))
			return true;
		snprintf(want, sizeof(want), "https://%s", host);
		if (origin_equal(origin, want))
			return true;
	}
	for (int i = 0; i < p->n_allow_origins; i++)
		if (p->allow_origins[i] && origin_equal(origin, p->allow_origins[i]))
			return true;
	return false;
}

int netcheck_bearer(const char* authorization, char* out, size_t size)
{
	if (!authorization)
		return -1;
	const char* s = authorization;
	while (*s == ' ' || *s == '\t')
		s++;
	if (strncasecmp(s, "Bearer", 6) != 0 || (s[6] != ' ' && s[6] != '\t'))
		return -1;
	s += 6;
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n == 0 || n >= size)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (s[i] == ' ' || s[i] == '\t')
			return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	return (int)n;
}

size_t netcheck_head_length(const char* buf, size_t len)
{
	const char* end = memmem(buf, len, "\r\n\r\n", 4);
	if (end)
		return (size_t)(end - buf) + 4;
	end = memmem(buf, len, "\n\n", 2);
	if (end)
		return (size_t)(end - buf) + 2;
	return 0;
}

/* Iterate header lines of a raw head: calls fn for each "name: value". */
static const char* next_line(const char* p, const char* end, const char** line_end)
{
	const char* nl = memchr(p, '\n', (size_t)(end - p));
	if (!nl)
		return NULL;
	*line_end = (nl > p && nl[-1] == '\r') ? nl - 1 : nl;
	return nl + 1;
}

int netcheck_head_header(const char* buf, size_t len, const char* name,
		char* out, size_t size)
{
	size_t head = netcheck_head_length(buf, len);
	if (!head || size == 0)
		return -1;
	const char* end = buf + head;
	const char* line_end;
	const char* p = next_line(buf, end, &line_end);	/* skip the request line */
	size_t name_len = strlen(name);
	size_t n = 0;
	bool found = false;
	while (p && p < end) {
		const char* next = next_line(p, end, &line_end);
		if (!next || line_end == p)
			break;
		if ((size_t)(line_end - p) > name_len && p[name_len] == ':'
				&& strncasecmp(p, name, name_len) == 0) {
			const char* v = p + name_len + 1;
			const char* ve = line_end;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			size_t vlen = (size_t)(ve - v);
			size_t need = vlen + (found ? 2 : 0);
			if (n + need + 1 > size)
				return -1;
			if (found) {
				memcpy(out + n, ", ", 2);
				n += 2;
			}
			memcpy(out + n, v, vlen);
			n += vlen;
			found = true;
		}
		p = next;
	}
	if (!found)
		return -1;
	out[n] = '\0';
	return (int)n;
}

int netcheck_head_target(const char* buf, size_t len, char* path, size_t path_size,
		char* query, size_t query_size)
{
	const char* line_end;
	if (!next_line(buf, buf + len, &line_end))
		return -1;
	const char* sp = memchr(buf, ' ', (size_t)(line_end - buf));
	if (!sp)
		return -1;
	const char* t = sp + 1;
	const char* te = memchr(t, ' ', (size_t)(line_end - t));
	if (!te || te == t)
		return -1;
	const char* q = memchr(t, '?', (size_t)(te - t));
	const char* pe = q ? q : te;
	if ((size_t)(pe - t) >= path_size)
		return -1;
	memcpy(path, t, (size_t)(pe - t));
	path[pe - t] = '\0';
	size_t ql = q ? (size_t)(te - q - 1) : 0;
	if (ql >= query_size)
		return -1;
	if (q)
		memcpy(query, q + 1, ql);
	query[ql] = '\0';
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int netcheck_query_param(const char* query, const char* name, char* out, size_t size)
{
	size_t name_len = strlen(name);
	const char* p = query;
	while (p && *p) {
		const char* amp = strchr(p, '&');
		const char* end = amp ? amp : p + strlen(p);
		const char* eq = memchr(p, '=', (size_t)(end - p));
		const char* kend = eq ? eq : end;
		if ((size_t)(kend - p) == name_len && strncmp(p, name, name_len) == 0) {
			size_t n = 0;
			for (const char* v = eq ? eq + 1 : end; v < end; v++) {
				int c = (unsigned char)*v;
				if (c == '+') {
					c = ' ';
				} else if (c == '%' && end - v >= 3 && hexval(v[1]) >= 0
						&& hexval(v[2]) >= 0) {
					c = hexval(v[1]) * 16 + hexval(v[2]);
					v += 2;
				}
				if (n + 1 >= size)
					return -1;
				out[n++] = (char)c;
			}
			out[n] = '\0';
			return (int)n;
		}
		p = amp ? amp + 1 : NULL;
	}
	return -1;
}

int netcheck_pct_decode(const char* in, char* out, size_t size)
{
	size_t n = 0;
	for (const char* p = in; *p; p++) {
		int c = (unsigned char)*p;
		if (c == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
			c = hexval(p[1]) * 16 + hexval(p[2]);
			p += 2;
		}
		if (c == 0 || n + 1 >= size)
			return -1;
		out[n++] = (char)c;
	}
	if (size == 0)
		return -1;
	out[n] = '\0';
	return (int)n;
}

bool netcheck_has_token(const char* value, const char* token)
{
	size_t tl = strlen(token);
	const char* p = value;
	while (p && *p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char* e = p;
		while (*e && *e != ',')
			e++;
		const char* te = e;
		while (te > p && (te[-1] == ' ' || te[-1] == '\t'))
			te--;
		if ((size_t)(te - p) == tl && strncasecmp(p, token, tl) == 0)
			return true;
		p = e;
	}
	return false;
}

enum netcheck_head netcheck_classify(const char* buf, size_t len, size_t cap)
{
	/* Only a GET can be an upgrade: anything else goes to MHD at once,
	 * including garbage, which MHD answers with 400. */
	static const char get[] = "GET ";
	size_t cmp = len < 4 ? len : 4;
	if (memcmp(buf, get, cmp) != 0)
		return NETCHECK_HEAD_HTTP;
	size_t head = netcheck_head_length(buf, len);
	if (!head)
		return len >= cap ? NETCHECK_HEAD_HTTP : NETCHECK_HEAD_INCOMPLETE;
	char value[256];
	if (netcheck_head_header(buf, head, "Upgrade", value, sizeof(value)) >= 0
			&& netcheck_has_token(value, "websocket"))
		return NETCHECK_HEAD_WEBSOCKET;
	return NETCHECK_HEAD_HTTP;
}
