package decode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// ErrAllSuppressed is returned when the rules leave no token to choose.
var ErrAllSuppressed = errors.New("every token is suppressed")

// Decode decodes one window: it detects the language if opts.Language is
// "", builds the prefix, runs greedy decoding, sampling or beam search under
// the chosen rules, and returns the best hypothesis. dec is started afresh.
func Decode(ctx context.Context, dec Decoder, vocab Vocabulary, opts Options) (*Result, error) {
	sp := vocab.Specials()
	return decode(ctx, dec, vocab, &sp, opts, rand.New(rand.NewPCG(opts.Seed, 0x5eed)))
}

func decode(ctx context.Context, dec Decoder, vocab Vocabulary, sp *tokenizer.Specials, opts Options, rng *rand.Rand) (*Result, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if f, ok := dec.(Finisher); ok {
		defer f.Finish()
	}
	res := &Result{Temperature: opts.Temperature, NoSpeechProb: math.NaN()}
	lang := opts.Language
	if lang == "" {
		if len(sp.Languages) == 0 {
			lang = "en"
		} else {
			det, err := detectLanguage(ctx, dec, vocab.Size(), sp)
			if err != nil {
				return nil, err
			}
			lang, res.LanguageProbs = det.Language.Code, det.Probs
		}
	}
	if len(sp.Languages) > 0 {
		l, err := sp.Language(lang)
		if err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
		lang = l.Code
	}
	res.Language = lang

	t, err := newTask(dec, vocab.Size(), sp, opts, lang, rng)
	if err != nil {
		return nil, err
	}
	if err := t.run(ctx); err != nil {
		return nil, err
	}
	tokens, sum, stats := t.best()
	res.Tokens = tokens
	res.AvgLogProb = sum / float64(len(tokens)-t.forced+1)
	res.LogProbs = make([]float64, t.forced, t.forced+len(stats))
	res.NoSpeechProbs = make([]float64, t.forced, t.forced+len(stats))
	for i := range t.forced {
		res.LogProbs[i], res.NoSpeechProbs[i] = math.NaN(), math.NaN()
	}
	for _, st := range stats {
		res.LogProbs = append(res.LogProbs, st.lp)
		res.NoSpeechProbs = append(res.NoSpeechProbs, st.noSpeech)
	}
	res.NoSpeechProb = t.noSpeech
	text, err := vocab.Decode(tokens)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	res.Text = strings.TrimSpace(text)
	res.CompressionRatio = CompressionRatio(res.Text)
	return res, nil
}

// task is one run of the decoding loop over a group of hypotheses.
type task struct {
	dec     Decoder
	sp      *tokenizer.Specials
	opts    Options
	rng     *rand.Rand
	filters []Filter

	initial     []int32
	sampleBegin int // where the rules and the result begin (before a Continue prefix)
	forced      int // Continue prefix tokens at sampleBegin, not sampled
	sotIndex    int
	sampleLen   int
	n           int // hypotheses: beams, samples, or 1

	rows     [][]float32   // next-token logits per hypothesis
	sotRow   []float32     // logits at the start-of-transcript position
	tokens   [][]int32     // hypotheses, prefix included
	spare    [][]int32     // beam search builds the next hypotheses here
	sum      []float64     // summed log-probabilities
	stats    [][]tokenStat // per hypothesis, per sampled token
	spareSt  [][]tokenStat // beam search builds the next hypotheses' stats here
	rowNS    []float64     // per hypothesis: P(<|nospeech|>) of the current row, before the filters
	next     []int32       // tokens to feed at the next step
	noSpeech float64

	// A greedy step's log-probabilities are summed while the decoder runs
	// the next step (see lateLogProbs): back holds the rows being read
	// while the decoder writes the next logits into rows.
	back [][]float32
	late lateLogProbs

	beam *beamState
}

