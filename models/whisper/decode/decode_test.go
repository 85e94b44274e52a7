package decode

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
)

func greedyOpts(timestamps bool) Options {
	return Options{Language: "en", Timestamps: timestamps, Rules: OpenAI, SuppressBlank: true, MaxInitialTimestamp: 1}
}

// logSoftmaxOf computes log softmax(row)[i] the slow way, for expected values.
// lpTol is how far the decoder's log-probabilities may be from
// logSoftmaxOf's float64 ones: its exponentials are float32 (within 2 ulp,
// summed in float64), as fast as the GPU's decoder step needs.
const lpTol = 1e-7

func logSoftmaxOf(row []float32, i int32) float64 {
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v))
	}
	return float64(row[i]) - math.Log(s)
}

func TestGreedy(t *testing.T) {
	script := []int32{3, 1, 4, 1, 5}
	m := scripted(4, script...)
	d := &fakeDecoder{m: m}
	res, err := Decode(context.Background(), d, fakeVocab{}, greedyOpts(false))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, script) {
		t.Errorf("tokens %v, want %v", res.Tokens, script)
	}
	if res.Text != "w3 w1 w4 w1 w5" {
		t.Errorf("text %q", res.Text)
	}
	if want := []int32{tSOT, tEN, tTranscribe, tNoTimestamps}; !slices.Equal(d.starts[0], want) {
		t.Errorf("prefix %v, want %v", d.starts[0], want)
	}
	// Expected log-probabilities, from the model's rows after the filters
	// (only SuppressBlank acts, at the first step).
	// Per token too, with the no-speech probability of the row before the
	// filters.
	var sum float64
	seqSoFar := slices.Clone(d.starts[0])
	row := make([]float32, fakeSize)
	if len(res.LogProbs) != 6 || len(res.NoSpeechProbs) != 6 {
		t.Fatalf("%d log-probabilities and %d no-speech probabilities for 5 tokens and the end", len(res.LogProbs), len(res.NoSpeechProbs))
	}
	for i, tok := range append(slices.Clone(script), tEOT) {
		m(seqSoFar, row)
		if ns := math.Exp(logSoftmaxOf(row, tNoSpeech)); math.Abs(res.NoSpeechProbs[i]-ns) > lpTol {
			t.Errorf("token %d: no-speech %v, want %v", i, res.NoSpeechProbs[i], ns)
		}
		if i == 0 {
			row[tSpace], row[tEOT] = negInf, negInf
		}
		lp := logSoftmaxOf(row, tok)
		if math.Abs(res.LogProbs[i]-lp) > lpTol {
			t.Errorf("token %d: log-probability %v, want %v", i, res.LogProbs[i], lp)
		}
		sum += lp
		seqSoFar = append(seqSoFar, tok)
	}
	if want := sum / 6; math.Abs(res.AvgLogProb-want) > lpTol {
		t.Errorf("avg logprob %v, want %v", res.AvgLogProb, want)
	}
	m(d.starts[0][:1], row)
	if want := math.Exp(logSoftmaxOf(row, tNoSpeech)); math.Abs(res.NoSpeechProb-want) > lpTol {
		t.Errorf("no-speech prob %v, want %v", res.NoSpeechProb, want)
	}
	if d.steps != len(script) {
		t.Errorf("%d decoder steps, want %d (one per token after the first)", d.steps, len(script))
	}
}

// TestSuppressBlankInDecode: a model that wants to end at once, or to start
// with a blank, is made to say something.
func TestSuppressBlankInDecode(t *testing.T) {
	for _, first := range []int32{tEOT, tSpace} {
		m := func(seq []int32, l []float32) {
			scripted(4, first, 7)(seq, l)
			if len(seq) == 4 {
				l[2] = 9 // the runner-up
			}
		}
		res, err := Decode(context.Background(), &fakeDecoder{m: m}, fakeVocab{}, greedyOpts(false))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens, []int32{2, 7}) {
			t.Errorf("first wanted %d: tokens %v, want [2 7]", first, res.Tokens)
		}
	}
}

