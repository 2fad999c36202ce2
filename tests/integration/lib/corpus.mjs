// The strings the typing tests send, shared by the X11 and Wayland suites:
// each must arrive byte-exact in the app that receives it.

/** A small deterministic generator (LCG) for reproducible corpora. */
export function rng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
}

/** The app corpus: 44 strings of the kinds that broke before (INPUT.md). */
export function appCorpus() {
  const rand = rng(7);
  const pick = (s) => { const a = [...s]; return a[Math.floor(rand() * a.length)]; };
  const pool = 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 .,;:!?-' +
    'éèêëàâäôöûüçñßøåæœÉÈÊÀÂÄÖÜÇÑØÅÆ' + 'αβγδεζηθλμπσφψωΑΒΓΔΘΛΠΣΦΨΩ' + 'абвгдежзийклмнопрстуфхцчшщъыьэюяЖЩЯ' +
    '中文日本語한국어你好世界' + '€£¥₹∑∫√∞≠≤≥±×÷→←⇔✓✗‰Ÿ' + '😀🎉👍🚀❤';
  let mixed = '';
  while ([...mixed].length < 2000) mixed += pick(pool);
  mixed = [...mixed].slice(0, 2000).join('');
  return [
    'hello world', 'The quick brown fox jumps over the lazy dog. 0123456789',
    '`~!@#$%^&*()-_=+[{]}\\|;:\'",<.>/?',
    'Ÿ ÿ ⇔ ✗ ‰ ✓ ☒', 'ŸÿŸÿ ⇔⇔ ✗✗ ‰‰',
    'café crème brûlée à la française', 'Grüße aus Köln, Straße ẞ',
    'Ελληνικά: Καλημέρα κόσμε', 'Съешь же ещё этих мягких французских булок, да выпей чаю',
    'АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯабвгдеёжзийклмнопрстуфхцчшщъыьэюя',
    '中文：你好，世界', '日本語：こんにちは、カタカナ ｶﾀｶﾅ', '한국어: 안녕하세요',
    'é'.repeat(60), 'Ж'.repeat(60), '😀'.repeat(40), '中'.repeat(60),
    'ÉéÉéÉéÉéÉéÉéÉéÉéÉéÉé', 'ΑαΒβΓγΔδΕεΖζΗηΘθΙιΚκ', 'ÄäÖöÜüÄäÖöÜüÄäÖöÜü', 'ǅǆǄǈǉǇ ǲǳǱ',
    'emoji 😀🎉👍🚀 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥', 'skin 👍🏽👋🏿 flags 🇫🇷🇯🇵 🏴󠁧󠁢󠁳󠁣󠁴󠁿',
    'combining: e\u0301 a\u0308 n\u0303 Z\u0351\u0344\u036a\u0310\u0362a\u0337l\u0336g\u0335o\u0334',
    'עברית שלום עולם', 'العربية مرحبا بالعالم', 'bidi: abc שלום 123 مرحبا def',
    'ไทย สวัสดี', 'हिन्दी नमस्ते', 'Tiếng Việt: Xin chào thế giới ạ ầ ẫ',
    'math ∀x∈ℝ: ∑∫√∞ ≠ ≤ ≥ ± × ÷ π ≈ ∂ ∇', 'arrows →←↑↓↔↕⇒⇐⇔↪↩',
    'currency € £ ¥ ₹ ₽ ¢ ₿', 'quotes „German“ «French» “English” ‘single’ – — …',
    'IPA ʃ ʒ θ ð ŋ ə ɛ ɔ ʊ ɪ', 'Polski: zażółć gęślą jaźń; Čeština: Příliš žluťoučký kůň',
    'Türkçe: ğüşıöç İĞÜŞÖÇ', 'tab\tseparated\tvalues\tand\tmore',
    'line one\nline two\nline three', '\tindented\n\t\tmore\n',
    'symbols ♠♣♥♦ ★☆ ☺☹ ✂✈☎ ♪♫ ©®™ °µ¶§',
    'fractions ½ ¼ ¾ ⅓ superscripts ² ³ ⁴ subscripts ₀₁₂',
    'x'.repeat(200), mixed,
  ];
}

/** The hard corpus (INPUT2.md's second one, rebuilt from its description):
 *  40 strings, long runs of distinct characters (CJK, Ext-A, Hangul, 60
 *  emoji), combining marks and NFD, emoji sequences (ZWJ, skin tones,
 *  keycaps, VS15/VS16, tag flags), right-to-left text with bidi controls,
 *  the characters de and fr put on AltGr, invisible characters, case
 *  quirks, astral and private-use characters, tab and newline mixes. */
