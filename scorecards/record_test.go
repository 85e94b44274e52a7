package scorecards

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

// RecordEngine takes the backend's facts and the engine's counters: one
// structure evaluated three times (with different data) builds three
// graphs but compiles one program; the CPU backend runs every step, so
// nothing is transferred.
func TestRecordEngine(t *testing.T) {
	ctx := context.Background()
	eng := graph.NewEngine(cpu.New())
	for i := range 3 {
		g := graph.New()
		x := g.InputF32("x", graph.Shape{1024}, make([]float32, 1024))
		y := x.Mul(g.InputF32("y", graph.Shape{1024}, make([]float32, 1024))).Relu().Add(x)
		if _, err := eng.Eval(ctx, y, x.Neg()); err != nil {
			t.Fatalf("eval %d: %v", i, err)
		}
	}
	c := fullCard()
	c.Backend, c.Device = "", ""
	c.RecordEngine(eng)
	ks := eng.Backend().Stats()
	for _, f := range []struct {
		name string
		got  *int64
		want int64
	}{
		{"programs_compiled", c.ProgramsCompiled, 1},
		{"graph_builds", c.GraphBuilds, 3},
		{"transfers", c.Transfers, 0},
		{"transfer_bytes", c.TransferBytes, 0},
		{"dispatches", c.Dispatches, ks.Dispatches},
		{"device_peak_bytes", c.DevicePeakBytes, ks.PeakBytes},
	} {
		if f.got == nil || *f.got != f.want {
			t.Errorf("%s = %v, want %d", f.name, f.got, f.want)
		}
	}
	if c.Backend != "cpu" || c.Device != eng.Backend().Device() || c.Device == "" {
		t.Errorf("backend %q device %q, want cpu and %q", c.Backend, c.Device, eng.Backend().Device())
	}
	if *c.Dispatches < 3 || *c.DevicePeakBytes < 4096 {
		t.Errorf("dispatches %d, device peak %d bytes: want ≥ 3 launches and one 4 KiB output buffer", *c.Dispatches, *c.DevicePeakBytes)
	}
	if *c.PeakBytes != 1<<20 {
		t.Errorf("peak_bytes (the resident set) changed to %d: RecordEngine must leave it alone", *c.PeakBytes)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// oldCard is a card as say wrote it before the engine counters and
// device_peak_bytes existed.
const oldCard = `{
  "schema": "forge.scorecard/v1",
  "run_id": "5f0c1d2e3a4b5c6d",
  "started_at": "2026-11-21T10:00:00Z",
  "pipeline": "say",
  "models": [{"name": "kokoro", "variant": "v1.0"}],
  "backend": "cpu",
  "device": "avx512",
  "host": {"os": "linux", "arch": "amd64", "cores": 2, "go": "go1.26.8"},
  "audio_out_seconds": 4.2,
  "wall_seconds": 1.05,
  "rtf": 0.25,
  "ttfa_ms": 340,
  "dispatches": 5120,
  "peak_bytes": 734003200
}`

// Cards written before the new keys still read, with those fields absent,
// and compare with new cards on the metrics both have.
func TestReadsOlderCards(t *testing.T) {
	cards, err := Read(strings.NewReader(oldCard))
	if err != nil {
		t.Fatal(err)
	}
	old := cards[0]
	if old.Backend != "cpu" || *old.Dispatches != 5120 || *old.PeakBytes != 734003200 {
		t.Errorf("old card read as %+v", old)
	}
	if old.DevicePeakBytes != nil || old.ProgramsCompiled != nil || old.GraphBuilds != nil || old.Transfers != nil || old.TransferBytes != nil {
		t.Errorf("keys absent from the old card read as present: %+v", old)
	}
	head := *fullCard()
	head.Pipeline, head.Device = "say", "avx512"
	cmp := Diff([]Card{old}, []Card{head})
	var metrics []string
	for _, d := range cmp.Deltas {
		metrics = append(metrics, d.Metric)
	}
	got := strings.Join(metrics, " ")
	if !strings.Contains(got, "dispatches") || !strings.Contains(got, "peak_bytes") ||
		strings.Contains(got, "programs_compiled") || strings.Contains(got, "transfers") {
		t.Errorf("old vs new compared %v: want dispatches and peak_bytes, not the keys the old card lacks", metrics)
	}
}

// The engine counters are compared like every other metric: more
// compilations, graph builds or transfers are worse.
func TestDiffEngineCounters(t *testing.T) {
	base, head := *fullCard(), *fullCard()
	head.ProgramsCompiled, head.GraphBuilds, head.Transfers = Int(24), Int(40), Int(3)
	cmp := Diff([]Card{base}, []Card{head})
	worse := map[string]float64{}
	for _, d := range cmp.Worse(1.10) {
		worse[d.Metric] = d.Ratio
	}
	if worse["programs_compiled"] != 2 || !math.IsInf(worse["transfers"], 1) || len(worse) != 2 {
		t.Errorf("Worse(1.10) = %v, want programs_compiled ×2 and transfers from 0", worse)
	}
}
