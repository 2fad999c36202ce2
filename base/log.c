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

	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[32];
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);

	const char* base = strrchr(file, '/');
	base = base ? base + 1 : file;

	pthread_mutex_lock(&log__mutex);
	if (log__json) {
		fprintf(stderr, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"src\":\"%s:%d\",\"msg\":\"",
				when, ts.tv_nsec / 1000000, level_names[level], base, line);
		json_escape(stderr, msg);
		fputs("\"}\n", stderr);
	} else {
		fprintf(stderr, "%s.%03ldZ %-7s %s:%d: %s\n", when,
				ts.tv_nsec / 1000000, level_names[level], base, line, msg);
	}
	fflush(stderr);
	pthread_mutex_unlock(&log__mutex);

	if (level == LOG_PANIC)
		abort();
}
