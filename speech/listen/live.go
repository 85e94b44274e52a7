package listen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/stage"
)

// EventKind tells a live transcription's provisional text from its final
// text.
type EventKind int

const (
	// Partial is the text of an utterance still being spoken: a committed
	// beginning that no later event changes and a tentative rest.
	Partial EventKind = iota
	// Final is an utterance's text once the speaker has paused
	// (Options.FinalPause) or the VAD has closed it.
	Final
)

// String returns "partial" or "final".
func (k EventKind) String() string {
	switch k {
	case Partial:
		return "partial"
	case Final:
		return "final"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// MarshalText writes the kind as String does, so that JSON shows
// "partial" and "final".
func (k EventKind) MarshalText() ([]byte, error) {
	if k != Partial && k != Final {
		return nil, fmt.Errorf("listen: unknown event kind %d", int(k))
	}
	return []byte(k.String()), nil
}

// Event is what TranscribeLive hands over: while an utterance is spoken, a
// Partial every half second or so of new audio; when the speaker pauses
// (Options.FinalPause) or the VAD closes it, one Final. Committed text only
// grows within an utterance (each event's Committed begins with the one
// before it), and the Final's text begins with the last Partial's
// Committed.
//
// An utterance is the speech up to a pause of Options.FinalPause: the VAD
// may join several into one of its utterances (it waits for
// VAD.MinSilence), and then reads each as the continuation of the ones
// before, with their audio.
//
// As JSON (listen --live --json, the server's live WebSocket) an event is
// {"type":"partial","utterance":0,"start":0,"end":1.5,"committed":" And
// so","tentative":" my fellow"}, without its segments.
type Event struct {
	Kind EventKind `json:"type"`
	// Utterance numbers the utterances from 0, as Segment.Utterance does.
	Utterance int `json:"utterance"`
	// Start and End are seconds from the start of the input: the
	// utterance's start (its audio, padded), and the end of the audio the
	// text was read from.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Committed is the utterance's text that stays; Tentative follows it
	// and may change with the next event (empty in a Final). Both keep
	// Whisper's leading spaces: Committed+Tentative is the text so far.
	Committed string `json:"committed"`
	Tentative string `json:"tentative"`
	// Segments are the utterance's segments, as Transcribe hands them
	// over, with their Words when Options.Words asks for them (Final only;
	// none when Whisper heard nothing).
	Segments []Segment `json:"-"`
}

// Text returns the event's whole text, trimmed.
func (e Event) Text() string { return strings.TrimSpace(e.Committed + e.Tentative) }

// LiveResult describes a finished live run: the Result of any run, and
// the live figures, each a distribution over the run's utterances or
// events.
type LiveResult struct {
	*Result
	// FirstPartial is the time from the moment the first sample of an
	// utterance's speech arrived to its first Partial.
	FirstPartial stage.Summary
	// Cadence is the time between consecutive Partials of an utterance.
	Cadence stage.Summary
	// Commit is the time from a word's end arriving to the Partial that
	// committed it (word ends estimated within their final segment's
	// timestamps, in proportion to the characters before them); Committed
	// the same for every word of the Finals, committed by a Partial or by
	// its Final.
	Commit, Committed stage.Summary
	// Final is the time from the utterance's end being known (the pause
	// lasting Options.FinalPause, or the VAD closing it) to its Final
	// (Result.EndOfUtterance holds the same); SpeechEnd the time from the
	// last sample of its speech arriving (where the pause began) to its
	// Final.
	Final, SpeechEnd stage.Summary
	// Read is the audio each reading decoded (partial, read ahead or
	// final; silence after a pause included): bounded on long speech,
	// as a reading starts at most about 12 s before the committed text's
	// end (window.go).
	Read stage.Summary
	// Partials counts the Partials handed over. Skipped counts the
	// cadence steps that got none because decoding was behind (the
	// cadence stretched); Cancelled the partial decodes abandoned for a
	// Final. Speculated counts the Finals read ahead and taken as they
	// were; AtPause the Finals handed over at a pause before the VAD
	// closed their speech.
	Partials, Skipped, Cancelled, Speculated, AtPause int

	// hists are the distributions above by their label names, for a
	// benchmark that merges runs (TestLiveScorecard).
	hists map[string]*stage.Histogram
}

// partialEvery is the audio between two Partials when decoding keeps up
// (0.5 s: whisper_streaming's minimum chunk is 1 s; half of it shows a
// new word about as soon as it is said).
const partialEvery = SampleRate / 2

// quickPartials is how many of an utterance's first partial readings
// come at half the cadence (0.25 s): Whisper misreads the first second or
// so of an utterance, and two readings agree sooner when there are more
// of them then. Paced golden clips, three interleaved rounds on the
// 2-core EPYC: tiny's committed-word p95 1.61–1.75 s → 1.34–1.41 s (base
// about the same, 1.34–1.64 → 1.45–1.54 s), first partial p50 ~240 →
// ~95 ms (tiny), final text the same. Four quick partials gave tiny no
// more and base a longer tail (1.68–1.86 s); a 0.25-s cadence throughout
// cost base three words of jfk (agree.go's sentence end).
const quickPartials = 2

// costFactor stretches the cadence when decoding is slow: a partial
// decode that took d waits for costFactor·d of new audio after it, so
// partials take at most 1/costFactor of the time and an utterance's
// Final seldom waits for one.
const costFactor = 2

// DefaultFinalPause is the pause after which a live run's words are final
// (Options.FinalPause): 128 ms, four of the VAD's 32-ms chunks, so that a
// Final can follow the end of speech within 200 ms. The VAD's own close
// (DefaultVAD: 500 ms of silence, then its padding settled) came about
// 800 ms after the speech. Utterances end at shorter pauses then, but the
// VAD's utterance is still read as one stretch of audio: each utterance
// after a short pause is read as the continuation of those before it.
const DefaultFinalPause = 128 * time.Millisecond

// readAhead is how long a pause lasts before its utterance's Final is
// read (64 ms): it is then ready when the pause has lasted FinalPause,
// with 64 ms of the audio after the speech and, as the VAD pads an
// utterance, silence up to its padding. On the golden clips and on
// ../shared/golden/audio/silero_test.wav the Finals' text was the same
// with 64 and 96 ms; 32 ms lost "ask not" on jfk with base.
const readAhead = 64 * time.Millisecond

// TranscribeLive transcribes in as Transcribe does for a live input and
// also hands over text while an utterance is being spoken: every 0.5 s of
// new audio or so, the utterance so far is transcribed again as the
// continuation of its committed words, and words on which two consecutive
// readings agree are committed (LocalAgreement-2). The committed tokens
// are the next reading's decoder prefix, fed in one pass, and the prompt
// is the text of the VAD's utterances before.
//
// When the speaker pauses for Options.FinalPause, the words so far are
// final: the utterance is read ahead once the pause has lasted 64 ms (the
// audio up to there, then silence up to the VAD's padding), and that
// reading is the Final once the pause has lasted FinalPause. Speech after
// the pause is the next utterance; while the VAD holds it in the same
// utterance of its own (a pause shorter than VAD.MinSilence), it is read
// with the audio before it, as the continuation of the Finals before,
// and so is the VAD's next utterance when it begins within 2 s of such a
// Final, after the last piece before it (at most 3.5 s of its audio), as
// offline reads a window's utterances together.
// Without FinalPause, the
// Final comes when the VAD closes the utterance, read ahead once the pause
// has lasted the VAD's padding. Decoding never samples (temperature 0
// unless Options.Temperature says otherwise), so the Final does not stray
// from the committed words it continues.
//
// On long speech a reading does not start at the VAD utterance's
// start: once it covers 8 s, the next piece is read from the Final at a
// pause before the last, and past 12 s without such a pause from the
// end of a committed segment or between two committed words; the text
// before is the prompt, and stays committed.
//
// When decoding falls behind, partials come less often (never queued:
// the next one reads the newest audio) and a partial in progress gives
// way to a Final; the audio waiting is bounded by the pipeline's
// channels. emit runs on one of the run's goroutines, one call at a time;
// options, errors and cancellation are as for Transcribe.
func (t *Transcriber) TranscribeLive(ctx context.Context, in Input, o Options, emit func(Event) error) (*LiveResult, error) {
	return t.transcribeLive(ctx, in, o, emit, defaultWindowing())
}

// transcribeLive is TranscribeLive with readings' origins moved as win
// says.
// liveOptions are the decoding options of a live run's readings.
func (t *Transcriber) liveOptions(o Options) (decode.TranscribeOptions, error) {
	opts, err := t.decodeOptions(o)
	if err != nil {
		return opts, err
	}
	if o.Temperature == 0 {
		opts.Temperatures = []float64{0}
	}
	// A final waits for nothing but its reading: a short window failing the
	// log-probability check alone, or closing its text past the audio, is
	// not encoded again for 30 s (0.5–1.3 s of CPU here: what made
	// cards_003's final 0.5–1.9 s late).
	opts.RetryLoopsOnly = true
	return opts, nil
}

func (t *Transcriber) transcribeLive(ctx context.Context, in Input, o Options, emit func(Event) error, win windowing) (*LiveResult, error) {
	if t.vad == nil {
		return nil, fmt.Errorf("%w: live transcription needs the VAD (Config.NoVAD is set)", ErrBadOptions)
	}
	if o.NoVAD {
		return nil, fmt.Errorf("%w: live transcription needs the VAD (Options.NoVAD is set)", ErrBadOptions)
	}
	opts, err := t.liveOptions(o)
	if err != nil {
		return nil, err
	}
	vo, err := vadOptions(o.VAD)
	if err != nil {
		return nil, err
	}
	src, err := in.open(ctx, []int{SampleRate}, t.log)
	if err != nil {
		return nil, err
	}
	defer src.close()
	chunk, err := t.vad.ChunkSize(SampleRate)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	proc, err := t.vad.NewProcessor(ctx, SampleRate, vo)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	arr := &arrivals{}
	hist := newHistory(historySamples)
	src.tap = func(x []float32) {
		arr.add(x)
		hist.add(x)
	}
	g := &gate{pad: proc.Pad(), trim: vo.MinSilence >= vo.SpeechPad}
	starts := &origins{}
	lv := &liveVAD{p: proc, gate: g, arr: arr, pad: proc.Pad(), every: partialEvery, chunk: chunk, minSpeech: vo.MinSpeech.Seconds() * SampleRate, origins: starts, hist: hist}
	if pause := cmp.Or(o.FinalPause, DefaultFinalPause); pause > 0 && pause < vo.MinSilence {
		lv.final = int64(pause.Seconds() * SampleRate)
		lv.ahead = min(int64(readAhead.Seconds()*SampleRate), lv.final)
	}
	ld := &liveDecoder{t: t, opts: opts, prompt: opts.InitialPrompt, gate: g, arr: arr, states: map[int]*liveState{}, words: map[int32]bool{}, puncts: map[int32]bool{}, ends: map[int32]bool{}, timed: o.Words,
		win: win, origins: starts}

	p := pipeline.New("listen-live", pipeline.Logger(t.zlog))
	pcm := pipeline.From(p, src.src)
	items := pipeline.Then(pcm, stage.Process[[]float32, liveItem]("vad", lv))
	events := pipeline.Then(items, stage.Process[liveItem, Event]("decode", ld), pipeline.Buffer(1))
	var utterances atomic.Int64
	pipeline.To(events, stage.ToFunc("print", func(_ context.Context, f stage.Frame[Event]) error {
		if f.Payload.Kind == Final {
			utterances.Add(1)
		}
		return emit(f.Payload)
	}))
	if err := p.Run(ctx); err != nil {
		return nil, err
	}
	res := &LiveResult{
		Result:       &Result{Duration: src.seconds(), Utterances: int(utterances.Load()), Truncated: src.cut, Metrics: p.Metrics(), EndOfUtterance: ld.final.Summary()},
		FirstPartial: ld.first.Summary(), Cadence: ld.cadence.Summary(), Commit: ld.commit.Summary(), Committed: ld.commitAll.Summary(),
		Final: ld.final.Summary(), SpeechEnd: ld.speechEnd.Summary(), Read: ld.audio.Summary(),
		Partials: ld.partials, Skipped: lv.skipped, Cancelled: ld.cancelled, Speculated: ld.speculated, AtPause: ld.atPause,
	}
	res.hists = map[string]*stage.Histogram{"live_first_partial": &ld.first, "live_cadence": &ld.cadence, "live_commit": &ld.commit,
		"live_commit_all": &ld.commitAll, "live_eou_to_final": &ld.final, "live_speech_end_to_final": &ld.speechEnd, "live_read": &ld.audio}
	if ld.lang != "" {
		res.setLanguage(ld.lang, t.whisp.Tokenizer())
	}
	res.card = func() *scorecards.Card {
		card := t.scorecard("listen-live", res.Result, true)
		card.SetLabel("utterances", fmt.Sprint(res.Utterances))
		res.Labels(card.SetLabel)
		return card
	}
	return res, nil
}

// Labels hands the live figures to set as scorecard labels (p50, p95 and
// max of each distribution in ms, and the counts).
func (r *LiveResult) Labels(set func(key, value string)) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
	for _, s := range []struct {
		name string
		sum  stage.Summary
	}{
		{"live_first_partial", r.FirstPartial}, {"live_cadence", r.Cadence}, {"live_commit", r.Commit}, {"live_commit_all", r.Committed},
		{"live_eou_to_final", r.Final}, {"live_speech_end_to_final", r.SpeechEnd}, {"live_read", r.Read},
	} {
		if s.sum.Count == 0 {
			continue
		}
		set(s.name+"_p50_ms", ms(s.sum.P50))
		set(s.name+"_p95_ms", ms(s.sum.P95))
		set(s.name+"_max_ms", ms(s.sum.Max))
	}
	set("live_partials", fmt.Sprint(r.Partials))
	set("live_partials_skipped", fmt.Sprint(r.Skipped))
	set("live_partials_cancelled", fmt.Sprint(r.Cancelled))
	set("live_finals_speculated", fmt.Sprint(r.Speculated))
	set("live_finals_at_pause", fmt.Sprint(r.AtPause))
}

// liveItem is the VAD stage's request to the decoder: a reading of an
// utterance in progress (partial, or speculative: the final text read
// ahead during a pause), its final audio, or the end of the VAD's
// utterance it belongs to.
type liveItem struct {
	kind      itemKind
	group     int       // the VAD's utterance: the number of its first utterance
	utt       int       // the utterance (Event.Utterance)
	from, to  int64     // the audio's bounds in stream samples
	fill      int64     // samples of silence after to (a reading at a pause)
	piece     int64     // where the utterance's own audio starts (≥ from)
	at        int64     // where samples begin: from, or the reading's origin (origins) when later
	samples   []float32 // [at, to) and fill zeros, owned by the receiver
	speech    int64     // where the utterance's speech began (unpadded)
	speechEnd int64     // final: where it ended
	closed    time.Time // final: when its end was known
	atPause   bool      // final: handed over at a pause; the VAD's utterance goes on
	join      bool      // the first piece of a VAD segment that continues the group before (liveVAD.joins)
	ctx       context.Context
	cancel    context.CancelFunc // partial and speculative readings
	ticket    int                // theirs at the gate
}

type itemKind int

const (
	itemPartial itemKind = iota
	itemSpeculative
	itemFinal
	itemClose // the VAD's utterance ended after a Final at a pause
)

// gate is the budget shared by the VAD stage and the decoder: at most one
// reading of an open utterance is queued or running, and it can be
// cancelled when a Final needs the decoder.
type gate struct {
	mu       sync.Mutex
	busy     bool
	ticket   int  // the reading in flight (take's)
	spec     bool // the reading in flight is speculative
	from, to int64
	cancel   context.CancelFunc
	cost     time.Duration // the last partial decode's duration
	free     time.Time     // when the last reading ended
	// pad and trim say which Finals a speculative reading serves (see
	// covers).
	pad  int64
	trim bool
}

// take reserves the decoder for a reading and returns its ticket for
// release, unless one is in flight; a speculative reading takes over
// from a partial one, which is cancelled: the pause it reads began after
// the partial's audio ended, and its Final should not wait for the
// partial to notice (a VAD chunk, 32 ms, or more).
func (g *gate) take(spec bool, from, to int64, cancel context.CancelFunc) (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy {
		if !spec || g.spec {
			return 0, false
		}
		g.cancel()
	}
	g.ticket++
	g.busy, g.spec, g.from, g.to, g.cancel = true, spec, from, to, cancel
	return g.ticket, true
}

// release ends the reading of ticket, recording how long it took, unless
// another took over from it.
func (g *gate) release(ticket int, cost time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ticket != g.ticket {
		return
	}
	g.busy, g.cancel, g.free = false, nil, time.Now()
	if cost > 0 {
		g.cost = cost
	}
}

// preempt cancels the reading in flight unless it is a speculative
// reading that serves the Final of [from, to).
func (g *gate) preempt(from, to int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy && g.cancel != nil && !(g.spec && g.from == from && g.covers(g.to, to)) {
		g.cancel()
	}
}

// covers reports whether a speculative reading that ended at specTo
// serves a Final that ends at to: the same audio, or less of the silence
// after the pause. The VAD ends a segment at the pause plus the padding,
// or, when the next speech begins within twice the padding, halfway to
// it; the next speech then begins at least Options.VAD.MinSilence after
// the pause, so when that is no shorter than the padding (trim) the
// reading's extra audio holds no speech, and the Final's segments are
// clamped to its end.
func (g *gate) covers(specTo, to int64) bool {
	return to == specTo || g.trim && to < specTo && to >= specTo-g.pad
}

// wait returns the audio a partial waits for after the last one, at
// time now: costFactor times the last partial's decode, unless the
// decoder has been free for costFactor−1 times it already (partials
// still take at most 1/costFactor of the time). Without that, one slow
// partial (a cold session's first: 2.2 s with base) held the cadence at
// 4.4 s of audio, longer than each of jfk's utterances, so no partial
// came to lower it again.
func (g *gate) wait(every int64, now time.Time) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.busy && now.Sub(g.free) >= (costFactor-1)*g.cost {
		return every
	}
	return max(every, int64(costFactor*g.cost.Seconds()*SampleRate))
}

