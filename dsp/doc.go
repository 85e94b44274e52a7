// Package dsp is the signal layer of Forge: the transforms between raw
// audio and model tensors. It holds no code itself; see its subpackages:
// fft (mixed-radix FFT plans), stft (torch.stft/istft), mel (Whisper
// log-mel features), resample (band-limited sample-rate conversion) and
// frame (fixed-size framing of a PCM stream).
package dsp
