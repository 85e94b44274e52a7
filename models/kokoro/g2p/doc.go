// Package g2p is Kokoro-82M's text front-end: it turns English text into
// the phoneme strings and ids the model reads, reproducing kokoro-js 1.2.1
// (the reference the golden files were made with), and cuts long text
// into chunks the model can take one at a time.
//
// The pipeline a caller runs is text → [Chunker] → chunks, each holding
// its text, phonemes and model input ids (vocab ids wrapped in pads, at
// most vocab.MaxPhonemes phoneme tokens). Underneath, [G2P.Phonemize]
// normalises the text ([Normalize]), sends the pieces between punctuation
// to espeak-ng (package espeak) and rewrites the IPA the way Kokoro was
// trained on.
package g2p
