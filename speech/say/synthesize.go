package say

import (
	"context"
	"fmt"
	"io"
	"iter"
	"math"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/speech"
	"github.com/tensorforge/forge/stage"
)

// Options are one run's settings. The zero value speaks with
// DefaultVoice at normal speed, at 24 kHz.
type Options struct {
	// Voice is a voice name (see Synthesizer.Voices) or a weighted mix,
	// NAME[:WEIGHT],NAME[:WEIGHT]...; "" means DefaultVoice.
	Voice string
	// Speed is the speaking rate, 1 normal (0 means 1), in (0.1, 10).
	Speed float64
	// Lang is the phonemiser's language: a Kokoro code or an espeak-ng
	// code, "en-us", "en-gb", "es", "fr" (fr-fr), "hi", "it" or "pt-br"
	// (see g2p.ParseLang); "" means the voice's own (af_… American
	// English, bf_… British, ef_… Spanish, ff_… French, hf_… Hindi, if_…
	// Italian, pf_… Brazilian Portuguese).
	Lang string
	// Rate is the output sample rate in Hz (0: SampleRate, Kokoro's own;
	// others are resampled), 1 to 384 kHz.
	Rate int
	// MaxTokens is the longest chunk in phoneme tokens (0:
	// DefaultMaxTokens; 16 to kokoro.MaxPhonemes): longer sentences are cut
	// at clauses. Memory and latency grow with it.
	MaxTokens int
	// FirstTokens streams the audio: the first piece of the first
	// sentence (and of one whose text comes after the audio before it has
	// played out) ends at a word boundary within this many phoneme
	// tokens, so audio starts sooner, and a sentence longer than the audio
	// before it comes in pieces that are each ready before that audio has
	// played, without changing how a sentence is spoken
	// (kokoro.Model.SpeakStreamed; 0: kokoro.DefaultFirstTokens;
	// negative: every sentence whole).
	FirstTokens int
}

// Text is what a run speaks: [String], [Reader] or [Tokens].
type Text interface {
	// reader returns the text as a stream of bytes, read under ctx (the
	// run's).
	reader(ctx context.Context) io.Reader
}

type stringText string

func (s stringText) reader(context.Context) io.Reader { return strings.NewReader(string(s)) }

// String returns text held in memory as a Text. It is checked before the
// run starts: text that is not valid UTF-8 or holds nothing to say fails
// before any audio is produced.
func String(s string) Text { return stringText(s) }

type readerText struct{ r io.Reader }

func (t readerText) reader(context.Context) io.Reader { return t.r }

// Reader returns text read from r as it arrives, sentence by sentence
// (memory stays bounded whatever its length). A Read that blocks holds
// the run until it returns: give a reader that gives way when the run's
// context ends (see internal/ctxio for standard input) where that matters.
func Reader(r io.Reader) Text { return readerText{r} }

type tokenText <-chan string

func (ch tokenText) reader(ctx context.Context) io.Reader { return &tokenReader{ctx: ctx, ch: ch} }

// Tokens returns the text sent on ch, fragment by fragment (an LLM's
// tokens), until ch is closed. Each sentence is spoken as soon as its end
// has arrived, while the rest is still being written; a run whose context
// ends stops waiting for the channel.
func Tokens(ch <-chan string) Text { return tokenText(ch) }

// tokenReader reads the fragments of a channel as bytes.
type tokenReader struct {
	ctx     context.Context
	ch      <-chan string
	pending string
}

