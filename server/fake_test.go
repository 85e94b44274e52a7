package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/speech/say"
)

// fakeTranscriber stands in for a Whisper model: it emits n one-second
// segments "s0", "s1", … ("t0", … when translating) whatever the audio (it
// cannot read a listen.Input; the real model's tests are in
// real_test.go). A test can hold it after its first segment (gate), watch
// it start (started), see how it ended (ended), or have it emit its first
// segment only once the session is cancelled (late).
type fakeTranscriber struct {
	n       int           // segments; 0 means 3
	gate    chan struct{} // if set, received from after the first segment
	started chan struct{} // if set, sent to when a call starts
	ended   chan error    // if set, gets each call's result
	late    bool          // first emit after ctx is done
}

func (f *fakeTranscriber) Close() error { return nil }

func (f *fakeTranscriber) Transcribe(ctx context.Context, _ listen.Input, o listen.Options, emit func(listen.Segment) error) (_ *listen.Result, err error) {
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.ended != nil {
		defer func() { f.ended <- err }()
	}
	if o.Language == "xx" {
		return nil, fmt.Errorf("language %q: %w", o.Language, listen.ErrUnknownLanguage)
	}
	n := f.n
	if n == 0 {
		n = 3
	}
	if f.late {
		<-ctx.Done()
	}
	prefix := "s"
	if o.Translate {
		prefix = "t"
	}
	for i := range n {
		if err := emit(listen.Segment{ID: i, Start: float64(i), End: float64(i + 1), Text: fmt.Sprintf(" %s%d", prefix, i), Language: "en"}); err != nil {
			return nil, err
		}
		if i == 0 && f.gate != nil {
			select {
			case <-f.gate:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
	}
	return &listen.Result{Language: "en", LanguageName: "english", Duration: float64(n)}, nil
}

// fakeSynthesizer stands in for Kokoro: one block of 2400 samples of 0.25
// per word of the text, with the same hooks as fakeTranscriber. The word
// FAIL makes it fail there; a voice not starting af_, am_ or bm_ is
// unknown.
type fakeSynthesizer struct {
	text    string // set by the test: the fake cannot read a say.Text
	gate    chan struct{}
	started chan struct{}
	ended   chan error
}

func (f *fakeSynthesizer) Close() error { return nil }

func (f *fakeSynthesizer) Synthesize(ctx context.Context, _ say.Text, o say.Options, emit func(say.Audio) error) (_ *say.Result, err error) {
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.ended != nil {
		defer func() { f.ended <- err }()
	}
	if !strings.HasPrefix(o.Voice, "af_") && !strings.HasPrefix(o.Voice, "am_") && !strings.HasPrefix(o.Voice, "bm_") {
		return nil, fmt.Errorf("voice %q: %w", o.Voice, say.ErrUnknownVoice)
	}
	var n int64
	for i, w := range strings.Fields(f.text) {
		if w == "FAIL" {
			return nil, errors.New("synthesis broke")
		}
		block := make([]float32, 2400)
		for j := range block {
			block[j] = 0.25
		}
		if err := emit(say.Audio{Samples: block, Rate: 24000, Offset: n}); err != nil {
			return nil, err
		}
		n += int64(len(block))
		if i == 0 && f.gate != nil {
			select {
			case <-f.gate:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
	}
	return &say.Result{Samples: n, Rate: 24000, Voice: o.Voice}, nil
}

// fakes returns models for Config serving f and y under the ids the
// tests use.
func fakes(f Transcriber, y Synthesizer) ([]Model[Transcriber], []Model[Synthesizer]) {
	open := func(t Transcriber) func(context.Context) (Transcriber, error) {
		return func(context.Context) (Transcriber, error) { return t, nil }
	}
	return []Model[Transcriber]{{"whisper-tiny", open(f)}, {"whisper-base", open(&fakeTranscriber{})}},
		[]Model[Synthesizer]{{"kokoro", func(context.Context) (Synthesizer, error) { return y, nil }}}
}
