// Package vmath holds Forge's single-precision elementwise math: scalar
// functions accurate to a few ulp over the whole float32 range, and vector
// forms over slices that run 16 lanes at a time with AVX-512 where the CPU
// has it (and fall back to the scalar functions elsewhere). Softmax alone
// takes tens of millions of exponentials per Whisper utterance, so these
// loops decide a good part of the encoder's speed.
package vmath
