// Package kokoro is Kokoro-82M v1.0 text-to-speech written as Go on the
// graph engine: phoneme ids and a style vector in, 24 kHz audio out.
//
// The model mirrors hexgrad/kokoro (model.py, modules.py, istftnet.py) and,
// where the two differ, the onnx-community ONNX export that the golden
// outputs come from (see ../shared/golden/kokoro). One utterance runs as
// three graphs with the host in between, because two intermediate sizes are
// data: the number of audio frames (the sum of the predicted durations) and
// the harmonic source (a running phase over the upsampled F0):
//
//  1. text: ALBERT → bert_encoder → duration encoder → durations; the
//     text encoder (ids and style only);
//  2. prosody: features repeated by the durations (the alignment), the
//     shared LSTM, the F0 and energy (N) predictors;
//  3. host: the harmonic-plus-noise source (SineGen without noise, as in
//     the export) and its STFT; then the decoder and the iSTFTNet
//     generator, ending in an inverse STFT (n_fft 20, hop 5).
//
// Text comes in through the front-end sub-packages (g2p, vocab, espeak);
// [Model.Synthesize] takes the ids of one chunk (at most 510 phonemes).
package kokoro