// arrivals records when each block of the input arrived, so that the
// live figures are measured from the moment a sample was there to read.
type arrivals struct {
	mu    sync.Mutex
	ends  []int64 // stream position after each block, increasing
	times []time.Time
	total int64
}

func (a *arrivals) add(x []float32) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total += int64(len(x))
	a.ends = append(a.ends, a.total)
	a.times = append(a.times, now)
	if len(a.ends) > 4096 { // a few minutes of blocks: older ones are never asked for
		a.ends, a.times = append(a.ends[:0], a.ends[2048:]...), append(a.times[:0], a.times[2048:]...)
	}
}

// at returns when the sample at pos arrived (the zero time if unknown).
func (a *arrivals) at(pos int64) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, e := range a.ends {
		if e > pos {
			return a.times[i]
		}
	}
	return time.Time{}
}

// openUtt is an utterance the VAD stage has seen begin: the VAD's open
// segment, and in it the utterance being spoken (a piece: the speech
// since the last pause of FinalPause, or since the segment began).
type openUtt struct {
	group    int   // the number of its first piece: the decoder's key
	first    int   // the number of the first piece of its VAD segment
	id       int   // the piece being spoken: its utterance number
	speech   int64 // where the segment's speech began (unpadded)
	from     int64 // where its audio starts (padded)
	piece    int64 // where the piece's audio starts (≥ from)
	pieceAt  int64 // where the piece's speech began
	lastTo   int64 // the end of the last partial reading asked for
	specTo   int64 // the end of the last speculative reading asked for
	readOpen bool  // a reading of the piece was asked for
	partials int   // partial readings of the piece asked for
	finalAt  int64 // the pause whose Final was asked for (0: none since the piece began)
	joined   bool  // its segment continues the group of the one before
	last     int64 // where the reading of a segment joining it would start: its last piece's (see liveDecoder.join)
	quiet    int64 // the audio scored while that pause lasted
	over     bool  // its last piece is final and another segment began: closed
}

