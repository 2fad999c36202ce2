/* Unit tests for base/jsonmem.h: the JSON parse budget (RELIABILITY D7).
 * A dense body is refused before it costs more than its cap; long strings
 * and ordinary tool calls pass; parses in progress share the total budget
 * (concurrent parses past it are BUSY, one that can never fit is
 * TOO_COSTLY); the counters come back to zero. */
#include "base/jsonmem.h"
#include "tests/unit/tst.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static char* repeat(const char* head, const char* unit, size_t n, const char* tail, size_t* len)
{
	size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
	char* s = malloc(hl + ul * n + tl + 1);
	memcpy(s, head, hl);
	for (size_t i = 0; i < n; i++)
		memcpy(s + hl + i * ul, unit, ul);
	memcpy(s + hl + n * ul, tail, tl + 1);
	*len = hl + ul * n + tl;
	return s;
}

static void test_limits(void)
{
	json_error_t err;
	enum jsonmem_status st;
	size_t len;

	/* 1 MiB of "[]," would be about 40 MiB as a tree. */
	char* dense = repeat("[", "[],", (1 << 20) / 3, "[]]", &len);
	json_t* v = jsonmem_load(dense, len, 0, &err, &st);
	TST_CHECK(v == NULL);
	TST_EQ_INT(st, JSONMEM_TOO_COSTLY);
	TST_CHECK(strstr(err.text, "memory to parse") != NULL);
	TST_EQ_INT(jsonmem_in_flight(), 0);
	free(dense);

	/* A long string costs about twice itself: fine. */
	char* str = repeat("{\"text\":\"", "abcdefgh", 1 << 20, "\"}", &len);
	v = jsonmem_load(str, len, 0, &err, &st);
	TST_CHECK(v != NULL);
	TST_EQ_INT(st, JSONMEM_OK);
	TST_EQ_INT(strlen(json_string_value(json_object_get(v, "text"))), 8 << 20);
	json_decref(v);
	free(str);

	/* 100 actions: far below the cap. */
	char* calls = repeat("{\"actions\":[", "{\"type\":\"move\",\"x\":1,\"y\":1},", 99,
			"{\"type\":\"move\",\"x\":1,\"y\":1}]}", &len);
	v = jsonmem_load(calls, len, JSON_REJECT_DUPLICATES, &err, &st);
	TST_CHECK(v != NULL);
	TST_EQ_INT(json_array_size(json_object_get(v, "actions")), 100);
	json_decref(v);
	free(calls);

	/* Invalid JSON is still jansson's error. */
	v = jsonmem_load("{\"a\":", 5, 0, &err, &st);
	TST_CHECK(v == NULL);
	TST_EQ_INT(st, JSONMEM_INVALID);
	TST_EQ_INT(jsonmem_in_flight(), 0);

	/* Objects made outside a parse are not counted (nor refused). */
	json_t* big = json_array();
	for (int i = 0; i < 100000; i++)
		json_array_append_new(big, json_array());
	TST_EQ_INT(json_array_size(big), 100000);
	TST_EQ_INT(jsonmem_in_flight(), 0);
	json_decref(big);

	TST_CHECK(jsonmem_cap(1000) == 8000 + JSONMEM_SLACK);
}

/* Threads parsing 768 KiB strings (at least that each while parsed) at
 * once with a 3 MiB total: some parses must wait (BUSY), none is too
 * costly, and everything adds up again. */
static const char* shared_text;
static size_t shared_len;
static atomic_int n_ok, n_busy, n_other;
static atomic_bool stop_all;

static void* parser(void* arg)
{
	(void)arg;
	while (!atomic_load(&stop_all)) {
		json_error_t err;
		enum jsonmem_status st;
		json_t* v = jsonmem_load(shared_text, shared_len, 0, &err, &st);
		json_decref(v);
		atomic_fetch_add(st == JSONMEM_OK ? &n_ok : st == JSONMEM_BUSY ? &n_busy : &n_other, 1);
	}
	return NULL;
}

