// Package g2p is Kokoro-82M's text front-end: it turns text into the
// phoneme strings and ids the model reads, and cuts long text into chunks
// the model can take one at a time. English reproduces kokoro-js 1.2.1
// (the reference the golden files were made with); Spanish, French,
// Hindi, Italian and Brazilian Portuguese follow misaki's EspeakG2P, the
// front-end Kokoro's own Python pipeline uses for them (see [Lang];
// Japanese and Mandarin need G2Ps of their own and are not handled).
//
// A caller runs text → [Chunker] → [Chunk]s, each holding its source
// text, its phonemes and the model's input ids (vocab ids wrapped in pads,
// at most vocab.MaxPhonemes phoneme tokens):
//
//	front, err := g2p.NewEspeak(g2p.AmericanEnglish) // or g2p.LangOfVoice("af_heart")
//	...
//	for chunk, err := range (&g2p.Chunker{G2P: front}).Chunks(ctx, textReader) {
//		if err != nil { ... } // ErrNoSpeech, ErrInvalidUTF8, ctx.Err(), …
//		// chunk.IDs → model input_ids; chunk.Tokens() → voice style row
//	}
//
// Underneath, [G2P.Phonemize] normalises the text ([Normalize]), sends the
// pieces between punctuation to espeak-ng (package espeak) and rewrites
// the IPA the way Kokoro was trained on; the chunker splits sentences as
// kokoro-js's stream() does. Each step is a port of kokoro-js's code,
// checked against its output (see the tests). Where kokoro-js fails, the
// chunker goes on: a word too long for one chunk (a commit hash, a
// 30-digit number, a chemical name) is cut into pieces, hex and digit
// strings read out in groups, and what still cannot be said is left out
// with a warning on [Chunker].Log.
package g2p
