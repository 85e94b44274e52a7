package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/speech/listen"
)

// runVADOnly streams the input through the VAD and prints each speech
// segment as it closes.
func runVADOnly(ctx context.Context, cfg *config, stdin io.Reader, stdout io.Writer) error {
	cfg.input = cfg.inputs[0]
	in, err := openInput(ctx, cfg, stdin)
	if err != nil {
		return err
	}
	defer in.close()
	d, err := listen.NewDetector(ctx, listen.Config{Device: cfg.backend, Products: cfg.products, Logger: logging.Slog(cfg.log)})
	if err != nil {
		return err
	}
	defer d.Close()
	res, err := d.Detect(ctx, in.in, cfg.vad, segmentPrinter(stdout, cfg.json))
	if err != nil {
		return in.runError(err)
	}
	return in.truncated(res)
}

// segmentPrinter returns a function that writes one line per span:
// "start end" in seconds, or a JSON object {"start":…,"end":…}.
func segmentPrinter(w io.Writer, asJSON bool) func(listen.Span) error {
	enc := json.NewEncoder(w)
	return func(s listen.Span) error {
		if asJSON {
			return enc.Encode(struct {
				Start float64 `json:"start"`
				End   float64 `json:"end"`
			}{s.Start, s.End})
		}
		_, err := fmt.Fprintf(w, "%s %s\n", strconv.FormatFloat(s.Start, 'f', -1, 64), strconv.FormatFloat(s.End, 'f', -1, 64))
		return err
	}
}
