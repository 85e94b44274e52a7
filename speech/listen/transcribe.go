package listen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/stage"
)

// Errors of Options.
var (
	// ErrUnknownLanguage: Options.Language names no language the model
	// knows.
	ErrUnknownLanguage = errors.New("unknown language")
	// ErrBadOptions: an option out of its range (a beam width, a
	// temperature, VAD settings).
	ErrBadOptions = errors.New("bad transcription options")
)

// maxWindow is the longest stretch of audio transcribed as one utterance
// when VAD segments of a file are grouped: Whisper's window.
const maxWindow = 30 * SampleRate

// Options are one run's settings. The zero value transcribes in the
// language detected on the first utterance, greedily, with Whisper's
// temperature fallback and DefaultVAD.
type Options struct {
	// Language is the spoken language, a code ("en") or a name
	// ("english"); "" or "auto" detects it on the first utterance and
	// keeps it for the rest of the run.
	Language string
	// Translate produces English text whatever the language spoken.
	Translate bool
	// Beam searches with this many beams (0: greedy; at most 32).
	Beam int
	// Temperature 0 decodes greedily, retrying a window that comes out
	// repetitive or improbable at 0.2, 0.4, … 1.0 (OpenAI's transcribe);
	// a value in (0, 1] samples at that temperature only.
	Temperature float64
	// Prompt is text that came before the audio (names, spelling, style),
	// fed to the first window.
	Prompt string
	// NoVAD transcribes the whole input as one recording in 30-s windows
	// instead of the VAD's utterances; its segments come when the input
	// has ended.
	NoVAD bool
	// Live transcribes each utterance as soon as the VAD closes it
	// instead of grouping a file's utterances into 30-s windows. Streams
	// and microphones are always live.
	Live bool
	// VAD cuts the audio into utterances; the zero value means DefaultVAD.
	VAD vad.Options
	// FinalPause is, in TranscribeLive, how long the speaker must pause
	// before the words so far are final: a Final hands them over at once,
	// though the VAD keeps the utterance open until VAD.MinSilence, and
	// what is said after the pause is the next utterance, read as the
	// continuation of the same audio. 0 means DefaultFinalPause; a
	// negative value, or one no shorter than VAD.MinSilence, hands over
	// a Final only when the VAD closes an utterance. Transcribe ignores it.
	FinalPause time.Duration
	// Words times each word (Segment.Words) from the decoder's
	// cross-attention (whisper.Audio.Words): each window is encoded once
	// more and its text fed through the decoder once, which costs about
	// what a second encoder pass does.
	Words bool
}

// Word is one word of a segment with its time.
type Word struct {
	// Text is the word with Whisper's leading space and its punctuation.
	Text string
	// Start and End are seconds from the start of the input.
	Start, End float64
	// Probability is the mean probability of the word's tokens.
	Probability float64
}

// Segment is a stretch of the transcript between two timestamps, final
// when it is handed over.
type Segment struct {
	// ID numbers the run's segments from 0.
	ID int
	// Utterance numbers the utterances (VAD groups, or the whole input
	// with NoVAD) from 0; EndsUtterance marks its last segment, so a
	// caller printing one line per utterance knows when the line is
	// complete. An utterance Whisper found silent yields no segment.
	Utterance     int
	EndsUtterance bool
	// Start and End are seconds from the start of the input.
	Start, End float64
	// Text is the segment's text, with Whisper's leading space; empty
	// for a segment of no duration or only whitespace.
	Text string
	// Tokens are the ids sampled, timestamps included (nil when Text is
	// empty).
	Tokens []int32
	// Seek is the 10-ms mel frame of the input where the segment's
	// 30-s window starts.
	Seek int
	// Language is the language code the segment was decoded in.
	Language string
	// Temperature, AvgLogProb, CompressionRatio and NoSpeechProb describe
	// the decoding of the segment's window (the avg_logprob etc. of
	// OpenAI's verbose_json).
	Temperature      float64
	AvgLogProb       float64
	CompressionRatio float64
	NoSpeechProb     float64
	// Words are the segment's words with their times, with Options.Words
	// (nil otherwise, or for a segment without text).
	Words []Word
}