// liveVAD is the VAD stage of a live run: it passes the VAD's closed
// segments on as Finals and, while speech is open, asks for readings of
// it at the cadence the gate allows, and for Finals at pauses.
type liveVAD struct {
	p     *vad.Processor
	gate  *gate
	arr   *arrivals
	pad   int64
	every int64
	chunk int // the VAD's chunk: Process hands it at most this much at a time
	// final is Options.FinalPause in samples (0: Finals only when the VAD
	// closes a segment), ahead the pause before a Final is read.
	final, ahead int64
	// minSpeech is VAD.MinSpeech in samples: a segment no longer than it
	// is dropped, so a pause ends a first piece only after it.
	minSpeech float64
	open      []*openUtt // oldest first: a segment may close after the next has begun
	nextID    int
	prevEnd   int64 // the end of the last segment closed
	skipped   int
	origins   *origins // the decoder's: where readings of a group start
	// hist holds the input's recent audio: a segment that continues
	// the group before it (join) is read from that group's origin,
	// before the audio the VAD holds.
	hist *history
	// ended is a segment whose last piece was final at a pause and
	// that the VAD has closed: the next segment may continue its group
	// (join); the decoder is told it ended only when none does.
	ended *openUtt
}

// Process implements stage.Processor. The VAD reads the frame a chunk at
// a time, so that a pause is seen when it begins and ends, whatever the
// input's block size.
func (l *liveVAD) Process(ctx context.Context, f stage.Frame[[]float32], emit stage.Emit[liveItem]) error {
	closed := func(s stage.Frame[vad.Speech]) error { return l.closed(ctx, s.Payload, emit) }
	for i := 0; i == 0 || i < len(f.Payload); i += l.chunk {
		g := f
		g.Payload = f.Payload[i:min(i+l.chunk, len(f.Payload))]
		g.Offset = f.Offset + int64(i)
		if err := l.p.Process(ctx, g, closed); err != nil {
			return err
		}
		if err := l.read(ctx, emit); err != nil {
			return err
		}
	}
	return nil
}

// Flush implements stage.Flusher.
func (l *liveVAD) Flush(ctx context.Context, emit stage.Emit[liveItem]) error {
	if err := l.p.Flush(ctx, func(s stage.Frame[vad.Speech]) error { return l.closed(ctx, s.Payload, emit) }); err != nil {
		return err
	}
	return l.closeEnded(emit)
}

// read asks for what the open speech calls for now: a Final when a pause
// has lasted FinalPause, its reading ahead before that, a partial reading
// when one is due.
func (l *liveVAD) read(ctx context.Context, emit stage.Emit[liveItem]) error {
	o, ok := l.p.Open()
	if !ok {
		return nil
	}
	u, err := l.current(o.Start, emit)
	if err != nil {
		return err
	}
	if u.finalAt > 0 {
		if o.Pause == u.finalAt {
			u.quiet = o.Scored
			return nil // the pause goes on: its words are final
		}
		l.resume(u)
	}
	paused := o.Pause > u.pieceAt
	silent := o.Scored - o.Pause
	switch {
	case paused && l.final > 0 && (u.id != u.first || float64(o.Pause-o.Start) > l.minSpeech):
		// The VAD keeps this segment (it is longer than MinSpeech), so a
		// pause ends the piece, unless speech resumes before FinalPause.
		if silent >= l.final {
			return l.pauseFinal(u, o, emit)
		}
		if silent >= l.ahead {
			return l.ask(ctx, itemSpeculative, u, o.Pause+l.ahead, max(l.pad-l.ahead, 0), emit)
		}
	case paused && silent >= l.pad:
		// Unless speech resumes, the segment the VAD closes will end at
		// the pause plus the padding: read that now.
		return l.ask(ctx, itemSpeculative, u, o.Pause+l.pad, 0, emit)
	}
	if o.Scored-u.lastTo < l.gate.wait(l.cadence(u), time.Now()) {
		return nil
	}
	return l.ask(ctx, itemPartial, u, o.Scored, 0, emit)
}

// cadence returns the audio between u's partial readings when decoding
// keeps up: half of every for its first quickPartials.
func (l *liveVAD) cadence(u *openUtt) int64 {
	if u.partials < quickPartials {
		return l.every / 2
	}
	return l.every
}

// ask asks the decoder for a reading of u's audio up to to, followed by
// fill samples of silence, if the gate lets it through.
func (l *liveVAD) ask(ctx context.Context, kind itemKind, u *openUtt, to, fill int64, emit stage.Emit[liveItem]) error {
	spec := kind == itemSpeculative
	if spec && to == u.specTo {
		return nil
	}
	rctx, cancel := context.WithCancel(ctx)
	ticket, ok := l.gate.take(spec, u.from, to, cancel)
	if !ok {
		cancel()
		return nil // decoding is behind: the cadence stretches
	}
	at := l.origin(u)
	samples, ok := l.samples(at, to, fill)
	if !ok {
		cancel()
		l.gate.release(ticket, 0)
		return nil
	}
	if spec {
		u.specTo = to
	} else {
		if u.readOpen {
			l.skipped += max(int((to-u.lastTo)/l.cadence(u))-1, 0)
		}
		u.lastTo = to
		u.partials++
	}
	u.readOpen = true
	return emit(stage.Frame[liveItem]{Offset: u.from, Rate: SampleRate, Entered: time.Now(), Payload: liveItem{
		kind: kind, group: u.group, utt: u.id, from: u.from, to: to, fill: fill, piece: u.piece, at: at, samples: samples,
		speech: u.pieceAt, ctx: rctx, cancel: cancel, ticket: ticket, join: u.joins(),
	}})
}

