#pragma once

/* JSON from clients, parsed within a memory budget (RELIABILITY D7), and the
 * heap given back to the system after a spike.
 *
 * jansson's tree can cost 20 to 70 times the text: "[]," is one array (about
 * 130 bytes) per 3 bytes of input. jsonmem_load() counts what a parse
 * allocates on its thread (through json_set_alloc_funcs) and fails it when
 * that parse would take more than jsonmem_cap(len), or when all the parses in
 * progress together would take more than the total budget. A tool call's JSON
 * (short strings, or one long string) stays far below both. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One parse may take JSONMEM_FACTOR times its text plus JSONMEM_SLACK. */
#define JSONMEM_FACTOR 8
#define JSONMEM_SLACK ((size_t)1 << 20)
#define JSONMEM_TOTAL_DEFAULT ((size_t)128 << 20)

enum jsonmem_status {
	JSONMEM_OK = 0,
	JSONMEM_INVALID,	/* not JSON: err says why */
	JSONMEM_TOO_COSTLY,	/* this text alone would take more than jsonmem_cap() */
	JSONMEM_BUSY,		/* the parses in progress hold the whole budget: retry */
};

/** The total budget of all parses in progress (0: the default); once, before
 *  threads start. Installs the counting allocator, fixes glibc's mmap
 *  threshold at 1 MiB and starts a detached thread that calls
 *  jsonmem_trim() once a second. */
void jsonmem_init(size_t total);
/** json_loadb within the budget. NULL with *status (and err, whose text then
 *  says which limit) on failure. */
json_t* jsonmem_load(const char* text, size_t len, size_t flags, json_error_t* err,
		enum jsonmem_status* status);
/** What one parse of len bytes may take. */
size_t jsonmem_cap(size_t len);
/** The total budget in force. */
size_t jsonmem_total(void);
/** Bytes held by the parses in progress now. */
size_t jsonmem_in_flight(void);

/** About bytes of heap were just freed (a large body, a refused parse):
 *  jsonmem_trim() then returns them to the system. Any thread. */
void jsonmem_note_freed(size_t bytes);
/** malloc_trim(0) when at least 1 MiB was noted freed since the last trim,
 *  and every 10 s anyway (glibc's arenas keep what any burst freed: a load
 *  that ends, connections and feeds that close). Returns whether it trimmed. */
bool jsonmem_trim(void);
/** The longest jsonmem_trim() so far, in ns (status, tests). */
int64_t jsonmem_trim_max_ns(void);

/** json_dumps(json, flags) for answers, byte for byte, faster: jansson walks
 *  a string one code point at a time (about 110 MB/s here), this copies the
 *  runs that need no escape (a 1 MB clipboard text or Base64 image in about
 *  a millisecond). Without JSON_COMPACT, or with flags other than it,
 *  JSON_ENCODE_ANY and JSON_REAL_PRECISION, it is json_dumps. NULL when out of memory or when
 *  the root is not an object or array without JSON_ENCODE_ANY. */
char* jsonmem_dumps(const json_t* json, size_t flags);
