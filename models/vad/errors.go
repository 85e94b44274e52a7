package vad

import "errors"

// Errors that name what was wrong with the input. They are wrapped with
// details; test with errors.Is.
var (
	// ErrSampleRate: the audio is not at a rate the model has a branch for
	// (16000 Hz, or 8000 Hz), and nothing resampled it.
	ErrSampleRate = errors.New("vad: unsupported sample rate")
	// ErrNotMono: the audio has more than one channel; mix it down first.
	ErrNotMono = errors.New("vad: audio is not mono")
	// ErrEmptyAudio: there are no samples to score.
	ErrEmptyAudio = errors.New("vad: empty audio")
	// ErrChunkSize: Detector.Prob was given a chunk of the wrong length.
	ErrChunkSize = errors.New("vad: wrong chunk size")
	// ErrNotFinite: a sample is NaN or infinite, which would poison the
	// LSTM state for the rest of the stream.
	ErrNotFinite = errors.New("vad: sample is NaN or infinite")
	// ErrClosed: the detector or model was used after Close.
	ErrClosed = errors.New("vad: use after Close")
	// ErrBadOptions: segmenter options out of range.
	ErrBadOptions = errors.New("vad: invalid segmenter options")
)