// origin returns where u's readings start: its audio's start, or
// later once the decoder has moved their origin (window.go).
func (l *liveVAD) origin(u *openUtt) int64 {
	return max(u.from, l.origins.get(u.group))
}

// samples returns the stream's samples [from, to) followed by fill
// zeros, and false if neither the VAD nor the history holds them.
func (l *liveVAD) samples(from, to, fill int64) ([]float32, bool) {
	s, ok := l.p.Samples(from, to)
	if !ok && from < to {
		s = make([]float32, to-from)
		ok = l.hist.read(s, from)
	}
	if ok && fill > 0 {
		s = append(s, make([]float32, fill)...)
	}
	return s, ok
}

// pauseFinal asks for the Final of u's piece, whose speech ended at the
// pause o.Pause: its audio up to readAhead after the pause, then silence
// up to the padding, as the reading ahead read it.
func (l *liveVAD) pauseFinal(u *openUtt, o vad.OpenSpeech, emit stage.Emit[liveItem]) error {
	to, fill := o.Pause+l.ahead, max(l.pad-l.ahead, 0)
	at := l.origin(u)
	samples, ok := l.samples(at, to, fill)
	if !ok {
		return nil // not held: the Final comes when the VAD closes the segment
	}
	now := time.Now()
	u.finalAt, u.quiet = o.Pause, o.Scored
	l.gate.preempt(u.from, to)
	return emit(stage.Frame[liveItem]{Offset: u.from, Rate: SampleRate, Entered: now, Payload: liveItem{
		kind: itemFinal, group: u.group, utt: u.id, from: u.from, to: to, fill: fill, piece: u.piece, at: at, samples: samples,
		speech: u.pieceAt, speechEnd: o.Pause, closed: now, atPause: true, join: u.joins(),
	}})
}

// joins reports whether u's readings are those of the first piece of a
// segment that continues the group before.
func (u *openUtt) joins() bool { return u.joined && u.id == u.first }

// resume begins the next piece of u: speech resumed after a pause whose
// Final was handed over, within the VAD's segment.
func (l *liveVAD) resume(u *openUtt) {
	u.id = l.nextID
	l.nextID++
	u.pieceAt = u.quiet // the pause lasted at least this far
	u.last = u.finalAt + l.ahead
	u.piece = min(max(u.from, u.pieceAt-l.pad, u.finalAt+l.ahead), u.pieceAt)
	u.lastTo, u.specTo, u.readOpen, u.finalAt, u.partials = u.pieceAt, -1, false, 0, 0
}

// current returns the open utterance whose speech began at start,
// recording it when it is new; a segment before it whose last piece is
// final is then over, and the decoder is told so, unless the new one
// continues its group (join).
func (l *liveVAD) current(start int64, emit stage.Emit[liveItem]) (*openUtt, error) {
	if n := len(l.open); n > 0 && l.open[n-1].speech == start {
		return l.open[n-1], nil
	}
	// The segments whose last piece is final end here, the latest
	// (closed by the VAD, or still open) unless this one continues it.
	var over []*openUtt
	if l.ended != nil {
		over = append(over, l.ended)
		l.ended = nil
	}
	for _, v := range l.open {
		if v.finalAt > 0 && !v.over {
			v.over = true
			over = append(over, v)
		}
	}
	var join *openUtt
	if n := len(over); n > 0 && l.joins(over[n-1], start) {
		join, over = over[n-1], over[:n-1]
	}
	for _, v := range over {
		if err := l.close(v, emit); err != nil {
			return nil, err
		}
	}
	from := max(start-l.pad, l.prevEnd, 0)
	u := &openUtt{group: l.nextID, first: l.nextID, id: l.nextID, speech: start, from: from, piece: from, pieceAt: start, lastTo: from, specTo: -1, last: from}
	if join != nil {
		// Read as the continuation of the group before, with its last
		// piece's audio, as offline reads the segments of a window
		// together.
		u.group, u.from, u.joined, u.last = join.group, join.from, true, join.last
		u.piece = min(max(from, join.finalAt+l.ahead), start)
	}
	l.nextID++
	l.open = append(l.open, u)
	return u, nil
}

// joinGap is the longest pause after a segment's last Final at a pause
// that the next segment continues its group across (2 s, the gap the
// offline grouper fills with the audio as recorded). Read alone, a
// segment loses the speech before it: tiny read jfk's "ask not" (its
// own VAD segment) as "is not", and as "ask not" after "And so my
// fellow Americans" and its audio, as offline does.
const joinGap = maxFill

// joinContext is the most audio before a segment's speech that its
// readings take from the group it continues (3.5 s): the last piece's,
// from the Final at a pause before it. Every reading of the segment
// reads it again, and a Final's delay after the pause is its reading's
// cost (tiny ~15 ms, base ~35 ms per second of audio on the 2-core
// EPYC): with the whole group before, base's Finals on jfk came 450 ms
// after the speech at p95, against 290 ms read alone.
const joinContext = 7 * SampleRate / 2

// joins reports whether a segment whose speech begins at start
// continues the group of v, whose last piece was final at a pause.
func (l *liveVAD) joins(v *openUtt, start int64) bool {
	return v.finalAt > 0 && start-v.finalAt <= joinGap && start-max(v.last, l.origin(v)) <= joinContext
}

// end records that u's segment ended with its last Final at a pause:
// the decoder is told when the next segment does not continue it.
func (l *liveVAD) end(u *openUtt, emit stage.Emit[liveItem]) error {
	if l.ended != nil && l.ended != u {
		if err := l.closeEnded(emit); err != nil {
			return err
		}
	}
	l.ended = u
	return nil
}

// closeEnded tells the decoder that the ended segment's group is over.
func (l *liveVAD) closeEnded(emit stage.Emit[liveItem]) error {
	u := l.ended
	l.ended = nil
	if u == nil {
		return nil
	}
	return l.close(u, emit)
}

// close tells the decoder that u's segment ended with its last Final.
func (l *liveVAD) close(u *openUtt, emit stage.Emit[liveItem]) error {
	return emit(stage.Frame[liveItem]{Offset: u.from, Rate: SampleRate, Entered: time.Now(), Payload: liveItem{kind: itemClose, group: u.group, utt: u.id, from: u.from, to: u.from}})
}

// closed passes a segment the VAD closed on as a Final of the utterance
// whose speech began inside it (unless it had its Final at a pause and
// nothing was said after: then the segment only ends); utterances that
// began before it and never made a segment (too short) get an empty
// Final.
func (l *liveVAD) closed(ctx context.Context, s vad.Speech, emit stage.Emit[liveItem]) error {
	now := time.Now()
	var u *openUtt
	for len(l.open) > 0 && l.open[0].speech < s.End {
		v := l.open[0]
		l.open = l.open[1:]
		if v.speech >= s.Start && u == nil {
			u = v
			continue
		}
		if v.finalAt > 0 { // its last Final is out: it only ends
			if !v.over {
				v.over = true
				if err := l.end(v, emit); err != nil {
					return err
				}
			}
			continue
		}
		if err := emit(stage.Frame[liveItem]{Offset: v.from, Rate: SampleRate, Entered: now, Payload: liveItem{kind: itemFinal, group: v.group, utt: v.id, from: v.from, to: v.from, piece: v.from, at: v.from, closed: now, speech: v.pieceAt, speechEnd: v.from}}); err != nil {
			return err
		}
	}
	l.prevEnd = s.End
	if u != nil && u.finalAt > 0 {
		if u.over {
			return nil
		}
		u.over = true
		return l.end(u, emit)
	}
	it := liveItem{kind: itemFinal, from: s.Start, to: s.End, piece: s.Start, samples: s.Audio, closed: now, speech: s.Start, speechEnd: max(s.Start, s.End-l.pad)}
	if u != nil {
		it.group, it.utt, it.speech, it.piece, it.join = u.group, u.id, u.pieceAt, max(u.piece, s.Start), u.joins()
		if u.from < s.Start {
			head, ok := l.samples(u.from, s.Start, 0)
			if ok {
				it.from, it.samples = u.from, append(head, s.Audio...)
			}
		} else if u.from < s.End {
			it.from, it.samples = u.from, s.Audio[u.from-s.Start:]
		}
		it.piece = max(it.piece, it.from)
		if at := l.origin(u); at > it.from && at-it.from <= int64(len(it.samples)) {
			it.samples = it.samples[at-it.from:] // the decoder reads from there
			it.at = at
		}
	} else {
		it.group, it.utt = l.nextID, l.nextID
		l.nextID++
	}
	it.at = max(it.at, it.from)
	l.gate.preempt(it.from, it.to)
	return emit(stage.Frame[liveItem]{Offset: it.from, Rate: SampleRate, Entered: now, Payload: it})
}