func newTask(dec Decoder, vocab int, sp *tokenizer.Specials, opts Options, lang string, rng *rand.Rand) (*task, error) {
	if int(sp.TimestampBegin)+tokenizer.Timestamps > vocab {
		return nil, fmt.Errorf("decode: vocabulary of %d tokens has no room for timestamps from %d", vocab, sp.TimestampBegin)
	}
	sot, err := sp.SOTSequence(lang, opts.Task, opts.Timestamps)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	for _, id := range slices.Concat(opts.Prompt, opts.Prefix, opts.SuppressTokens) {
		if id < 0 || int(id) >= vocab {
			return nil, fmt.Errorf("decode: token id %d in options is outside the vocabulary [0, %d)", id, vocab)
		}
	}
	t := &task{dec: dec, sp: sp, opts: opts, rng: rng, noSpeech: math.NaN()}

	initial := slices.Clone(sot)
	forced := 0 // prefix tokens that count as sampled (Continue)
	if len(opts.Prefix) > 0 {
		prefix := opts.Prefix
		// OpenAI keeps the prefix's last n_ctx/2 - sample_len tokens (all
		// of it when that is 0, as Python's prefix[-0:] does).
		sampleLen := cmp.Or(opts.SampleLen, TextContext/2)
		if keep := TextContext/2 - sampleLen; keep > 0 && len(prefix) > keep {
			prefix = prefix[len(prefix)-keep:]
		}
		initial = append(initial, prefix...)
		if opts.Continue {
			forced = len(prefix)
		}
	}
	if len(opts.Prompt) > 0 {
		prompt := opts.Prompt
		if keep := TextContext/2 - 1; len(prompt) > keep {
			prompt = prompt[len(prompt)-keep:]
		}
		initial = slices.Concat([]int32{sp.StartOfPrev}, prompt, initial)
	}
	if len(initial) >= TextContext {
		return nil, fmt.Errorf("decode: prefix of %d tokens fills the %d-token context", len(initial), TextContext)
	}
	sampleLen := opts.SampleLen
	if sampleLen == 0 {
		sampleLen = TextContext / 2
		if opts.Rules == TransformersJS {
			sampleLen = TextContext - len(initial) // max_length 448 in all
		}
	}
	t.initial, t.sampleBegin, t.sampleLen = initial, len(initial)-forced, sampleLen
	t.forced = forced
	t.sotIndex = slices.Index(initial, sp.SOT)

	t.n = 1
	switch {
	case opts.BeamSize > 0:
		t.n = opts.BeamSize
		patience := opts.Patience
		if patience == 0 {
			patience = 1
		}
		maxCand := int(math.RoundToEven(float64(opts.BeamSize) * patience))
		if maxCand <= 0 {
			return nil, fmt.Errorf("decode: beam size %d with patience %v keeps no hypothesis", opts.BeamSize, opts.Patience)
		}
		t.beam = newBeamState(opts.BeamSize, maxCand)
	case opts.BestOf > 0:
		t.n = opts.BestOf
	}

	t.filters = t.makeFilters()
	t.rows = make([][]float32, t.n)
	t.tokens = make([][]int32, t.n)
	t.spare = make([][]int32, t.n)
	for b := range t.n {
		t.rows[b] = make([]float32, vocab)
		t.tokens[b] = make([]int32, 0, TextContext+2)
		t.spare[b] = make([]int32, 0, TextContext+2)
	}
	t.sotRow = make([]float32, vocab)
	t.sum = make([]float64, t.n)
	t.stats = make([][]tokenStat, t.n)
	t.spareSt = make([][]tokenStat, t.n)
	t.rowNS = make([]float64, t.n)
	t.next = make([]int32, t.n)
	return t, nil
}

// tokenStat describes how a sampled token was chosen: its log-probability
// under the rules, and the probability the model gave <|nospeech|> at its
// position before the rules suppressed that token.
type tokenStat struct {
	lp, noSpeech float64
}

func (t *task) makeFilters() []Filter {
	o, sp := &t.opts, t.sp
	var fs []Filter
	if o.SuppressBlank {
		fs = append(fs, SuppressBlank(sp, t.sampleBegin))
	}
	if len(o.SuppressTokens) > 0 {
		ids := slices.Clone(o.SuppressTokens)
		if o.Rules == OpenAI {
			ids = append(ids, sp.Transcribe, sp.Translate, sp.SOT, sp.StartOfPrev, sp.StartOfLM)
			if sp.NoSpeech >= 0 {
				ids = append(ids, sp.NoSpeech)
			}
		}
		slices.Sort(ids)
		fs = append(fs, SuppressTokens(slices.Compact(ids)))
	}
	if o.Timestamps {
		maxInitial := -1
		if o.MaxInitialTimestamp > 0 {
			maxInitial = int(math.RoundToEven(o.MaxInitialTimestamp / tokenizer.TimePrecision))
		}
		if o.Rules == OpenAI {
			fs = append(fs, TimestampRules(sp, t.sampleBegin, maxInitial))
		} else {
			fs = append(fs, TransformersJSTimestampRules(sp, t.sampleBegin, maxInitial))
		}
	}
	return fs
}

