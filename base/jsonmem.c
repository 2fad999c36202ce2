#define _GNU_SOURCE	/* malloc_usable_size, malloc_trim */
#include "base/jsonmem.h"
#include "base/clock.h"
#include "base/text.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The parse running on this thread, if any. Frees during a parse are the
 * parse's own (jansson frees nothing else inside json_loadb). */
static _Thread_local struct {
	bool on;
	size_t used, peak, cap;
	enum jsonmem_status refused;
} jm_parse;

static atomic_size_t jm_in_flight;
static size_t jm_total = JSONMEM_TOTAL_DEFAULT;
static pthread_once_t jm_once = PTHREAD_ONCE_INIT;

static void* jm_malloc(size_t size)
{
	if (!jm_parse.on)
		return malloc(size);
	if (jm_parse.refused)
		return NULL;
	/* used counts what malloc gave, a little over what was asked: it can
	 * pass cap, and cap - used must not wrap round then. */
	if (jm_parse.used > jm_parse.cap || size > jm_parse.cap - jm_parse.used) {
		jm_parse.refused = JSONMEM_TOO_COSTLY;
		return NULL;
	}
	/* Reserve the size asked for, then account what malloc really gave. */
	if (atomic_fetch_add(&jm_in_flight, size) + size > jm_total) {
		atomic_fetch_sub(&jm_in_flight, size);
		/* Busy only if others hold the budget: alone, it never fits. */
		jm_parse.refused = jm_parse.used + size > jm_total ? JSONMEM_TOO_COSTLY
			: JSONMEM_BUSY;
		return NULL;
	}
	void* p = malloc(size);
	size_t real = p ? malloc_usable_size(p) : 0;
	atomic_fetch_add(&jm_in_flight, real);
	atomic_fetch_sub(&jm_in_flight, size);
	jm_parse.used += real;
	if (jm_parse.used > jm_parse.peak)
		jm_parse.peak = jm_parse.used;
	return p;
}

static void jm_free(void* p)
{
	if (p && jm_parse.on) {
		size_t real = malloc_usable_size(p);
		if (real > jm_parse.used)
			real = jm_parse.used;
		jm_parse.used -= real;
		atomic_fetch_sub(&jm_in_flight, real);
	}
	free(p);
}

static void jm_install(void)
{
	/* Both are malloc and free underneath: objects made before this and
	 * freed after (or the other way round) are fine. */
	json_set_alloc_funcs(jm_malloc, jm_free);
}

/* Gives freed heap back about once a second (glibc keeps it otherwise:
 * per-thread arenas hold what a spike left). Detached; lives with the
 * process. */
static void* jm_trimmer(void* arg)
{
	(void)arg;
	for (;;) {
		clock_sleep_ms(1000);
		jsonmem_trim();
	}
	return NULL;
}

void jsonmem_init(size_t total)
{
	if (total)
		jm_total = total;
	pthread_once(&jm_once, jm_install);
	static atomic_bool started;
	if (!atomic_exchange(&started, true)) {
		/* glibc raises its mmap threshold to the largest block freed (a
		 * frame, a Base64 image: 4 MB and up), and the top of a thread's
		 * arena then stays resident up to twice that, which malloc_trim
		 * never returns (it trims only the main arena's top): 3 MB per
		 * arena after one screenshot. Fixed, big blocks are mapped and
		 * unmapped; capture/'s buffer cache keeps the hot ones. */
		mallopt(M_MMAP_THRESHOLD, 1 << 20);
		/* One arena per core, not glibc's eight: every encode's and
		 * tool call's short-lived thread took one, and what each freed
		 * stayed resident there until the next trim (the soak's peak,
		 * 3 runs: 96-101 MB with eight per core, 85-91 with two). */
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		mallopt(M_ARENA_MAX, cpus < 2 ? 2 : cpus > 64 ? 64 : (int)cpus);
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_create(&t, &attr, jm_trimmer, NULL);
		pthread_attr_destroy(&attr);
	}
}

size_t jsonmem_cap(size_t len)
{
	if (len > (SIZE_MAX - JSONMEM_SLACK) / JSONMEM_FACTOR)
		return SIZE_MAX;
	return len * JSONMEM_FACTOR + JSONMEM_SLACK;
}

