/* Unit tests for base/text.c (UTF-8-safe cuts and repairs of user text that
 * goes into messages, cross-checked against what jansson accepts; the file
 * name rule) and the connection-limit options of base/options.c. */
#include "base/options.h"
#include "base/text.h"
#include "tests/unit/tst.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void test_cut(void)
{
	char name[256];
	memset(name, 'x', 199);
	strcpy(name + 199, "\xc3\xa9");	/* é across byte 200 */
	TST_EQ_INT(text_cut(name, 200), 199);
	TST_EQ_INT(text_cut(name, 201), 201);
	TST_EQ_INT(text_cut(name, 500), 201);
	TST_EQ_INT(text_cut("abc", 200), 3);
	TST_EQ_INT(text_cut("abc", 2), 2);
	TST_EQ_INT(text_cut("abc", 0), 0);
	TST_EQ_INT(text_cut("", 10), 0);
	TST_EQ_INT(text_cut("a\xc3\xa9", 2), 1);
	TST_EQ_INT(text_cut("a\xc3\xa9", 3), 3);
	/* A 4-byte character is kept whole or not at all. */
	const char* emoji = "a\xf0\x9f\x98\x80z";
	for (size_t max = 1; max < 5; max++)
		TST_EQ_INT(text_cut(emoji, max), 1);
	TST_EQ_INT(text_cut(emoji, 5), 5);
	TST_EQ_INT(text_cut(emoji, 6), 6);
	/* Invalid bytes count one each. */
	TST_EQ_INT(text_cut("\xff\xff\xff", 2), 2);
	TST_EQ_INT(text_cut("\xc3" "abc", 2), 2);
}

