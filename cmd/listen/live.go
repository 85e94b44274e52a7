package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/speech/listen"
)

// transcribeLive is --live: speech/listen's TranscribeLive over one input,
// its events printed as they come. On a terminal the utterance being
// spoken is one line redrawn in place (committed words, then the
// tentative ones) and its final text ends the line; with --json every
// event is a JSON line; otherwise each final text is a line.
func transcribeLive(ctx context.Context, cfg *config, t *listen.Transcriber, in *input, stdout, stderr io.Writer) error {
	tty := !cfg.json && isTerminal(stdout)
	enc := json.NewEncoder(stdout)
	opts := listen.Options{Language: cfg.language, Translate: cfg.translate, Beam: cfg.beam, VAD: cfg.vad, Words: cfg.words, FinalPause: cfg.finalPause}
	if cfg.finalPause <= 0 {
		opts.FinalPause = -1 // listen's 0 is its default
	}
	res, err := t.TranscribeLive(ctx, in.in, opts, func(e listen.Event) error {
		switch {
		case cfg.json:
			return enc.Encode(liveLine(e))
		case tty && e.Kind == listen.Partial:
			// \r and erase-line: the line is redrawn until the final ends it.
			_, err := fmt.Fprintf(stdout, "\r\x1b[K%s\x1b[2m%s\x1b[0m", strings.TrimLeft(e.Committed, " "), liveTail(e))
			return err
		case e.Kind == listen.Final && e.Text() == "":
			// Whisper heard no words (a cough, a click): no line, and the
			// partial line shown is cleared.
			if tty {
				_, err := fmt.Fprint(stdout, "\r\x1b[K")
				return err
			}
		case e.Kind == listen.Final:
			prefix := ""
			if tty {
				prefix = "\r\x1b[K"
			}
			_, err := fmt.Fprintf(stdout, "%s%s\n", prefix, e.Text())
			return err
		}
		return nil
	})
	if err != nil {
		return in.runError(err)
	}
	if cfg.scorecard != "" || scorecards.Destination("") != "" {
		card := res.Scorecard()
		card.SetLabel("input", in.name)
		path, err := scorecards.Save(cfg.scorecard, card)
		if err != nil {
			return fmt.Errorf("scorecard: %w", err)
		}
		fmt.Fprintf(stderr, "listen: scorecard %s (RTF %.3f)\n", path, deref(card.RTF))
	}
	return in.truncated(res.Result)
}

// liveJSON is an event of listen --live --json: the event and, on a final
// with --words, its words as the JSON lines give a segment's.
type liveJSON struct {
	listen.Event
	Words []liveWord `json:"words,omitempty"`
}

// liveWord is a word of a final (the JSON lines' word shape).
type liveWord struct {
	Word        string  `json:"word"`
	Start       float64 `json:"start"`
	End         float64 `json:"end"`
	Probability float64 `json:"probability"`
}

// liveLine returns the JSON line of an event.
func liveLine(e listen.Event) liveJSON {
	l := liveJSON{Event: e}
	for _, s := range e.Segments {
		for _, w := range s.Words {
			l.Words = append(l.Words, liveWord{Word: strings.TrimSpace(w.Text), Start: ms(w.Start), End: ms(w.End), Probability: w.Probability})
		}
	}
	return l
}

// ms rounds seconds to the millisecond, as the JSON lines do.
func ms(s float64) float64 { return math.Round(s*1000) / 1000 }

// liveTail is a partial's tentative text, without a leading space when
// nothing is committed before it.
func liveTail(e listen.Event) string {
	if e.Committed == "" {
		return strings.TrimLeft(e.Tentative, " ")
	}
	return e.Tentative
}
