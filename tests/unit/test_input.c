/* input/: the pure parts (no display): UTF-8 decoding, key names and
 * suggestions, chords, scroll notches, the records of bound spare keys. */
#include "input/input.h"
#include "input/x11_private.h"
#include "tests/unit/tst.h"

#include <X11/keysym.h>
#include <errno.h>

static int decode_all(const char* s, size_t len, uint32_t* out, size_t max,
		size_t* bad)
{
	size_t pos = 0;
	int n = 0;
	while (pos < len) {
		uint32_t cp;
		if (input_utf8_next(s, len, &pos, &cp) < 0) {
			*bad = pos;
			return -1;
		}
		if ((size_t)n < max)
			out[n] = cp;
		n++;
	}
	return n;
}

static void test_utf8(void)
{
	uint32_t cp[16];
	size_t bad = 0;
	/* "aé€😀" */
	const char ok[] = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
	TST_EQ_INT(decode_all(ok, sizeof(ok) - 1, cp, 16, &bad), 4);
	TST_EQ_INT(cp[0], 'a');
	TST_EQ_INT(cp[1], 0xE9);
	TST_EQ_INT(cp[2], 0x20AC);
	TST_EQ_INT(cp[3], 0x1F600);
	/* Boundaries. */
	TST_EQ_INT(decode_all("\x7F", 1, cp, 16, &bad), 1);
	TST_EQ_INT(decode_all("\xC2\x80", 2, cp, 16, &bad), 1);
	TST_EQ_INT(cp[0], 0x80);
	TST_EQ_INT(decode_all("\xDF\xBF", 2, cp, 16, &bad), 1);
	TST_EQ_INT(cp[0], 0x7FF);
	TST_EQ_INT(decode_all("\xEF\xBF\xBF", 3, cp, 16, &bad), 1);
	TST_EQ_INT(cp[0], 0xFFFF);
	TST_EQ_INT(decode_all("\xF4\x8F\xBF\xBF", 4, cp, 16, &bad), 1);
	TST_EQ_INT(cp[0], 0x10FFFF);
	TST_EQ_INT(decode_all("\xED\x9F\xBF", 3, cp, 16, &bad), 1);	/* U+D7FF */
	TST_EQ_INT(decode_all("\xEE\x80\x80", 3, cp, 16, &bad), 1);	/* U+E000 */
	TST_EQ_INT(decode_all("", 0, cp, 16, &bad), 0);

	/* Invalid sequences, each with the offset of the bad byte. */
	static const struct {
		const char* s;
		size_t len, offset;
	} invalid[] = {
		{ "\x80", 1, 0 },			/* stray continuation */
		{ "ab\xBF", 3, 2 },
		{ "\xC0\xAF", 2, 0 },			/* overlong '/' */
		{ "\xC1\xBF", 2, 0 },			/* overlong */
		{ "\xE0\x80\xAF", 3, 0 },		/* overlong 3-byte */
		{ "\xF0\x80\x80\xAF", 4, 0 },		/* overlong 4-byte */
		{ "\xED\xA0\x80", 3, 0 },		/* surrogate U+D800 */
		{ "\xED\xBF\xBF", 3, 0 },		/* surrogate U+DFFF */
		{ "\xF4\x90\x80\x80", 4, 0 },		/* U+110000 */
		{ "\xF5\x80\x80\x80", 4, 0 },
		{ "\xFF", 1, 0 },
		{ "\xFE", 1, 0 },
		{ "x\xC3", 2, 1 },			/* truncated */
		{ "\xE2\x82", 2, 0 },			/* truncated */
		{ "\xF0\x9F\x98", 3, 0 },		/* truncated */
		{ "\xC3\x28", 2, 0 },			/* bad continuation */
		{ "ok\xE2\x28\xA1", 5, 2 },
	};
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		size_t off = 99;
		int rc = input_utf8_validate(invalid[i].s, invalid[i].len, &off);
		TST_EQ_INT(rc, -EILSEQ);
		TST_EQ_INT(off, invalid[i].offset);
	}
	TST_EQ_INT(input_utf8_validate(ok, sizeof(ok) - 1, NULL), 0);

	/* Typable text: \n \r \t \b ESC yes, other controls no. */
	size_t off = 99;
	TST_EQ_INT(input_text_check("a\tb\nc\r\n\b\x1b", 9, &off), 0);
	TST_EQ_INT(input_text_check(ok, sizeof(ok) - 1, &off), 0);
	TST_EQ_INT(input_text_check("ab\x01", 3, &off), -EINVAL);
	TST_EQ_INT(off, 2);
	TST_EQ_INT(input_text_check("\x7f", 1, &off), -EINVAL);
	TST_EQ_INT(input_text_check("\xC2\x85", 2, &off), -EINVAL);	/* U+0085 */
	TST_EQ_INT(input_text_check("x\xC3", 2, &off), -EILSEQ);
	TST_EQ_INT(off, 1);
}