export function hardCorpus() {
  const range = (from, n, step = 1) => Array.from({ length: n }, (_, i) => String.fromCodePoint(from + i * step)).join('');
  const emoji = range(0x1f600, 40) + range(0x1f680, 20);
  return [
    range(0x100, 207).replace(/[\u0149\u017f]/g, 'x'),   // Latin Extended-A (ŉ ſ: deprecated, case-odd)
    'ŧ'.repeat(150), 'Łł'.repeat(60),
    range(0x4e00, 250, 3),   // 250 distinct CJK
    Array.from({ length: 110 }, (_, i) => String.fromCodePoint(0x5000 + i * 5) + (i % 2 ? '，' : String.fromCodePoint(0x6000 + i))).join(''),
    range(0x3400, 210, 2),   // CJK Extension A
    range(0xac00, 120, 37),   // Hangul syllables
    'Z\u0351\u0344\u036a\u0310\u0362a\u0337\u0316l\u0336\u0317g\u0335\u0318o\u0334\u0319 h\u0313\u0314e\u0300\u0301\u0302 c\u0327o\u0308m\u0304e\u0306s\u030c',
    'Tiếng Việt: Xin chào thế giới; ạ ầ ẫ ặ ổ ữ ỵ',
    'NFD: Vie\u0302\u0323t Nam, e\u0301te\u0301, A\u030angstro\u0308m, n\u0303',
    'ZWJ: 👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥 🧑🏽‍🚀 👁️‍🗨️',
    'skin: 👍🏻👍🏼👍🏽👍🏾👍🏿 ✌🏿 🤝🏾',
    'keycaps: 1️⃣ 2️⃣ #️⃣ *️⃣ 0⃣',
    'VS15/VS16: ☺︎ ☺️ ♥︎ ♥️ ✈︎ ✈️ ⌚︎ ⌚️',
    'flags: 🏴󠁧󠁢󠁷󠁬󠁳󠁿 🏴󠁧󠁢󠁥󠁮󠁧󠁿 🇺🇳 🇪🇺 🇯🇵',
    emoji,   // 60 distinct emoji
    'עִבְרִית: בְּרֵאשִׁית בָּרָא אֱלֹהִים',
    'العَرَبِيَّة: مَرْحَبًا ١٢٣٤٥٦٧٨٩٠',
    'bidi: abc \u200fשלום\u200e 123 \u202bمرحبا\u202c \u2068ltr\u2069 def',
    'AltGr: @ # [ ] { } | \\ ~ ^ ` € µ ² ³ § ° ´',
    'de: Straße Größe ẞ ÄÖÜ äöü; fr: œuvre « ça » où àâçéèêëîïôùûüÿ',
    'invisible: a\u200bb\u200cc\u00add\u2060e\ufefff\u00a0g\u202fh',
    'case: Ÿÿ µ ß ẞ ǅǈǋ ſ ı İ ﬁﬂ \u2126 \u212a \u212b ǰ ΐ',
    'math: 𝐀𝐁𝐂 𝑎𝑏𝑐 𝔸𝔹ℂ 𝕏 𝟘𝟙𝟚',
    'old: 𐌰𐌱𐌲 (Gothic) 𓀀𓂀 (hieroglyphs) 🀄 (mahjong)',
    'private use: \ue000\ue123\uf8ff and plane 15: \u{f0000}\u{f0001}',
    '\t', '\t\t\ttabs only', 'line\nbreaks\n\nand a trailing newline\n', 'tab\tand\nnewline\tmix\n\t',
    'Ελληνικά: Ξεσκεπάζω την ψυχοφθόρα βδελυγμία',
    'Кириллица: Съешь же ещё этих мягких французских булок',
    'ไทย: เป็นมนุษย์สุดประเสริฐเลิศคุณค่า',
    'हिन्दी: ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम',
    'ქართული ენა · Հայերեն · አማርኛ · ᏣᎳᎩ',
    'symbols: ♠♣♥♦ ★☆ ☎ ✂ ♪♫ ©®™ ‰ ′″ ‹›',
    'arrows and boxes: ←↑→↓↔↕ ┌─┐│└┘ ░▒▓█',
    'fullwidth: ＡＢＣ ａｂｃ １２３ ！？ halfwidth: ｶﾀｶﾅ',
    'mixed: abc 中文 ру́сский ελληνικά 한글 😀 x²',
    'quotes: „deutsch“ «français» “english” ‘single’ ‹angle› – — …',
  ];
}
