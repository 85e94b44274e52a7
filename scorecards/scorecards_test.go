package scorecards

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/stage"
)

// A listen-like run: 1.0 s of 16 kHz audio in ten chunks, a stage that takes
// a known 10 ms per chunk. TTFA (first audio in → first output) cannot be
// less than one chunk's work; RTF must be exactly wall / audio seconds.
// Upper bounds are loose enough for a loaded CI machine.
func TestSyntheticListenTTFAAndRTF(t *testing.T) {
	const (
		chunks = 10
		rate   = 16000
		delay  = 10 * time.Millisecond
	)
	n := 0
	src := stage.FromSamples("mic", rate, func(context.Context) ([]float32, error) {
		if n == chunks {
			return nil, io.EOF
		}
		n++
		return make([]float32, rate/chunks), nil
	})
	p := pipeline.New("listen-synthetic")
	x := pipeline.Then(pipeline.From(p, src), stage.Map("model", func(_ context.Context, pcm []float32) (int, error) {
		time.Sleep(delay)
		return len(pcm), nil
	}))
	pipeline.To(x, stage.Discard[int]("text"))
	card := New("")
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := p.Metrics()
	card.Record(m)
	card.SetAudioIn(float64(chunks*(rate/chunks)) / rate)

	if card.Pipeline != "listen-synthetic" || card.TTFAMs == nil || card.RTF == nil {
		t.Fatalf("card not filled: %+v", card)
	}
	if ttfa := *card.TTFAMs; ttfa < 10 || ttfa > 10+5000 {
		t.Errorf("ttfa_ms = %v, want ≥ 10 (one chunk's work)", ttfa)
	}
	if card.WallSeconds < chunks*delay.Seconds() || card.WallSeconds > 30 {
		t.Errorf("wall_seconds = %v, want ≥ %v", card.WallSeconds, chunks*delay.Seconds())
	}
	if want := card.WallSeconds / 1.0; math.Abs(*card.RTF-want) > 1e-5*want {
		t.Errorf("rtf = %v, want wall/audio = %v", *card.RTF, want)
	}
	if math.Abs(card.WallSeconds-m.Wall.Seconds()) > 1e-6 {
		t.Errorf("wall_seconds %v differs from the pipeline's %v", card.WallSeconds, m.Wall)
	}
	rows := map[string]Stage{}
	for _, s := range card.Stages {
		rows[s.Name] = s
	}
	mic, model, text := rows["mic"], rows["model"], rows["text"]
	if mic.FramesIn != nil || mic.QueueMax != nil || mic.FramesOut == nil || *mic.FramesOut != chunks || mic.LatencyP50Ms != nil {
		t.Errorf("source row %+v: want frames_out only", mic)
	}
	if text.FramesOut != nil || text.WaitOutMs != nil || text.FramesIn == nil || *text.FramesIn != chunks {
		t.Errorf("sink row %+v: want frames_in only", text)
	}
	if model.BusyMs == nil || *model.BusyMs < 100 || *model.LatencyP50Ms < 10 || *model.LatencyMaxMs < *model.LatencyP95Ms {
		t.Errorf("model row busy %v p50 %v p95 %v max %v", *model.BusyMs, *model.LatencyP50Ms, *model.LatencyP95Ms, *model.LatencyMaxMs)
	}
	if err := card.Validate(); err != nil {
		t.Fatal(err)
	}
}