// Result describes a finished run.
type Result struct {
	// Language is the language code the run decoded in (given, or
	// detected on its first utterance; "" when no utterance was heard),
	// LanguageName its English name ("english").
	Language, LanguageName string
	// Duration is the seconds of input audio read.
	Duration float64
	// Utterances counts the utterances transcribed.
	Utterances int
	// Truncated is non-nil when the input was cut short (a file whose
	// data ends before its header says): the segments cover the audio
	// before the cut, and Truncated wraps audio.ErrTruncated.
	Truncated error
	// Metrics are the pipeline's per-stage metrics.
	Metrics pipeline.Metrics
	// EndOfUtterance is the time from the VAD closing an utterance to its
	// last segment being handed over (the latency a live user feels).
	EndOfUtterance stage.Summary

	card func() *scorecards.Card
}

// Scorecard returns the run's forge.scorecard/v1 card: the models, stage
// metrics, RTF, audio seconds, and the engine's counters (cumulative over
// every run on the engine, so exact for a process that ran one).
func (r *Result) Scorecard() *scorecards.Card { return r.card() }

// utterance is a stretch of 16 kHz audio transcribed as one recording.
type utterance struct {
	start   int64     // its first sample in the input stream
	samples []float32 // owned by the receiver
	closed  time.Time // when its end was known (the VAD closed it)
}

// encoded is an utterance whose first window the encoder stage has run.
type encoded struct {
	utterance
	audio *whisper.Audio
}

// heard is the decoder stage's result for one utterance.
type heard struct {
	start  int64
	closed time.Time
	tr     *decode.Transcript
	words  [][]Word // per segment of tr, with Options.Words
}

// decodeOptions turns Options into the decoder's settings.
func (t *Transcriber) decodeOptions(o Options) (decode.TranscribeOptions, error) {
	tok := t.whisp.Tokenizer()
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(tok))
	switch {
	case o.Beam < 0 || o.Beam > 32:
		return opts, fmt.Errorf("%w: beam %d (want 0, greedy, to 32)", ErrBadOptions, o.Beam)
	case !(o.Temperature >= 0 && o.Temperature <= 1):
		return opts, fmt.Errorf("%w: temperature %v (want 0 to 1)", ErrBadOptions, o.Temperature)
	}
	opts.BeamSize = o.Beam
	if o.Temperature > 0 {
		opts.Temperatures = []float64{o.Temperature}
	}
	if o.Translate {
		opts.Task = tokenizer.Translate
	}
	if lang := strings.ToLower(strings.TrimSpace(o.Language)); lang != "auto" && lang != "" {
		sp := tok.Specials()
		l, err := sp.Language(lang)
		if err != nil {
			return opts, fmt.Errorf("%w %q (want a code such as en, de, ja, or a name such as german)", ErrUnknownLanguage, o.Language)
		}
		opts.Language = l.Code
	}
	if p := strings.TrimSpace(o.Prompt); p != "" {
		ids, err := tok.Encode(" " + p)
		if err != nil {
			return opts, fmt.Errorf("%w: prompt: %w", ErrBadOptions, err)
		}
		opts.InitialPrompt = ids
	}
	return opts, nil
}