// liveState is the decoder's state of one of the VAD's utterances (a
// group of pieces, each an utterance of the events).
type liveState struct {
	// agree holds the committed tokens: those of the group's Finals so far
	// (the first base of them), then the piece's.
	agree    agreement
	base     int
	piece    int // the utterance number of the piece being read
	partials int
	last     time.Time   // the last Partial's time
	commits  []time.Time // when each committed token was committed by a Partial (zero: by a Final)
	// done are the segments of the group's Finals, for the next prompt.
	done       []decode.Segment
	spec       *decode.Transcript
	specWords  [][]Word // per segment of spec, with Options.Words
	specFrom   int64
	specTo     int64
	specFill   int64
	specCommit int   // committed tokens when the speculation was read
	specOrigin int64 // the origin it was read from

	// group is the VAD utterance's key. origin is where its readings
	// start (stream samples): its audio's start until a long reading
	// moves it (window.go). head are the committed segments before it:
	// their headLen tokens begin the group's committed text (base counts
	// them) but are no longer the decoder's prefix, only its prompt.
	group   int
	origin  int64
	head    []Segment
	headLen int
	// loose: the last Final at a pause ended a sentence that the prefix
	// leaves open (see finish), so the piece's own text begins after any
	// punctuation its reading goes on with.
	loose bool
	// mark is the committed tokens up to the last Final at a pause (0:
	// none since the origin), which read the audio up to markTo.
	mark   int
	markTo int64
	// prevMark and prevMarkTo are mark and markTo of the Final at a
	// pause before the last (0: the origin is there), where a segment
	// that continues the group moves the origin to (join).
	prevMark   int
	prevMarkTo int64
	// strict is the prefix as the last Final read it, with the sentence
	// end and closing timestamps that the open one leaves out (nil when
	// it ended no sentence), for a Final that read nothing after the
	// open one (tighten) and for a join.
	strict []int32
}

// minRetry is the least speech a Final reads again after a strict
// prefix when it read nothing after an open one (0.5 s).
const minRetry = SampleRate / 2

// tighten makes the prefix strict: the tokens of the Finals before as
// they were read, their sentence end and closing timestamps included.
func (s *liveState) tighten() {
	if s.mark == len(s.agree.committed) {
		s.mark = len(s.strict)
	}
	s.setPrefix(s.strict)
	s.strict, s.loose = nil, false
}

// setPrefix makes ids the prefix: the committed tokens after the head,
// which the next readings continue.
func (s *liveState) setPrefix(ids []int32) {
	s.agree.committed, s.agree.prev, s.agree.older = ids, nil, nil
	s.base = s.headLen + len(ids)
	for len(s.commits) < s.base {
		s.commits = append(s.commits, time.Time{})
	}
	s.commits = s.commits[:s.base]
	s.spec, s.specWords = nil, nil
}

// full returns the group's committed tokens: head's, then the prefix.
func (s *liveState) full() []int32 { return append(tokensOf(s.head), s.agree.committed...) }

// window returns it's audio from s's origin on, and where it begins.
func (s *liveState) window(it liveItem) ([]float32, int64) {
	if off := s.origin - it.at; off > 0 && off <= int64(len(it.samples)) {
		return it.samples[off:], s.origin
	}
	return it.samples, it.at
}

// liveDecoder is the decoder stage of a live run.
type liveDecoder struct {
	t      *Transcriber
	opts   decode.TranscribeOptions
	prompt []int32 // the text of the VAD's utterances before
	lang   string
	gate   *gate
	arr    *arrivals
	states map[int]*liveState // by group
	// lost is a speculative reading cancelled for the Final of the
	// utterance before it (the VAD closes that one only once this one's
	// speech has ended, so it is not asked for again); it is read again
	// after that Final.
	lost   *liveItem
	words  map[int32]bool  // token → starts a word (cached)
	puncts map[int32]bool  // token → punctuation that ends a word (cached)
	folds  map[int32]int32 // token → its lower-case token (fold, cached)
	ends   map[int32]bool  // token → punctuation that ends a sentence (cached)
	timed  bool            // Options.Words: Finals carry word times
	next   int             // the Segment ID of the next segment
	// win says when a reading's origin moves; origins publishes it to the
	// VAD stage.
	win     windowing
	origins *origins

	partials, cancelled, speculated, atPause            int
	first, cadence, commit, commitAll, final, speechEnd stage.Histogram
	audio                                               stage.Histogram // the audio each reading decoded
}

// state returns the state of it's group, begun for it's piece: a new
// piece's first Partial is timed again.
func (d *liveDecoder) state(it liveItem) *liveState {
	s := d.states[it.group]
	if s == nil {
		s = &liveState{piece: it.utt, group: it.group, origin: it.from}
		s.agree.boundary, s.agree.ends, s.agree.text, s.agree.fold = d.wordEnd, d.sentenceEnd, d.text, d.fold
		d.states[it.group] = s
	}
	if s.piece != it.utt {
		s.piece, s.partials = it.utt, 0
		if it.join {
			d.join(s)
		}
	}
	return s
}

// join moves s's origin, when a VAD segment continues its group, to
// the Final at a pause before the last: the segment is read after the
// last piece and its audio, as its continuation, so that its first word
// is heard after speech (jfk's "ask not": "is not" read alone), and its
// readings stay as short as a piece of a segment's (their cost is the
// Final's delay after the pause).
func (d *liveDecoder) join(s *liveState) {
	if s.strict != nil {
		// A pause the VAD ended a segment at (VAD.MinSilence) is long
		// enough for the sentence end the last Final read to be the
		// speaker's: continued without it, tiny read the lecture's
		// sentences after such pauses lower-case and run on. The
		// segment stays open all the same (see finish): Whisper then
		// ends it and begins the next capitalised where the Final ended
		// a sentence, and goes on with the sentence where it did not.
		p := s.strict[:d.openEnd(s.strict, 0, true)]
		if s.mark == len(s.agree.committed) {
			s.mark = len(p)
		}
		s.setPrefix(p)
		s.strict, s.loose = nil, false
	}
	if s.prevMark <= 0 || s.prevMark > s.mark || s.prevMarkTo <= s.origin {
		return
	}
	after := len(s.agree.committed) - s.mark // the tokens after the mark stay
	d.cut(s, s.prevMark, int32((s.prevMarkTo-s.origin)/tsSamples))
	s.mark, s.prevMark = len(s.agree.committed)-after, 0
}

// boundary reports whether a token starts a word.
func (d *liveDecoder) boundary(id int32) bool {
	tok := d.t.whisp.Tokenizer()
	if sp := tok.Specials(); id >= sp.EOT {
		return true
	}
	b, ok := d.words[id]
	if !ok {
		text, err := tok.Decode([]int32{id})
		b = err == nil && strings.HasPrefix(text, " ")
		d.words[id] = b
	}
	return b
}

// wordEnd reports whether the word before a token is complete: the
// token starts a word, or is punctuation that ends one (",", ".", "?",
// "!", ";", ":" and their runs; not "-" or "'", which may join words).
func (d *liveDecoder) wordEnd(id int32) bool {
	return d.boundary(id) || d.punct(id)
}

// punct reports whether a token is punctuation that ends a word (see
// wordEnd).
func (d *liveDecoder) punct(id int32) bool {
	if !d.text(id) {
		return false
	}
	p, ok := d.puncts[id]
	if !ok {
		text, err := d.t.whisp.Tokenizer().Decode([]int32{id})
		p = err == nil && text != "" && strings.Trim(text, ",.?!;:") == ""
		d.puncts[id] = p
	}
	return p
}

// fold returns the token of id's text in lower case where that is one
// token, else id (agreement.fold).
func (d *liveDecoder) fold(id int32) int32 {
	if !d.text(id) {
		return id
	}
	f, ok := d.folds[id]
	if !ok {
		f = id
		tok := d.t.whisp.Tokenizer()
		if text, err := tok.Decode([]int32{id}); err == nil {
			if lower := strings.ToLower(text); lower != text {
				if ids, err := tok.Encode(lower); err == nil && len(ids) == 1 {
					f = ids[0]
				}
			}
		}
		if d.folds == nil {
			d.folds = map[int32]int32{}
		}
		d.folds[id] = f
	}
	return f
}

