#include "base/log.h"
#include "base/text.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static enum log_level log__level = LOG_INFO;
static bool log__json;
static pthread_mutex_t log__mutex = PTHREAD_MUTEX_INITIALIZER;

static const char* const level_names[] = {
	[LOG_PANIC] = "panic", [LOG_ERROR] = "error", [LOG_WARNING] = "warning",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug", [LOG_TRACE] = "trace",
};

void log_init(enum log_level level, bool json)
{
	log__level = level;
	log__json = json;
}

int log_level_parse(const char* name)
{
	for (int i = LOG_ERROR; i <= LOG_TRACE; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	if (strcmp(name, "warn") == 0)
		return LOG_WARNING;
	return -1;
}

bool log_enabled(enum log_level level)
{
	return level <= log__level;
}

static void json_escape(FILE* out, const char* s)
{
	for (const unsigned char* p = (const unsigned char*)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
}

static void timestamp(char* out, size_t size)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[32];
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, size, "%s.%03ldZ", when, ts.tv_nsec / 1000000);
}

static void json_member(FILE* out, const char* key, const char* value, bool literal)
{
	fputs(",\"", out);
	json_escape(out, key);
	fputs("\":", out);
	if (literal) {
		fputs(value, out);
		return;
	}
	fputc('"', out);
	json_escape(out, value);
	fputc('"', out);
}

/* One line. src is "file:line" (JSON "src"), or NULL for a program's line
 * (program and pid as members, "program[pid]" in text). */
static void emit(enum log_level level, const char* src, const char* program,
		long pid, const struct log_field* fields, size_t n, const char* msg)
{
	char when[48];
	timestamp(when, sizeof(when));
	pthread_mutex_lock(&log__mutex);
	if (log__json) {
		fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\"", when, level_names[level]);
		if (src) {
			json_member(stderr, "src", src, false);
		} else {
			char p[24];
			snprintf(p, sizeof(p), "%ld", pid);
			json_member(stderr, "program", program, false);
			json_member(stderr, "pid", p, true);
		}
		json_member(stderr, "msg", msg, false);
		for (size_t i = 0; i < n; i++)
			if (fields[i].key && fields[i].value)
				json_member(stderr, fields[i].key, fields[i].value,
						fields[i].literal);
		fputs("}\n", stderr);
	} else {
		if (src)
			fprintf(stderr, "%s %-7s %s: %s", when, level_names[level], src, msg);
		else
			fprintf(stderr, "%s %-7s %s[%ld]: %s", when, level_names[level],
					program, pid, msg);
		for (size_t i = 0; i < n; i++)
			if (fields[i].key && fields[i].value)
				fprintf(stderr, " %s=%s", fields[i].key, fields[i].value);
		fputc('\n', stderr);
	}
	fflush(stderr);
	pthread_mutex_unlock(&log__mutex);
}

static void source(char* out, size_t size, const char* file, int line)
{
	const char* base = strrchr(file, '/');
	snprintf(out, size, "%s:%d", base ? base + 1 : file, line);
}

void log_write(enum log_level level, const char* file, int line,
		const char* fmt, ...)
{
	if (level > log__level)
		return;

	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	/* Lines quote clients (paths, names): keep them valid UTF-8, which
	 * the JSON format promises and log collectors expect. */
	text_vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	char src[128];
	source(src, sizeof(src), file, line);
	emit(level, src, NULL, 0, NULL, 0, msg);

	if (level == LOG_PANIC)
		abort();
}

void log_event(enum log_level level, const char* file, int line,
		const struct log_field* fields, size_t n, const char* fmt, ...)
{
	if (level > log__level)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	char src[128];
	source(src, sizeof(src), file, line);
	emit(level, src, NULL, 0, fields, n, msg);
}

void log_program(enum log_level level, const char* program, long pid,
		const char* line)
{
	if (level > log__level || level == LOG_PANIC)
		return;
	emit(level, NULL, program, pid, NULL, 0, line);
}

bool log_is_json(void)
{
	return log__json;
}
