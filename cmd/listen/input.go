package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/audio/device"
	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/stage"
)

// sampleRate is the rate every model of listen runs at.
const sampleRate = 16000

// errEmptyAudio: the input holds no samples.
var errEmptyAudio = errors.New("empty audio")

// pcmInput is the audio source of a transcription run: a WAV file, raw PCM
// (--raw-rate), stdin ("-") or the microphone, as mono 16 kHz frames.
type pcmInput struct {
	name   string
	source *stage.Source[[]float32]
	// samples counts the 16 kHz samples delivered so far (for the RTF).
	samples atomic.Int64
	// cut is the truncation the input ended with (an error wrapping
	// audio.ErrTruncated), nil if it ended whole. The source sets it; read
	// it after the pipeline has finished.
	cut   error
	close func()
}

// truncated returns the truncatedError that reports p's cut, or nil.
func (p *pcmInput) truncated() error {
	if p.cut == nil {
		return nil
	}
	return &truncatedError{input: p.name, cause: p.cut, seconds: float64(p.samples.Load()) / sampleRate}
}

// openPCM opens cfg.input (or the microphone when it is "") and returns a
// pipeline source of 16 kHz mono frames, resampling other rates.
func openPCM(ctx context.Context, cfg *config, stdin io.Reader) (*pcmInput, error) {
	if cfg.input == "" {
		return openMicrophone(cfg)
	}
	in, closeIn, err := openInput(ctx, cfg.input, stdin)
	if err != nil {
		return nil, err
	}
	var r *audio.Reader
	if cfg.rawRate > 0 {
		r, err = audio.NewRawReader(in, audio.S16Mono(cfg.rawRate))
	} else {
		r, err = audio.NewWAVReader(in)
	}
	if err != nil {
		closeIn()
		return nil, fmt.Errorf("%s: %w", cfg.input, err)
	}
	if r.Frames() == 0 {
		closeIn()
		return nil, fmt.Errorf("%s: %w (the input holds no samples)", cfg.input, errEmptyAudio)
	}
	rate := r.Format().SampleRate
	var rs *resample.Resampler
	if rate != sampleRate {
		if rs, err = resample.New(rate, sampleRate); err != nil {
			closeIn()
			return nil, fmt.Errorf("%s: resampling %d Hz to %d Hz: %w", cfg.input, rate, sampleRate, err)
		}
		cfg.log.Sugar().Infof("resampling %d Hz to %d Hz", rate, sampleRate)
	}
	p := &pcmInput{name: cfg.input, close: closeIn}
	var read int64
	p.source = stage.FromSamples("input", sampleRate, func(context.Context) ([]float32, error) {
		buf := make([]float32, readSamples) // the pipeline keeps each buffer
		n, err := r.Read(buf)
		read += int64(n)
		err = endAtCut(err, &p.cut)
		if err == io.EOF && read == 0 {
			if p.cut != nil {
				return nil, fmt.Errorf("%s: %w", cfg.input, p.cut)
			}
			return nil, fmt.Errorf("%s: %w", cfg.input, errEmptyAudio)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: %w", cfg.input, err)
		}
		out := buf[:n]
		if rs != nil {
			out = rs.Process(make([]float32, 0, n*sampleRate/rate+1), buf[:n])
			if err == io.EOF {
				out = rs.Flush(out)
			}
		}
		p.samples.Add(int64(len(out)))
		return out, err
	})
	return p, nil
}

// endAtCut lets an input cut short end like a whole one: an error wrapping
// audio.ErrTruncated (the reader has returned every whole frame before the
// cut) is kept in *cut and io.EOF returned in its place.
func endAtCut(err error, cut *error) error {
	if errors.Is(err, audio.ErrTruncated) {
		*cut = err
		return io.EOF
	}
	return err
}

// openMicrophone captures from the default (or --mic) microphone at
// 16 kHz until the run is cancelled.
func openMicrophone(cfg *config) (*pcmInput, error) {
	c, err := device.OpenCapture(device.Config{Device: cfg.mic, SampleRate: sampleRate})
	if errors.Is(err, device.ErrNoAudio) {
		return nil, fmt.Errorf("no input file, and this listen cannot open a microphone: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("microphone: %w", err)
	}
	cfg.log.Sugar().Infof("listening on %q (Ctrl-C ends)", c.Info().Name)
	p := &pcmInput{name: "microphone", close: func() { c.Close() }}
	p.source = stage.FromSamples("input", sampleRate, func(ctx context.Context) ([]float32, error) {
		buf := make([]float32, sampleRate/10) // 100 ms; the pipeline keeps each buffer
		n, err := c.Read(ctx, buf)
		p.samples.Add(int64(n))
		return buf[:n], err
	})
	return p, nil
}