// A say-like run: sentences in, the first takes 30 ms to synthesize. TTFA is
// text accepted → first audio out; RTF is wall over audio produced.
func TestSyntheticSayTTFA(t *testing.T) {
	p := pipeline.New("say-synthetic")
	audio := pipeline.Then(pipeline.From(p, stage.FromSlice("text", []string{"Hello.", "World."})),
		stage.Map("kokoro", func(_ context.Context, s string) ([]float32, error) {
			time.Sleep(30 * time.Millisecond)
			return make([]float32, 24000), nil
		}))
	pipeline.To(audio, stage.Discard[[]float32]("speaker"))
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	card := New("say-synthetic")
	card.Record(p.Metrics())
	card.SetAudioOut(2.0)
	if *card.TTFAMs < 30 || *card.TTFAMs > 5030 {
		t.Errorf("ttfa_ms = %v, want ≥ 30", *card.TTFAMs)
	}
	if *card.TTFAMs > card.WallSeconds*1000 {
		t.Errorf("ttfa_ms %v exceeds the whole run (%v s)", *card.TTFAMs, card.WallSeconds)
	}
	if want := card.WallSeconds / 2.0; math.Abs(*card.RTF-want) > 1e-5*want || card.AudioInSeconds != nil {
		t.Errorf("rtf = %v, want %v", *card.RTF, want)
	}
}

func fullCard() *Card {
	c := &Card{
		Schema:          Schema,
		RunID:           "0123456789abcdef",
		StartedAt:       time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
		Pipeline:        "listen",
		Models:          []Model{{Name: "whisper", Variant: "tiny-int8", SHA256: strings.Repeat("ab", 32)}},
		Backend:         "cpu",
		Device:          "avx512",
		Host:            Host{OS: "linux", Arch: "amd64", CPU: "Xeon", Cores: 2, Go: "go1.26"},
		AudioInSeconds:  Float(10),
		AudioOutSeconds: Float(0.5),
		WallSeconds:     2,
		RTF:             Float(0.2),
		TTFAMs:          Float(150),
		Stages: []Stage{{Name: "vad", FramesIn: Int(1), FramesOut: Int(2), BusyMs: Float(3), WaitInMs: Float(4),
			WaitOutMs: Float(5), LatencyP50Ms: Float(6), LatencyP95Ms: Float(7), LatencyMaxMs: Float(8), QueueMax: Int(9)}},
		Dispatches:       Int(100),
		PeakBytes:        Int(1 << 20),
		DevicePeakBytes:  Int(1 << 18),
		ProgramsCompiled: Int(12),
		GraphBuilds:      Int(40),
		Transfers:        Int(0),
		TransferBytes:    Int(0),
		Labels:           map[string]string{"ci": "yes"},
	}
	return c
}

