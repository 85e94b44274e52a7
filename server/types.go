package server

import (
	"context"

	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/speech/say"
)

// Transcriber is what the server needs of a speech-to-text model:
// *listen.Transcriber has these methods. It must be safe for concurrent
// use; the server bounds how many calls run at once.
type Transcriber interface {
	Transcribe(ctx context.Context, in listen.Input, o listen.Options, emit func(listen.Segment) error) (*listen.Result, error)
	Close() error
}

// Synthesizer is what the server needs of a text-to-speech model:
// *say.Synthesizer has these methods. It must be safe for concurrent use.
type Synthesizer interface {
	Synthesize(ctx context.Context, text say.Text, o say.Options, emit func(say.Audio) error) (*say.Result, error)
	Close() error
}

// Model is a model the server serves under ID ("whisper-tiny", "kokoro"),
// opened by Open on first use (or by Server.Warm) and shared by every
// request from then on. Open runs once at a time; a failed Open is tried
// again by the next request.
type Model[T any] struct {
	ID   string
	Open func(ctx context.Context) (T, error)
}
