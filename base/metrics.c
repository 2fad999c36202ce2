#include "base/metrics.h"
#include "base/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_BUCKETS 256
#define METRICS_MAX_SERIES 4096	/* guards against label explosions */
#define METRICS_LABELS_MAX 512

enum metrics_kind { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM };

static const double bounds[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
};
#define N_BOUNDS (sizeof(bounds) / sizeof(bounds[0]))

struct series {
	struct series* next;
	enum metrics_kind kind;
	char* name;
	char* labels;		/* 'a="x",b="y"' or "" */
	double value;		/* counter/gauge; histogram sum */
	uint64_t count;		/* histogram */
	uint64_t buckets[N_BOUNDS];
};

struct help {
	struct help* next;
	char* name;
	char* text;
};

static pthread_mutex_t metrics__mutex = PTHREAD_MUTEX_INITIALIZER;
static struct series* table[METRICS_BUCKETS];
static size_t n_series;
static struct help* helps;
static int events_handle;

static uint32_t hash(const char* a, const char* b)
{
	uint32_t h = 2166136261u;
	for (; *a; a++)
		h = (h ^ (unsigned char)*a) * 16777619u;
	h = (h ^ '|') * 16777619u;
	for (; *b; b++)
		h = (h ^ (unsigned char)*b) * 16777619u;
	return h;
}

/* Format label pairs as Prometheus does, escaping \ " and newlines. */
static void format_labels(char* out, size_t size, va_list ap)
{
	size_t n = 0;
	out[0] = '\0';
	for (;;) {
		const char* key = va_arg(ap, const char*);
		if (!key)
			break;
		const char* value = va_arg(ap, const char*);
		if (!value)
			value = "";
		int w = snprintf(out + n, size - n, "%s%s=\"", n ? "," : "", key);
		if (w < 0 || (size_t)w >= size - n)
			break;
		n += (size_t)w;
		for (const char* v = value; *v && n + 4 < size; v++) {
			if (*v == '\\' || *v == '"') {
				out[n++] = '\\';
				out[n++] = *v;
			} else if (*v == '\n') {
				out[n++] = '\\';
				out[n++] = 'n';
			} else {
				out[n++] = *v;
			}
		}
		if (n + 2 >= size)
			break;
		out[n++] = '"';
		out[n] = '\0';
	}
}

/* Find or create; call with the mutex held. NULL when full or out of memory. */
static struct series* lookup(const char* name, const char* labels, enum metrics_kind kind)
{
	uint32_t h = hash(name, labels) % METRICS_BUCKETS;
	for (struct series* s = table[h]; s; s = s->next)
		if (strcmp(s->name, name) == 0 && strcmp(s->labels, labels) == 0)
			return s->kind == kind ? s : NULL;
	if (n_series >= METRICS_MAX_SERIES)
		return NULL;
	struct series* s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->name = strdup(name);
	s->labels = strdup(labels);
	if (!s->name || !s->labels) {
		free(s->name);
		free(s->labels);
		free(s);
		return NULL;
	}
	s->kind = kind;
	s->next = table[h];
	table[h] = s;
	n_series++;
	return s;
}

static void update(enum metrics_kind kind, const char* name, double v, va_list ap)
{
	char labels[METRICS_LABELS_MAX];
	format_labels(labels, sizeof(labels), ap);
	pthread_mutex_lock(&metrics__mutex);
	struct series* s = lookup(name, labels, kind);
	if (s) {
		if (kind == KIND_COUNTER) {
			s->value += v;
		} else if (kind == KIND_GAUGE) {
			s->value = v;
		} else {
			s->value += v;
			s->count++;
			for (size_t i = 0; i < N_BOUNDS; i++)
				if (v <= bounds[i])
					s->buckets[i]++;
		}
	}
	pthread_mutex_unlock(&metrics__mutex);
}

void metrics_inc(const char* name, ...)
{
	va_list ap;
	va_start(ap, name);
	update(KIND_COUNTER, name, 1, ap);
	va_end(ap);
}

void metrics_add(const char* name, double v, ...)
{
	va_list ap;
	va_start(ap, v);
	update(KIND_COUNTER, name, v, ap);
	va_end(ap);
}

void metrics_set(const char* name, double v, ...)
{
	va_list ap;
	va_start(ap, v);
	update(KIND_GAUGE, name, v, ap);
	va_end(ap);
}

void metrics_observe(const char* name, double v, ...)
{
	va_list ap;
	va_start(ap, v);
	update(KIND_HISTOGRAM, name, v, ap);
	va_end(ap);
}

void metrics_help(const char* name, const char* text)
{
	pthread_mutex_lock(&metrics__mutex);
	for (struct help* h = helps; h; h = h->next)
		if (strcmp(h->name, name) == 0)
			goto out;
	struct help* h = calloc(1, sizeof(*h));
	if (!h)
		goto out;
	h->name = strdup(name);
	h->text = strdup(text);
	if (!h->name || !h->text) {
		free(h->name);
		free(h->text);
		free(h);
		goto out;
	}
	h->next = helps;
	helps = h;
out:
	pthread_mutex_unlock(&metrics__mutex);
}

/* A growing output buffer. */
struct buf {
	char* data;
	size_t len, cap;
	bool failed;
};

static void bprintf(struct buf* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf* b, const char* fmt, ...)
{
	if (b->failed)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap * 2 + (size_t)n + 64;
		char* p = realloc(b->data, cap);
		if (!p) {
			b->failed = true;
			return;
		}
		b->data = p;
		b->cap = cap;
	}
}