// run is the decoding loop: one forward pass per token, filters, choice.
func (t *task) run(ctx context.Context) error {
	t.late.due = t.late.due[:0] // a run that ended early may have left some
	for b := range t.n {
		t.tokens[b] = append(t.tokens[b][:0], t.initial...)
		t.stats[b] = t.stats[b][:0]
	}
	last := len(t.initial) - 1
	at, out := []int{last}, [][]float32{t.rows[0]}
	if t.sotIndex >= 0 && t.sotIndex != last {
		at, out = []int{t.sotIndex, last}, [][]float32{t.sotRow, t.rows[0]}
	}
	if err := t.dec.Start(ctx, t.n, t.initial, at, out); err != nil {
		return fmt.Errorf("decode: first decoder pass: %w", err)
	}
	if t.sp.NoSpeech >= 0 && t.sotIndex >= 0 {
		row := t.sotRow
		if t.sotIndex == last {
			row = t.rows[0]
		}
		t.noSpeech = math.Exp(logSoftmaxAt(row, int(t.sp.NoSpeech)))
	}
	for b := 1; b < t.n; b++ {
		copy(t.rows[b], t.rows[0])
	}

	for i := 0; i < t.sampleLen; i++ {
		if i > 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("decode: %w", err)
			}
			t.late.start(t)
			err := t.dec.Step(ctx, t.next, t.rows)
			t.late.finish(t)
			if err != nil {
				return fmt.Errorf("decode: decoder step %d: %w", i, err)
			}
		}
		for b := range t.n {
			// A segment's own no-speech probability is read at its opening
			// timestamp, which follows a timestamp (the previous segment's
			// closing one): only there is it worth a pass over the
			// vocabulary (a logsumexp of 51,865 values, ~0.4 ms a token).
			t.rowNS[b] = math.NaN()
			if toks := t.tokens[b]; t.sp.NoSpeech >= 0 && len(toks) > 0 && toks[len(toks)-1] >= t.sp.TimestampBegin {
				t.rowNS[b] = math.Exp(logSoftmaxAt(t.rows[b], int(t.sp.NoSpeech)))
			}
			for _, f := range t.filters {
				f.Apply(t.rows[b], t.tokens[b])
			}
		}
		var done bool
		var err error
		if t.beam != nil {
			done, err = t.beamUpdate()
		} else {
			done, err = t.greedyUpdate()
		}
		if err != nil {
			return fmt.Errorf("decode: step %d: %w", i, err)
		}
		if done || len(t.tokens[0]) > TextContext {
			break
		}
	}
	t.late.start(t)
	t.late.finish(t)
	return nil
}

// lateLogProbs sums a greedy step's log-probabilities (a log-sum-exp over
// the vocabulary for each hypothesis, ~13–25 µs on a CPU core) on another
// goroutine while the decoder runs the next step: the next token is the
// argmax or a sample, which does not need them, and on a GPU the host
// would otherwise do this work while the device waits.
type lateLogProbs struct {
	due  []lateLogProb
	done chan struct{}
	run  func() // l.compute, bound once: a step allocates nothing
}

// lateLogProb is one hypothesis's pending log-probability: its row, the
// token chosen from it and the stat it fills.
type lateLogProb struct {
	b, stat int
	tok     int32
	row     []float32
	lp      float64
}

// start computes the due log-probabilities in the background and gives
// the decoder the other set of rows to write.
func (l *lateLogProbs) start(t *task) {
	if len(l.due) == 0 {
		return
	}
	if t.back == nil {
		t.back = make([][]float32, len(t.rows))
		for b := range t.back {
			t.back[b] = make([]float32, len(t.rows[b]))
		}
	}
	t.rows, t.back = t.back, t.rows
	if l.run == nil {
		l.done = make(chan struct{})
		l.run = l.compute
	}
	go l.run()
}

func (l *lateLogProbs) compute() {
	for i := range l.due {
		d := &l.due[i]
		d.lp = logSoftmaxAt(d.row, int(d.tok))
	}
	l.done <- struct{}{}
}

// finish waits for start's work and adds it to the sums and stats.
func (l *lateLogProbs) finish(t *task) {
	if len(l.due) == 0 {
		return
	}
	<-l.done
	for _, d := range l.due {
		t.sum[d.b] += d.lp
		t.stats[d.b][d.stat].lp = d.lp
	}
	l.due = l.due[:0]
}

