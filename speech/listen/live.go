package listen

import (
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
	// Final is an utterance's text once the VAD has closed it.
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
// Partial every half second or so of new audio; when the VAD closes it,
// one Final. Committed text only grows within an utterance (each event's
// Committed begins with the one before it), and the Final's text begins
// with the last Partial's Committed.
//
// As JSON (listen --live --json, the server's live WebSocket) an event is
// {"type":"partial","utterance":0,"start":0,"end":1.5,"committed":" And
// so","tentative":" my fellow"}, without its segments.
type Event struct {
	Kind EventKind `json:"type"`
	// Utterance numbers the utterances from 0, as Segment.Utterance does.
	Utterance int `json:"utterance"`
	// Start and End are seconds from the start of the input: the
	// utterance's start, and the end of the audio the text was read from.
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
	// timestamps, in proportion to the characters before them).
	Commit stage.Summary
	// Final is the time from the VAD closing an utterance to its Final
	// (Result.EndOfUtterance holds the same); SpeechEnd the time from the
	// last sample of its speech arriving (before the VAD's hangover of
	// Options.VAD.MinSilence and padding) to its Final.
	Final, SpeechEnd stage.Summary
	// Partials counts the Partials handed over. Skipped counts the
	// cadence steps that got none because decoding was behind (the
	// cadence stretched); Cancelled the partial decodes abandoned for a
	// Final. Speculated counts the Finals read ahead while the speaker
	// paused and taken as they were when the VAD closed the utterance.
	Partials, Skipped, Cancelled, Speculated int
}

// partialEvery is the audio between two Partials when decoding keeps up
// (0.5 s: whisper_streaming's minimum chunk is 1 s; half of it shows a
// new word about as soon as it is said).
const partialEvery = SampleRate / 2

// costFactor stretches the cadence when decoding is slow: a partial
// decode that took d waits for costFactor·d of new audio after it, so
// partials take at most 1/costFactor of the time and an utterance's
// Final seldom waits for one.
const costFactor = 2

// TranscribeLive transcribes in as Transcribe does for a live input (each
// utterance as soon as the VAD closes it, whatever the input) and also
// hands over text while an utterance is being spoken: every 0.5 s of new
// audio or so, the utterance so far is transcribed again as the
// continuation of its committed words, and words on which two consecutive
// readings agree are committed (LocalAgreement-2). The committed tokens
// are the next reading's decoder prefix, fed in one pass, and the prompt
// is the text of the utterances before. When a pause begins and lasts the
// VAD's padding, the utterance's final text is read ahead; if the VAD
// then closes the utterance there, that reading is the Final at once,
// else the Final is decoded from the committed words on. Decoding never
// samples (temperature 0 unless Options.Temperature says otherwise), so
// the Final does not stray from the committed words it continues.
//
// When decoding falls behind, partials come less often (never queued:
// the next one reads the newest audio) and a partial in progress gives
// way to a Final; the audio waiting is bounded by the pipeline's
// channels. emit runs on one of the run's goroutines, one call at a time;
// options, errors and cancellation are as for Transcribe.
func (t *Transcriber) TranscribeLive(ctx context.Context, in Input, o Options, emit func(Event) error) (*LiveResult, error) {
	if t.vad == nil {
		return nil, fmt.Errorf("%w: live transcription needs the VAD (Config.NoVAD is set)", ErrBadOptions)
	}
	if o.NoVAD {
		return nil, fmt.Errorf("%w: live transcription needs the VAD (Options.NoVAD is set)", ErrBadOptions)
	}
	opts, err := t.decodeOptions(o)
	if err != nil {
		return nil, err
	}
	if o.Temperature == 0 {
		opts.Temperatures = []float64{0}
	}
	// A final waits for nothing but its reading: a short window failing the
	// log-probability check alone, or closing its text past the audio, is
	// not encoded again for 30 s (0.5–1.3 s of CPU here: what made
	// cards_003's final 0.5–1.9 s late).
	opts.RetryLoopsOnly = true
	vo, err := vadOptions(o.VAD)
	if err != nil {
		return nil, err
	}
	src, err := in.open(ctx, []int{SampleRate}, t.log)
	if err != nil {
		return nil, err
	}
	defer src.close()
	proc, err := t.vad.NewProcessor(ctx, SampleRate, vo)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	arr := &arrivals{}
	src.tap = arr.add
	g := &gate{pad: proc.Pad(), trim: vo.MinSilence >= vo.SpeechPad}
	lv := &liveVAD{p: proc, gate: g, arr: arr, pad: proc.Pad(), every: partialEvery}
	ld := &liveDecoder{t: t, opts: opts, prompt: opts.InitialPrompt, gate: g, arr: arr, states: map[int]*liveState{}, words: map[int32]bool{}, puncts: map[int32]bool{}, timed: o.Words}

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
		FirstPartial: ld.first.Summary(), Cadence: ld.cadence.Summary(), Commit: ld.commit.Summary(),
		Final: ld.final.Summary(), SpeechEnd: ld.speechEnd.Summary(),
		Partials: ld.partials, Skipped: lv.skipped, Cancelled: ld.cancelled, Speculated: ld.speculated,
	}
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
		{"live_first_partial", r.FirstPartial}, {"live_cadence", r.Cadence}, {"live_commit", r.Commit},
		{"live_eou_to_final", r.Final}, {"live_speech_end_to_final", r.SpeechEnd},
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
}

