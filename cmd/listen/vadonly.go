package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/internal/ctxio"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/stage"
	"go.uber.org/zap"
)

// readSamples is how many samples the source reads per frame (256 ms at
// 16 kHz): small enough that segments print promptly.
const readSamples = 4096

// runVADOnly streams the input through the VAD stage and prints each
// speech segment as it closes.
func runVADOnly(ctx context.Context, cfg *config, stdin io.Reader, stdout io.Writer) error {
	in, closeIn, err := openInput(ctx, cfg.input, stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	r, err := audio.NewWAVReader(in)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.input, err)
	}
	f := r.Format()
	if r.Frames() == 0 {
		return fmt.Errorf("%s: %w (the WAV holds no samples)", cfg.input, vad.ErrEmptyAudio)
	}
	if f.Channels > 1 {
		// The audio layer mixes the channels down to their mean.
		cfg.log.Info("mixing down to mono", zap.Int("channels", f.Channels))
	}

	t0 := time.Now()
	eng, err := newEngine(cfg)
	if err != nil {
		return err
	}
	m, err := vad.Open(ctx, eng)
	if err != nil {
		return err
	}
	defer m.Close()
	cfg.log.Debug("vad model loaded", since(t0), zap.Ints("rates", m.SampleRates()))
	// The model takes 16 kHz (and 8 kHz); other rates are resampled to
	// 16 kHz on the way in, so segment times are those of the file.
	rate := f.SampleRate
	var rs *resample.Resampler
	if err := m.CheckFormat(rate, 1); errors.Is(err, vad.ErrSampleRate) {
		if rs, err = resample.New(rate, vad.Rate16k); err != nil {
			return fmt.Errorf("%s: %w: %w", cfg.input, vad.ErrSampleRate, err)
		}
		cfg.log.Info("resampling", zap.Int("from", rate), zap.Int("to", vad.Rate16k))
		rate = vad.Rate16k
	}

	vadStage, err := m.NewStage(ctx, "vad", rate, cfg.vad)
	if err != nil {
		return err
	}
	var total int64
	var cut error // the truncation the input ended with, if any
	read := func(context.Context) ([]float32, error) {
		buf := make([]float32, readSamples) // the pipeline keeps each buffer
		n, err := r.Read(buf)
		total += int64(n)
		err = endAtCut(err, &cut)
		if err == io.EOF && total == 0 {
			if cut != nil {
				return nil, fmt.Errorf("%s: %w", cfg.input, cut)
			}
			return nil, fmt.Errorf("%s: %w", cfg.input, vad.ErrEmptyAudio)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: %w", cfg.input, err)
		}
		if rs != nil {
			out := rs.Process(make([]float32, 0, n*vad.Rate16k/f.SampleRate+1), buf[:n])
			if err == io.EOF {
				out = rs.Flush(out)
			}
			return out, err
		}
		return buf[:n], err
	}
	print := segmentPrinter(stdout, cfg.json)
	p := pipeline.New("listen-vad", pipeline.Logger(cfg.log))
	pcm := pipeline.From(p, stage.FromSamples("wav", rate, read))
	speech := pipeline.Then(pcm, vadStage)
	pipeline.To(speech, stage.ToFunc("print", func(_ context.Context, fr stage.Frame[vad.Speech]) error {
		return print(fr.Payload)
	}))
	if err := p.Run(ctx); err != nil {
		return err
	}
	cfg.log.Debug("done", since(t0), zap.Int64("samples", total))
	if cut != nil {
		return &truncatedError{input: cfg.input, cause: cut, seconds: seconds(total, f.SampleRate)}
	}
	return nil
}

// openInput opens the named file, or stdin for "-" (whose reads give way
// when ctx ends: a signal must not wait for input that may never come).
func openInput(ctx context.Context, name string, stdin io.Reader) (io.Reader, func(), error) {
	if name == "-" {
		return ctxio.Reader(ctx, stdin), func() {}, nil
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return fh, func() { fh.Close() }, nil
}

// segmentPrinter returns a function that writes one line per segment:
// "start end" in seconds, or a JSON object {"start":…,"end":…}.
func segmentPrinter(w io.Writer, asJSON bool) func(vad.Speech) error {
	enc := json.NewEncoder(w)
	return func(s vad.Speech) error {
		start, end := seconds(s.Start, s.Rate), seconds(s.End, s.Rate)
		if asJSON {
			return enc.Encode(struct {
				Start float64 `json:"start"`
				End   float64 `json:"end"`
			}{start, end})
		}
		_, err := fmt.Fprintf(w, "%s %s\n", strconv.FormatFloat(start, 'f', -1, 64), strconv.FormatFloat(end, 'f', -1, 64))
		return err
	}
}
