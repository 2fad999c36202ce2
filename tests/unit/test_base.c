/* Unit tests for base/: SHA-256 (FIPS 180-4 examples), HMAC-SHA-256 (the
 * RFC 4231 test cases), the strict Base64 decoder, the activity events
 * (actors, background events, the thumbnail ring), fs_make_dir, and
 * parallel_run. */
#include "base/base64.h"
#include "base/events.h"
#include "base/fs.h"
#include "base/parallel.h"
#include "base/sha256.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void hex(const uint8_t* b, size_t n, char* out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static size_t unhex(const char* s, uint8_t* out)
{
	size_t n = 0;
	for (; s[0] && s[1]; s += 2)
		sscanf(s, "%2hhx", &out[n++]);
	return n;
}

static void check_sha(const void* data, size_t len, const char* want)
{
	uint8_t d[SHA256_SIZE];
	char h[2 * SHA256_SIZE + 1];
	sha256(data, len, d);
	hex(d, sizeof(d), h);
	TST_EQ_STR(h, want);
}

static void test_sha256(void)
{
	check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char* m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	check_sha(m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* One million 'a', fed in uneven pieces to exercise the buffering. */
	struct sha256 s;
	sha256_init(&s);
	char chunk[997];
	memset(chunk, 'a', sizeof(chunk));
	size_t left = 1000000;
	for (size_t piece = 1; left; piece = piece % 997 + 1) {
		size_t n = piece < left ? piece : left;
		sha256_update(&s, chunk, n);
		left -= n;
	}
	uint8_t d[SHA256_SIZE];
	char h[2 * SHA256_SIZE + 1];
	sha256_final(&s, d);
	hex(d, sizeof(d), h);
	TST_EQ_STR(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* 55, 56 and 64 bytes: the padding boundaries. */
	char a64[64];
	memset(a64, 'a', sizeof(a64));
	check_sha(a64, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	check_sha(a64, 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
	check_sha(a64, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

/* RFC 4231 section 4: test cases 1, 2, 3, 4, 6 and 7 (5 is truncated output). */
static void test_hmac(void)
{
	static const struct { const char* key; const char* data; const char* mac; } cases[] = {
		{ "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
		  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ "4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
		  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
		{ "0102030405060708090a0b0c0d0e0f10111213141516171819",
		  "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
		  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368204b6579204669727374",
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b2d73697a65206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a6520646174612e20546865206b6579206e6565647320746f20626520686173686564206265666f7265206265696e6720757365642062792074686520484d414320616c676f726974686d2e",
		  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t key[256], data[512], mac[SHA256_SIZE];
		size_t kn = unhex(cases[i].key, key), dn = unhex(cases[i].data, data);
		hmac_sha256(key, kn, data, dn, mac);
		char h[2 * SHA256_SIZE + 1];
		hex(mac, sizeof(mac), h);
		TST_EQ_STR(h, cases[i].mac);
	}
	uint8_t a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 2, 3, 5 };
	TST_CHECK(sha256_equal(a, a, 4));
	TST_CHECK(!sha256_equal(a, b, 4));
	TST_CHECK(sha256_equal(a, b, 3));
}

static void check_decode(const char* text, const char* want)
{
	size_t n = 0;
	char* out = base64_decode(text, strlen(text), &n);
	if (!want) {
		TST_CHECK(out == NULL);
		if (out)
			fprintf(stderr, "  \"%s\" decoded, should not\n", text);
	} else {
		TST_CHECK(out != NULL);
		if (out) {
			TST_EQ_INT(n, strlen(want));
			TST_EQ_STR(out, want);
		}
	}
	free(out);
}

static void test_base64_decode(void)
{
	check_decode("", "");
	check_decode("SGVsbG8=", "Hello");
	check_decode("SGVsbG8sIOS4lueVjA==", "Hello, \xe4\xb8\x96\xe7\x95\x8c");
	check_decode("IHBhZGRlZCA=", " padded ");
	check_decode("bGluZTEKbGluZTI=", "line1\nline2");
	check_decode("PT9iYXNlNjQ/bGl0ZXJhbD89", "=?base64?literal?=");
	check_decode("Zm9v", "foo");
	check_decode("Zg==", "f");
	check_decode("SGVsbG8", NULL);		/* padding missing */
	check_decode("SGVs!!!bG8=", NULL);	/* not the alphabet */
	check_decode("SGVsbG8==", NULL);
	check_decode("S=VsbG8=", NULL);		/* padding inside */
	check_decode("Zh==", NULL);		/* non-zero trailing bits */
	check_decode("Zm9=", NULL);
	check_decode("Zm9v\n", NULL);
	check_decode("Zm 9", NULL);
	check_decode("====", NULL);
	/* Round trip of every byte value. */
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	for (size_t len = 0; len <= 256; len += 37) {
		size_t elen, dlen;
		char* e = base64_encode(all, len, &elen);
		unsigned char* d = base64_decode(e, elen, &dlen);
		TST_CHECK(d && dlen == len && memcmp(d, all, len) == 0);
		free(e);
		free(d);
	}
}

static int seen_all, seen_some;
static void count_all(void* ud, json_t* ev) { (void)ud; (void)ev; seen_all++; }
static void count_some(void* ud, json_t* ev) { (void)ud; (void)ev; seen_some++; }

/* Events name their actor; background ones reach only subscribe_all and stay
 * out of the history; other events keep their shape; thumbnails are a ring. */
static void test_events(void)
{
	events_deinit();
	int all = events_subscribe_all(count_all, NULL);
	int some = events_subscribe(count_some, NULL, 0);
	TST_CHECK(all > 0 && some > 0);
	struct events_actor agent = { EVENTS_ACTOR_AGENT, "claude-code", "s-1", "mcp", false };
	uint64_t id = events_tool_start(&agent, "windows", NULL);
	events_tool_end(id, &agent, "windows", "ok", 1.5, NULL, NULL);
	struct events_actor refresh = { EVENTS_ACTOR_AGENT, "dashboard", NULL, "rest", true };
	uint64_t bg = events_tool_start(&refresh, "windows", NULL);
	events_tool_end(bg, &refresh, "windows", "ok", 1.0, NULL, NULL);
	struct events_actor person = { EVENTS_ACTOR_PERSON, NULL, "tab-7", "live", false };
	/* extra cannot replace the shape */
	events_emit(&person, "input", "typed 12 characters",
			json_pack("{s:s, s:i, s:s}", "kind", "forged", "characters", 12, "actor", "x"));
	events_emit(NULL, "control_release", "released after 300 s idle", NULL);
	events_control("take_control", "dashboard", "taken_over", NULL);
	TST_EQ_INT(seen_all, 7);
	TST_EQ_INT(seen_some, 5);
	json_t* h = events_history();
	TST_EQ_INT(json_array_size(h), 5);
	json_t* ctl = json_array_get(h, 4);
	TST_EQ_STR(json_string_value(json_object_get(ctl, "kind")), "control");
	TST_EQ_STR(json_string_value(json_object_get(ctl, "tool")), "take_control");
	TST_EQ_STR(json_string_value(json_object_get(ctl, "status")), "taken_over");
	TST_EQ_STR(json_string_value(json_object_get(ctl, "summary")), "take control: taken_over");
	TST_EQ_STR(json_string_value(json_object_get(json_object_get(ctl, "actor"), "kind")), "person");
	json_t* a = json_object_get(json_array_get(h, 1), "actor");
	TST_EQ_STR(json_string_value(json_object_get(a, "kind")), "agent");
	TST_EQ_STR(json_string_value(json_object_get(a, "name")), "claude-code");
	TST_EQ_STR(json_string_value(json_object_get(a, "session")), "s-1");
	TST_EQ_STR(json_string_value(json_object_get(json_array_get(h, 1), "kind")), "tool");
	TST_EQ_STR(json_string_value(json_object_get(json_array_get(h, 1), "source")), "mcp");
	json_t* in = json_array_get(h, 2);
	TST_EQ_STR(json_string_value(json_object_get(in, "kind")), "input");
	TST_EQ_STR(json_string_value(json_object_get(in, "summary")), "typed 12 characters");
	TST_EQ_INT(json_integer_value(json_object_get(in, "characters")), 12);
	TST_EQ_STR(json_string_value(json_object_get(json_object_get(in, "actor"), "kind")), "person");
	TST_EQ_STR(json_string_value(json_object_get(json_object_get(in, "actor"), "name")), "live");
	json_t* rel = json_array_get(h, 3);
	TST_EQ_STR(json_string_value(json_object_get(json_object_get(rel, "actor"), "kind")), "deskd");
	TST_EQ_STR(json_string_value(json_object_get(rel, "source")), "deskd");
	json_decref(h);
	events_unsubscribe(all);
	events_unsubscribe(some);

	void* data;
	size_t len;
	TST_EQ_INT(events_thumbnail_put(1, "", 0), -EINVAL);
	for (uint64_t i = 100; i < 100 + EVENTS_THUMBNAILS + 1; i++)
		TST_EQ_INT(events_thumbnail_put(i, &i, sizeof(i)), 0);
	TST_EQ_INT(events_thumbnail_get(100, &data, &len), -ENOENT);
	TST_EQ_INT(events_thumbnail_get(101, &data, &len), 0);
	TST_CHECK(len == sizeof(uint64_t) && *(uint64_t*)data == 101);
	free(data);
	events_deinit();
}

/* mkdir -p: parents too, 0700 each, an existing one kept; a file in the
 * way is an error. */
static void test_make_dir(void)
{
	char base[] = "/tmp/deskd-test-fs-XXXXXX";
	TST_CHECK(mkdtemp(base) != NULL);
	char deep[256], mid[256], file[256];
	snprintf(mid, sizeof(mid), "%s/a", base);
	snprintf(deep, sizeof(deep), "%s/a/b/c", base);
	snprintf(file, sizeof(file), "%s/f", base);
	mode_t old = umask(022);
	TST_EQ_INT(fs_make_dir(deep), 0);
	struct stat st;
	TST_CHECK(stat(deep, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	TST_CHECK(stat(mid, &st) == 0 && (st.st_mode & 0777) == 0700);
	TST_EQ_INT(fs_make_dir(deep), 0);	/* exists: fine */
	FILE* f = fopen(file, "w");
	TST_CHECK(f != NULL);
	if (f)
		fclose(f);
	char under_file[300];
	snprintf(under_file, sizeof(under_file), "%s/x", file);
	TST_EQ_INT(fs_make_dir(under_file), -ENOTDIR);
	umask(old);
	char sub[300];
	snprintf(sub, sizeof(sub), "%s/b/c", mid);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/b", mid);
	rmdir(sub);
	rmdir(mid);
	unlink(file);
	rmdir(base);
}

/* parallel_run: each job once, whichever thread takes it; a shared job
 * (size 0) on at most n threads; the jobs' results are there when it
 * returns, also while other threads call it at the same time (they run
 * alone then) and when helpers start late (the caller's stack frame is
 * gone by the time one would look: ASan in make check). */
struct pjob {
	atomic_int runs;
	uint64_t sum;
};

static void pjob_run(void* ud)
{
	struct pjob* j = ud;
	uint64_t s = 0;
	for (int i = 0; i < 2000; i++)
		s += (uint64_t)i * i;
	j->sum = s;
	atomic_fetch_add(&j->runs, 1);
}

struct pshared {
	atomic_int next, takers;
	uint64_t part[64];
};

static void pshared_run(void* ud)
{
	struct pshared* p = ud;
	atomic_fetch_add(&p->takers, 1);
	for (;;) {
		int i = atomic_fetch_add(&p->next, 1);
		if (i >= 64)
			return;
		p->part[i] = (uint64_t)i + 1;
	}
}

static void* parallel_caller(void* ud)
{
	atomic_int* bad = ud;
	for (int round = 0; round < 2000; round++) {
		struct pjob jobs[PARALLEL_MAX_THREADS];
		memset(jobs, 0, sizeof(jobs));
		int n = 1 + round % PARALLEL_MAX_THREADS;
		parallel_run(pjob_run, jobs, sizeof(jobs[0]), n);
		for (int i = 0; i < PARALLEL_MAX_THREADS; i++)
			if (atomic_load(&jobs[i].runs) != (i < n) || (i < n && jobs[i].sum != 2664667000ull))
				atomic_fetch_add(bad, 1);
		struct pshared sh;
		memset(&sh, 0, sizeof(sh));
		parallel_run(pshared_run, &sh, 0, n);
		uint64_t total = 0;
		for (int i = 0; i < 64; i++)
			total += sh.part[i];
		if (total != 64 * 65 / 2 || atomic_load(&sh.takers) < 1 || atomic_load(&sh.takers) > n)
			atomic_fetch_add(bad, 1);
	}
	return NULL;
}

static void test_parallel(void)
{
	TST_CHECK(parallel_threads() >= 1 && parallel_threads() <= PARALLEL_MAX_THREADS);
	parallel_run(pjob_run, NULL, sizeof(struct pjob), 0);	/* nothing to do */
	atomic_int bad = 0;
	parallel_caller(&bad);
	TST_CHECK(atomic_load(&bad) == 0);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		TST_CHECK(pthread_create(&t[i], NULL, parallel_caller, &bad) == 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	TST_CHECK(atomic_load(&bad) == 0);
}

int main(void)
{
	test_parallel();
	test_events();
	test_make_dir();
	test_sha256();
	test_hmac();
	test_base64_decode();
	TST_END();
}