static uint32_t key(const char* name)
{
	uint32_t sym = 0;
	if (input_key_lookup(name, &sym) < 0)
		return 0;
	return sym;
}

static void test_key_names(void)
{
	/* OpenAI names. */
	TST_EQ_INT(key("CTRL"), XK_Control_L);
	TST_EQ_INT(key("ALT"), XK_Alt_L);
	TST_EQ_INT(key("SHIFT"), XK_Shift_L);
	TST_EQ_INT(key("ENTER"), XK_Return);
	TST_EQ_INT(key("ESC"), XK_Escape);
	TST_EQ_INT(key("ARROWLEFT"), XK_Left);
	TST_EQ_INT(key("ARROWDOWN"), XK_Down);
	TST_EQ_INT(key("PAGEUP"), XK_Page_Up);
	TST_EQ_INT(key("PAGEDOWN"), XK_Page_Down);
	TST_EQ_INT(key("SPACE"), XK_space);
	TST_EQ_INT(key("BACKSPACE"), XK_BackSpace);
	TST_EQ_INT(key("DELETE"), XK_Delete);
	TST_EQ_INT(key("TAB"), XK_Tab);
	TST_EQ_INT(key("CMD"), XK_Super_L);
	TST_EQ_INT(key("SUPER"), XK_Super_L);
	TST_EQ_INT(key("META"), XK_Super_L);
	TST_EQ_INT(key("WIN"), XK_Super_L);
	TST_EQ_INT(key("HOME"), XK_Home);
	TST_EQ_INT(key("END"), XK_End);
	TST_EQ_INT(key("INSERT"), XK_Insert);
	TST_EQ_INT(key("CAPSLOCK"), XK_Caps_Lock);
	TST_EQ_INT(key("OPTION"), XK_Alt_L);
	TST_EQ_INT(key("F1"), XK_F1);
	TST_EQ_INT(key("F12"), XK_F12);
	TST_EQ_INT(key("F24"), XK_F24);
	/* xdotool / X keysym names, any case. */
	TST_EQ_INT(key("ctrl"), XK_Control_L);
	TST_EQ_INT(key("Return"), XK_Return);
	TST_EQ_INT(key("return"), XK_Return);
	TST_EQ_INT(key("RETURN"), XK_Return);
	TST_EQ_INT(key("Left"), XK_Left);
	TST_EQ_INT(key("super"), XK_Super_L);
	TST_EQ_INT(key("F5"), XK_F5);
	TST_EQ_INT(key("f5"), XK_F5);
	TST_EQ_INT(key("BackSpace"), XK_BackSpace);
	TST_EQ_INT(key("backspace"), XK_BackSpace);
	TST_EQ_INT(key("Page_Up"), XK_Page_Up);
	TST_EQ_INT(key("KP_Enter"), XK_KP_Enter);
	TST_EQ_INT(key("kp_enter"), XK_KP_Enter);
	TST_EQ_INT(key("Control_R"), XK_Control_R);
	TST_EQ_INT(key("XF86AudioMute"), 0x1008FF12);
	TST_EQ_INT(key("minus"), XK_minus);
	TST_EQ_INT(key("plus"), XK_plus);
	TST_EQ_INT(key("slash"), XK_slash);
	/* Single characters keep their case. */
	TST_EQ_INT(key("a"), XK_a);
	TST_EQ_INT(key("A"), XK_A);
	TST_EQ_INT(key("/"), XK_slash);
	TST_EQ_INT(key("+"), XK_plus);
	TST_EQ_INT(key("1"), XK_1);
	TST_EQ_INT(key("\xC3\xA9"), XK_eacute);
	TST_EQ_INT(key("\xCE\xB1"), XK_Greek_alpha);
	/* Unknown. */
	uint32_t sym;
	TST_EQ_INT(input_key_lookup("ctrll", &sym), -ENOENT);
	TST_EQ_INT(input_key_lookup("", &sym), -ENOENT);
	TST_EQ_INT(input_key_lookup("NotAKeyAtAll", &sym), -ENOENT);
	TST_EQ_INT(input_key_lookup("\x01", &sym), -ENOENT);

	TST_CHECK(input_keysym_is_modifier(XK_Control_L));
	TST_CHECK(input_keysym_is_modifier(XK_Super_L));
	TST_CHECK(!input_keysym_is_modifier(XK_a));
	TST_CHECK(!input_keysym_is_modifier(XK_Caps_Lock));
}