// greedyUpdate picks each hypothesis's next token: the most likely one at
// temperature 0, else a sample. Finished hypotheses repeat <|endoftext|>.
func (t *task) greedyUpdate() (done bool, err error) {
	eot := t.sp.EOT
	done = true
	for b, row := range t.rows {
		var next int32
		if t.opts.Temperature == 0 {
			next = argmax(row)
		} else {
			next = t.sample(row)
		}
		if next < 0 {
			return false, ErrAllSuppressed
		}
		toks := t.tokens[b]
		if toks[len(toks)-1] == eot {
			next = eot
		} else {
			// The log-probability is filled in while the next step runs.
			t.late.due = append(t.late.due, lateLogProb{b: b, stat: len(t.stats[b]), tok: next, row: row})
			t.stats[b] = append(t.stats[b], tokenStat{noSpeech: t.rowNS[b]})
		}
		t.tokens[b] = append(toks, next)
		t.next[b] = next
		if next != eot {
			done = false
		}
	}
	return done, nil
}

// argmax returns the first index of the largest finite-or-+Inf value, or -1
// when every value is -Inf or NaN.
func argmax(x []float32) int32 {
	m := maxOf(x)
	if m == negInf {
		return -1
	}
	for i, v := range x {
		if v == m {
			return int32(i)
		}
	}
	return -1 // not reached: m is one of x's values
}

// sample draws from softmax(x / T).
func (t *task) sample(x []float32) int32 {
	m := float64(maxOf(x))
	if math.IsInf(m, -1) || math.IsNaN(m) {
		return -1
	}
	invT := 1 / t.opts.Temperature
	var total float64
	for _, v := range x {
		total += math.Exp((float64(v) - m) * invT)
	}
	u := t.rng.Float64() * total
	last := int32(-1)
	for i, v := range x {
		p := math.Exp((float64(v) - m) * invT)
		if p == 0 {
			continue
		}
		last = int32(i)
		if u -= p; u < 0 {
			break
		}
	}
	return last
}

// best finalizes the hypotheses and returns the top-ranked one's sampled
// tokens (up to its first <|endoftext|>), summed log-probability, and the
// stats of the tokens it sampled (a Continue prefix has none; the
// <|endoftext|> that ended them has one when it was sampled).
func (t *task) best() ([]int32, float64, []tokenStat) {
	type hyp struct {
		tokens []int32
		sum    float64
		stats  []tokenStat
	}
	var hyps []hyp
	if t.beam != nil {
		for _, f := range t.beam.finalize(t.tokens, t.sum, t.stats, t.sp.EOT) {
			hyps = append(hyps, hyp{f.tokens, f.score, f.stats})
		}
	} else {
		for b := range t.n {
			hyps = append(hyps, hyp{append(slices.Clone(t.tokens[b]), t.sp.EOT), t.sum[b], t.stats[b]})
		}
	}
	bestAt, bestScore := 0, math.Inf(-1)
	for i, h := range hyps {
		s := h.tokens[t.sampleBegin:]
		hyps[i].tokens = s[:slices.Index(s, t.sp.EOT)]
		score := h.sum / t.lengthPenalty(len(hyps[i].tokens))
		if i == 0 || score > bestScore {
			bestAt, bestScore = i, score
		}
	}
	h := hyps[bestAt]
	return h.tokens, h.sum, h.stats[:min(len(h.stats), len(h.tokens)-t.forced+1)]
}

// lengthPenalty is OpenAI's MaximumLikelihoodRanker denominator. An empty
// hypothesis counts as length 1 (OpenAI would divide by zero).
func (t *task) lengthPenalty(n int) float64 {
	n = max(n, 1)
	if t.opts.LengthPenalty == nil {
		return float64(n)
	}
	return math.Pow((5+float64(n))/6, *t.opts.LengthPenalty)
}

// beamState is OpenAI's BeamSearchDecoder state for one audio window.
type beamState struct {
	size, maxCandidates int
	finished            []finished
	cands               []candidate
	seen                map[uint64]int // (group, token) → index in cands
	groups              []int
	top                 []scored
	src                 []int
}

type finished struct {
	tokens []int32 // prefix, sampled tokens and <|endoftext|>
	score  float64
	stats  []tokenStat // of the sampled tokens, <|endoftext|> included
}

type candidate struct {
	src, group int
	tok        int32
	score      float64
	stat       tokenStat // of tok
}

type scored struct {
	tok int32
	lp  float64
}

func newBeamState(size, maxCandidates int) *beamState {
	return &beamState{
		size: size, maxCandidates: maxCandidates,
		cands:  make([]candidate, 0, size*(size+1)),
		seen:   make(map[uint64]int, size*(size+1)),
		groups: make([]int, size),
		top:    make([]scored, 0, size+1),
		src:    make([]int, size),
	}
}