// vadOptions returns the VAD settings of o, checked.
func vadOptions(o vad.Options) (vad.Options, error) {
	if o == (vad.Options{}) {
		o = DefaultVAD()
	}
	if err := o.Validate(); err != nil {
		return o, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	return o, nil
}

// Transcribe reads in to its end and calls emit with each segment, in
// order, as soon as it is final; emit runs on one of the run's goroutines,
// one call at a time. An error from emit stops the run and is returned.
// The options are checked before any audio is read (errors wrapping
// ErrBadOptions or ErrUnknownLanguage); bad audio fails with an error
// wrapping ErrEmptyAudio or one of package audio's Err* values. A run
// stopped by ctx returns ctx's error (or its cause).
func (t *Transcriber) Transcribe(ctx context.Context, in Input, o Options, emit func(Segment) error) (*Result, error) {
	opts, err := t.decodeOptions(o)
	if err != nil {
		return nil, err
	}
	vo, err := vadOptions(o.VAD)
	if err != nil {
		return nil, err
	}
	noVAD := o.NoVAD || t.vad == nil
	src, err := in.open(ctx, []int{SampleRate}, t.log)
	if err != nil {
		return nil, err
	}
	defer src.close()

	p := pipeline.New("listen", pipeline.Logger(t.zlog))
	pcm := pipeline.From(p, src.src)
	var utts *pipeline.Port[utterance]
	if noVAD {
		utts = pipeline.Then(pcm, stage.Process[[]float32, utterance]("collect", &collector{}))
	} else {
		vadStage, err := t.vad.NewStage(ctx, "vad", SampleRate, vo)
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		span := maxWindow
		if src.live || o.Live {
			span = 0 // each utterance as soon as the VAD closes it
		}
		hist := newHistory(historySamples)
		src.tap = hist.add
		speech := pipeline.Then(pcm, vadStage)
		utts = pipeline.Then(speech, stage.Process[vad.Speech, utterance]("group", &grouper{span: span, fill: maxFill, hist: hist}))
	}
	m, tok := t.whisp, t.whisp.Tokenizer()
	enc := pipeline.Then(utts, stage.Map("encode", func(ctx context.Context, u utterance) (encoded, error) {
		a, err := m.NewAudio(u.samples)
		if err != nil {
			return encoded{}, err
		}
		if err := a.Prepare(ctx); err != nil {
			a.Close()
			return encoded{}, err
		}
		return encoded{utterance: u, audio: a}, nil
	}), pipeline.Buffer(1))
	// Each utterance is decoded with the text of those before it as its
	// prompt, as Whisper's own long-form loop feeds one window's text to
	// the next: punctuation and spelling then run on across utterances.
	prompt := opts.InitialPrompt
	dec := pipeline.Then(enc, stage.Map("decode", func(ctx context.Context, e encoded) (heard, error) {
		defer e.audio.Close()
		withPrompt := opts
		withPrompt.InitialPrompt = prompt
		tr, err := decode.Transcribe(ctx, e.audio, tok, withPrompt)
		if err != nil {
			return heard{}, err
		}
		prompt = nextPrompt(prompt, tr.Segments)
		var words [][]Word
		if o.Words {
			if words, err = timeWords(ctx, e.audio, tr, opts.Task); err != nil {
				return heard{}, err
			}
		}
		if opts.Language == "" && tr.Language != "" {
			opts.Language = tr.Language // detected once, kept for the utterances after
			t.log.Info("language detected", "language", tr.Language)
		}
		return heard{start: e.start, closed: e.closed, tr: tr, words: words}, nil
	}), pipeline.Buffer(1))

	var eou stage.Histogram
	var utterances, ids int
	var lang atomic.Value // string: the language of the last utterance
	// The sink keeps the name the listen command's printer had, so that
	// scorecards from before and after compare stage by stage.
	pipeline.To(dec, stage.ToFunc("print", func(_ context.Context, f stage.Frame[heard]) error {
		h := f.Payload
		base := float64(h.start) / SampleRate
		seek := int(h.start / decode.HopLength)
		for i, s := range h.tr.Segments {
			seg := Segment{
				ID: ids, Utterance: utterances, EndsUtterance: i == len(h.tr.Segments)-1,
				Start: base + s.Start, End: base + s.End, Text: s.Text, Tokens: s.Tokens,
				Seek: seek + s.Seek, Language: h.tr.Language, Temperature: s.Temperature,
				AvgLogProb: s.AvgLogProb, CompressionRatio: s.CompressionRatio, NoSpeechProb: s.NoSpeechProb,
			}
			if h.words != nil {
				for _, w := range h.words[i] {
					seg.Words = append(seg.Words, Word{Text: w.Text, Start: base + w.Start, End: base + w.End, Probability: w.Probability})
				}
				seg.spanWords()
			}
			ids++
			if err := emit(seg); err != nil {
				return err
			}
		}
		utterances++
		lang.Store(h.tr.Language)
		eou.Record(time.Since(h.closed))
		return nil
	}))
	if err := p.Run(ctx); err != nil {
		return nil, err
	}
	res := &Result{Duration: src.seconds(), Utterances: utterances, Truncated: src.cut, Metrics: p.Metrics(), EndOfUtterance: eou.Summary()}
	if l, _ := lang.Load().(string); l != "" {
		res.setLanguage(l, tok)
	}
	res.card = func() *scorecards.Card {
		card := t.scorecard("listen", res, !noVAD)
		card.SetLabel("beam", fmt.Sprint(o.Beam))
		if s := res.EndOfUtterance; s.Count > 0 {
			card.SetLabel("utterances", fmt.Sprint(s.Count))
			card.SetLabel("eou_to_text_p50_ms", fmt.Sprintf("%.1f", float64(s.P50.Microseconds())/1000))
			card.SetLabel("eou_to_text_max_ms", fmt.Sprintf("%.1f", float64(s.Max.Microseconds())/1000))
		}
		return card
	}
	return res, nil
}

// timeWords times the words of an utterance's transcript, window by
// window (the segments of a window share its Seek), in seconds from the
// utterance's start, clamped to the window's audio.
func timeWords(ctx context.Context, a *whisper.Audio, tr *decode.Transcript, task tokenizer.Task) ([][]Word, error) {
	out := make([][]Word, len(tr.Segments))
	for i := 0; i < len(tr.Segments); {
		seek := tr.Segments[i].Seek
		j := i
		var toks [][]int32
		for ; j < len(tr.Segments) && tr.Segments[j].Seek == seek; j++ {
			toks = append(toks, tr.Segments[j].Tokens)
		}
		frames := min(decode.WindowFrames, a.Frames()-seek)
		ws, err := a.Words(ctx, seek, frames, tr.Language, task, toks)
		if err != nil {
			return nil, err
		}
		offset := float64(seek) / decode.FramesPerSecond
		end := float64(frames) / decode.FramesPerSecond
		for k, segWords := range ws {
			for _, w := range segWords {
				out[i+k] = append(out[i+k], Word{Text: w.Text, Start: offset + min(w.Start, end), End: offset + min(w.End, end), Probability: w.Probability})
			}
		}
		i = j
	}
	return out, nil
}

// spanWords makes a segment with timed words start at its first word and
// end at its last, as openai-whisper's add_word_timestamps does: the
// alignment places words more precisely than the decoder's timestamp
// tokens, and a word must not lie outside its segment.
func (s *Segment) spanWords() {
	if len(s.Words) > 0 {
		s.Start, s.End = s.Words[0].Start, s.Words[len(s.Words)-1].End
	}
}

// maxFill is the longest gap between two VAD segments of one utterance
// that the grouper fills with the audio as recorded (2 s); longer gaps are
// silenced, so that Whisper does not read long stretches of non-speech.
const maxFill = 2 * SampleRate

// maxPrompt bounds the tokens of previous text carried to the next
// utterance: the decoder keeps the last TextContext/2−1 of them anyway.
const maxPrompt = decode.TextContext / 2

// nextPrompt returns the prompt for the utterance after one transcribed
// into segs: the previous prompt and segs' tokens, or segs' alone after a
// window decoded above temperature 0.5 (a likely garbled text, which
// Whisper's long-form loop does not carry on either).
func nextPrompt(prev []int32, segs []decode.Segment) []int32 {
	out := slices.Clone(prev)
	for _, s := range segs {
		if s.Temperature > 0.5 {
			out = out[:0]
			continue
		}
		out = append(out, s.Tokens...)
	}
	if len(out) > maxPrompt {
		out = out[len(out)-maxPrompt:]
	}
	return out
}

// grouper turns VAD segments into utterances. With span > 0 (files) it
// joins consecutive segments while they fit in span samples from the first
// one's start, so that each Whisper window holds as much speech as it
// can; with span 0 (live input) every segment is an utterance of its own,
// emitted as soon as the VAD closes it. A gap of up to fill samples
// between joined segments gets the input's own audio from hist (see
// history); longer gaps, or any when hist is nil, are silenced.
type grouper struct {
	span    int
	fill    int
	hist    *history
	cur     *utterance
	end     int64     // end of cur in stream samples
	entered time.Time // when the audio of cur's start entered the pipeline
}

// Process implements stage.Processor.
func (g *grouper) Process(_ context.Context, f stage.Frame[vad.Speech], emit stage.Emit[utterance]) error {
	s := f.Payload
	if s.Rate != SampleRate {
		return fmt.Errorf("%w: speech at %d Hz", vad.ErrSampleRate, s.Rate)
	}
	now := time.Now()
	if g.cur != nil && s.End-g.cur.start <= int64(g.span) && s.Start >= g.end {
		gap := make([]float32, s.Start-g.end)
		if len(gap) <= g.fill && g.hist != nil {
			g.hist.read(gap, g.end) // left silent if the history no longer holds it
		}
		g.cur.samples = append(append(g.cur.samples, gap...), s.Audio...)
		g.cur.closed, g.end = now, s.End
		return nil
	}
	if err := g.flush(emit); err != nil {
		return err
	}
	g.cur = &utterance{start: s.Start, samples: s.Audio, closed: now}
	g.end, g.entered = s.End, f.Entered
	if g.span == 0 {
		return g.flush(emit)
	}
	return nil
}

// Flush implements stage.Flusher.
func (g *grouper) Flush(_ context.Context, emit stage.Emit[utterance]) error { return g.flush(emit) }

func (g *grouper) flush(emit stage.Emit[utterance]) error {
	if g.cur == nil {
		return nil
	}
	u := *g.cur
	g.cur = nil
	return emit(stage.Frame[utterance]{Offset: u.start, Rate: SampleRate, Entered: g.entered, Payload: u})
}

// collector gathers the whole input into one utterance (NoVAD): Whisper
// then transcribes it window by window as OpenAI's transcribe does.
type collector struct {
	u       utterance
	begun   bool
	entered time.Time
}

// Process implements stage.Processor.
func (c *collector) Process(_ context.Context, f stage.Frame[[]float32], _ stage.Emit[utterance]) error {
	if !c.begun {
		c.begun, c.entered, c.u.start = true, f.Entered, f.Offset
	}
	c.u.samples = append(c.u.samples, f.Payload...)
	return nil
}

// Flush implements stage.Flusher.
func (c *collector) Flush(_ context.Context, emit stage.Emit[utterance]) error {
	if len(c.u.samples) == 0 {
		return nil
	}
	c.u.closed = time.Now()
	return emit(stage.Frame[utterance]{Offset: c.u.start, Rate: SampleRate, Entered: c.entered, Payload: c.u})
}

// setLanguage records the language a run transcribed, with its name.
func (r *Result) setLanguage(lang string, tok *tokenizer.Tokenizer) {
	r.Language = lang
	sp := tok.Specials()
	if sl, err := sp.Language(lang); err == nil {
		r.LanguageName = sl.Name
	}
}

// scorecard starts a run's scorecard with what every listen run records:
// the models, the pipeline's metrics, the audio, the engine, the peak
// memory, the load time and the language.
func (t *Transcriber) scorecard(pipelineName string, res *Result, withVAD bool) *scorecards.Card {
	m := t.whisp
	card := scorecards.New(pipelineName)
	card.AddModel("whisper", strings.TrimPrefix(m.ID(), "whisper-")+"-"+m.Precision().String(), m.WeightsSHA256())
	if withVAD {
		card.AddModel("silero-vad", "v6", "")
	}
	card.RecordRun(res.Metrics, t.eng)
	card.SetAudioIn(res.Duration)
	card.SetLabel("load_ms", fmt.Sprintf("%.0f", float64(t.loaded.Microseconds())/1000))
	card.SetLabel("language", res.Language)
	return card
}