// liveItem is the VAD stage's request to the decoder: a reading of an
// utterance in progress (partial, or speculative: the final text read
// ahead during a pause), or its final audio.
type liveItem struct {
	kind       itemKind
	utt        int
	from, to   int64     // the audio's bounds in stream samples
	samples    []float32 // [from, to), owned by the receiver
	speech     int64     // where the speech began (unpadded)
	speechEnd  int64     // where it ended (final: the segment's end less the padding)
	closed     time.Time // final: when the VAD closed it
	ctx        context.Context
	cancel     context.CancelFunc // partial and speculative readings
	noPartials bool               // final: the utterance was never read while open
}

type itemKind int

const (
	itemPartial itemKind = iota
	itemSpeculative
	itemFinal
)

// gate is the budget shared by the VAD stage and the decoder: at most one
// reading of an open utterance is queued or running, and it can be
// cancelled when a Final needs the decoder.
type gate struct {
	mu       sync.Mutex
	busy     bool
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

// take reserves the decoder for a reading, unless one is in flight.
func (g *gate) take(spec bool, from, to int64, cancel context.CancelFunc) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy {
		return false
	}
	g.busy, g.spec, g.from, g.to, g.cancel = true, spec, from, to, cancel
	return true
}

// release ends the reading in flight, recording how long it took.
func (g *gate) release(cost time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
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

// openUtt is an utterance the VAD stage has seen begin.
type openUtt struct {
	id       int
	speech   int64 // where the speech began (unpadded)
	from     int64 // where its audio starts (padded)
	lastTo   int64 // the end of the last reading asked for
	specTo   int64 // the end of the last speculative reading asked for
	readOpen bool  // a reading was asked for while it was open
}

// liveVAD is the VAD stage of a live run: it passes the VAD's closed
// segments on as Finals and, while speech is open, asks for readings of
// it at the cadence the gate allows.
type liveVAD struct {
	p       *vad.Processor
	gate    *gate
	arr     *arrivals
	pad     int64
	every   int64
	open    []*openUtt // oldest first: a segment may close after the next has begun
	nextID  int
	prevEnd int64 // the end of the last segment closed
	skipped int
}

// Process implements stage.Processor.
func (l *liveVAD) Process(ctx context.Context, f stage.Frame[[]float32], emit stage.Emit[liveItem]) error {
	if err := l.p.Process(ctx, f, func(s stage.Frame[vad.Speech]) error { return l.closed(ctx, s.Payload, emit) }); err != nil {
		return err
	}
	return l.read(ctx, emit)
}

// Flush implements stage.Flusher.
func (l *liveVAD) Flush(ctx context.Context, emit stage.Emit[liveItem]) error {
	return l.p.Flush(ctx, func(s stage.Frame[vad.Speech]) error { return l.closed(ctx, s.Payload, emit) })
}

// read asks for a reading of the open speech when it is due.
func (l *liveVAD) read(ctx context.Context, emit stage.Emit[liveItem]) error {
	o, ok := l.p.Open()
	if !ok {
		return nil
	}
	u := l.current(o.Start)
	to := o.Scored
	kind := itemPartial
	if o.Pause > u.speech && o.Scored-o.Pause >= l.pad {
		// The speaker paused: unless speech resumes, the segment the VAD
		// closes will end at the pause plus the padding, so read that now.
		to = o.Pause + l.pad
		if to == u.specTo {
			return nil
		}
		kind = itemSpeculative
	} else if to-u.lastTo < l.gate.wait(l.every, time.Now()) {
		return nil
	}
	rctx, cancel := context.WithCancel(ctx)
	if kind == itemSpeculative {
		l.gate.preempt(-1, -1) // the partial in flight reads less than this will
	}
	if !l.gate.take(kind == itemSpeculative, u.from, to, cancel) {
		cancel()
		return nil // decoding is behind: the cadence stretches
	}
	samples, ok := l.p.Samples(u.from, to)
	if !ok {
		cancel()
		l.gate.release(0)
		return nil
	}
	if kind == itemPartial {
		if u.readOpen {
			l.skipped += int((to-u.lastTo)/l.every) - 1
		}
		u.lastTo = to
	} else {
		u.specTo = to
	}
	u.readOpen = true
	return emit(stage.Frame[liveItem]{Offset: u.from, Rate: SampleRate, Entered: time.Now(), Payload: liveItem{
		kind: kind, utt: u.id, from: u.from, to: to, samples: samples, speech: u.speech, ctx: rctx, cancel: cancel,
	}})
}

// current returns the open utterance whose speech began at start,
// recording it when it is new.
func (l *liveVAD) current(start int64) *openUtt {
	if n := len(l.open); n > 0 && l.open[n-1].speech == start {
		return l.open[n-1]
	}
	from := max(start-l.pad, l.prevEnd, 0)
	u := &openUtt{id: l.nextID, speech: start, from: from, lastTo: from, specTo: -1}
	l.nextID++
	l.open = append(l.open, u)
	return u
}

// closed passes a segment the VAD closed on as a Final of the utterance
// whose speech began inside it; utterances that began before it and
// never made a segment (too short) get an empty Final.
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
		if err := emit(stage.Frame[liveItem]{Offset: v.from, Rate: SampleRate, Entered: now, Payload: liveItem{kind: itemFinal, utt: v.id, from: v.from, to: v.from, closed: now, speech: v.speech, speechEnd: v.from, noPartials: !v.readOpen}}); err != nil {
			return err
		}
	}
	it := liveItem{kind: itemFinal, from: s.Start, to: s.End, samples: s.Audio, closed: now, speech: s.Start, speechEnd: max(s.Start, s.End-l.pad), noPartials: true}
	if u != nil {
		it.utt, it.speech, it.noPartials = u.id, u.speech, !u.readOpen
		if u.from < s.Start {
			head, ok := l.p.Samples(u.from, s.Start)
			if ok {
				it.from, it.samples = u.from, append(head, s.Audio...)
			}
		} else if u.from < s.End {
			it.from, it.samples = u.from, s.Audio[u.from-s.Start:]
		}
	} else {
		it.utt = l.nextID
		l.nextID++
	}
	l.prevEnd = s.End
	l.gate.preempt(it.from, it.to)
	return emit(stage.Frame[liveItem]{Offset: it.from, Rate: SampleRate, Entered: now, Payload: it})
}