size_t jsonmem_total(void)
{
	return jm_total;
}

size_t jsonmem_in_flight(void)
{
	return atomic_load(&jm_in_flight);
}

static void mib(char* out, size_t size, size_t bytes)
{
	snprintf(out, size, "%.1f MiB", (double)bytes / (1 << 20));
}

/* ---- A fast parse of the usual body ------------------------------------- */

/* jansson lexes a byte at a time through a stream (about 60 MB/s here: a
 * 1 MB clipboard_write body took 14 ms). This parser takes only what it is
 * sure of (containers nested at most FP_DEPTH deep, no duplicate keys, no
 * NUL, UTF-8 as text_utf8_valid takes it, no lone surrogate, integers in range, reals strtod reads whole and
 * finite) and builds the tree jansson would; anything else, errors
 * included, goes to json_loadb, so those answers stay jansson's. */
#define FP_DEPTH 64

struct fp {
	const unsigned char* p;
	const unsigned char* end;
	int depth;
};

static json_t* fp_value(struct fp* f);

static void fp_ws(struct fp* f)
{
	while (f->p < f->end && (*f->p == ' ' || *f->p == '\n' || *f->p == '\r' || *f->p == '\t'))
		f->p++;
}

static bool fp_hex4(const unsigned char* p, const unsigned char* end, unsigned* out)
{
	if (end - p < 4)
		return false;
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = p[i], d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f'
				? (c | 0x20) - 'a' + 10 : 16;
		if (d > 15)
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return true;
}

/* Decodes the escapes of raw[0..n) (scanned: ends are in bounds) into out,
 * which has n bytes; returns the length, or -1 to hand over. */
static long fp_unescape(const unsigned char* raw, size_t n, char* out)
{
	const unsigned char* p = raw;
	const unsigned char* end = raw + n;
	char* o = out;
	while (p < end) {
		if (*p != '\\') {
			*o++ = (char)*p++;
			continue;
		}
		unsigned c = p[1], cp;
		p += 2;
		static const char simple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
		const char* hit = c == 'u' || c == 0 ? NULL : strchr(simple, (int)c);
		if (hit && (hit - simple) % 2 == 0) {
			*o++ = hit[1];
			continue;
		}
		if (c != 'u' || !fp_hex4(p, end, &cp) || cp == 0 || (cp >= 0xdc00 && cp <= 0xdfff))
			return -1;
		p += 4;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			unsigned lo;
			if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !fp_hex4(p + 2, end, &lo)
					|| lo < 0xdc00 || lo > 0xdfff)
				return -1;
			p += 6;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		}
		if (cp < 0x80) {
			*o++ = (char)cp;
		} else if (cp < 0x800) {
			*o++ = (char)(0xc0 | cp >> 6);
			*o++ = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			*o++ = (char)(0xe0 | cp >> 12);
			*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
			*o++ = (char)(0x80 | (cp & 0x3f));
		} else {
			*o++ = (char)(0xf0 | cp >> 18);
			*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
			*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
			*o++ = (char)(0x80 | (cp & 0x3f));
		}
	}
	return (long)(o - out);
}

/* How many bytes from p on need no escape in a JSON string (none is a
 * control, '"' or '\\'): eight at a time while a word has none of them,
 * bytewise from the word that may have one. */
static size_t json_plain_run(const unsigned char* p, size_t n)
{
	size_t i = 0;
	for (uint64_t w; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		if (text_word_has_below(w, 0x20) | text_word_has(w, '"') | text_word_has(w, '\\'))
			break;
	}
	while (i < n && p[i] >= 0x20 && p[i] != '"' && p[i] != '\\')
		i++;
	return i;
}

/* A string (f->p on its opening quote): its bytes in *s and *n, either in
 * the text or, with escapes, in *owned (jm_free it). False: hand over. */