func (r *tokenReader) Read(p []byte) (int, error) {
	for r.pending == "" {
		select {
		case s, ok := <-r.ch:
			if !ok {
				return 0, io.EOF
			}
			r.pending = s
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// Audio is one block of speech, mono samples nominally in [-1, 1]: as
// Kokoro's reference export, the samples are not limited, and a few voices
// peak slightly past full scale (bf_isabella and hm_psi by under 1 dB on
// the languages test's sentences); audio's writers clip when they
// quantize.
type Audio struct {
	Samples []float32 // the receiver may keep them
	Rate    int       // Hz
	// Offset is the block's first sample in the run's audio (samples at
	// Rate before it).
	Offset int64
}

// Result describes a finished run.
type Result struct {
	// Samples is the number of samples produced, at Rate.
	Samples int64
	Rate    int
	// Voice and Lang are the voice (or mix) and phonemiser language used.
	Voice, Lang string
	// TTFA is the time to first audio: from the run's start (the text
	// accepted) to the first block handed to the callback.
	TTFA time.Duration
	// Stall is how long a player that started playing the first block as
	// it came, in real time, would have waited for audio after it: the
	// gaps a listener hears mid-speech (0 when every block came before
	// the audio before it had played).
	Stall time.Duration
	// Metrics are the pipeline's per-stage metrics.
	Metrics pipeline.Metrics

	card func() *scorecards.Card
}

// Seconds returns the length of the audio produced.
func (r *Result) Seconds() float64 { return float64(r.Samples) / float64(r.Rate) }

// Scorecard returns the run's forge.scorecard/v1 card: model, voice, stage
// metrics, RTF, TTFA, audio seconds, and the engine's counters (cumulative
// over every run on the engine).
func (r *Result) Scorecard() *scorecards.Card { return r.card() }

// settings are Options resolved against the Synthesizer.
type settings struct {
	voice       *kokoro.Voice
	lang        g2p.Lang
	speed       float64
	rate        int
	maxTokens   int
	firstTokens int
}

// resolve checks o and fills in its defaults.
func (s *Synthesizer) resolve(o Options) (settings, error) {
	st := settings{speed: o.Speed, rate: o.Rate, maxTokens: o.MaxTokens, firstTokens: o.FirstTokens}
	if st.speed == 0 {
		st.speed = 1
	}
	if st.rate == 0 {
		st.rate = SampleRate
	}
	if st.maxTokens == 0 {
		st.maxTokens = DefaultMaxTokens
	}
	switch {
	case st.firstTokens == 0:
		st.firstTokens = kokoro.DefaultFirstTokens
	case st.firstTokens < 0:
		st.firstTokens = 0
	}
	switch {
	case !(st.speed > 0.1 && st.speed < 10) || math.IsNaN(st.speed):
		return st, fmt.Errorf("%w: speed %v (want a value between 0.1 and 10)", ErrBadOptions, o.Speed)
	case st.rate < audio.MinSampleRate || st.rate > audio.MaxSampleRate:
		return st, fmt.Errorf("%w: rate %d (want %d to %d Hz)", ErrBadOptions, st.rate, audio.MinSampleRate, audio.MaxSampleRate)
	case st.maxTokens < 16 || st.maxTokens > kokoro.MaxPhonemes:
		return st, fmt.Errorf("%w: max tokens %d (want 16 to %d)", ErrBadOptions, st.maxTokens, kokoro.MaxPhonemes)
	}
	name := o.Voice
	if name == "" {
		name = DefaultVoice
	}
	var err error
	if st.voice, err = s.voices.Voice(name); err != nil {
		return st, err
	}
	if o.Lang != "" {
		st.lang, err = g2p.ParseLang(o.Lang)
	} else {
		st.lang, err = g2p.LangOfVoice(st.voice.Primary)
	}
	return st, err
}

// Synthesize speaks text and calls emit with each block of audio, in
// order, as soon as it is ready; emit runs on one of the run's
// goroutines, one call at a time. An error from emit stops the run and is
// returned. Options (voice, language, speed, …) are checked before the
// run starts, and so is a String's text (ErrInvalidUTF8, ErrNoSpeech);
// text from a Reader or Tokens is checked as it arrives. A run stopped by
// ctx returns ctx's error (or its cause), leaving no goroutine behind.
func (s *Synthesizer) Synthesize(ctx context.Context, text Text, o Options, emit func(Audio) error) (*Result, error) {
	st, err := s.resolve(o)
	if err != nil {
		return nil, err
	}
	if str, ok := text.(stringText); ok {
		switch {
		case !utf8.ValidString(string(str)):
			return nil, ErrInvalidUTF8
		case strings.TrimSpace(string(str)) == "":
			return nil, ErrNoSpeech
		}
	}
	front, err := g2p.NewEspeak(st.lang)
	if err != nil {
		return nil, fmt.Errorf("say: %w", err)
	}
	speed := float32(st.speed)
	speak := func(ctx context.Context, c g2p.Chunk, sm kokoro.Streaming) iter.Seq2[[]float32, error] {
		return s.model.SpeakStreamed(ctx, c, st.voice, speed, sm)
	}
	chunker := &g2p.Chunker{G2P: front, MaxTokens: st.maxTokens, Log: s.zlog}
	var produced atomic.Int64
	var play playback
	p, err := buildPipeline(chunker, speak, st.firstTokens, st.rate, text, func(_ context.Context, a Audio) error {
		produced.Add(int64(len(a.Samples)))
		play.add(time.Now(), audioDuration(len(a.Samples), a.Rate))
		return emit(a)
	}, pipeline.Logger(s.zlog))
	if err != nil {
		return nil, err
	}
	if err := p.Run(ctx); err != nil {
		return nil, err
	}
	if s.cold {
		// Weights this run packed for the first time: later processes
		// map them (a no-op once they are on disk).
		speech.SavePacks(s.eng, s.log)
	}
	res := &Result{Samples: produced.Load(), Rate: st.rate, Voice: st.voice.Name, Lang: st.lang.String(), Metrics: p.Metrics()}
	res.TTFA = res.Metrics.TimeToFirstOutput()
	res.Stall = play.stall
	res.card = func() *scorecards.Card {
		card := scorecards.New("say")
		card.AddModel("kokoro", s.variant, s.weights.SHA256)
		card.SetLabel("voice", res.Voice)
		card.SetLabel("lang", res.Lang)
		card.SetLabel("load_ms", fmt.Sprintf("%.0f", float64(s.loaded.Microseconds())/1000))
		card.SetLabel("warm_ms", fmt.Sprintf("%.0f", float64(s.warmed.Microseconds())/1000))
		card.SetLabel("stall_ms", fmt.Sprintf("%.0f", float64(res.Stall.Microseconds())/1000))
		if s.cold {
			card.SetLabel("ttfa_from", "pipeline start (text accepted), model loaded, not warmed (Config.Cold)")
		} else {
			card.SetLabel("ttfa_from", "pipeline start (text accepted), model loaded and warmed")
		}
		if s.float32 {
			card.SetLabel("precision", "fp32")
		}
		card.RecordRun(res.Metrics, s.eng)
		card.SetAudioOut(res.Seconds())
		return card
	}
	return res, nil
}

// playback follows the audio of a run as a player that starts with the
// first block and plays in real time would, to measure the gaps it would
// leave (Result.Stall). Blocks come one at a time (the sink's goroutine).
type playback struct {
	end   time.Time // when the audio so far would have played out
	stall time.Duration
}

// drained reports whether the audio so far would have played out by now
// (true before the first block).
func (p *playback) drained(now time.Time) bool { return !now.Before(p.end) }

// audioDuration is how long n samples at rate Hz play.
func audioDuration(n, rate int) time.Duration {
	return time.Duration(float64(n) / float64(rate) * float64(time.Second))
}

// add counts a block of d seconds of audio ready at now.
func (p *playback) add(now time.Time, d time.Duration) {
	switch {
	case p.end.IsZero():
		p.end = now
	case now.After(p.end):
		p.stall += now.Sub(p.end)
		p.end = now
	}
	p.end = p.end.Add(d)
}

// speakFunc synthesises one chunk at 24 kHz in the pieces sm asks for
// (the model's SpeakStreamed with its voice and speed bound in; tests
// pass a stand-in).
type speakFunc func(ctx context.Context, c g2p.Chunk, sm kokoro.Streaming) iter.Seq2[[]float32, error]

// buildPipeline wires text → g2p (sentence chunks, phonemes, ids) →
// kokoro → (resample) → sink. With firstTokens > 0 the chunks are
// streamed (kokoro.Streaming): the first piece of the first chunk, and of
// a chunk that comes after the audio before it has played out, ends
// within firstTokens phoneme tokens, and a chunk longer than the audio
// before it comes in stretches; with 0 every chunk comes whole.
func buildPipeline(chunker *g2p.Chunker, speak speakFunc, firstTokens, rate int, text Text, sink func(context.Context, Audio) error, opts ...pipeline.Option) (*pipeline.Pipeline, error) {
	p := pipeline.New("say", opts...)
	accepted := time.Now()
	chunks := pipeline.From(p, stage.NewSource("g2p", func(ctx context.Context, emit stage.Emit[g2p.Chunk]) error {
		for c, err := range chunker.Chunks(ctx, text.reader(ctx)) {
			if err != nil {
				return err
			}
			f := stage.Frame[g2p.Chunk]{Offset: int64(c.Index), Payload: c}
			if c.Index == 0 {
				f.Entered = accepted // TTFA counts from the text being accepted
			}
			if err := emit(f); err != nil {
				return err
			}
		}
		return nil
	}))
	var offset int64
	var play playback // the audio so far, as a player started with its first block hears it
	synth := stage.ProcessFunc[g2p.Chunk, []float32](func(ctx context.Context, f stage.Frame[g2p.Chunk], emit stage.Emit[[]float32]) error {
		var sm kokoro.Streaming
		switch {
		case firstTokens <= 0:
		case play.drained(time.Now()):
			// The first chunk, or one whose text came after the audio
			// before it had played out (text written as it is spoken,
			// Tokens): someone is waiting, as at the start.
			sm.FirstTokens = firstTokens
		default:
			sm.Lead = int(offset)
		}
		for pcm, err := range speak(ctx, f.Payload, sm) {
			if err != nil {
				return err
			}
			out := stage.Frame[[]float32]{Offset: offset, Rate: kokoro.SampleRate, Entered: f.Entered, Payload: pcm}
			offset += int64(len(pcm))
			play.add(time.Now(), audioDuration(len(pcm), kokoro.SampleRate))
			if err := emit(out); err != nil {
				return err
			}
		}
		return nil
	})
	speech := pipeline.Then(chunks, stage.Process[g2p.Chunk, []float32]("kokoro", synth), pipeline.Buffer(1))
	if rate != kokoro.SampleRate {
		rs, err := resample.New(kokoro.SampleRate, rate)
		if err != nil {
			return nil, fmt.Errorf("say: resampling to %d Hz: %w", rate, err)
		}
		speech = pipeline.Then(speech, stage.Process[[]float32, []float32]("resample", &resampler{rs: rs}), pipeline.Buffer(1))
	}
	pipeline.To(speech, stage.ToFunc("sink", func(ctx context.Context, f stage.Frame[[]float32]) error {
		return sink(ctx, Audio{Samples: f.Payload, Rate: rate, Offset: f.Offset})
	}))
	return p, nil
}

// resampler converts the 24 kHz stream to the output rate, carrying the
// filter state across chunks and flushing it at the end.
type resampler struct {
	rs  *resample.Resampler
	off int64
}

// Process implements stage.Processor.
func (r *resampler) Process(_ context.Context, f stage.Frame[[]float32], emit stage.Emit[[]float32]) error {
	y := r.rs.Process(nil, f.Payload)
	out := stage.Frame[[]float32]{Offset: r.off, Rate: r.rs.OutRate(), Entered: f.Entered, Payload: y}
	r.off += int64(len(y))
	return emit(out)
}

// Flush implements stage.Flusher.
func (r *resampler) Flush(_ context.Context, emit stage.Emit[[]float32]) error {
	y := r.rs.Flush(nil)
	if len(y) == 0 {
		return nil
	}
	return emit(stage.Frame[[]float32]{Offset: r.off, Rate: r.rs.OutRate(), Payload: y})
}

// VoiceInfo describes one of Kokoro's voices.
type VoiceInfo struct {
	Name     string // "af_heart"
	Lang     string // language tag: "en-us", "es", …
	Language string // its English name: "American English"
	Gender   string // "female" or "male"
}

// ListVoices returns the voices this package speaks, sorted by name,
// loading the voice table alone (fetching it on first use): what a
// command's --list-voices needs without the model. Kokoro's Japanese and
// Mandarin voices are left out (see Unlisted).
func ListVoices(ctx context.Context) ([]VoiceInfo, error) {
	v, err := kokoro.LoadVoices(ctx)
	if err != nil {
		return nil, fmt.Errorf("say: %w", err)
	}
	defer v.Close()
	var out []VoiceInfo
	for _, name := range v.Names() {
		if info, ok := voiceInfo(name); ok {
			out = append(out, info)
		}
	}
	return out, nil
}

// voiceInfo describes a voice named like af_heart (language letter,
// gender letter), and reports whether this package speaks its language.
func voiceInfo(name string) (VoiceInfo, bool) {
	lang, err := g2p.LangOfVoice(name)
	if err != nil {
		return VoiceInfo{}, false
	}
	info := VoiceInfo{Name: name, Lang: lang.String(), Language: lang.Name()}
	switch name[1] {
	case 'f':
		info.Gender = "female"
	case 'm':
		info.Gender = "male"
	}
	return info, true
}

// Unlisted says which of Kokoro's languages ListVoices leaves out, and
// why: a line for a listing's footer.
func Unlisted() string {
	return "Kokoro's Japanese (j…) and Mandarin (z…) voices are not listed: they need G2Ps of their own " +
		"(Kokoro uses misaki's: pyopenjtalk for Japanese, pypinyin and jieba for Mandarin), which have no maintained Go or espeak-ng equivalent."
}

// Phonemize writes the phonemes Kokoro would read for text, chunk by
// chunk, without loading the model: emit gets each chunk's source text
// and its phoneme string. The language is o.Lang, else that of o.Voice's
// first voice (by its name); o.MaxTokens sizes the chunks.
func Phonemize(ctx context.Context, text Text, o Options, emit func(text, phonemes string) error) error {
	var lang g2p.Lang
	var err error
	if o.Lang != "" {
		lang, err = g2p.ParseLang(o.Lang)
	} else {
		name := o.Voice
		if name == "" {
			name = DefaultVoice
		}
		name, _, _ = strings.Cut(name, ",")
		name, _, _ = strings.Cut(strings.TrimSpace(name), ":")
		lang, err = g2p.LangOfVoice(name)
	}
	if err != nil {
		return err
	}
	maxTokens := o.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	if maxTokens < 16 || maxTokens > kokoro.MaxPhonemes {
		return fmt.Errorf("%w: max tokens %d (want 16 to %d)", ErrBadOptions, maxTokens, kokoro.MaxPhonemes)
	}
	front, err := g2p.NewEspeak(lang)
	if err != nil {
		return fmt.Errorf("say: %w", err)
	}
	for c, err := range (&g2p.Chunker{G2P: front, MaxTokens: maxTokens}).Chunks(ctx, text.reader(ctx)) {
		if err != nil {
			return err
		}
		if err := emit(c.Text, c.Phonemes); err != nil {
			return err
		}
	}
	return nil
}