// liveState is the decoder's state of one utterance.
type liveState struct {
	agree      agreement
	partials   int
	last       time.Time   // the last Partial's time
	commits    []time.Time // when each committed token was committed
	spec       *decode.Transcript
	specWords  [][]Word // per segment of spec, with Options.Words
	specFrom   int64
	specTo     int64
	specCommit int // committed tokens when the speculation was read
}

// liveDecoder is the decoder stage of a live run.
type liveDecoder struct {
	t      *Transcriber
	opts   decode.TranscribeOptions
	prompt []int32
	lang   string
	gate   *gate
	arr    *arrivals
	states map[int]*liveState
	// lost is a speculative reading cancelled for the Final of the
	// utterance before it (the VAD closes that one only once this one's
	// speech has ended, so it is not asked for again); it is read again
	// after that Final.
	lost   *liveItem
	words  map[int32]bool // token → starts a word (cached)
	puncts map[int32]bool // token → punctuation that ends a word (cached)
	timed  bool           // Options.Words: Finals carry word times
	next   int            // the Segment ID of the next segment

	partials, cancelled, speculated          int
	first, cadence, commit, final, speechEnd stage.Histogram
}

// state returns the state of utterance id.
func (d *liveDecoder) state(id int) *liveState {
	s := d.states[id]
	if s == nil {
		s = &liveState{}
		s.agree.boundary = d.wordEnd
		d.states[id] = s
	}
	return s
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
	if d.boundary(id) {
		return true
	}
	p, ok := d.puncts[id]
	if !ok {
		text, err := d.t.whisp.Tokenizer().Decode([]int32{id})
		p = err == nil && text != "" && strings.Trim(text, ",.?!;:") == ""
		d.puncts[id] = p
	}
	return p
}

