package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/weights"
)

// runTranscribe is listen's main mode: speech/listen's Transcriber over
// the input, printing each utterance as it is heard.
func runTranscribe(ctx context.Context, cfg *config, stdin io.Reader, stdout, stderr io.Writer) error {
	in, err := openInput(ctx, cfg, stdin)
	if err != nil {
		return err
	}
	defer in.close()
	announceFetch(stderr, cfg)
	t, err := listen.New(ctx, listen.Config{
		Model: cfg.model, Precision: cfg.precision, Device: cfg.backend, Products: cfg.products,
		NoVAD: cfg.noVAD, Logger: logging.Slog(cfg.log),
	})
	if err != nil {
		return err
	}
	defer t.Close()
	opts := listen.Options{Language: cfg.language, Translate: cfg.translate, Beam: cfg.beam, NoVAD: cfg.noVAD, VAD: cfg.vad}
	res, err := t.Transcribe(ctx, in.in, opts, transcriptPrinter(stdout, cfg))
	if err != nil {
		return in.runError(err) // a signal too: it ends a live session with 130
	}
	if cfg.scorecard != "" || scorecards.Destination("") != "" {
		card := res.Scorecard()
		path, err := scorecards.Save(cfg.scorecard, card)
		if err != nil {
			return fmt.Errorf("scorecard: %w", err)
		}
		fmt.Fprintf(stderr, "listen: scorecard %s (RTF %.3f)\n", path, deref(card.RTF))
	}
	return in.truncated(res)
}

// announceFetch says on stderr which models the run will fetch first.
func announceFetch(stderr io.Writer, cfg *config) {
	c, err := weights.NewCache()
	if err != nil {
		return // listen.New reports it
	}
	ids := []string{weights.SileroVADv6}
	if id, err := whisper.ArtifactID(cfg.model); err == nil {
		ids = append(ids, id)
	}
	for _, id := range ids {
		if !c.Ready(id) {
			fmt.Fprintf(stderr, "listen: fetching %s into %s (first use)\n", id, c.Root)
		}
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// transcriptPrinter writes each utterance's text as one line, or with
// --json one JSON object per segment.
func transcriptPrinter(w io.Writer, cfg *config) func(listen.Segment) error {
	enc := json.NewEncoder(w)
	type segment struct {
		Start        float64 `json:"start"`
		End          float64 `json:"end"`
		Text         string  `json:"text"`
		Tokens       []int32 `json:"tokens,omitempty"`
		AvgLogProb   float64 `json:"avg_logprob"`
		NoSpeechProb float64 `json:"no_speech_prob"`
	}
	var line strings.Builder // the utterance so far
	return func(s listen.Segment) error {
		if cfg.json {
			seg := segment{Start: round3(s.Start), End: round3(s.End), Text: s.Text, AvgLogProb: s.AvgLogProb, NoSpeechProb: s.NoSpeechProb}
			if cfg.tokens {
				seg.Tokens = s.Tokens
			}
			return enc.Encode(seg)
		}
		line.WriteString(s.Text)
		if !s.EndsUtterance {
			return nil
		}
		text := strings.TrimSpace(line.String())
		line.Reset()
		if text == "" {
			return nil
		}
		_, err := fmt.Fprintln(w, text)
		return err
	}
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
