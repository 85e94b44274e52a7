package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/internal/outfile"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/transcript"
	"github.com/tensorforge/forge/weights"
)

// runTranscribe is listen's main mode: speech/listen's Transcriber over
// each input in turn (the models loaded once), writing each utterance as
// it is heard in the chosen format. It stops at the first input that
// fails; an input cut short is transcribed as far as it goes, and reported
// after the rest.
func runTranscribe(ctx context.Context, cfg *config, stdin io.Reader, stdout, stderr io.Writer) error {
	inputs := cfg.inputs
	if len(inputs) == 0 {
		inputs = []string{""} // the microphone
	}
	// The first input's header is read before the models load, so that a
	// bad file fails at once.
	cfg.input = inputs[0]
	first, err := openInput(ctx, cfg, stdin)
	if err != nil {
		return err
	}
	defer func() {
		if first != nil {
			first.close()
		}
	}()
	announceFetch(stderr, cfg)
	t, err := listen.New(ctx, listen.Config{
		Model: cfg.model, Precision: cfg.precision, Device: cfg.backend, Products: cfg.products,
		NoVAD: cfg.noVAD, EncodeLength: cfg.span, Logger: logging.Slog(cfg.log),
		WarmUp: cfg.live, // the first partial and final would wait for it
	})
	if err != nil {
		return err
	}
	defer t.Close()
	var cut error
	for i, name := range inputs {
		in := first
		first = nil
		if i > 0 {
			cfg.input = name
			if in, err = openInput(ctx, cfg, stdin); err != nil {
				return err
			}
		}
		err := transcribeInput(ctx, cfg, t, in, stdout, stderr)
		in.close()
		var tr *truncatedError
		switch {
		case errors.As(err, &tr):
			if cut != nil {
				fmt.Fprintf(stderr, "listen: warning: %v\n", cut) // run reports the last one
			}
			cut = err
		case err != nil:
			return err
		}
	}
	return cut
}

// transcribeInput transcribes one opened input to its destination.
func transcribeInput(ctx context.Context, cfg *config, t *listen.Transcriber, in *input, stdout, stderr io.Writer) (err error) {
	if cfg.live {
		return transcribeLive(ctx, cfg, t, in, stdout, stderr)
	}
	w := stdout
	if dest := outputPath(cfg, in.name); dest != "" {
		f, err := outfile.Create(dest)
		if err != nil {
			return fmt.Errorf("output: %w", err)
		}
		defer func() {
			var cut *truncatedError
			if err == nil || errors.As(err, &cut) {
				if cerr := f.Commit(); cerr != nil {
					err = fmt.Errorf("output: %w", cerr)
				}
				return
			}
			f.Abort()
		}()
		w = f
	}
	tw, err := transcript.NewWriter(w, cfg.format, transcript.Options{Tokens: cfg.tokens})
	if err != nil {
		return err
	}
	prog := newProgress(cfg, stderr, in.name)
	opts := listen.Options{Language: cfg.language, Translate: cfg.translate, Beam: cfg.beam, NoVAD: cfg.noVAD, VAD: cfg.vad, Words: cfg.words}
	res, err := t.Transcribe(ctx, in.in, opts, func(s listen.Segment) error {
		prog.at(s.End)
		return tw.Write(segment(s))
	})
	if err != nil {
		return in.runError(err) // a signal too: it ends a live session with 130
	}
	prog.done(res.Duration)
	info := transcript.Info{Task: "transcribe", Language: res.LanguageName, Duration: res.Duration}
	if cfg.translate {
		info.Task = "translate"
	}
	tw.SetInfo(info)
	if err := tw.Close(); err != nil {
		return err
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
	return in.truncated(res)
}

// segment converts a speech/listen segment to the transcript package's.
func segment(s listen.Segment) transcript.Segment {
	out := transcript.Segment{
		ID: s.ID, Seek: s.Seek, Start: s.Start, End: s.End, Text: s.Text, Tokens: s.Tokens,
		Language: s.Language, Temperature: s.Temperature, AvgLogProb: s.AvgLogProb,
		CompressionRatio: s.CompressionRatio, NoSpeechProb: s.NoSpeechProb, EndsUtterance: s.EndsUtterance,
	}
	for _, w := range s.Words {
		out.Words = append(out.Words, transcript.Word{Text: w.Text, Start: w.Start, End: w.End, Probability: w.Probability})
	}
	return out
}

// outputPath returns the file an input's transcript goes to: -o itself,
// or with -o naming a folder the input's base name with the format's
// extension in it; "" for stdout.
func outputPath(cfg *config, input string) string {
	if !cfg.outDir {
		return cfg.out
	}
	base := filepath.Base(input)
	switch input {
	case "":
		base = "microphone"
	case "-":
		base = "stdin"
	}
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return filepath.Join(cfg.out, base+cfg.format.Extension())
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

// progress reports how far through an input the transcript is, on
// stderr: on a terminal one line redrawn in place with a carriage return;
// otherwise a line each time another tenth of the input is done, and none
// when the input's length is not known (stdin, the microphone).
type progress struct {
	w      io.Writer // nil: no reporting
	tty    bool
	name   string
	total  float64 // seconds; 0 when unknown
	tenths int     // tenths reported (not on a terminal)
}

func newProgress(cfg *config, stderr io.Writer, name string) *progress {
	if !cfg.progress {
		return &progress{}
	}
	return &progress{w: stderr, tty: isTerminal(stderr), name: name, total: inputSeconds(cfg, name)}
}

// at reports that the transcript has reached sec seconds of the input.
func (p *progress) at(sec float64) {
	switch {
	case p.w == nil:
	case p.tty && p.total > 0:
		fmt.Fprintf(p.w, "\rlisten: %s %3.0f%% (%.1f of %.1f s)", p.name, 100*min(sec/p.total, 1), sec, p.total)
	case p.tty:
		fmt.Fprintf(p.w, "\rlisten: %s %.1f s", p.name, sec)
	case p.total > 0:
		for n := int(10 * min(sec/p.total, 1)); p.tenths < n; {
			p.tenths++
			fmt.Fprintf(p.w, "listen: %s %d%% (%.1f of %.1f s)\n", p.name, 10*p.tenths, sec, p.total)
		}
	}
}

// done reports the end of the input, sec seconds long.
func (p *progress) done(sec float64) {
	if p.w == nil {
		return
	}
	if p.total == 0 {
		p.total = sec
	}
	p.at(sec)
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// inputSeconds returns the length of a file input from its header (or its
// size, for raw PCM), 0 when it cannot be known beforehand.
func inputSeconds(cfg *config, name string) float64 {
	if name == "" || name == "-" {
		return 0
	}
	f, err := os.Open(name)
	if err != nil {
		return 0
	}
	defer f.Close()
	if cfg.rawRate > 0 {
		fi, err := f.Stat()
		if err != nil {
			return 0
		}
		return float64(fi.Size()/2) / float64(cfg.rawRate)
	}
	r, err := audio.Open(f)
	if err != nil || r.Frames() <= 0 {
		return 0
	}
	return float64(r.Frames()) / float64(r.SampleRate())
}
