#pragma once

/* Logging to stderr, text or JSON lines; never stdout (stdio mode carries MCP). */

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A window id in a message or a log line: decimal, as JSON carries it and
 * the tools take it, then hex, as xwininfo, xdotool and xprop print it:
 * "window 4194305 (0x400001)". */
#define LOG_WINDOW "window %" PRIu32 " (0x%" PRIx32 ")"
#define LOG_WINDOW_ID(w) (uint32_t)(w), (uint32_t)(w)

enum log_level {
	LOG_PANIC = 0,
	LOG_ERROR,
	LOG_WARNING,
	LOG_INFO,
	LOG_DEBUG,
	LOG_TRACE,
};

/** Configure level and format; safe to call before any thread starts. */
void log_init(enum log_level level, bool json);

/** Parse "error", "warning", "info", "debug", "trace"; returns -1 if unknown. */
int log_level_parse(const char* name);

/** Is a message at this level printed? Cheap; use to skip costly formatting. */
bool log_enabled(enum log_level level);

/** Write one line; any thread. LOG_PANIC aborts after writing. */
void log_write(enum log_level level, const char* file, int line,
		const char* fmt, ...) __attribute__((format(printf, 4, 5)));

/** Is the format JSON lines (--log-format json)? */
bool log_is_json(void);

/** A member of a log_event line; a literal value (true, 42) goes into the
 *  JSON as it is, any other is a string. NULL key or value: skipped. */
struct log_field {
	const char* key;
	const char* value;
	bool literal;
};

/** One line with extra members: in JSON, each field after "msg"; in text,
 *  " key=value" after the message. Any thread. */
void log_event(enum log_level level, const char* file, int line,
		const struct log_field* fields, size_t n, const char* fmt, ...)
		__attribute__((format(printf, 6, 7)));

/** One line of a child program's output, re-logged: JSON
 *  {"ts","level","program","pid","msg"}, text "<ts> <level> program[pid]: line".
 *  line must be valid UTF-8 without a newline. Any thread. */
void log_program(enum log_level level, const char* program, long pid,
		const char* line);

#define log_msg(level, ...) log_write(level, __FILE__, __LINE__, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#ifdef NDEBUG
#define log_trace(...) do { } while (0)
#else
#define log_trace(...) log_msg(LOG_TRACE, __VA_ARGS__)
#endif
#define log_panic(...) log_msg(LOG_PANIC, __VA_ARGS__)