// sentenceEnd reports whether a token ends a sentence: ".", "?", "!"
// and their runs.
func (d *liveDecoder) sentenceEnd(id int32) bool {
	if id >= d.t.whisp.Tokenizer().Specials().EOT {
		return false
	}
	e, ok := d.ends[id]
	if !ok {
		text, err := d.t.whisp.Tokenizer().Decode([]int32{id})
		e = err == nil && text != "" && strings.Trim(text, ".?!") == ""
		d.ends[id] = e
	}
	return e
}

// text reports whether a token is text: not a timestamp or other special
// token.
func (d *liveDecoder) text(id int32) bool { return id < d.t.whisp.Tokenizer().Specials().EOT }

// Process implements stage.Processor.
func (d *liveDecoder) Process(ctx context.Context, f stage.Frame[liveItem], emit stage.Emit[Event]) error {
	it := f.Payload
	switch it.kind {
	case itemFinal:
		if err := d.finish(ctx, it, emit); err != nil {
			return err
		}
		return d.readLost(ctx, it.utt, emit)
	case itemClose:
		d.close(it.group)
		return nil
	}
	return d.read(ctx, it, emit)
}

// read runs a reading the gate let through: a Partial or a speculative
// Final.
func (d *liveDecoder) read(ctx context.Context, it liveItem, emit stage.Emit[Event]) error {
	t0 := time.Now()
	defer it.cancel()
	err := d.readOpen(it, emit)
	cost := time.Since(t0)
	if it.kind == itemSpeculative || err != nil {
		// Only a partial decoded to its end sets the partial cadence: a
		// cancelled one's time (base's first partial of a cold session,
		// cut at 2 s) held the cadence at 4 s of audio until a partial
		// would end, and none did on jfk.
		cost = 0
	}
	d.gate.release(it.ticket, cost)
	if err != nil && it.ctx.Err() != nil {
		if ctx.Err() != nil {
			// The run ends: its cause, not the cancellation of a reading
			// that was giving way as the run's deadline passed.
			return ctx.Err()
		}
		d.cancelled++ // given way to a Final
		if it.kind == itemSpeculative {
			d.lost = &it
		}
		return nil
	}
	return err
}

// readLost reads again the speculative reading lost to the Final of
// utterance done, if it is of a later utterance and the decoder is free.
func (d *liveDecoder) readLost(ctx context.Context, done int, emit stage.Emit[Event]) error {
	it := d.lost
	d.lost = nil
	if it == nil || it.utt <= done {
		return nil
	}
	rctx, cancel := context.WithCancel(ctx)
	ticket, ok := d.gate.take(true, it.from, it.to, cancel)
	if !ok {
		cancel()
		return nil // a newer reading is queued
	}
	it.ctx, it.cancel, it.ticket = rctx, cancel, ticket
	return d.read(ctx, *it, emit)
}

// readOpen reads an open utterance: a Partial, or a speculative Final.
func (d *liveDecoder) readOpen(it liveItem, emit stage.Emit[Event]) error {
	s := d.state(it)
	samples, origin := s.window(it)
	d.audio.Record(samplesTime(len(samples)))
	if it.kind == itemSpeculative {
		tr, words, err := d.transcribe(it.ctx, samples, s.agree.committed, d.promptOf(s))
		if err != nil {
			return err
		}
		s.spec, s.specWords, s.specFrom, s.specTo, s.specFill, s.specCommit = tr, words, it.from, it.to, it.fill, len(s.agree.committed)
		s.specOrigin = origin
		return nil
	}
	long := origin == s.origin && it.to-origin > d.win.atWord
	pre := s.agree.committed // only grows: a cut into it stays one into the committed tokens
	res, words, err := d.decodeOnce(it.ctx, samples, pre, d.promptOf(s), long)
	if err != nil {
		return err
	}
	hyp := res.Tokens
	before := len(s.agree.committed)
	// A stream's first words set the style the rest continues, and
	// Whisper's first readings of under a second are the least sure:
	// committed from two of them ("8 of", "8 of Spades"), cards_005 went
	// on "4 of Clothes" where offline reads "four of clubs" (with
	// "Eight of spades, four of" forced, tiny reads "clubs"). Until the
	// first group has text, three readings must agree. Later groups read
	// with the text before as prompt, and two agreeing readings are
	// enough: with three for every group's first words, jfk's last
	// sentence ("Ask what you can do for your country") was committed by
	// its Final alone (tiny, golden clips, every word's p95 2.01 → 1.74 s,
	// the same words; reports/2026-11-23-live.md).
	s.agree.three = len(s.agree.committed) == 0 && len(s.head) == 0 && len(d.prompt) == 0
	if res.CompressionRatio <= d.opts.CompressionRatioThreshold && !(res.AvgLogProb < d.opts.LogProbThreshold) {
		s.agree.update(hyp) // an improbable or looping reading commits nothing
	} else if len(hyp) < before || !equalPrefix(hyp, s.agree.committed) {
		hyp = s.agree.committed
	}
	now := time.Now()
	for range len(s.agree.committed) - before {
		s.commits = append(s.commits, now)
	}
	full := s.full()
	seq := append(slices.Clone(full), hyp[len(s.agree.committed):]...)
	own := d.ownStart(s, seq)
	ev := Event{Kind: Partial, Utterance: it.utt, Start: float64(it.piece) / SampleRate, End: float64(it.to) / SampleRate}
	tok := d.t.whisp.Tokenizer()
	if ev.Committed, err = tok.Decode(full[min(own, len(full)):]); err != nil {
		return err
	}
	if ev.Tentative, err = tok.Decode(seq[max(own, len(full)):]); err != nil {
		return err
	}
	if long {
		// The next reading starts at the last committed segment's end, or
		// between two committed words.
		sp := tok.Specials()
		if n, steps := lastSegmentEnd(pre, sp.TimestampBegin, sp.EOT); n > 0 && steps > 0 && origin+int64(steps)*tsSamples < it.to {
			d.cut(s, n, steps)
		} else if n, steps, ok := wordCut(pre, words, tok); ok && origin+int64(steps)*tsSamples < it.to {
			d.cut(s, n, steps)
		}
	}
	if s.partials == 0 {
		if at := d.arr.at(it.speech); !at.IsZero() {
			d.first.Record(now.Sub(at))
		}
	} else {
		d.cadence.Record(now.Sub(s.last))
	}
	s.partials++
	s.last = now
	d.partials++
	return emit(stage.Frame[Event]{Offset: it.from, Rate: SampleRate, Entered: now, Payload: ev})
}

// equalPrefix reports whether a begins with prefix.
func equalPrefix(a, prefix []int32) bool {
	return len(a) >= len(prefix) && slices.Equal(a[:len(prefix)], prefix)
}

// samplesTime returns how long n samples last.
func samplesTime(n int) time.Duration { return time.Duration(n) * time.Second / SampleRate }

// promptOf returns the prompt of s's readings: the text of the VAD's
// utterances before, then that of its committed segments before its
// origin.
func (d *liveDecoder) promptOf(s *liveState) []int32 {
	if len(s.head) == 0 {
		return d.prompt
	}
	segs := decodeSegments(s.head)
	tb := d.t.whisp.Tokenizer().Specials().TimestampBegin
	for i, sg := range segs {
		// A segment cut between two words gets a closing timestamp: tiny
		// repeats a prompt whose last segment is left open.
		if n := len(sg.Tokens); n > 0 && sg.Tokens[0] >= tb && sg.Tokens[n-1] < tb {
			steps := int32((s.head[i].End-s.head[i].Start)/0.02 + 0.5)
			segs[i].Tokens = append(slices.Clip(sg.Tokens), sg.Tokens[0]+steps)
		}
	}
	return nextPrompt(d.prompt, segs)
}

// cut moves s's origin to timestamp step steps, the end of its first n
// committed tokens: they join the head, and the rest, their timestamps
// moved back by steps, stays the prefix. The first n close a segment,
// unless they end with text (a cut between two words, or at a Final
// whose segment the prefix left open): the rest then begins with
// <|0.00|>, as the timestamp rules want a transcript to. The committed
// text stays the same (full), so nothing is retracted.
func (d *liveDecoder) cut(s *liveState, n int, steps int32) {
	tok := d.t.whisp.Tokenizer()
	tb := tok.Specials().TimestampBegin
	c := s.agree.committed
	open := n > 0 && c[n-1] < tb
	start := float64(s.origin) / SampleRate
	s.head = append(s.head, tokenSegments(c[:n], start, start+float64(steps)*0.02, tok, d.lang)...)
	s.headLen += n
	rest := func(ids []int32) []int32 {
		r := shiftTimes(ids[n:], tb, steps)
		if open {
			r = append([]int32{tb}, r...)
		}
		return r
	}
	if prev := s.agree.prev; equalPrefix(prev, c) {
		s.agree.prev = rest(prev)
	} else {
		s.agree.prev = nil
	}
	s.agree.older = nil // three readings agree only on a group's first words
	s.agree.committed = rest(c)
	if s.strict != nil && equalPrefix(s.strict, c[:n]) {
		s.strict = rest(s.strict)
	} else {
		s.strict = nil
	}
	if open { // one token more after the head's: <|0.00|>
		if len(s.commits) > s.headLen {
			s.commits = slices.Insert(s.commits, s.headLen, time.Time{})
		}
		if s.base > s.headLen {
			s.base++
		}
	}
	s.origin += int64(steps) * tsSamples
	s.spec, s.specWords = nil, nil
	s.mark = 0
	d.origins.set(s.group, s.origin)
}

