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
