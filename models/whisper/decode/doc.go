// Package decode turns Whisper decoder logits into text: the search
// (greedy, beam search, sampling with best-of), the logit rules (blank and
// token suppression, timestamp rules in OpenAI's and transformers.js's
// versions), language detection, and OpenAI's transcribe loop over a long
// recording (30-second windows, seek by the last timestamp, temperature
// fallback on compression ratio and log-probability, no-speech skipping).
//
// The neural network stays behind two small interfaces. A Decoder is the
// text decoder bound to one encoded window: it holds the cross-attention
// keys and values and one self-attention cache per hypothesis, takes tokens
// and writes logits into buffers the caller owns, so greedy decoding
// allocates nothing per step, and beam search reorders the caches with
// Reorder. An Audio is a recording that can encode any window of itself.
// The model package implements both; everything here is tested with
// scripted fakes.
//
// Wiring, for the model package and cmd/listen:
//
//	tok, err := tokenizer.Parse(tokenizerJSON) // the artifact's tokenizer.json
//	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(tok))
//	opts.Language = "en" // "" detects it on the first window
//	opts.BeamSize = 5    // optional; greedy by default
//	tr, err := decode.Transcribe(ctx, audio, tok, opts) // audio implements decode.Audio
//	for _, s := range tr.Segments { fmt.Println(s.Start, s.End, s.Text) }
//
// For the parity tests against the goldens, decode one window greedily with
// the rules that made them:
//
//	res, err := decode.Decode(ctx, dec, tok, decode.TransformersJSOptions("en", timestamps))
//	// res.Tokens == golden ids without the prefix and the final <|endoftext|>
//
// The algorithms follow openai/whisper's decoding.py and transcribe.py
// (release 20250625). Rules selects transformers.js 3.8.1's variant, which
// made the goldens in ../shared/golden/whisper-*.
package decode