// decodeOnce reads samples greedily in one window as the continuation of
// committed (a Partial: no fallback, no segments); with align, it also
// times committed's words in the audio (a reading that is to move its
// origin between two of them).
func (d *liveDecoder) decodeOnce(ctx context.Context, samples []float32, committed, prompt []int32, align bool) (*decode.Result, []Word, error) {
	a, err := d.t.whisp.NewAudio(samples)
	if err != nil {
		return nil, nil, err
	}
	defer a.Close()
	frames := min(a.Frames(), decode.WindowFrames)
	dec, err := a.Encode(ctx, 0, frames)
	if err != nil {
		return nil, nil, err
	}
	o := d.opts.Options
	o.Language = d.lang
	if o.Language == "" {
		o.Language = d.opts.Language
	}
	o.Temperature, o.BestOf = 0, 0
	o.Prompt, o.Prefix, o.Continue = prompt, committed, len(committed) > 0
	res, err := decode.Decode(ctx, dec, d.t.whisp.Tokenizer(), o)
	if err != nil {
		return nil, nil, err
	}
	if d.lang == "" && d.opts.Language == "" && res.Language != "" {
		d.lang = res.Language // detected on the first reading, kept for the run
	}
	if !align || len(committed) == 0 {
		return res, nil, nil
	}
	ws, err := a.Words(ctx, 0, frames, cmp.Or(o.Language, res.Language), o.Task, [][]int32{committed})
	if err != nil {
		return nil, nil, err
	}
	var words []Word
	for _, w := range ws[0] {
		words = append(words, Word{Text: w.Text, Start: w.Start, End: w.End, Probability: w.Probability})
	}
	return res, words, nil
}

// transcribe reads samples as a whole utterance continuing committed,
// and times its words with Options.Words (as Transcribe does: timeWords).
func (d *liveDecoder) transcribe(ctx context.Context, samples []float32, committed, prompt []int32) (*decode.Transcript, [][]Word, error) {
	a, err := d.t.whisp.NewAudio(samples)
	if err != nil {
		return nil, nil, err
	}
	defer a.Close()
	o := d.opts
	if d.lang != "" {
		o.Language = d.lang
	}
	o.InitialPrompt, o.Prefix, o.Continue = prompt, committed, len(committed) > 0
	tr, err := decode.Transcribe(ctx, a, d.t.whisp.Tokenizer(), o)
	if err != nil || !d.timed {
		return tr, nil, err
	}
	words, err := timeWords(ctx, a, tr, o.Task)
	return tr, words, err
}

// reading returns the Final reading of it's audio from s's origin on
// (samples) continuing the committed tokens: the speculative reading
// when it read this very audio with the words committed since, else a
// new one.
func (d *liveDecoder) reading(ctx context.Context, s *liveState, it liveItem, samples []float32, origin int64) (*decode.Transcript, [][]Word, error) {
	switch {
	case len(samples) == 0:
		return &decode.Transcript{}, nil, nil
	case s.spec != nil && s.specFrom == it.from && s.specOrigin == origin && s.specFill == it.fill && s.specCommit == len(s.agree.committed) &&
		(s.specTo == it.to || it.fill == 0 && d.gate.covers(s.specTo, it.to)):
		d.speculated++
		return s.spec, s.specWords, nil
	}
	d.audio.Record(samplesTime(len(samples)))
	tr, words, err := d.transcribe(ctx, samples, s.agree.committed, d.promptOf(s))
	if errors.Is(err, decode.ErrNoAudio) {
		return &decode.Transcript{}, nil, nil
	}
	return tr, words, err
}

// finish hands over an utterance's Final: the group's reading from its
// committed words on, less the text of the group's Finals before it.
func (d *liveDecoder) finish(ctx context.Context, it liveItem, emit stage.Emit[Event]) error {
	s := d.state(it)
	samples, origin := s.window(it)
	tr, words, err := d.reading(ctx, s, it, samples, origin)
	if err != nil {
		return err
	}
	s.spec, s.specWords = nil, nil
	if d.lang == "" && tr.Language != "" {
		d.lang = tr.Language
		d.t.log.Info("language detected", "language", tr.Language)
	}
	segs := append(slices.Clone(s.head), d.segments(tr, words, origin, it.to, s.agree.committed)...)
	tok := d.t.whisp.Tokenizer()
	have := tokensOf(segs)
	own := dropTokens(segs, d.ownStart(s, have), float64(it.piece)/SampleRate, tok)
	if len(own) == 0 && s.strict != nil && len(samples) > 0 && it.speechEnd-it.speech >= minRetry {
		// Nothing after a prefix left open, from half a second of speech
		// or more (a click is often nothing): under load (10 on the two
		// cores) tiny read nothing more after "wealth tax" and lost the
		// lecture's last sentence. Read again after the sentence's end.
		s.tighten()
		return d.finish(ctx, it, emit)
	}
	if steps := int32((it.piece - origin) / tsSamples); len(own) == 0 && it.atPause && len(samples) > 0 && it.speechEnd-it.speech >= minRetry &&
		steps > 0 && slices.ContainsFunc(s.agree.committed, d.text) {
		// Nothing after the committed text, from half a second of speech
		// or more: tiny, continuing "…in his book, capital in the 21st
		// century,", read nothing of the next pieces ("argues for a 4%
		// global wealth tax", 3 of 3 paced runs of silero_test.wav), with
		// the prefix open or closed by its timestamp. Read the piece
		// alone, the committed text its prompt: the origin moves to the
		// piece's start. After the cut the prefix holds no text (at most
		// <|0.00|>), so a piece that reads nothing alone is read once.
		d.cut(s, len(s.agree.committed), steps)
		return d.finish(ctx, it, emit)
	}
	now := time.Now()
	d.recordCommits(s, segs, float64(it.speech)/SampleRate, now, tok)
	for i := range own {
		own[i].ID, own[i].Utterance, own[i].EndsUtterance = d.next, it.utt, i == len(own)-1
		d.next++
	}
	ev := Event{Kind: Final, Utterance: it.utt, Start: float64(it.piece) / SampleRate, End: float64(it.to) / SampleRate, Segments: own}
	var text strings.Builder
	for _, sg := range own {
		text.WriteString(sg.Text)
	}
	ev.Committed = text.String()
	if !it.closed.IsZero() {
		d.final.Record(now.Sub(it.closed))
	}
	if at := d.arr.at(it.speechEnd); !at.IsZero() && it.to > it.from {
		d.speechEnd.Record(now.Sub(at))
	}
	if it.atPause {
		d.atPause++
		s.done = append(s.done, decodeSegments(own)...)
		// The group's next readings continue these tokens, with their
		// timestamps no later than the audio read: a closing timestamp in
		// the silence after it (<|2.00|> after cards_002's "4", which ends
		// at 0.74 s) put the text's end past the speech that follows,
		// and Whisper read nothing more ("4" for "4 Queen of Clothes",
		// base).
		//
		// A sentence's end there is often the pause's, not the speaker's:
		// the reading's audio ends with it. Continued after "global?",
		// tiny read the "wealth tax" that followed as "Well, that's."
		// (silero_test.wav). The prefix leaves out the sentence's end
		// punctuation (the Final keeps it), and leaves the last segment
		// open (no closing timestamp): after one, Whisper begins a new
		// segment, capitalised, and the Finals of one sentence read
		// "Americans" / "Ask" / "Not" (tiny on jfk; base "Ask." /
		// "NOT.") where offline reads "Americans ask not". With a
		// sentence end left out, the prefix as read is strict, for a
		// Final that reads nothing after it and for a join.
		read := int32((it.to - origin) / tsSamples)
		tb := tok.Specials().TimestampBegin
		open, end := d.openEnd(have, s.headLen, false), d.openEnd(have, s.headLen, true)
		// What openEnd leaves out is the last Final's own sentence end
		// and closing timestamps when this piece read nothing after them
		// (after a join or a strict re-read, whose prefix had them), and
		// the mark lay after them. Left there, it pointed past the
		// shorter prefix, and the cut below panicked ("slice bounds out
		// of range [:9] with capacity 8", 2 of 16 paced runs of
		// silero_test.wav).
		s.mark = min(s.mark, open-s.headLen)
		s.setPrefix(clampTimes(have[s.headLen:open], tb, read))
		s.loose, s.strict = open < end, nil
		if s.loose {
			s.strict = clampTimes(have[s.headLen:], tb, read)
		}
		if s.mark > 0 && origin == s.origin && it.to-origin >= d.win.atPause && s.markTo > origin {
			// Long: the next piece is read from the pause before this one
			// on, this piece its prefix (from this pause on, tiny lost the
			// next piece's first words: "If at all.").
			d.cut(s, s.mark, int32((s.markTo-origin)/tsSamples))
		}
		s.prevMark, s.prevMarkTo = s.mark, s.markTo
		s.mark, s.markTo = len(s.agree.committed), it.to
	} else {
		d.origins.set(it.group, -1)
		delete(d.states, it.group)
		d.prompt = nextPrompt(d.prompt, append(s.done, decodeSegments(own)...))
	}
	return emit(stage.Frame[Event]{Offset: it.from, Rate: SampleRate, Entered: now, Payload: ev})
}

