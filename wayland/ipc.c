/* sway's IPC (i3's wire format: "i3-ipc", u32 length, u32 type, payload)
 * on SWAYSOCK: get_tree into plain window structs, run_command. The
 * replies are JSON; a small reader of our own walks them (the backends
 * carry no JSON library, docs/ARCHITECTURE.md). */
#define _GNU_SOURCE
#include "wayland/wayland.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define IPC_RUN_COMMAND 0
#define IPC_GET_TREE 4
#define IPC_MAX_REPLY (64u << 20)

/* ---- the wire ---- */

static int io_all(int fd, void* buf, size_t len, bool out, int64_t deadline)
{
	char* p = buf;
	while (len) {
		int64_t left = deadline - clock_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pf = { .fd = fd, .events = out ? POLLOUT : POLLIN };
		int n = poll(&pf, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		ssize_t k = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EPIPE;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* One request and its reply (malloc'd, NUL-terminated). */
static int ipc_call(const char* path, uint32_t type, const char* payload,
		int timeout_ms, char** reply)
{
	int64_t deadline = clock_ms() + timeout_ms;
	if (!path)
		path = getenv("SWAYSOCK");
	if (!path || !*path)
		return -ENOENT;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int r;
	if (connect(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
		r = -errno;
		goto out;
	}
	uint32_t len = (uint32_t)strlen(payload);
	char head[14];
	memcpy(head, "i3-ipc", 6);
	memcpy(head + 6, &len, 4);
	memcpy(head + 10, &type, 4);
	if ((r = io_all(fd, head, sizeof(head), true, deadline)) < 0 ||
			(r = io_all(fd, (void*)payload, len, true, deadline)) < 0 ||
			(r = io_all(fd, head, sizeof(head), false, deadline)) < 0)
		goto out;
	if (memcmp(head, "i3-ipc", 6) != 0) {
		r = -EPROTO;
		goto out;
	}
	memcpy(&len, head + 6, 4);
	if (len > IPC_MAX_REPLY) {
		r = -EMSGSIZE;
		goto out;
	}
	char* buf = malloc((size_t)len + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = io_all(fd, buf, len, false, deadline)) < 0) {
		free(buf);
		goto out;
	}
	buf[len] = '\0';
	*reply = buf;
out:
	close(fd);
	return r;
}

/* ---- a small JSON reader: a cursor over the text ---- */

struct json {
	const char* p;
	bool bad;
};

static void skip_ws(struct json* j)
{
	while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r')
		j->p++;
}

static void skip_value(struct json* j, int depth);

/* Exactly four hex digits at p (never reading past a NUL): the value. */
static bool hex4(const char* p, unsigned* out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return false;
		v = v * 16 + (unsigned)d;
	}
	*out = v;
	return true;
}

/* A string at the cursor: into a malloc'd copy when out (replacing what a
 * key given twice left there), else skipped. */
static void read_string(struct json* j, char** out)
{
	if (out) {
		free(*out);
		*out = NULL;
	}
	skip_ws(j);
	if (*j->p != '"') {
		j->bad = true;
		return;
	}
	j->p++;
	size_t cap = 32, len = 0;
	char* s = out ? malloc(cap) : NULL;
	if (out && !s) {
		j->bad = true;
		return;
	}
	while (!j->bad && *j->p && *j->p != '"') {
		char c[4];
		size_t n = 1;
		c[0] = *j->p++;
		if (c[0] == '\\') {
			char esc = *j->p++;
			switch (esc) {
			case 'n': c[0] = '\n'; break;
			case 't': c[0] = '\t'; break;
			case 'r': c[0] = '\r'; break;
			case 'b': c[0] = '\b'; break;
			case 'f': c[0] = '\f'; break;
			case 'u': {
				unsigned cp = 0;
				if (!hex4(j->p, &cp)) {
					j->bad = true;
					j->p--;
					break;
				}
				j->p += 4;
				unsigned lo = 0;
				if (cp >= 0xd800 && cp < 0xdc00 && j->p[0] == '\\' && j->p[1] == 'u'
						&& hex4(j->p + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					j->p += 6;
				}
				if (cp < 0x80) {
					c[0] = (char)cp;
				} else if (cp < 0x800) {
					c[0] = (char)(0xc0 | cp >> 6);
					c[1] = (char)(0x80 | (cp & 0x3f));
					n = 2;
				} else if (cp < 0x10000) {
					c[0] = (char)(0xe0 | cp >> 12);
					c[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
					c[2] = (char)(0x80 | (cp & 0x3f));
					n = 3;
				} else {
					c[0] = (char)(0xf0 | cp >> 18);
					c[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
					c[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
					c[3] = (char)(0x80 | (cp & 0x3f));
					n = 4;
				}
				break;
			}
			case '\0': j->bad = true; j->p--; break;
			default: c[0] = esc; break;
			}
		}
		if (s) {
			if (len + n + 1 > cap) {
				char* t = realloc(s, cap *= 2);
				if (!t) {
					free(s);
					j->bad = true;
					return;
				}
				s = t;
			}
			memcpy(s + len, c, n);
			len += n;
		}
	}
	if (*j->p != '"') {
		j->bad = true;
		free(s);
		return;
	}
	j->p++;
	if (s) {
		s[len] = '\0';
		*out = s;
	}
}

static double read_number(struct json* j)
{
	skip_ws(j);
	char* end;
	double v = strtod(j->p, &end);
	if (end == j->p)
		j->bad = true;
	j->p = end;
	return v;
}

static bool read_bool(struct json* j)
{
	skip_ws(j);
	if (strncmp(j->p, "true", 4) == 0) {
		j->p += 4;
		return true;
	}
	skip_value(j, 0);
	return false;
}

/* Iterate an object: each call gives the next key (malloc'd) with the
 * cursor on its value, or NULL at the end. */
static char* next_key(struct json* j, bool* first)
{
	skip_ws(j);
	if (*first) {
		if (*j->p != '{') {
			j->bad = true;
			return NULL;
		}
		j->p++;
		*first = false;
	} else {
		if (*j->p == ',')
			j->p++;
	}
	skip_ws(j);
	if (*j->p == '}') {
		j->p++;
		return NULL;
	}
	char* key = NULL;
	read_string(j, &key);
	skip_ws(j);
	if (j->bad || *j->p != ':') {
		free(key);
		j->bad = true;
		return NULL;
	}
	j->p++;
	return key;
}

static void skip_value(struct json* j, int depth)
{
	skip_ws(j);
	if (depth > 200) {
		j->bad = true;
		return;
	}
	char c = *j->p;
	if (c == '"') {
		read_string(j, NULL);
	} else if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		j->p++;
		skip_ws(j);
		while (!j->bad && *j->p && *j->p != close) {
			if (c == '{') {
				read_string(j, NULL);
				skip_ws(j);
				if (*j->p != ':') {
					j->bad = true;
					return;
				}
				j->p++;
			}
			skip_value(j, depth + 1);
			skip_ws(j);
			if (*j->p == ',')
				j->p++;
			skip_ws(j);
		}
		if (*j->p != close)
			j->bad = true;
		else
			j->p++;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		read_number(j);
	} else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "null", 4) == 0) {
		j->p += 4;
	} else if (strncmp(j->p, "false", 5) == 0) {
		j->p += 5;
	} else {
		j->bad = true;
	}
}

/* ---- get_tree ---- */

struct list {
	struct wayland_window* w;
	size_t n, cap;
	bool failed;
};

static void read_rect(struct json* j, struct wayland_window* w)
{
	bool first = true;
	char* k;
	while ((k = next_key(j, &first))) {
		if (strcmp(k, "x") == 0)
			w->x = (int32_t)read_number(j);
		else if (strcmp(k, "y") == 0)
			w->y = (int32_t)read_number(j);
		else if (strcmp(k, "width") == 0)
			w->width = (int32_t)read_number(j);
		else if (strcmp(k, "height") == 0)
			w->height = (int32_t)read_number(j);
		else
			skip_value(j, 1);
		free(k);
	}
}

static void read_node(struct json* j, struct list* l, bool floating, int depth);

static void read_nodes(struct json* j, struct list* l, bool floating, int depth)
{
	skip_ws(j);
	if (*j->p != '[') {
		skip_value(j, depth);
		return;
	}
	j->p++;
	skip_ws(j);
	while (!j->bad && *j->p && *j->p != ']') {
		read_node(j, l, floating, depth + 1);
		skip_ws(j);
		if (*j->p == ',')
			j->p++;
		skip_ws(j);
	}
	if (*j->p == ']')
		j->p++;
	else
		j->bad = true;
}

/* A node: a window when it has a pid and no children of its own. */
static void read_node(struct json* j, struct list* l, bool floating, int depth)
{
	if (depth > 100) {
		j->bad = true;
		return;
	}
	struct wayland_window w = { .floating = floating };
	char* type = NULL;
	char* shell = NULL;
	char* klass = NULL;
	bool has_pid = false;
	bool first = true;
	char* k;
	while ((k = next_key(j, &first))) {
		if (strcmp(k, "id") == 0) {
			w.id = (int64_t)read_number(j);
		} else if (strcmp(k, "name") == 0) {
			skip_ws(j);
			if (*j->p == '"')
				read_string(j, &w.title);
			else
				skip_value(j, depth);
		} else if (strcmp(k, "app_id") == 0) {
			skip_ws(j);
			if (*j->p == '"')
				read_string(j, &w.app_id);
			else
				skip_value(j, depth);
		} else if (strcmp(k, "type") == 0) {
			read_string(j, &type);
		} else if (strcmp(k, "shell") == 0) {
			read_string(j, &shell);
		} else if (strcmp(k, "pid") == 0) {
			w.pid = (pid_t)read_number(j);
			has_pid = true;
		} else if (strcmp(k, "focused") == 0) {
			w.focused = read_bool(j);
		} else if (strcmp(k, "visible") == 0) {
			w.visible = read_bool(j);
		} else if (strcmp(k, "fullscreen_mode") == 0) {
			w.fullscreen = read_number(j) != 0;
		} else if (strcmp(k, "window") == 0) {
			skip_ws(j);
			if (*j->p == 'n')
				skip_value(j, depth);
			else
				w.x11_window = (uint32_t)read_number(j);
		} else if (strcmp(k, "rect") == 0) {
			read_rect(j, &w);
		} else if (strcmp(k, "window_properties") == 0) {
			bool f2 = true;
			char* k2;
			while ((k2 = next_key(j, &f2))) {
				if (strcmp(k2, "class") == 0 && !klass)
					read_string(j, &klass);
				else
					skip_value(j, depth);
				free(k2);
			}
		} else if (strcmp(k, "nodes") == 0) {
			read_nodes(j, l, false, depth);
		} else if (strcmp(k, "floating_nodes") == 0) {
			read_nodes(j, l, true, depth);
		} else {
			skip_value(j, depth);
		}
		free(k);
		if (j->bad)
			break;
	}
	bool view = has_pid && type && (strcmp(type, "con") == 0 || strcmp(type, "floating_con") == 0);
	if (view && !j->bad) {
		w.xwayland = shell && strcmp(shell, "xwayland") == 0;
		if (!w.app_id && klass) {
			w.app_id = klass;
			klass = NULL;
		}
		if (!w.app_id)
			w.app_id = strdup("");
		if (!w.title)
			w.title = strdup("");
		if (!w.app_id || !w.title)
			l->failed = true;
		if (!l->failed && l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 8;
			struct wayland_window* a = realloc(l->w, cap * sizeof(*a));
			if (a) {
				l->w = a;
				l->cap = cap;
			} else {
				l->failed = true;
			}
		}
		if (!l->failed) {
			l->w[l->n++] = w;
			w.app_id = w.title = NULL;
		}
	}
	free(w.app_id);
	free(w.title);
	free(type);
	free(shell);
	free(klass);
}

int wayland_sway_parse_tree(const char* json, struct wayland_window** out, size_t* n)
{
	*out = NULL;
	*n = 0;
	struct json j = { .p = json };
	struct list l = { 0 };
	read_node(&j, &l, false, 0);
	if (j.bad || l.failed) {
		wayland_windows_free(l.w, l.n);
		return j.bad ? -EPROTO : -ENOMEM;
	}
	*out = l.w;
	*n = l.n;
	return 0;
}

int wayland_sway_windows(const char* ipc_path, int timeout_ms,
		struct wayland_window** out, size_t* n)
{
	*out = NULL;
	*n = 0;
	char* reply = NULL;
	int r = ipc_call(ipc_path, IPC_GET_TREE, "", timeout_ms, &reply);
	if (r < 0)
		return r;
	r = wayland_sway_parse_tree(reply, out, n);
	free(reply);
	if (r == -EPROTO)
		log_warn("wayland: sway's get_tree reply did not parse");
	return r;
}

void wayland_windows_free(struct wayland_window* windows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(windows[i].app_id);
		free(windows[i].title);
	}
	free(windows);
}

/* ---- run_command: [{"success": bool, "error": "..."}, ...] ---- */

int wayland_sway_command(const char* ipc_path, const char* command, int timeout_ms,
		char* error, size_t size)
{
	if (error && size)
		error[0] = '\0';
	char* reply = NULL;
	int r = ipc_call(ipc_path, IPC_RUN_COMMAND, command, timeout_ms, &reply);
	if (r < 0)
		return r;
	struct json j = { .p = reply };
	skip_ws(&j);
	if (*j.p != '[') {
		free(reply);
		return -EPROTO;
	}
	j.p++;
	skip_ws(&j);
	while (!j.bad && *j.p == '{') {
		bool first = true, ok = true;
		char* k;
		char* msg = NULL;
		while ((k = next_key(&j, &first))) {
			if (strcmp(k, "success") == 0)
				ok = read_bool(&j);
			else if (strcmp(k, "error") == 0 && !msg)
				read_string(&j, &msg);
			else
				skip_value(&j, 1);
			free(k);
		}
		if (!ok && r == 0) {
			r = -EINVAL;
			if (error && size)
				snprintf(error, size, "%s", msg ? msg : "sway: command failed");
		}
		free(msg);
		skip_ws(&j);
		if (*j.p == ',')
			j.p++;
		skip_ws(&j);
	}
	if (j.bad)
		r = -EPROTO;
	free(reply);
	return r;
}
