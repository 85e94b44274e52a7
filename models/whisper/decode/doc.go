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
// The algorithms follow openai/whisper's decoding.py and transcribe.py
// (release 20250625). Rules selects transformers.js 3.8.1's variant, which
// made the goldens in ../shared/golden/whisper-*.
package decode