func TestSampleLenAndContext(t *testing.T) {
	forever := func(seq []int32, l []float32) { scripted(0)(seq, l); l[tEOT] = 0; l[5] = 10 }
	o := greedyOpts(false)
	o.SampleLen = 7
	res, err := Decode(context.Background(), &fakeDecoder{m: forever}, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tokens) != 7 {
		t.Errorf("SampleLen 7 gave %d tokens", len(res.Tokens))
	}
	// TransformersJS: up to 448 tokens in all; OpenAI: 224 sampled.
	for _, c := range []struct {
		rules Rules
		want  int
	}{{OpenAI, 224}, {TransformersJS, TextContext - 4}} {
		o := greedyOpts(false)
		o.Rules = c.rules
		d := &fakeDecoder{m: forever}
		res, err := Decode(context.Background(), d, fakeVocab{}, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tokens) != c.want {
			t.Errorf("%v: %d tokens, want %d", c.rules, len(res.Tokens), c.want)
		}
	}
	// A long prompt: OpenAI stops when the sequence passes the context.
	o = greedyOpts(false)
	o.Prompt = make([]int32, 300)
	for i := range o.Prompt {
		o.Prompt[i] = 1
	}
	d := &fakeDecoder{m: forever}
	res, err = Decode(context.Background(), d, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	prefixLen := 1 + (TextContext/2 - 1) + 4
	if got := prefixLen + len(res.Tokens); got != TextContext+1 {
		t.Errorf("prefix %d + %d tokens = %d, want %d (OpenAI stops past n_ctx)", prefixLen, len(res.Tokens), got, TextContext+1)
	}
}

func TestPromptAndPrefix(t *testing.T) {
	o := greedyOpts(true)
	o.Prompt = []int32{1, 2, 3}
	o.Prefix = []int32{ts(0), 4}
	o.Task = 1 // translate
	o.Language = "German"
	d := &fakeDecoder{m: scripted(8, 5, ts(1), tEOT)}
	res, err := Decode(context.Background(), d, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{tStartOfPrev, 1, 2, 3, tSOT, tDE, tTranslate, ts(0), 4}
	if !slices.Equal(d.starts[0], want) {
		t.Errorf("prefix %v, want %v", d.starts[0], want)
	}
	if res.Language != "de" {
		t.Errorf("language %q", res.Language)
	}
	// The no-speech probability is read at <|startoftranscript|>, not at
	// the end of the prompt.
	row := make([]float32, fakeSize)
	scripted(8)(want[:5], row)
	if w := math.Exp(logSoftmaxOf(row, tNoSpeech)); math.Abs(res.NoSpeechProb-w) > lpTol {
		t.Errorf("no-speech prob %v, want %v", res.NoSpeechProb, w)
	}
}

func TestDetectLanguage(t *testing.T) {
	m := func(seq []int32, l []float32) {
		scripted(4, 6)(seq, l)
		if len(seq) == 1 {
			l[6] = 50 // text tokens are masked for detection
			l[tEN], l[tDE], l[tFR] = 1, 3, 2
		}
	}
	d := &fakeDecoder{m: m}
	det, err := DetectLanguage(context.Background(), d, fakeVocab{})
	if err != nil {
		t.Fatal(err)
	}
	z := math.Exp(1) + math.Exp(3) + math.Exp(2)
	if det.Language.Code != "de" || math.Abs(det.Probs["de"]-math.Exp(3)/z) > 1e-12 || math.Abs(det.Probs["en"]-math.Exp(1)/z) > 1e-12 {
		t.Errorf("detection %+v", det)
	}
	// Decode with no language detects it and writes it into the prefix.
	o := greedyOpts(false)
	o.Language = ""
	d = &fakeDecoder{m: m}
	res, err := Decode(context.Background(), d, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Language != "de" || res.LanguageProbs == nil || !slices.Equal(d.starts[1], []int32{tSOT, tDE, tTranscribe, tNoTimestamps}) {
		t.Errorf("language %q, starts %v", res.Language, d.starts)
	}
}

func TestTimestampDecode(t *testing.T) {
	// The model wants: <|0.00|> w3 w4 <|0.60|> <|0.60|> w5 <|1.00|> EOT.
	script := []int32{ts(0), 3, 4, ts(0.6), ts(0.6), 5, ts(1), tEOT}
	for _, rules := range []Rules{OpenAI, TransformersJS} {
		o := greedyOpts(true)
		o.Rules = rules
		res, err := Decode(context.Background(), &fakeDecoder{m: scripted(3, script...)}, fakeVocab{}, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens, script[:len(script)-1]) {
			t.Errorf("%v: tokens %v", rules, res.Tokens)
		}
	}
	// A model that wants a timestamp going backwards: OpenAI forbids it,
	// transformers.js lets it through.
	back := []int32{ts(0), 3, ts(0.6), ts(0.6), 4, ts(0.2), tEOT}
	for _, c := range []struct {
		rules Rules
		want  []int32
	}{
		{OpenAI, []int32{ts(0), 3, ts(0.6), ts(0.6), 4, ts(0.62)}},
		{TransformersJS, back[:6]},
	} {
		m := func(seq []int32, l []float32) {
			scripted(3, back...)(seq, l)
			for i := range tTS {
				l[i] = -30 // text and specials unlikely unless wanted
			}
			for i := tTS; i < fakeSize; i++ {
				l[i] = -20 + float32(fakeSize-i)*0.001 // earlier timestamps slightly likelier
			}
			if k := len(seq) - 3; k >= 0 && k < len(back) {
				l[back[k]] = 10
			}
		}
		o := greedyOpts(true)
		o.Rules = c.rules
		res, err := Decode(context.Background(), &fakeDecoder{m: m}, fakeVocab{}, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens[:len(c.want)], c.want) {
			t.Errorf("%v: tokens %v, want prefix %v", c.rules, res.Tokens, c.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	ctx := context.Background()
	ok := &fakeDecoder{m: scripted(4, 1, 2)}
	for name, o := range map[string]Options{
		"beam and best-of": {Language: "en", BeamSize: 2, BestOf: 2, Temperature: 0.5},
		"best-of at T=0":   {Language: "en", BestOf: 2},
		"beam at T>0":      {Language: "en", BeamSize: 2, Temperature: 0.5},
		"patience alone":   {Language: "en", Patience: 2},
		"negative T":       {Language: "en", Temperature: -1},
		"NaN T":            {Language: "en", Temperature: math.NaN()},
		"length penalty":   {Language: "en", LengthPenalty: ptr(1.5)},
		"unknown language": {Language: "klingon"},
		"bad suppress id":  {Language: "en", SuppressTokens: []int32{fakeSize}},
		"bad prompt id":    {Language: "en", Prompt: []int32{-1}},
		"rules":            {Language: "en", Rules: 7},
	} {
		if _, err := Decode(ctx, ok, fakeVocab{}, o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	failing := &fakeDecoder{m: scripted(4, 1, 2, 3), failAt: 2}
	if _, err := Decode(ctx, failing, fakeVocab{}, greedyOpts(false)); err == nil {
		t.Error("decoder failure not reported")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Decode(cancelled, &fakeDecoder{m: scripted(4, 1, 2)}, fakeVocab{}, greedyOpts(false)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
	allMasked := func(seq []int32, l []float32) {
		for i := range l {
			l[i] = negInf
		}
	}
	if _, err := Decode(ctx, &fakeDecoder{m: allMasked}, fakeVocab{}, greedyOpts(false)); !errors.Is(err, ErrAllSuppressed) {
		t.Errorf("all masked: err = %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// countingDecoder writes a fixed row without allocating, to measure the
// decoding loop's own allocations.
type countingDecoder struct {
	row []float32
}

func (d *countingDecoder) Start(_ context.Context, _ int, _ []int32, _ []int, logits [][]float32) error {
	for _, l := range logits {
		copy(l, d.row)
	}
	return nil
}

func (d *countingDecoder) Step(_ context.Context, _ []int32, logits [][]float32) error {
	for _, l := range logits {
		copy(l, d.row)
	}
	return nil
}

func (d *countingDecoder) Reorder([]int) error { return nil }

// TestGreedyAllocatesNothingPerStep: the loop's allocations do not grow
// with the number of steps.
func TestGreedyAllocatesNothingPerStep(t *testing.T) {
	row := make([]float32, fakeSize)
	row[5] = 10
	for _, rules := range []Rules{OpenAI, TransformersJS} {
		allocs := func(steps int) float64 {
			o := greedyOpts(true)
			o.Rules = rules
			o.SuppressTokens = []int32{1, 2}
			o.SampleLen = steps
			sp := fakeVocab{}.Specials()
			tk, err := newTask(&countingDecoder{row: row}, fakeSize, &sp, o, "en", nil)
			if err != nil {
				t.Fatal(err)
			}
			return testing.AllocsPerRun(5, func() {
				if err := tk.run(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		}
		if few, many := allocs(10), allocs(200); many != few {
			t.Errorf("%v: %v allocations for 10 steps, %v for 200", rules, few, many)
		}
	}
}