static void test_suggest(void)
{
	char out[256];
	TST_CHECK(input_key_suggest("ctrll", out, sizeof(out), 3) == 3);
	TST_CHECK(strncmp(out, "ctrl", 4) == 0);
	input_key_suggest("entr", out, sizeof(out), 3);
	TST_CHECK(strstr(out, "enter") != NULL);
	input_key_suggest("pagup", out, sizeof(out), 3);
	TST_CHECK(strstr(out, "pageup") != NULL);
	input_key_suggest("Retrun", out, sizeof(out), 3);
	TST_CHECK(strstr(out, "return") != NULL || strstr(out, "Return") != NULL);
	input_key_suggest("backspase", out, sizeof(out), 2);
	TST_CHECK(strncmp(out, "backspace", 9) == 0);
	/* No duplicates in any case. */
	input_key_suggest("return", out, sizeof(out), 5);
	TST_CHECK(strstr(out, "return") && !strstr(strstr(out, "return") + 6, "eturn"));
	/* The error message of a chord names the closest keys. */
	struct input_chord c = { 0 };
	char err[512];
	TST_EQ_INT(input_chord_add(&c, "ctrll", err, sizeof(err)), -ENOENT);
	TST_CHECK(strstr(err, "unknown key 'ctrll'") != NULL);
	TST_CHECK(strstr(err, "ctrl") != NULL);
	TST_EQ_INT(c.n, 0);
}

static void test_chords(void)
{
	struct input_chord c;
	char err[512];
	TST_EQ_INT(input_chord_parse(&c, "ctrl+shift+t", err, sizeof(err)), 0);
	TST_EQ_INT(c.n, 3);
	TST_EQ_INT(c.keysyms[0], XK_Control_L);
	TST_EQ_INT(c.keysyms[1], XK_Shift_L);
	TST_EQ_INT(c.keysyms[2], XK_t);
	TST_EQ_INT(input_chord_parse(&c, "Return", err, sizeof(err)), 0);
	TST_EQ_INT(c.n, 1);
	TST_EQ_INT(c.keysyms[0], XK_Return);
	TST_EQ_INT(input_chord_parse(&c, "ctrl++", err, sizeof(err)), 0);
	TST_EQ_INT(c.n, 2);
	TST_EQ_INT(c.keysyms[1], XK_plus);
	TST_EQ_INT(input_chord_parse(&c, "+", err, sizeof(err)), 0);
	TST_EQ_INT(c.n, 1);
	TST_EQ_INT(c.keysyms[0], XK_plus);
	TST_EQ_INT(input_chord_parse(&c, " ctrl + c ", err, sizeof(err)), 0);
	TST_EQ_INT(c.n, 2);
	TST_EQ_INT(c.keysyms[1], XK_c);
	/* ctrl+A is ctrl+a; a lone A stays A (typed with Shift). */
	TST_EQ_INT(input_chord_parse(&c, "CTRL+A", err, sizeof(err)), 0);
	TST_EQ_INT(c.keysyms[1], XK_a);
	TST_EQ_INT(input_chord_parse(&c, "A", err, sizeof(err)), 0);
	TST_EQ_INT(c.keysyms[0], XK_A);
	TST_EQ_INT(input_chord_parse(&c, "super+F5", err, sizeof(err)), 0);
	TST_EQ_INT(c.keysyms[1], XK_F5);
	/* Errors. */
	TST_EQ_INT(input_chord_parse(&c, "", err, sizeof(err)), -EINVAL);
	TST_EQ_INT(input_chord_parse(&c, "ctrl+", err, sizeof(err)), -EINVAL);
	TST_CHECK(strstr(err, "ends with '+'") != NULL);
	TST_EQ_INT(input_chord_parse(&c, "ctrl+ +x", err, sizeof(err)), -EINVAL);
	TST_EQ_INT(input_chord_parse(&c, "ctrl+foo", err, sizeof(err)), -ENOENT);
	TST_CHECK(strstr(err, "'foo'") != NULL);
	TST_EQ_INT(input_chord_parse(&c, "a+b+c+d+e+f+g+h+i", err, sizeof(err)), -E2BIG);
	/* Arrays (OpenAI keypress) go through input_chord_add. */
	struct input_chord k = { 0 };
	TST_EQ_INT(input_chord_add(&k, "CTRL", err, sizeof(err)), 0);
	TST_EQ_INT(input_chord_add(&k, "C", err, sizeof(err)), 0);
	input_chord_normalize(&k);
	TST_EQ_INT(k.keysyms[1], XK_c);
}