// Process implements stage.Processor.
func (d *liveDecoder) Process(ctx context.Context, f stage.Frame[liveItem], emit stage.Emit[Event]) error {
	it := f.Payload
	if it.kind == itemFinal {
		if err := d.finish(ctx, it, emit); err != nil {
			return err
		}
		return d.readLost(ctx, it.utt, emit)
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
	d.gate.release(cost)
	if err != nil && it.ctx.Err() != nil && ctx.Err() == nil {
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
	if !d.gate.take(true, it.from, it.to, cancel) {
		cancel()
		return nil // a newer reading is queued
	}
	it.ctx, it.cancel = rctx, cancel
	return d.read(ctx, *it, emit)
}

// readOpen reads an open utterance: a Partial, or a speculative Final.
func (d *liveDecoder) readOpen(it liveItem, emit stage.Emit[Event]) error {
	s := d.state(it.utt)
	if it.kind == itemSpeculative {
		tr, words, err := d.transcribe(it.ctx, it.samples, s.agree.committed)
		if err != nil {
			return err
		}
		s.spec, s.specWords, s.specFrom, s.specTo, s.specCommit = tr, words, it.from, it.to, len(s.agree.committed)
		return nil
	}
	res, err := d.decodeOnce(it.ctx, it.samples, s.agree.committed)
	if err != nil {
		return err
	}
	hyp := res.Tokens
	before := len(s.agree.committed)
	if res.CompressionRatio <= d.opts.CompressionRatioThreshold && !(res.AvgLogProb < d.opts.LogProbThreshold) {
		s.agree.update(hyp) // an improbable or looping reading commits nothing
	} else if len(hyp) < before || !equalPrefix(hyp, s.agree.committed) {
		hyp = s.agree.committed
	}
	now := time.Now()
	for range len(s.agree.committed) - before {
		s.commits = append(s.commits, now)
	}
	committed := s.agree.committed
	tentative := hyp[len(committed):]
	ev := Event{Kind: Partial, Utterance: it.utt, Start: float64(it.from) / SampleRate, End: float64(it.to) / SampleRate}
	tok := d.t.whisp.Tokenizer()
	if ev.Committed, err = tok.Decode(committed); err != nil {
		return err
	}
	if ev.Tentative, err = tok.Decode(tentative); err != nil {
		return err
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

// decodeOnce reads samples greedily in one window as the continuation of
// committed (a Partial: no fallback, no segments).
func (d *liveDecoder) decodeOnce(ctx context.Context, samples []float32, committed []int32) (*decode.Result, error) {
	a, err := d.t.whisp.NewAudio(samples)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	dec, err := a.Encode(ctx, 0, min(a.Frames(), decode.WindowFrames))
	if err != nil {
		return nil, err
	}
	o := d.opts.Options
	o.Language = d.lang
	if o.Language == "" {
		o.Language = d.opts.Language
	}
	o.Temperature, o.BestOf = 0, 0
	o.Prompt, o.Prefix, o.Continue = d.prompt, committed, len(committed) > 0
	res, err := decode.Decode(ctx, dec, d.t.whisp.Tokenizer(), o)
	if err != nil {
		return nil, err
	}
	if d.lang == "" && d.opts.Language == "" && res.Language != "" {
		d.lang = res.Language // detected on the first reading, kept for the run
	}
	return res, nil
}

// transcribe reads samples as a whole utterance continuing committed,
// and times its words with Options.Words (as Transcribe does: timeWords).
func (d *liveDecoder) transcribe(ctx context.Context, samples []float32, committed []int32) (*decode.Transcript, [][]Word, error) {
	a, err := d.t.whisp.NewAudio(samples)
	if err != nil {
		return nil, nil, err
	}
	defer a.Close()
	o := d.opts
	if d.lang != "" {
		o.Language = d.lang
	}
	o.InitialPrompt, o.Prefix, o.Continue = d.prompt, committed, len(committed) > 0
	tr, err := decode.Transcribe(ctx, a, d.t.whisp.Tokenizer(), o)
	if err != nil || !d.timed {
		return tr, nil, err
	}
	words, err := timeWords(ctx, a, tr, o.Task)
	return tr, words, err
}

// finish hands over an utterance's Final: the speculative reading when it
// read this very audio with the words committed since, else a reading
// continuing the committed words.
func (d *liveDecoder) finish(ctx context.Context, it liveItem, emit stage.Emit[Event]) error {
	s := d.state(it.utt)
	delete(d.states, it.utt)
	var tr *decode.Transcript
	var words [][]Word
	switch {
	case len(it.samples) == 0:
		tr = &decode.Transcript{}
	case s.spec != nil && s.specFrom == it.from && d.gate.covers(s.specTo, it.to) && s.specCommit == len(s.agree.committed):
		tr, words = s.spec, s.specWords
		d.speculated++
	default:
		var err error
		if tr, words, err = d.transcribe(ctx, it.samples, s.agree.committed); err != nil {
			if errors.Is(err, decode.ErrNoAudio) {
				tr = &decode.Transcript{}
			} else {
				return err
			}
		}
	}
	if d.lang == "" && tr.Language != "" {
		d.lang = tr.Language
		d.t.log.Info("language detected", "language", tr.Language)
	}
	tok := d.t.whisp.Tokenizer()
	segs := d.segments(tr, words, it, s.agree.committed)
	ev := Event{Kind: Final, Utterance: it.utt, Start: float64(it.from) / SampleRate, End: float64(it.to) / SampleRate, Segments: segs}
	var text strings.Builder
	for _, sg := range segs {
		text.WriteString(sg.Text)
	}
	ev.Committed = text.String()
	now := time.Now()
	if !it.closed.IsZero() {
		d.final.Record(now.Sub(it.closed))
	}
	if at := d.arr.at(it.speechEnd); !at.IsZero() && len(it.samples) > 0 {
		d.speechEnd.Record(now.Sub(at))
	}
	d.recordCommits(s, segs, tok)
	var toks []decode.Segment
	for _, sg := range segs {
		toks = append(toks, decode.Segment{Tokens: sg.Tokens, Temperature: sg.Temperature})
	}
	d.prompt = nextPrompt(d.prompt, toks)
	return emit(stage.Frame[Event]{Offset: it.from, Rate: SampleRate, Entered: now, Payload: ev})
}

// segments turns the Final's transcript and its word times (nil without
// Options.Words) into Segments, keeping the committed words when Whisper
// took the audio for silence.
func (d *liveDecoder) segments(tr *decode.Transcript, words [][]Word, it liveItem, committed []int32) []Segment {
	base := float64(it.from) / SampleRate
	end := float64(it.to) / SampleRate // a last timestamp may lie past it (decode.TranscribeOptions.RetryLoopsOnly)
	seek := int(it.from / decode.HopLength)
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
	if len(committed) > 0 {
		var have []int32
		for _, s := range segs {
			have = append(have, s.Tokens...)
		}
		if !equalPrefix(have, committed) {
			// Never so when the Final continued the committed tokens, unless
			// it was skipped as silence: the committed words stay.
			text, _ := d.t.whisp.Tokenizer().Decode(committed)
			segs = []Segment{{Start: base, End: float64(it.to) / SampleRate, Text: text, Tokens: committed, Seek: seek, Language: d.lang}}
		}
	}
	for i := range segs {
		segs[i].ID, segs[i].Utterance, segs[i].EndsUtterance = d.next, it.utt, i == len(segs)-1
		d.next++
	}
	return segs
}

// recordCommits records the latency of each committed word: from its end
// arriving (estimated within its segment by its share of the characters)
// to the Partial that committed it.
func (d *liveDecoder) recordCommits(s *liveState, segs []Segment, tok *tokenizer.Tokenizer) {
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
		for i, id := range sg.Tokens {
			k := n + i
			if k >= len(s.commits) || total == 0 {
				break
			}
			// A word's end: the token before the next word's first token,
			// or the segment's last text token.
			last := i+1 == len(sg.Tokens) || d.boundary(sg.Tokens[i+1])
			if id >= tok.Specials().EOT || !last {
				continue
			}
			end := sg.Start + (sg.End-sg.Start)*float64(chars[i])/float64(total)
			if at := d.arr.at(int64(end * SampleRate)); !at.IsZero() {
				d.commit.Record(max(0, s.commits[k].Sub(at)))
			}
		}
		n += len(sg.Tokens)
	}
}