func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// The keys are the contract CI scrapes: exactly those of issue 3.
func TestJSONKeysAreStable(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, fullCard()); err != nil {
		t.Fatal(err)
	}
	var top struct {
		Host   json.RawMessage   `json:"host"`
		Models []json.RawMessage `json:"models"`
		Stages []json.RawMessage `json:"stages"`
	}
	if err := json.Unmarshal(buf.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	sorted := func(s ...string) []string { slices.Sort(s); return s }
	checks := []struct {
		name string
		got  []string
		want []string
	}{
		{"card", keys(t, buf.Bytes()), sorted("schema", "run_id", "started_at", "pipeline", "models", "backend", "device", "host",
			"audio_in_seconds", "audio_out_seconds", "wall_seconds", "rtf", "ttfa_ms", "stages", "dispatches", "peak_bytes", "labels",
			"device_peak_bytes", "programs_compiled", "graph_builds", "transfers", "transfer_bytes")},
		{"host", keys(t, top.Host), sorted("os", "arch", "cpu", "cores", "go")},
		{"model", keys(t, top.Models[0]), sorted("name", "variant", "sha256")},
		{"stage", keys(t, top.Stages[0]), sorted("name", "frames_in", "frames_out", "busy_ms", "wait_in_ms", "wait_out_ms",
			"latency_p50_ms", "latency_p95_ms", "latency_max_ms", "queue_max")},
	}
	for _, c := range checks {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s keys = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestUnknownIsOmittedNotZero(t *testing.T) {
	c := fullCard()
	c.AudioOutSeconds, c.RTF, c.TTFAMs, c.Dispatches, c.PeakBytes = nil, nil, nil, nil, nil
	c.DevicePeakBytes, c.ProgramsCompiled, c.GraphBuilds = nil, nil, nil
	c.Transfers, c.TransferBytes = nil, Int(0)
	c.Stages = []Stage{{Name: "src", FramesOut: Int(0), BusyMs: Float(0)}}
	var buf bytes.Buffer
	if err := Encode(&buf, c); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, k := range []string{"audio_out_seconds", "rtf", "ttfa_ms", "dispatches", "peak_bytes", "frames_in", "latency_p50_ms",
		"device_peak_bytes", "programs_compiled", "graph_builds", `transfers"`} {
		if strings.Contains(s, `"`+k+`"`) {
			t.Errorf("unknown %s written: %s", k, s)
		}
	}
	for _, k := range []string{`"frames_out": 0`, `"busy_ms": 0`, `"transfer_bytes": 0`} {
		if !strings.Contains(s, k) {
			t.Errorf("known zero %s omitted: %s", k, s)
		}
	}
}

func TestParseNamesMissingFields(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, fullCard()); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	if _, err := Parse(good); err != nil {
		t.Fatalf("a full card fails: %v", err)
	}
	tests := []struct {
		drop []string // JSON paths to delete
		want []string
	}{
		{[]string{"run_id"}, []string{"run_id"}},
		{[]string{"schema", "pipeline"}, []string{"schema", "pipeline"}},
		{[]string{"wall_seconds"}, []string{"wall_seconds"}},
		{[]string{"started_at"}, []string{"started_at"}},
		{[]string{"host"}, []string{"host", "host.os", "host.arch", "host.cores", "host.go"}},
		{[]string{"host.cores", "host.go"}, []string{"host.cores", "host.go"}},
		{[]string{"stages.name"}, []string{"stages[0].name"}},
		{[]string{"models.name"}, []string{"models[0].name"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.drop, "+"), func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(good, &m); err != nil {
				t.Fatal(err)
			}
			for _, path := range tc.drop {
				parent, key, ok := strings.Cut(path, ".")
				switch {
				case !ok:
					delete(m, path)
				case parent == "host":
					delete(m["host"].(map[string]any), key)
				default:
					delete(m[parent].([]any)[0].(map[string]any), key)
				}
			}
			b, _ := json.Marshal(m)
			_, err := Parse(b)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse = %v, want a ValidationError", err)
			}
			if !slices.Equal(ve.Missing, tc.want) {
				t.Errorf("missing = %v, want %v", ve.Missing, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

func TestValidateRejectsBadValues(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Card)
		want string
	}{
		{"schema", func(c *Card) { c.Schema = "forge.scorecard/v2" }, `schema is "forge.scorecard/v2"`},
		{"negative wall", func(c *Card) { c.WallSeconds = -1 }, "wall_seconds is -1"},
		{"NaN rtf", func(c *Card) { c.RTF = Float(math.NaN()) }, "rtf is NaN"},
		{"sha", func(c *Card) { c.Models[0].SHA256 = "abc" }, "not 64 hex digits"},
		{"order", func(c *Card) { c.Stages[0].LatencyP50Ms = Float(100) }, "p50 100 ≤ p95 7"},
		{"repeat", func(c *Card) { c.Stages = append(c.Stages, Stage{Name: "vad"}) }, `stage name "vad" repeats`},
		{"frames", func(c *Card) { c.Stages[0].FramesIn = Int(-3) }, "stages[0].frames_in is -3"},
		{"cores", func(c *Card) { c.Host.Cores = -2 }, "host.cores is -2"},
		{"device peak", func(c *Card) { c.DevicePeakBytes = Int(-1) }, "device_peak_bytes is -1"},
		{"compiles", func(c *Card) { c.ProgramsCompiled = Int(-1) }, "programs_compiled is -1"},
		{"builds", func(c *Card) { c.GraphBuilds = Int(-1) }, "graph_builds is -1"},
		{"transfers", func(c *Card) { c.Transfers = Int(-5) }, "transfers is -5"},
		{"transfer bytes", func(c *Card) { c.TransferBytes = Int(-7) }, "transfer_bytes is -7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fullCard()
			tc.edit(c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
			if _, werr := Write(filepath.Join(t.TempDir(), "x.json"), c); werr == nil {
				t.Error("Write accepted an invalid card")
			}
		})
	}
}

func TestReadForms(t *testing.T) {
	var one bytes.Buffer
	if err := Encode(&one, fullCard()); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(fullCard())
	tests := []struct {
		name    string
		in      string
		n       int
		wantErr string
	}{
		{"object", one.String(), 1, ""},
		{"array", "[" + string(line) + ",\n" + string(line) + "]", 2, ""},
		{"lines", string(line) + "\n" + string(line) + "\n" + string(line) + "\n", 3, ""},
		{"empty", "  \n", 0, "no scorecard"},
		{"empty array", "[]", 0, "no scorecard"},
		{"garbage", "{not json", 0, "scorecard"},
		{"after array", "[" + string(line) + "] {}", 0, "after the array"},
		{"bad second", string(line) + "\n{\"schema\":\"forge.scorecard/v1\"}", 0, "card 2: scorecard missing required fields: run_id"},
		{"wrong type", `{"schema": 1}`, 0, "cannot unmarshal"},
		{"not an object", `"hello"`, 0, "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cards, err := Read(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Read = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(cards) != tc.n {
				t.Fatalf("Read = %d cards, %v; want %d", len(cards), err, tc.n)
			}
			if cards[0].Pipeline != "listen" || *cards[0].Stages[0].QueueMax != 9 {
				t.Errorf("round trip lost data: %+v", cards[0])
			}
		})
	}
}

func TestWriteDestinations(t *testing.T) {
	dir := t.TempDir()
	c := fullCard()

	path, err := Write(filepath.Join(dir, "one.json"), c)
	if err != nil || path != filepath.Join(dir, "one.json") {
		t.Fatalf("Write file = %q, %v", path, err)
	}
	got, err := ReadFile(path)
	if err != nil || len(got) != 1 || got[0].RunID != c.RunID {
		t.Fatalf("ReadFile = %+v, %v", got, err)
	}

	sub := filepath.Join(dir, "cards") + string(os.PathSeparator)
	path, err = Write(sub, c)
	if err != nil || filepath.Base(path) != "listen-20250304T050607Z-0123456789abcdef.json" {
		t.Fatalf("Write dir = %q, %v", path, err)
	}

	lines := filepath.Join(dir, "all.jsonl")
	t.Setenv(EnvVar, lines)
	for range 2 {
		if p, err := Save("", c); err != nil || p != lines {
			t.Fatalf("Save via env = %q, %v", p, err)
		}
	}
	if got, err := ReadFile(lines); err != nil || len(got) != 2 {
		t.Fatalf("jsonl holds %d cards, %v; want 2", len(got), err)
	}
	flagged := filepath.Join(dir, "flag.json")
	if p, err := Save(flagged, c); err != nil || p != flagged {
		t.Fatalf("the flag must win over the environment: %q, %v", p, err)
	}
	t.Setenv(EnvVar, "")
	if p, err := Save("", c); err != nil || p != "" {
		t.Fatalf("Save with no destination = %q, %v", p, err)
	}

	all, err := Load(dir)
	if err != nil || len(all) != 4 { // one.json, flag.json, all.jsonl×2 (cards/ is a subdirectory)
		t.Fatalf("Load = %d cards, %v", len(all), err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".scorecard-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestDiff(t *testing.T) {
	mk := func(pipe string, rtf, busy float64) Card {
		c := *fullCard()
		c.Pipeline, c.RTF = pipe, Float(rtf)
		c.Stages = []Stage{{Name: "enc", BusyMs: Float(busy)}}
		return c
	}
	base := []Card{mk("listen", 0.20, 10), mk("listen", 0.22, 11), mk("listen", 0.90, 12), mk("old", 1, 1)}
	head := []Card{mk("listen", 0.25, 10), mk("listen", 0.26, 10), mk("say", 1, 1)}
	cmp := Diff(base, head)
	find := func(metric string) Delta {
		for _, d := range cmp.Deltas {
			if d.Key == "listen/cpu/avx512" && d.Metric == metric {
				return d
			}
		}
		t.Fatalf("no delta for %s in %v", metric, cmp.Deltas)
		return Delta{}
	}
	rtf := find("rtf")
	if rtf.Base != 0.22 || math.Abs(rtf.Head-0.255) > 1e-12 || math.Abs(rtf.Ratio-0.255/0.22) > 1e-12 || rtf.BaseRuns != 3 || rtf.HeadRuns != 2 {
		t.Errorf("rtf delta %+v (median of base must ignore the 0.90 outlier)", rtf)
	}
	if d := find("stages[enc].busy_ms"); d.Ratio != 10.0/11 {
		t.Errorf("busy delta %+v", d)
	}
	if d := find("ttfa_ms"); d.Ratio != 1 {
		t.Errorf("equal metric ratio %v", d.Ratio)
	}
	if !slices.Equal(cmp.OnlyBase, []string{"old/cpu/avx512"}) || !slices.Equal(cmp.OnlyHead, []string{"say/cpu/avx512"}) {
		t.Errorf("only base %v only head %v", cmp.OnlyBase, cmp.OnlyHead)
	}
	worse := cmp.Worse(1.10)
	if len(worse) != 1 || worse[0].Metric != "rtf" {
		t.Errorf("Worse(1.10) = %v, want only rtf", worse)
	}
	if w := cmp.Worse(1.10, "busy_ms"); len(w) != 0 {
		t.Errorf("Worse restricted to busy_ms = %v", w)
	}
	if w := cmp.Worse(0.95, "busy_ms"); len(w) != 0 {
		t.Errorf("busy improved, yet Worse(0.95, busy_ms) = %v", w)
	}
	if r := ratio(0, 1); !math.IsInf(r, 1) {
		t.Errorf("ratio(0, 1) = %v", r)
	}
	if !strings.Contains(rtf.String(), "listen/cpu/avx512 rtf: 0.22 → 0.255") {
		t.Errorf("String = %q", rtf.String())
	}
}

func TestParseCPUInfo(t *testing.T) {
	tests := []struct{ in, want string }{
		{"processor\t: 0\nmodel name\t: Intel(R) Xeon(R)   Processor\nflags : x\n", "Intel(R) Xeon(R) Processor"},
		{"processor : 0\nHardware : BCM2835\nModel : Raspberry Pi 4\n", "BCM2835"},
		{"Model : Pi\nmodel name : Cortex\n", "Cortex"},
		{"", ""},
		{"model name :\n", ""},
	}
	for _, tc := range tests {
		if got := parseCPUInfo(strings.NewReader(tc.in)); got != tc.want {
			t.Errorf("parseCPUInfo(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	h := HostFacts()
	if h.OS == "" || h.Arch == "" || h.Cores < 1 || !strings.HasPrefix(h.Go, "go") {
		t.Errorf("HostFacts = %+v", h)
	}
}

func TestNewCardIsValid(t *testing.T) {
	c := New("say")
	c.SetWall(1500 * time.Millisecond)
	c.AddModel("kokoro", "v1.0", "")
	c.SetLabel("voice", "af_heart")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.RTF != nil {
		t.Error("RTF set without any audio length")
	}
	if len(c.RunID) != 16 || c.RunID == New("say").RunID {
		t.Errorf("run ids %q not 16 random hex digits", c.RunID)
	}
}