static void test_notches(void)
{
	TST_EQ_INT(input_pixels_to_notches(0), 0);
	TST_EQ_INT(input_pixels_to_notches(100), 1);
	TST_EQ_INT(input_pixels_to_notches(-100), -1);
	TST_EQ_INT(input_pixels_to_notches(300), 3);
	TST_EQ_INT(input_pixels_to_notches(-300), -3);
	TST_EQ_INT(input_pixels_to_notches(1), 1);	/* any non-zero is >= 1 */
	TST_EQ_INT(input_pixels_to_notches(-20), -1);
	TST_EQ_INT(input_pixels_to_notches(149), 1);
	TST_EQ_INT(input_pixels_to_notches(150), 2);
	TST_EQ_INT(input_pixels_to_notches(250.5), 3);
	TST_CHECK(input_pixels_to_notches(1e12) > INPUT_MAX_NOTCHES);
	TST_CHECK(input_pixels_to_notches(-1e12) < -INPUT_MAX_NOTCHES);
}

/* The _DESKD_SPARE_KEYS records (reclaim.c): a key's state round-trips,
 * records deskd never writes are refused, and only keys holding what deskd
 * binds on a slot look bound. */
static void test_claims(void)
{
	struct input_claim c = { .owner = 0x1a00001, .kc = 247, .kt = { 0, 1, 2, 3 },
		.group_info = 0x01, .width = 4, .n = 4 }, d;
	long rec[INPUT_CLAIM_FIELDS];
	input__claim_pack(&c, rec);
	TST_CHECK(input__claim_unpack(rec, &d));
	TST_CHECK(d.owner == c.owner);
	TST_EQ_INT(d.kc, 247);
	TST_EQ_INT(d.kt[0], 0);
	TST_EQ_INT(d.kt[3], 3);
	TST_EQ_INT(d.group_info, 1);
	TST_EQ_INT(d.width, 4);
	TST_EQ_INT(d.n, 4);
	long bad_kc[INPUT_CLAIM_FIELDS] = { 0x1a00001, 300, 0, 0 };
	TST_CHECK(!input__claim_unpack(bad_kc, &d));
	long no_owner[INPUT_CLAIM_FIELDS] = { 0, 100, 0, 0 };
	TST_CHECK(!input__claim_unpack(no_owner, &d));
	long many_syms[INPUT_CLAIM_FIELDS] = { 0x1a00001, 100, 0, 17L << 16 };
	TST_CHECK(!input__claim_unpack(many_syms, &d));

	/* What input__slot_keysym gives: Latin-1 as is, Unicode keysyms. */
	KeySym slot[4] = { input__slot_keysym(0xe9), input__slot_keysym(0x4e2d), NoSymbol,
		input__slot_keysym(0x1f600) };
	TST_CHECK(input__looks_bound(slot, 4));
	KeySym one[1] = { input__slot_keysym('a') };
	TST_CHECK(input__looks_bound(one, 1));
	/* Empty, a layout's keysyms (XF86 keys, keypad, modifiers): not ours. */
	KeySym empty[2] = { NoSymbol, NoSymbol };
	TST_CHECK(!input__looks_bound(empty, 2));
	TST_CHECK(!input__looks_bound(empty, 0));
	KeySym media[2] = { 0x1008ff11 /* XF86AudioLowerVolume */, NoSymbol };
	TST_CHECK(!input__looks_bound(media, 2));
	KeySym kp[2] = { XK_KP_1, XK_KP_End };
	TST_CHECK(!input__looks_bound(kp, 2));
	KeySym mixed[2] = { input__slot_keysym(0xe9), XK_Shift_L };
	TST_CHECK(!input__looks_bound(mixed, 2));
	/* A small pool's keys have 4 groups of 4 levels: 16, and no more. */
	KeySym groups[16];
	for (int i = 0; i < 16; i++)
		groups[i] = input__slot_keysym(0x430 + (uint32_t)i);
	TST_CHECK(input__looks_bound(groups, 16));
	KeySym many[17];
	for (int i = 0; i < 17; i++)
		many[i] = 'a' + i;
	TST_CHECK(!input__looks_bound(many, 17));
}

int main(void)
{
	test_claims();
	test_utf8();
	test_key_names();
	test_suggest();
	test_chords();
	test_notches();
	TST_END();
}