static bool fp_string(struct fp* f, const char** s, size_t* n, char** owned)
{
	const unsigned char* start = ++f->p;
	const unsigned char* p = start;
	bool escapes = false;
	for (;;) {
		p += json_plain_run(p, (size_t)(f->end - p));
		if (p >= f->end || *p < 0x20)
			return false;
		if (*p == '"')
			break;
		if (f->end - p < 2)
			return false;
		escapes = true;
		p += 2;	/* the escaped byte, whatever it is, is checked below */
	}
	/* Escapes are ASCII: the raw bytes are UTF-8 exactly when the string is. */
	if (!text_utf8_valid((const char*)start, (size_t)(p - start)))
		return false;
	f->p = p + 1;
	*owned = NULL;
	if (!escapes) {
		*s = (const char*)start;
		*n = (size_t)(p - start);
		return true;
	}
	char* out = jm_malloc((size_t)(p - start) + 1);
	long len = out ? fp_unescape(start, (size_t)(p - start), out) : -1;
	if (len < 0) {
		jm_free(out);
		return false;
	}
	*s = *owned = out;
	*n = (size_t)len;
	return true;
}

static json_t* fp_number(struct fp* f)
{
	const unsigned char* p = f->p;
	bool real = false;
	if (p < f->end && *p == '-')
		p++;
	if (p < f->end && *p == '0') {
		p++;
	} else if (p < f->end && *p >= '1' && *p <= '9') {
		while (p < f->end && *p >= '0' && *p <= '9')
			p++;
	} else {
		return NULL;
	}
	if (p < f->end && *p == '.') {
		real = true;
		if (++p >= f->end || *p < '0' || *p > '9')
			return NULL;
		while (p < f->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < f->end && (*p == 'e' || *p == 'E')) {
		real = true;
		p++;
		if (p < f->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= f->end || *p < '0' || *p > '9')
			return NULL;
		while (p < f->end && *p >= '0' && *p <= '9')
			p++;
	}
	char tok[64];
	size_t n = (size_t)(p - f->p);
	if (n >= sizeof(tok))
		return NULL;
	memcpy(tok, f->p, n);
	tok[n] = '\0';
	char* stop;
	errno = 0;
	json_t* v;
	if (real) {
		double d = strtod(tok, &stop);
		v = stop != tok + n || d == HUGE_VAL || d == -HUGE_VAL ? NULL : json_real(d);
	} else {
		long long i = strtoll(tok, &stop, 10);
		v = stop != tok + n || errno == ERANGE ? NULL : json_integer((json_int_t)i);
	}
	f->p = p;
	return v;
}

static json_t* fp_container(struct fp* f, bool object)
{
	if (++f->depth > FP_DEPTH)
		return NULL;
	json_t* c = object ? json_object() : json_array();
	const unsigned char close = object ? '}' : ']';
	f->p++;
	fp_ws(f);
	if (c && f->p < f->end && *f->p == close) {
		f->p++;
		f->depth--;
		return c;
	}
	while (c) {
		fp_ws(f);
		if (object) {
			const char* key;
			size_t key_len;
			char* owned;
			if (f->p >= f->end || *f->p != '"' || !fp_string(f, &key, &key_len, &owned))
				goto fail;
			fp_ws(f);
			json_t* v = NULL;
			if (f->p < f->end && *f->p == ':') {
				f->p++;
				fp_ws(f);
				v = fp_value(f);
			}
			/* A duplicate is an error or "the last wins" by flag: jansson's call. */
			bool ok = v && !json_object_getn(c, key, key_len)
					&& json_object_setn_new_nocheck(c, key, key_len, v) == 0;
			if (!ok)
				json_decref(v);
			jm_free(owned);
			if (!ok)
				goto fail;
		} else {
			json_t* v = fp_value(f);
			if (!v || json_array_append_new(c, v) != 0)
				goto fail;
		}
		fp_ws(f);
		if (f->p < f->end && *f->p == ',') {
			f->p++;
			continue;
		}
		if (f->p < f->end && *f->p == close) {
			f->p++;
			f->depth--;
			return c;
		}
		goto fail;
	}
fail:
	json_decref(c);
	return NULL;
}

static json_t* fp_value(struct fp* f)
{
	if (f->p >= f->end)
		return NULL;
	static const struct {
		const char* word;
		size_t len;
	} words[] = { { "true", 4 }, { "false", 5 }, { "null", 4 } };
	switch (*f->p) {
	case '{':
		return fp_container(f, true);
	case '[':
		return fp_container(f, false);
	case '"': {
		const char* s;
		size_t n;
		char* owned;
		if (!fp_string(f, &s, &n, &owned))
			return NULL;
		json_t* v = json_stringn_nocheck(s, n);	/* checked above */
		jm_free(owned);
		return v;
	}
	case 't':
	case 'f':
	case 'n':
		for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
			if ((size_t)(f->end - f->p) >= words[i].len
					&& memcmp(f->p, words[i].word, words[i].len) == 0) {
				f->p += words[i].len;
				return i == 0 ? json_true() : i == 1 ? json_false() : json_null();
			}
		}
		return NULL;
	default:
		return fp_number(f);
	}
}