static void test_valid(void)
{
	TST_CHECK(text_utf8_valid("", 0));
	TST_CHECK(text_utf8_valid("abc", 3));
	TST_CHECK(text_utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
	TST_CHECK(text_utf8_valid("\xf4\x8f\xbf\xbf", 4));	/* U+10FFFF */
	TST_CHECK(!text_utf8_valid("\xff", 1));
	TST_CHECK(!text_utf8_valid("\xc3", 1));			/* cut */
	TST_CHECK(!text_utf8_valid("\xc0\xaf", 2));		/* overlong */
	TST_CHECK(!text_utf8_valid("\xe0\x80\xaf", 3));		/* overlong */
	TST_CHECK(!text_utf8_valid("\xed\xa0\x80", 3));		/* surrogate (CESU) */
	TST_CHECK(!text_utf8_valid("\xf4\x90\x80\x80", 4));	/* past U+10FFFF */
	TST_CHECK(!text_utf8_valid("a\0b", 3));
	/* At each offset of three words (the ASCII runs go eight bytes at a
	 * time): a NUL, a stray continuation byte and a cut lead are found,
	 * a whole é and DEL are not errors. */
	bool ok = true;
	for (size_t at = 0; at < 24; at++) {
		char s[26];
		memset(s, 'x', sizeof(s));
		s[at] = '\0';
		ok = ok && !text_utf8_valid(s, sizeof(s));
		s[at] = (char)0x80;
		ok = ok && !text_utf8_valid(s, sizeof(s));
		s[at] = (char)0xc3;
		ok = ok && !text_utf8_valid(s, sizeof(s));
		s[at + 1] = (char)0xa9;
		ok = ok && text_utf8_valid(s, sizeof(s));
		s[at] = 0x7f;
		s[at + 1] = 'x';
		ok = ok && text_utf8_valid(s, sizeof(s));
	}
	TST_CHECK(ok);
}

static void test_sanitize(void)
{
	char out[64];
	TST_EQ_INT(text_sanitize(out, sizeof(out), "a\xff" "b"), 5);
	TST_EQ_STR(out, "a\xef\xbf\xbd" "b");
	text_sanitize(out, sizeof(out), "x\xc3");
	TST_EQ_STR(out, "x\xef\xbf\xbd");
	text_sanitize(out, sizeof(out), "\xed\xa0\x80");
	TST_EQ_STR(out, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	/* Too small: ends on a character boundary. */
	TST_EQ_INT(text_sanitize(out, 4, "\xc3\xa9\xc3\xa9"), 2);
	TST_EQ_STR(out, "\xc3\xa9");
	TST_EQ_INT(text_sanitize(out, 5, "\xc3\xa9\xc3\xa9"), 4);
	TST_EQ_INT(text_sanitize(out, 3, "a\xff"), 1);
	TST_EQ_STR(out, "a");
	TST_EQ_INT(text_sanitize(out, 1, "abc"), 0);
	TST_EQ_STR(out, "");
}

static void test_format(void)
{
	char name[256], msg[300];
	memset(name, 'x', 199);
	strcpy(name + 199, "\xc3\xa9");
	/* The D1 message: a %.200s cut inside é. */
	text_format(msg, sizeof(msg), "Unknown tool: %.200s", name);
	TST_CHECK(text_utf8_valid(msg, strlen(msg)));
	text_format(msg, sizeof(msg), "Unknown tool: %.*s", text_cut(name, 200), name);
	TST_EQ_INT(strlen(msg), 14 + 199);
	/* Cut by the buffer: ends on a boundary. */
	char small[6];
	TST_EQ_INT(text_format(small, sizeof(small), "%s", "\xc3\xa9\xc3\xa9\xc3\xa9"), 4);
	TST_EQ_STR(small, "\xc3\xa9\xc3\xa9");
	TST_EQ_INT(text_format(small, sizeof(small), "n=%d", 42), 4);
	TST_EQ_STR(small, "n=42");
	text_format(msg, sizeof(msg), "bad key '%s'", "\xff\xfe");
	TST_EQ_STR(msg, "bad key '\xef\xbf\xbd\xef\xbf\xbd'");
}

static void test_json(void)
{
	json_t* s = text_json_string("ok \xc3\xa9");
	TST_CHECK(s && strcmp(json_string_value(s), "ok \xc3\xa9") == 0);
	json_decref(s);
	s = text_json_string("%\xff");
	TST_CHECK(s && strcmp(json_string_value(s), "%\xef\xbf\xbd") == 0);
	json_decref(s);
	s = text_json_string(NULL);
	TST_CHECK(s && strcmp(json_string_value(s), "") == 0);
	json_decref(s);
}

/* Random bytes: our validity agrees with jansson's, and whatever we repair
 * or cut, jansson takes. */
static void test_against_jansson(void)
{
	static const unsigned char alphabet[] = { 'a', 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0,
		0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4,
		0xf5, 0xff };
	srand(12345);
	int agree = 0, accepted = 0, cut_ok = 0;
	const int runs = 20000;
	for (int r = 0; r < runs; r++) {
		char in[16], out[64];
		size_t len = (size_t)(rand() % 12);
		for (size_t i = 0; i < len; i++)
			in[i] = (char)alphabet[rand() % (int)sizeof(alphabet)];
		in[len] = '\0';
		json_t* j = json_stringn(in, len);
		agree += text_utf8_valid(in, len) == (j != NULL);
		json_decref(j);
		text_sanitize(out, sizeof(out), in);
		j = json_string(out);
		accepted += j != NULL;
		json_decref(j);
		/* A valid string cut anywhere stays valid. */
		if (text_utf8_valid(in, len)) {
			size_t max = len ? (size_t)rand() % len : 0;
			cut_ok += text_utf8_valid(in, (size_t)text_cut(in, max));
		} else {
			cut_ok++;
		}
	}
	TST_EQ_INT(agree, runs);
	TST_EQ_INT(accepted, runs);
	TST_EQ_INT(cut_ok, runs);
}

/* The connection limits: defaults, flags, environment, bad values. */
static void test_limit_options(void)
{
	struct options o;
	char err[256];
	char** plain = (char**)(const char*[]){ "deskd" };
	unsetenv("DESKD_MAX_CONNECTIONS");
	TST_EQ_INT(options_parse(&o, 1, plain, err, sizeof(err)), 0);
	TST_EQ_INT(o.max_connections, 512);
	TST_EQ_INT(o.max_connections_per_ip, 128);
	TST_EQ_INT(o.header_timeout_ms, 10000);
	options_deinit(&o);
	char** flags = (char**)(const char*[]){ "deskd", "--max-connections", "64", "--max-connections-per-ip=8",
		"--header-timeout", "1500" };
	TST_EQ_INT(options_parse(&o, 6, flags, err, sizeof(err)), 0);
	TST_EQ_INT(o.max_connections, 64);
	TST_EQ_INT(o.max_connections_per_ip, 8);
	TST_EQ_INT(o.header_timeout_ms, 1500);
	options_deinit(&o);
	setenv("DESKD_MAX_CONNECTIONS", "32", 1);
	TST_EQ_INT(options_parse(&o, 1, plain, err, sizeof(err)), 0);
	TST_EQ_INT(o.max_connections, 32);
	options_deinit(&o);
	unsetenv("DESKD_MAX_CONNECTIONS");
	char** zero = (char**)(const char*[]){ "deskd", "--max-connections", "0" };
	TST_EQ_INT(options_parse(&o, 3, zero, err, sizeof(err)), -EINVAL);
	TST_CHECK(strstr(err, "--max-connections") != NULL);
	options_deinit(&o);
	char** fast = (char**)(const char*[]){ "deskd", "--header-timeout", "5" };
	TST_EQ_INT(options_parse(&o, 3, fast, err, sizeof(err)), -EINVAL);
	options_deinit(&o);
}

/* File names: every C0/C1 control, the separators and the bidirectional
 * controls are found with their offset and code point; everything else
 * that is valid UTF-8 passes (non-Latin scripts, emoji, ZWJ, combining
 * marks, U+00A0, U+200B, U+FFFD). */
static void test_name_check(void)
{
	size_t at = 99;
	uint32_t cp = 0;
	static const char* const good[] = {
		"", "notes.txt", "dir/a b.txt", "h\xc3\xa9llo", "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d",
		"\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7", "\xf0\x9f\x98\x80",
		"\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7", "e\xcc\x81", "\xc2\xa0",
		"\xe2\x80\x8b", "\xef\xbf\xbd", "~!@#$%^&()[]{}'\\",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const char* g = good[i];
		enum text_name_problem p = text_name_check(g, strlen(g), &at, &cp);
		if (p != TEXT_NAME_OK)
			fprintf(stderr, "good[%zu] refused: %d at %zu, U+%04X\n", i, p, at, (unsigned)cp);
		TST_EQ_INT(p, TEXT_NAME_OK);
	}
	for (uint32_t c = 1; c < 0x20; c++) {
		char s[4] = { 'a', (char)c, 'b', 0 };
		TST_EQ_INT(text_name_check(s, 3, &at, &cp), TEXT_NAME_CONTROL);
		TST_EQ_INT(at, 1);
		TST_EQ_INT(cp, c);
	}
	TST_EQ_INT(text_name_check("a\0b", 3, &at, &cp), TEXT_NAME_CONTROL);
	TST_EQ_INT(cp, 0);
	TST_EQ_INT(text_name_check("\x7f", 1, &at, &cp), TEXT_NAME_CONTROL);
	for (uint32_t c = 0x80; c <= 0x9f; c++) {
		char s[3] = { (char)(0xc0 | (c >> 6)), (char)(0x80 | (c & 0x3f)), 0 };
		TST_EQ_INT(text_name_check(s, 2, &at, &cp), TEXT_NAME_CONTROL);
		TST_EQ_INT(cp, c);
	}
	TST_EQ_INT(text_name_check("\xc2\xa0", 2, &at, &cp), TEXT_NAME_OK);	/* U+00A0: fine */
	static const uint32_t bidi[] = { 0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d,
		0x202e, 0x2066, 0x2067, 0x2068, 0x2069 };
	for (size_t i = 0; i < sizeof(bidi) / sizeof(bidi[0]); i++) {
		uint32_t c = bidi[i];
		char s[8];
		if (c < 0x800)
			snprintf(s, sizeof(s), "x%c%c", (char)(0xc0 | (c >> 6)), (char)(0x80 | (c & 0x3f)));
		else
			snprintf(s, sizeof(s), "x%c%c%c", (char)(0xe0 | (c >> 12)),
					(char)(0x80 | ((c >> 6) & 0x3f)), (char)(0x80 | (c & 0x3f)));
		TST_EQ_INT(text_name_check(s, strlen(s), &at, &cp), TEXT_NAME_BIDI);
		TST_EQ_INT(at, 1);
		TST_EQ_INT(cp, c);
	}
	TST_EQ_INT(text_name_check("\xe2\x80\xa8", 3, &at, &cp), TEXT_NAME_CONTROL);	/* U+2028 */
	TST_EQ_INT(text_name_check("\xe2\x80\xa9", 3, &at, &cp), TEXT_NAME_CONTROL);	/* U+2029 */
	TST_EQ_INT(text_name_check("\xe2\x80\x8d", 3, &at, &cp), TEXT_NAME_OK);	/* ZWJ */
	TST_EQ_INT(text_name_check("\xe2\x81\xa5", 3, &at, &cp), TEXT_NAME_OK);	/* U+2065 */
	TST_EQ_INT(text_name_check("\xe2\x81\xaa", 3, &at, &cp), TEXT_NAME_OK);	/* U+206A */
	/* Invalid UTF-8: the byte. */
	TST_EQ_INT(text_name_check("ab\xff", 3, &at, &cp), TEXT_NAME_INVALID_UTF8);
	TST_EQ_INT(at, 2);
	TST_EQ_INT(cp, 0xff);
	TST_EQ_INT(text_name_check("\xc3", 1, &at, &cp), TEXT_NAME_INVALID_UTF8);	/* cut */
	TST_EQ_INT(text_name_check("\xc0\xaf", 2, &at, &cp), TEXT_NAME_INVALID_UTF8);	/* overlong / */
	TST_EQ_INT(text_name_check("\xed\xa0\x80", 3, &at, &cp), TEXT_NAME_INVALID_UTF8);
	char buf[64];
	TST_EQ_STR(text_name_problem_describe(TEXT_NAME_BIDI, 0x202e, buf, sizeof(buf)),
			"U+202E (a bidirectional control character)");
	TST_EQ_STR(text_name_problem_describe(TEXT_NAME_CONTROL, 0x0a, buf, sizeof(buf)),
			"U+000A (a control character)");
	TST_EQ_STR(text_name_problem_describe(TEXT_NAME_INVALID_UTF8, 0xff, buf, sizeof(buf)),
			"byte 0xFF (not UTF-8)");
}

int main(void)
{
	test_name_check();
	test_cut();
	test_valid();
	test_sanitize();
	test_format();
	test_json();
	test_against_jansson();
	test_limit_options();
	TST_END();
}