// beamUpdate extends every beam by its beam+1 most likely tokens, keeps the
// beam best continuations that do not end, and moves ended ones to the
// finished list, as OpenAI's BeamSearchDecoder.update.
func (t *task) beamUpdate() (done bool, err error) {
	bs := t.beam
	eot := t.sp.EOT
	// Beams with equal token sequences (all of them at the first step)
	// give one candidate per token, as OpenAI's dict keyed by sequence.
	for j := range t.n {
		bs.groups[j] = j
		for k := range j {
			if slices.Equal(t.tokens[k], t.tokens[j]) {
				bs.groups[j] = bs.groups[k]
				break
			}
		}
	}
	bs.cands = bs.cands[:0]
	clear(bs.seen)
	for j, row := range t.rows {
		norm := logSumExp(row)
		if math.IsInf(norm, -1) || math.IsNaN(norm) {
			return false, ErrAllSuppressed
		}
		bs.topK(row, bs.size+1)
		for _, s := range bs.top {
			c := candidate{src: j, group: bs.groups[j], tok: s.tok, score: t.sum[j] + (s.lp - norm), stat: tokenStat{s.lp - norm, t.rowNS[j]}}
			key := uint64(c.group)<<32 | uint64(uint32(c.tok))
			if i, dup := bs.seen[key]; dup {
				bs.cands[i].src, bs.cands[i].score, bs.cands[i].stat = c.src, c.score, c.stat
			} else {
				bs.seen[key] = len(bs.cands)
				bs.cands = append(bs.cands, c)
			}
		}
	}
	slices.SortStableFunc(bs.cands, func(a, b candidate) int { return cmp.Compare(b.score, a.score) })

	saved := 0
	for _, c := range bs.cands {
		if c.tok == eot {
			if len(bs.finished) < bs.maxCandidates {
				seq := append(slices.Clone(t.tokens[c.src]), eot)
				bs.finished = append(bs.finished, finished{seq, c.score, append(slices.Clone(t.stats[c.src]), c.stat)})
			}
			continue
		}
		t.spare[saved] = append(append(t.spare[saved][:0], t.tokens[c.src]...), c.tok)
		t.spareSt[saved] = append(append(t.spareSt[saved][:0], t.stats[c.src]...), c.stat)
		t.sum[saved] = c.score
		t.next[saved] = c.tok
		bs.src[saved] = c.src
		if saved++; saved == bs.size {
			break
		}
	}
	if saved < bs.size {
		return false, fmt.Errorf("beam search found %d continuations for %d beams", saved, bs.size)
	}
	t.tokens, t.spare = t.spare, t.tokens
	t.stats, t.spareSt = t.spareSt, t.stats
	identity := true
	for b, s := range bs.src {
		identity = identity && s == b
	}
	if !identity {
		if err := t.dec.Reorder(bs.src); err != nil {
			return false, fmt.Errorf("reorder beams: %w", err)
		}
	}
	return len(bs.finished) >= bs.maxCandidates, nil
}

// topK fills bs.top with the k largest logits of row, largest first, lower
// ids first on ties.
func (bs *beamState) topK(row []float32, k int) {
	top := bs.top[:0]
	for i, v := range row {
		lp := float64(v)
		if len(top) == k && !(lp > top[k-1].lp) {
			continue
		}
		if len(top) < k {
			top = append(top, scored{})
		}
		j := len(top) - 1
		for ; j > 0 && lp > top[j-1].lp; j-- {
			top[j] = top[j-1]
		}
		top[j] = scored{int32(i), lp}
	}
	bs.top = top
}

// finalize adds the best unfinished beams when fewer than size finished, as
// OpenAI's BeamSearchDecoder.finalize.
func (bs *beamState) finalize(tokens [][]int32, sum []float64, stats [][]tokenStat, eot int32) []finished {
	if len(bs.finished) < bs.size {
		order := make([]int, len(tokens))
		for i := range order {
			order[i] = i
		}
		// numpy's argsort reversed: best first, later index first on ties.
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sum[a], sum[b]) })
		slices.Reverse(order)
		for _, j := range order {
			bs.finished = append(bs.finished, finished{append(slices.Clone(tokens[j]), eot), sum[j], slices.Clone(stats[j])})
			if len(bs.finished) >= bs.size {
				break
			}
		}
	}
	return bs.finished
}