/* The whole text as one object or array, or NULL (hand it to jansson). */
static json_t* fp_parse(const char* text, size_t len, size_t flags)
{
	if (flags & ~(size_t)JSON_REJECT_DUPLICATES)
		return NULL;
	struct fp f = { (const unsigned char*)text, (const unsigned char*)text + len, 0 };
	fp_ws(&f);
	if (f.p >= f.end || (*f.p != '{' && *f.p != '['))
		return NULL;
	json_t* v = fp_value(&f);
	fp_ws(&f);
	if (v && f.p != f.end) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

json_t* jsonmem_load(const char* text, size_t len, size_t flags, json_error_t* err,
		enum jsonmem_status* status)
{
	pthread_once(&jm_once, jm_install);
	jm_parse.on = true;
	jm_parse.used = jm_parse.peak = 0;
	jm_parse.cap = jsonmem_cap(len);
	jm_parse.refused = JSONMEM_OK;
	json_t* out = fp_parse(text, len, flags);
	if (out && jm_parse.refused) {
		json_decref(out);
		out = NULL;
	}
	if (out || jm_parse.refused) {
		/* Refused: jansson's tree takes at least what this one did. */
		memset(err, 0, sizeof(*err));
	} else {
		out = json_loadb(text, len, flags, err);
	}
	enum jsonmem_status refused = jm_parse.refused;
	if (out && refused) {
		/* A failed allocation jansson went past: the tree may lack parts. */
		json_decref(out);
		out = NULL;
	}
	size_t peak = jm_parse.peak;
	atomic_fetch_sub(&jm_in_flight, jm_parse.used);
	jm_parse.on = false;
	jm_parse.used = jm_parse.peak = 0;
	/* A big tree is freed soon (refused now, or when its request ends). */
	if (peak >= ((size_t)1 << 20))
		jsonmem_note_freed(peak);

	if (refused) {
		char a[32], b[32];
		mib(a, sizeof(a), jsonmem_cap(len));
		mib(b, sizeof(b), jm_total);
		memset(err, 0, sizeof(*err));
		if (refused == JSONMEM_TOO_COSTLY)
			snprintf(err->text, sizeof(err->text), "the JSON would take over %s of "
					"memory to parse (%dx its size + 1 MiB, --max-json-memory %s)",
					jsonmem_cap(len) < jm_total ? a : b, JSONMEM_FACTOR, b);
		else
			snprintf(err->text, sizeof(err->text), "the JSON bodies being parsed hold "
					"all of --max-json-memory (%s); retry shortly", b);
	}
	*status = out ? JSONMEM_OK : refused ? refused : JSONMEM_INVALID;
	return out;
}

/* ---- giving memory back ---- */

static atomic_size_t jm_freed;
static _Atomic int64_t jm_last_trim;
static _Atomic int64_t jm_trim_ns;	/* the longest trim so far */

void jsonmem_note_freed(size_t bytes)
{
	atomic_fetch_add(&jm_freed, bytes);
}

bool jsonmem_trim(void)
{
	int64_t now = clock_ms();
	if (atomic_load(&jm_freed) < ((size_t)1 << 20) && now - atomic_load(&jm_last_trim) < 10000)
		return false;
	atomic_store(&jm_freed, 0);
	atomic_store(&jm_last_trim, now);
	int64_t t0 = clock_ns();
	malloc_trim(0);
	int64_t took = clock_ns() - t0;
	if (took > atomic_load(&jm_trim_ns))
		atomic_store(&jm_trim_ns, took);
	return true;
}

int64_t jsonmem_trim_max_ns(void)
{
	return atomic_load(&jm_trim_ns);
}

/* ---- Dumping answers --------------------------------------------------- */

struct jbuf {
	char* p;
	size_t len, cap;
	bool failed;
};

static void jb_reserve(struct jbuf* b, size_t more)
{
	if (b->failed || b->cap - b->len >= more)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < more)
		cap *= 2;
	char* p = realloc(b->p, cap);
	if (!p) {
		b->failed = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void jb_put(struct jbuf* b, const char* s, size_t n)
{
	jb_reserve(b, n);
	if (b->failed)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* The bytes jansson escapes in a string: '"', '\\' and controls. */
static const char* const jb_short_escape[32] = {
	['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t",
};

static void jb_string(struct jbuf* b, const char* s, size_t n)
{
	jb_reserve(b, n + 2);
	if (b->failed)
		return;
	b->p[b->len++] = '"';
	size_t i = 0;
	while (i < n) {
		size_t run = i + json_plain_run((const unsigned char*)s + i, n - i);
		jb_put(b, s + i, run - i);
		if (run == n)
			break;
		unsigned char c = (unsigned char)s[run];
		char u[8];
		if (c == '"' || c == '\\') {
			u[0] = '\\';
			u[1] = (char)c;
			jb_put(b, u, 2);
		} else if (jb_short_escape[c]) {
			jb_put(b, jb_short_escape[c], 2);
		} else {
			snprintf(u, sizeof(u), "\\u%04X", c);
			jb_put(b, u, 6);
		}
		i = run + 1;
	}
	jb_put(b, "\"", 1);
}

static void jb_value(struct jbuf* b, const json_t* j, size_t flags)
{
	char num[32];
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		jb_put(b, "{", 1);
		const char* key;
		size_t key_len;
		json_t* v;
		bool first = true;
		/* Insertion order, as json_dumps without JSON_SORT_KEYS. */
		json_object_keylen_foreach((json_t*)j, key, key_len, v) {
			if (!first)
				jb_put(b, ",", 1);
			first = false;
			jb_string(b, key, key_len);
			jb_put(b, ":", 1);
			jb_value(b, v, flags);
		}
		jb_put(b, "}", 1);
		break;
	}
	case JSON_ARRAY:
		jb_put(b, "[", 1);
		for (size_t i = 0; i < json_array_size(j); i++) {
			if (i)
				jb_put(b, ",", 1);
			jb_value(b, json_array_get(j, i), flags);
		}
		jb_put(b, "]", 1);
		break;
	case JSON_STRING:
		jb_string(b, json_string_value(j), json_string_length(j));
		break;
	case JSON_INTEGER:
		jb_put(b, num, (size_t)snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
				json_integer_value(j)));
		break;
	case JSON_REAL: {
		/* Rare and subtle (precision, the ".0"): jansson's own text. */
		char* r = json_dumps(j, flags | JSON_ENCODE_ANY);
		if (!r) {
			b->failed = true;
			break;
		}
		jb_put(b, r, strlen(r));
		free(r);
		break;
	}
	case JSON_TRUE:
		jb_put(b, "true", 4);
		break;
	case JSON_FALSE:
		jb_put(b, "false", 5);
		break;
	case JSON_NULL:
		jb_put(b, "null", 4);
		break;
	}
}

char* jsonmem_dumps(const json_t* json, size_t flags)
{
	const size_t mine = JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(31);
	if (!json || (flags & ~mine) || !(flags & JSON_COMPACT))
		return json_dumps(json, flags);
	if (!(flags & JSON_ENCODE_ANY) && !json_is_object(json) && !json_is_array(json))
		return NULL;
	struct jbuf b = { 0 };
	jb_value(&b, json, flags);
	jb_put(&b, "", 1);
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