// openEnd returns how many of ids stay when their last segment is left
// open: without the timestamps after its last text and, unless
// keepEnd, without that text's sentence-end punctuation; the tokens
// before least stay.
func (d *liveDecoder) openEnd(ids []int32, least int, keepEnd bool) int {
	j := len(ids)
	for j > least && !d.text(ids[j-1]) {
		j--
	}
	for !keepEnd && j > least && d.sentenceEnd(ids[j-1]) {
		j--
	}
	return j
}

// ownStart returns where a piece's own text begins in seq (the group's
// tokens, committed and read): after the tokens of the Finals before
// it, and after the punctuation and timestamps that begin it when the
// last of those Finals ended a sentence its prefix left open (that
// Final has them).
func (d *liveDecoder) ownStart(s *liveState, seq []int32) int {
	i := s.base
	for s.loose && i < len(seq) && (!d.text(seq[i]) || d.punct(seq[i])) {
		i++
	}
	return i
}

// close ends a group whose last Final was handed over at a pause: its
// text is the prompt of the next.
func (d *liveDecoder) close(group int) {
	s := d.states[group]
	if s == nil {
		return
	}
	delete(d.states, group)
	d.origins.set(group, -1)
	d.prompt = nextPrompt(d.prompt, s.done)
}

// tokensOf returns the tokens of segs, in order.
func tokensOf(segs []Segment) []int32 {
	var out []int32
	for _, s := range segs {
		out = append(out, s.Tokens...)
	}
	return out
}

// decodeSegments returns segs as the decoder's segments (their tokens and
// temperature: what nextPrompt reads).
func decodeSegments(segs []Segment) []decode.Segment {
	out := make([]decode.Segment, len(segs))
	for i, s := range segs {
		out[i] = decode.Segment{Tokens: s.Tokens, Temperature: s.Temperature}
	}
	return out
}

// clampTimes returns ids with every timestamp token (tb on) after tb+last
// set to tb+last.
func clampTimes(ids []int32, tb, last int32) []int32 {
	out := slices.Clone(ids)
	for i, id := range out {
		if id > tb+last {
			out[i] = tb + last
		}
	}
	return out
}

// dropTokens returns segs without their first n tokens (those of the
// group's Finals before): whole segments, and the beginning of the one
// cut there, which then starts no earlier than after (seconds) and keeps
// its text and words after the cut (its words spell its text, so as
// many characters of words go as of text).
func dropTokens(segs []Segment, n int, after float64, tok *tokenizer.Tokenizer) []Segment {
	for len(segs) > 0 && n > 0 {
		s := segs[0]
		if n >= len(s.Tokens) {
			n -= len(s.Tokens)
			segs = segs[1:]
			continue
		}
		var gone, kept []int32
		for i, id := range s.Tokens {
			if id >= tok.Specials().EOT {
				continue
			}
			if i < n {
				gone = append(gone, id)
			} else {
				kept = append(kept, id)
			}
		}
		text, _ := tok.Decode(gone)
		cut := len(text)
		for len(s.Words) > 0 && cut > 0 {
			cut -= len(s.Words[0].Text)
			s.Words = s.Words[1:]
		}
		s.Tokens = s.Tokens[n:]
		s.Text, _ = tok.Decode(kept)
		s.Start = min(max(s.Start, after), s.End)
		s.spanWords()
		segs = segs[1:]
		if strings.TrimSpace(s.Text) != "" {
			segs = append([]Segment{s}, segs...)
		}
		n = 0
	}
	return segs
}

// segments turns a Final reading of audio [from, to) and its word times
// (nil without Options.Words) into Segments, keeping the committed words
// when Whisper took the audio for silence. They are not numbered yet.
func (d *liveDecoder) segments(tr *decode.Transcript, words [][]Word, from, to int64, committed []int32) []Segment {
	base := float64(from) / SampleRate
	end := float64(to) / SampleRate // a last timestamp may lie past it (decode.TranscribeOptions.RetryLoopsOnly)
	seek := int(from / decode.HopLength)
	var segs []Segment
	for i, s := range tr.Segments {
		if s.Text == "" && len(tr.Segments) > 1 {
			continue
		}
		seg := Segment{
			Start: min(base+s.Start, end), End: min(base+s.End, end), Text: s.Text, Tokens: s.Tokens,
			Seek: seek + s.Seek, Language: tr.Language, Temperature: s.Temperature,
			AvgLogProb: s.AvgLogProb, CompressionRatio: s.CompressionRatio, NoSpeechProb: s.NoSpeechProb,
		}
		if i < len(words) {
			for _, w := range words[i] {
				seg.Words = append(seg.Words, Word{Text: w.Text, Start: min(base+w.Start, end), End: min(base+w.End, end), Probability: w.Probability})
			}
			seg.spanWords()
		}
		segs = append(segs, seg)
	}
	if len(committed) > 0 && !equalPrefix(tokensOf(segs), committed) {
		// Never so when the Final continued the committed tokens, unless
		// it was skipped as silence: the committed words stay.
		text, _ := d.t.whisp.Tokenizer().Decode(committed)
		segs = []Segment{{Start: base, End: end, Text: text, Tokens: committed, Seek: seek, Language: d.lang}}
	}
	return segs
}

// recordCommits records the latency of each word of a Final's reading
// segs after the group's Finals before: from its end arriving to the
// Partial that committed it (Commit), or to that or the Final at now
// (Committed). A word's end is its time with Options.Words, else an
// estimate: its share of the characters of its segment's span, which
// begins no earlier than the utterance's speech (speech, in seconds:
// Whisper's first timestamp is the start of the padding before it).
func (d *liveDecoder) recordCommits(s *liveState, segs []Segment, speech float64, now time.Time, tok *tokenizer.Tokenizer) {
	n := 0 // tokens of segs seen
	for _, sg := range segs {
		var chars []int // characters up to the end of each token's text
		total := 0
		for _, id := range sg.Tokens {
			if id < tok.Specials().EOT {
				t, _ := tok.Decode([]int32{id})
				total += len(t)
			}
			chars = append(chars, total)
		}
		start := min(max(sg.Start, speech), sg.End)
		for i, id := range sg.Tokens {
			k := n + i
			// A word's end: the token before the next word's first token,
			// or the segment's last text token.
			last := i+1 == len(sg.Tokens) || d.boundary(sg.Tokens[i+1])
			if k < s.base || total == 0 || id >= tok.Specials().EOT || !last {
				continue
			}
			end := start + (sg.End-start)*float64(chars[i])/float64(total)
			if w, ok := wordAt(sg.Words, chars[i]); ok {
				end = w.End
			}
			at := d.arr.at(int64(end * SampleRate))
			if at.IsZero() {
				continue
			}
			when := now
			if k < len(s.commits) && !s.commits[k].IsZero() {
				when = s.commits[k]
				d.commit.Record(max(0, when.Sub(at)))
			}
			d.commitAll.Record(max(0, when.Sub(at)))
		}
		n += len(sg.Tokens)
	}
}

// wordAt returns the word of words (which spell their segment's text)
// that holds the character before offset c of the text.
func wordAt(words []Word, c int) (Word, bool) {
	at := 0
	for _, w := range words {
		at += len(w.Text)
		if at >= c {
			return w, true
		}
	}
	return Word{}, false
}