static void test_total(void)
{
	size_t len;
	char* str = repeat("{\"t\":\"", "abcdefgh", (768 << 10) / 8, "\"}", &len);
	shared_text = str;
	shared_len = len;
	pthread_t t[6];
	for (int i = 0; i < 6; i++)
		pthread_create(&t[i], NULL, parser, NULL);
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		struct timespec ms = { 0, 10 * 1000000L };
		nanosleep(&ms, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((atomic_load(&n_busy) == 0 || atomic_load(&n_ok) < 10)
			&& now.tv_sec - start.tv_sec < 20);
	atomic_store(&stop_all, true);
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	TST_CHECK(atomic_load(&n_busy) > 0);
	TST_CHECK(atomic_load(&n_ok) >= 10);
	TST_EQ_INT(atomic_load(&n_other), 0);
	TST_EQ_INT(jsonmem_in_flight(), 0);
	free(str);

	/* One parse that alone exceeds the total is too costly, not busy. */
	char* alone = repeat("{\"t\":\"", "abcdefgh", (4 << 20) / 8, "\"}", &len);
	json_error_t err;
	enum jsonmem_status st;
	TST_CHECK(jsonmem_load(alone, len, 0, &err, &st) == NULL);
	TST_EQ_INT(st, JSONMEM_TOO_COSTLY);
	TST_CHECK(strstr(err.text, "--max-json-memory") != NULL);
	free(alone);
}

/* jsonmem_dumps gives json_dumps' bytes: escapes, a NUL inside a string,
 * UTF-8 passed through, keys in insertion order, reals in jansson's text,
 * every type, roots that are not containers. */
static void same_dump(json_t* j, size_t flags)
{
	char* want = json_dumps(j, flags);
	char* got = jsonmem_dumps(j, flags);
	TST_CHECK(want && got && strcmp(want, got) == 0);
	if (want && got && strcmp(want, got) != 0)
		fprintf(stderr, "  want %s\n  got  %s\n", want, got);
	free(want);
	free(got);
}

static void test_dumps(void)
{
	char controls[40];
	for (int i = 0; i < 32; i++)
		controls[i] = (char)(i + 1 == 32 ? 0x7f : i + 1);
	json_t* j = json_pack("{s:s, s:s%, s:[i, I, f, f, b, b, n], s:{}, s:[], s:s, s:f}",
			"plain", "hello, world", "controls", controls, (size_t)32,
			"types", 0, (json_int_t)-9007199254740993LL, 1.0 / 3, 1e300, 1, 0,
			"empty object", "empty array",
			"quo\"te\\key\n", "Grüße ½ 日本 😀 \"q\" \\ / \x7f",
			"whole real", 2.0);
	json_object_set_new(j, "nul", json_stringn("a\0b", 3));
	json_object_set_new(j, "z first-added-last", json_true());
	json_object_set_new(j, "a", json_pack("[{s:[s]}]", "deep", "x"));
	same_dump(j, JSON_COMPACT);
	same_dump(j, JSON_COMPACT | JSON_REAL_PRECISION(15));
	same_dump(j, JSON_COMPACT | JSON_ENCODE_ANY);
	same_dump(j, JSON_INDENT(2));	/* not compact: jansson's own */
	same_dump(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);

	/* A long string with escapes spread through it. */
	size_t n = 1 << 20;
	char* big = malloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i % 997 == 0 ? '\n' : i % 1009 == 0 ? '"' : 'a' + (int)(i % 26));
	j = json_pack("{s:s%}", "text", big, n);
	same_dump(j, JSON_COMPACT);
	json_decref(j);
	free(big);

	json_t* s = json_string("root \"string\"");
	same_dump(s, JSON_COMPACT | JSON_ENCODE_ANY);
	TST_CHECK(jsonmem_dumps(s, JSON_COMPACT) == NULL);	/* as json_dumps */
	TST_CHECK(json_dumps(s, JSON_COMPACT) == NULL);
	json_decref(s);
	json_t* r = json_real(0.1);
	same_dump(r, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
	json_decref(r);
}

/* jsonmem_load parses valid text to the tree json_loadb makes, and fails
 * invalid text with json_loadb's error: escapes, surrogate pairs, UTF-8 of
 * every length, numbers at their limits, duplicates with and without the
 * flag, nesting past the fast parse's depth, and broken text of each kind. */
static void same_parse(const char* text, size_t flags)
{
	json_error_t e1, e2;
	enum jsonmem_status st;
	json_t* want = json_loadb(text, strlen(text), flags, &e1);
	json_t* got = jsonmem_load(text, strlen(text), flags, &e2, &st);
	bool same = want ? got && json_equal(want, got) && st == JSONMEM_OK
			: !got && st == JSONMEM_INVALID && strcmp(e1.text, e2.text) == 0
				&& e1.position == e2.position;
	if (same && want) {
		char* a = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
		char* b = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
		same = a && b && strcmp(a, b) == 0;	/* reals and key order too */
		free(a);
		free(b);
	}
	TST_CHECK(same);
	if (!same)
		fprintf(stderr, "  parse of %.80s (flags %zx) differs: %s / %s\n", text, flags,
				want ? "valid" : e1.text, got ? "valid" : e2.text);
	json_decref(want);
	json_decref(got);
}

static void test_parse(void)
{
	static const char* const texts[] = {
		"{}", "[]", " \t\r\n{ \"a\" : 1 , \"b\":[ ] }\n", "[1,-0,0.5,-1.25e-3,1E2,1e-400,9223372036854775807,-9223372036854775808]",
		"{\"t\":true,\"f\":false,\"n\":null,\"s\":\"\"}",
		"{\"esc\":\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u20AC \\ud83d\\ude00 \\u0041\"}",
		"{\"utf8\":\"é € 😀 ½ שלום\",\"k é\":\"v\"}", "{\"a\":{\"b\":{\"c\":[[[{}]]]}}}",
		"{\"dup\":1,\"dup\":2}", "{\"z\":1,\"a\":2,\"m\":3}",
		/* Not JSON, or not what jansson takes: each must fail the same way. */
		"", " ", "{", "[1,]", "{\"a\":}", "{\"a\" 1}", "{a:1}", "[01]", "[1.]", "[.5]", "[1e]", "[-]",
		"[9223372036854775808]", "[-9223372036854775809]", "[1e400]", "[tru]", "[nul]",
		"\"top-level string\"", "1", "{} x", "[\"\\u0000\"]", "[\"\\ud83d\"]", "[\"\\ude00\"]",
		"[\"\\ud83d\\u0041\"]", "[\"\\x\"]", "[\"\\u12G4\"]", "[\"raw\ttab\"]", "[\"\xc3\"]",
		"[\"\xc0\xaf\"]", "[\"\xed\xa0\x80\"]", "[\"\xf4\x90\x80\x80\"]", "[\"\xff\"]", "[\"open",
		"{\"\\u0000\":1}", "[1 2]", "[\"a\",]", "{\"a\":1,}", "[NaN]", "[Infinity]", "[+1]",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		same_parse(texts[i], 0);
		same_parse(texts[i], JSON_REJECT_DUPLICATES);
	}
	/* Deeper than the fast parse goes, and deeper than jansson goes. */
	for (int depth = 60; depth <= 2100; depth += depth < 70 ? 1 : 2040 - 70) {
		char* t = malloc((size_t)depth * 2 + 1);
		memset(t, '[', (size_t)depth);
		memset(t + depth, ']', (size_t)depth);
		t[2 * depth] = '\0';
		same_parse(t, 0);
		free(t);
	}
	/* A long string, escapes spread through it, as a clipboard_write body. */
	size_t n = 1 << 20;
	char* big = malloc(n + 32);
	size_t o = (size_t)sprintf(big, "{\"text\":\"");
	while (o < n) {
		const char* piece = o % 7 ? "Grüße 日本 😀 " : "\\n\\\"\\u00e9";
		o += (size_t)sprintf(big + o, "%s", piece);
	}
	strcpy(big + o, "\"}");
	same_parse(big, JSON_REJECT_DUPLICATES);
	free(big);
}

/* The eight-byte scans (strings' plain runs, UTF-8's ASCII runs): each
 * byte that ends a run (every control, '"', '\\', DEL, a lead and a stray
 * continuation byte, and NUL) at each offset of three words, in a dump and
 * in a parse, both as jansson does them. */
static void test_word_scans(void)
{
	static const unsigned char ends[] = { 0x01, 0x08, 0x0a, 0x1f, '"', '\\', 0x7f, 0x80,
		0xbf, 0xc3, 0xff, 0x20, 0x21, 0x5b, 0x5d };
	for (size_t e = 0; e < sizeof(ends); e++)
		for (size_t at = 0; at < 24; at++) {
			char str[26];
			memset(str, 'a' + (int)(at % 26), sizeof(str));
			str[at] = (char)ends[e];
			if (ends[e] == 0xc3)
				str[at + 1] = (char)0xa9;	/* a whole é */
			json_t* j = json_pack("{s:s%}", "t", str, sizeof(str));
			if (j)	/* NULL for bad UTF-8, which a tree never holds */
				same_dump(j, JSON_COMPACT);
			json_decref(j);
			char text[64];
			int len = snprintf(text, sizeof(text), "{\"t\":\"%.*s\"}", (int)sizeof(str), str);
			if (len > 0 && ends[e] != '\\' && ends[e] != '"')
				same_parse(text, 0);	/* raw controls and bad UTF-8 fail alike */
		}
	/* A NUL inside the string: dumped as \u0000 by both. */
	char nul[20] = "0123456789abcdefghi";
	for (size_t at = 0; at < sizeof(nul) - 1; at++) {
		char c = nul[at];
		nul[at] = '\0';
		json_t* j = json_pack("{s:s%}", "t", nul, sizeof(nul) - 1);
		same_dump(j, JSON_COMPACT);
		json_decref(j);
		nul[at] = c;
	}
}

int main(void)
{
	test_parse();
	test_word_scans();
	test_dumps();
	test_limits();
	jsonmem_init(3 << 20);
	TST_EQ_INT(jsonmem_total(), 3 << 20);
	test_total();
	TST_END();
}
