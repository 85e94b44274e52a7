// Regenerates reference_encodings.json with the tokenizer that made the
// goldens (@huggingface/transformers 3.8.1). Run from a folder where that
// package is installed:
//
//   node gen_reference.mjs /path/to/dir/holding/whisper-tiny/tokenizer.json > reference_encodings.json
//
// The strings avoid U+0085 and U+FEFF, the two runes on which JavaScript's \s
// and Unicode White_Space (Oniguruma, Go) disagree.
import { AutoTokenizer, env } from '@huggingface/transformers';

env.allowRemoteModels = false;
env.localModelPath = process.argv[2];
const tok = await AutoTokenizer.from_pretrained('whisper-tiny');

const fixed = [
  "", " ", "  ", "a", " a", "  a", "a ", "a  ", "\t", "\n\n", " \n a", "a\tb", "a \tb", "a\t b",
  "Hello world", " Hello world", "Hello  world", "Hello   world", "Hello\nworld", "Hello \n world",
  "don't", "Don't", "I'll", "we've", "they're", "I'm", "she'd", "it's", "IT'S", "'s", "''s", "'", "x'y", "?'s", "'re'", "'ll'",
  "3.14", "1,000,000", " 42", "  42", "abc123def", "123abc", "١٢٣ ٤٥", "Ⅻ ½ ²", "x² + y²",
  "...", "?!", " !!!", "a!b?c", "(hello)", "[music]", "♪♪", " ♪ la la ♪", "--", "—", "“quoted”",
  "café", "cafe\u0301", "naïve", "Ça va?", "Größe", "İstanbul", "ǅ",
  "Привет, мир!", "Γειά σου", "مرحبا بالعالم", "שלום", "नमस्ते दुनिया", "こんにちは世界", "你好，世界。", "안녕하세요",
  "🙂", " 🙂", "👍🏽", "👨‍👩‍👧", "a🙂b", "🇩🇪",
  "\u00a0a", "a\u00a0b", "\u3000x", "a\u2003b", "a\u2028b",
  "<|endoftext|>", "<|0.00|> hi<|1.00|>", "<|en|><|transcribe|>", "<|", "|>", "<|nonexistent|>",
  " And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.",
  "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX! 0123456789",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "\r\n", "a\r\nb", "\x00\x01\x7f", "tab\tseparated\tvalues", "end with space ",
];

// A seeded xorshift so the random strings are stable.
let s = 0x9e3779b9;
function rnd(n) { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s % n; }
const ranges = [
  [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0x09, 0x0d], [0x20, 0x20], [0x27, 0x27],
  [0xa0, 0xff], [0x100, 0x17f], [0x300, 0x36f], [0x391, 0x3c9], [0x410, 0x44f],
  [0x5d0, 0x5ea], [0x620, 0x64a], [0x660, 0x669], [0x905, 0x939], [0x966, 0x96f],
  [0x2000, 0x200a], [0x2028, 0x2029], [0x2150, 0x218b], [0x2640, 0x267f], [0x3000, 0x3000],
  [0x3041, 0x3096], [0x4e00, 0x4fff], [0xac00, 0xad00], [0x1f300, 0x1f64f], [0x1d400, 0x1d4ff],
];
const random = [];
for (let i = 0; i < 300; i++) {
  const len = 1 + rnd(24);
  let str = "";
  for (let j = 0; j < len; j++) {
    const [lo, hi] = ranges[rnd(ranges.length)];
    str += String.fromCodePoint(lo + rnd(hi - lo + 1));
  }
  random.push(str);
}

const cases = [...fixed, ...random].map(text => ({
  text,
  ids: Array.from(tok.encode(text, { add_special_tokens: false })),
}));
process.stdout.write(JSON.stringify({ tool: "@huggingface/transformers 3.8.1 AutoTokenizer(whisper-tiny).encode(text, {add_special_tokens: false})", cases }, null, 0) + "\n");
