package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/audio/device"
	"github.com/tensorforge/forge/internal/ctxio"
	"github.com/tensorforge/forge/speech/listen"
)

// input is what a mode reads: cfg.input as a speech/listen Input.
type input struct {
	name  string
	in    listen.Input
	close func()
}

// openInput opens cfg.input: a WAV file, raw PCM (--raw-rate), stdin
// ("-"), or the microphone when it is "" (opened when the run starts).
// A file's header is read now, so that bad input fails before the models
// load.
func openInput(ctx context.Context, cfg *config, stdin io.Reader) (*input, error) {
	if cfg.input == "" {
		return &input{name: "microphone", in: listen.Microphone(cfg.mic), close: func() {}}, nil
	}
	var r io.Reader
	closeIn := func() {}
	if cfg.input == "-" {
		r = ctxio.Reader(ctx, stdin) // a signal must not wait for input that may never come
	} else {
		fh, err := os.Open(cfg.input)
		if err != nil {
			return nil, err
		}
		r, closeIn = fh, func() { fh.Close() }
	}
	var in listen.Input
	var err error
	if cfg.rawRate > 0 {
		in, err = listen.Raw(r, audio.S16Mono(cfg.rawRate))
	} else {
		in, err = listen.File(r)
	}
	if err != nil {
		closeIn()
		return nil, fmt.Errorf("%s: %w", cfg.input, err)
	}
	return &input{name: cfg.input, in: in, close: closeIn}, nil
}

// runError names the input in an error of a run, and says what a
// microphone needs.
func (in *input) runError(err error) error {
	switch {
	case errors.Is(err, device.ErrNoAudio):
		return fmt.Errorf("no input file, and this listen cannot open a microphone: %w", err)
	case errors.Is(err, listen.ErrEmptyAudio) || errors.Is(err, audio.ErrTruncated):
		return fmt.Errorf("%s: %w", in.name, err)
	}
	return err
}

// truncated returns the truncatedError that reports res's cut, or nil.
func (in *input) truncated(res *listen.Result) error {
	if res.Truncated == nil {
		return nil
	}
	return &truncatedError{input: in.name, cause: res.Truncated, seconds: res.Duration}
}
