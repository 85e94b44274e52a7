// Package tokenizer is Whisper's text tokenizer: the byte-level BPE of GPT-2
// (multilingual vocabulary) plus Whisper's added tokens, loaded from a
// Hugging Face tokenizer.json such as the one in the Xenova/whisper-tiny
// artifact.
//
// Encode splits text with the GPT-2 pre-tokenizer (the regular expression
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+,
// implemented by hand because Go's regexp has no lookahead), maps bytes to
// the byte-level alphabet and applies the BPE merges by rank. Decode maps ids
// back to bytes and renders Whisper's special and timestamp tokens as the
// options ask. Specials gives the ids that decoding rules refer to (start of
// transcript, end of text, task, language, no-timestamps, no-speech and the
// first timestamp).
//
// A Tokenizer is immutable after Parse and safe for concurrent use.
package tokenizer