static int compare_series(const void* a, const void* b)
{
	const struct series* x = *(const struct series* const*)a;
	const struct series* y = *(const struct series* const*)b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->labels, y->labels);
}

static const char* kind_name(enum metrics_kind k)
{
	return k == KIND_COUNTER ? "counter" : k == KIND_GAUGE ? "gauge" : "histogram";
}

char* metrics_render(size_t* len)
{
	struct buf b = { .cap = 4096 };
	b.data = malloc(b.cap);
	if (!b.data)
		return NULL;
	b.data[0] = '\0';
	pthread_mutex_lock(&metrics__mutex);
	struct series** all = calloc(n_series ? n_series : 1, sizeof(*all));
	if (!all) {
		pthread_mutex_unlock(&metrics__mutex);
		free(b.data);
		return NULL;
	}
	size_t n = 0;
	for (size_t i = 0; i < METRICS_BUCKETS; i++)
		for (struct series* s = table[i]; s; s = s->next)
			all[n++] = s;
	qsort(all, n, sizeof(*all), compare_series);
	const char* family = NULL;
	for (size_t i = 0; i < n; i++) {
		struct series* s = all[i];
		if (!family || strcmp(family, s->name) != 0) {
			family = s->name;
			for (struct help* h = helps; h; h = h->next)
				if (strcmp(h->name, s->name) == 0)
					bprintf(&b, "# HELP %s %s\n", s->name, h->text);
			bprintf(&b, "# TYPE %s %s\n", s->name, kind_name(s->kind));
		}
		const char* sep = *s->labels ? "," : "";
		if (s->kind != KIND_HISTOGRAM) {
			bprintf(&b, "%s%s%s%s %.17g\n", s->name, *s->labels ? "{" : "",
					s->labels, *s->labels ? "}" : "", s->value);
			continue;
		}
		for (size_t k = 0; k < N_BOUNDS; k++)
			bprintf(&b, "%s_bucket{%s%sle=\"%g\"} %llu\n", s->name, s->labels, sep,
					bounds[k], (unsigned long long)s->buckets[k]);
		bprintf(&b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", s->name, s->labels, sep,
				(unsigned long long)s->count);
		bprintf(&b, "%s_sum%s%s%s %.17g\n", s->name, *s->labels ? "{" : "",
				s->labels, *s->labels ? "}" : "", s->value);
		bprintf(&b, "%s_count%s%s%s %llu\n", s->name, *s->labels ? "{" : "",
				s->labels, *s->labels ? "}" : "", (unsigned long long)s->count);
	}
	pthread_mutex_unlock(&metrics__mutex);
	free(all);
	if (b.failed) {
		free(b.data);
		return NULL;
	}
	*len = b.len;
	return b.data;
}

/* Tool calls, counted from the activity events of every transport. */
static void on_event(void* ud, json_t* event)
{
	(void)ud;
	const char* kind = json_string_value(json_object_get(event, "kind"));
	const char* actor = json_string_value(json_object_get(json_object_get(event, "actor"),
			"kind"));
	const char* status = json_string_value(json_object_get(event, "status"));
	bool tool_event = !kind || strcmp(kind, "tool") == 0;
	/* One per tool call (its end) and one per other event. */
	if (tool_event && (!status || strcmp(status, "started") == 0))
		return;
	metrics_inc("deskd_events_total", "kind", kind ? kind : "tool", "actor",
			actor ? actor : "agent", NULL);
	if (!tool_event)
		return;
	const char* tool = json_string_value(json_object_get(event, "tool"));
	const char* source = json_string_value(json_object_get(event, "source"));
	double ms = json_number_value(json_object_get(event, "duration_ms"));
	metrics_inc("deskd_tool_calls_total", "tool", tool ? tool : "", "status", status,
			"source", source ? source : "", NULL);
	metrics_observe("deskd_tool_duration_seconds", ms / 1000.0, "tool", tool ? tool : "",
			NULL);
}

int metrics_init(void)
{
	metrics_help("deskd_http_requests_total", "HTTP requests by route, method and status.");
	metrics_help("deskd_http_request_duration_seconds",
			"Time from request to response by route.");
	metrics_help("deskd_tool_calls_total", "Tool calls by tool, status and source.");
	metrics_help("deskd_tool_duration_seconds", "Tool call duration by tool.");
	metrics_help("deskd_events_total", "Activity events by kind (tool: one per call) and "
			"actor kind (agent, person, deskd); the dashboard's refreshes included.");
	metrics_help("deskd_websocket_connections_total", "WebSocket connections accepted.");
	if (events_handle > 0)
		return 0;
	int h = events_subscribe_all(on_event, NULL);
	if (h < 0)
		return h;
	events_handle = h;
	return 0;
}

void metrics_deinit(void)
{
	if (events_handle > 0)
		events_unsubscribe(events_handle);
	events_handle = 0;
	pthread_mutex_lock(&metrics__mutex);
	for (size_t i = 0; i < METRICS_BUCKETS; i++) {
		struct series* s = table[i];
		while (s) {
			struct series* next = s->next;
			free(s->name);
			free(s->labels);
			free(s);
			s = next;
		}
		table[i] = NULL;
	}
	n_series = 0;
	while (helps) {
		struct help* next = helps->next;
		free(helps->name);
		free(helps->text);
		free(helps);
		helps = next;
	}
	pthread_mutex_unlock(&metrics__mutex);
}
