package kokoro

import (
	"context"
	"math"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/signalcmp"
)

// TestGraphSource checks the devices' source spectrogram
// (generator.harmonic) against the host's (harmonicSpectrum) on the
// golden sentences' F0 curves, on the CPU: relative L2 ≤ 1e-2 taken as
// complex numbers (measured 1.0–4.7e-3: the running phase rounds in
// another order, and quiet bins get the formula's phase rather than the
// sign of onnxruntime's rounding noise, by design, which counts by their
// magnitude); a window's spectrogram is the whole curve's, cut. The
// model with it still speaks the golden sentences as the reference does:
// the same length, log-spectral RMS ≤ 0.35 (the int8 artifact's bar);
// its waveform Pearson is logged (0.94–0.95, the host's 0.996–0.998: the
// phase noise, see generator.harmonic).
func TestGraphSource(t *testing.T) {
	ctx := context.Background()
	m := loadTestModel(t)
	gen := &m.k.decoder.generator
	for _, name := range []string{"hello_af_heart", "fox_am_michael", "question_af_heart"} {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			tr, err := m.Forward(ctx, g.ids, g.style, g.speed)
			if err != nil {
				t.Fatal(err)
			}
			host := m.sourceSpectrum(tr.F0)
			F := len(tr.F0) / 2
			eval := func(lo, hi int) []float32 {
				gr := graph.New()
				out := gen.harmonic(gr.InputF32("f0", graph.Shape{1, 2 * F}, tr.F0), lo, hi)
				if err := check(out); err != nil {
					t.Fatal(err)
				}
				v, err := m.eng.Eval(ctx, out)
				if err != nil {
					t.Fatal(err)
				}
				return v[0].F32()
			}
			dev := eval(0, F)
			if len(dev) != len(host) {
				t.Fatalf("%d values on the graph, %d on the host", len(dev), len(host))
			}
			cols := len(host) / (2 * specBins)
			half := specBins * cols
			// As complex numbers, so that a quiet bin's phase counts by its
			// magnitude.
			var diff, ref float64
			for i := range half {
				ds, dc := math.Sincos(float64(dev[half+i]))
				hs, hc := math.Sincos(float64(host[half+i]))
				dm, hm := float64(dev[i]), float64(host[i])
				diff += (dm*dc-hm*hc)*(dm*dc-hm*hc) + (dm*ds-hm*hs)*(dm*ds-hm*hs)
				ref += hm * hm
			}
			rel := math.Sqrt(diff / ref)
			t.Logf("spectrogram rel L2 %.2e (magnitudes alone %.2e)", rel, signalcmp.RelL2(dev[:half], host[:half]))
			if !(rel <= 1e-2) {
				t.Errorf("graph source: spectrogram rel L2 %.2e against the host's (≤ 1e-2)", rel)
			}
			lo, hi := F/3, F/3+40
			win := eval(lo, hi)
			n := 120*(hi-lo) + 1
			for r := range 2 * specBins {
				for j := range n {
					if a, b := win[r*n+j], dev[r*cols+120*lo+j]; math.Float32bits(a) != math.Float32bits(b) {
						t.Fatalf("window [%d, %d): row %d column %d is %v, the whole curve's %v", lo, hi, r, j, a, b)
					}
				}
			}

			got, err := m.GraphSource().Forward(ctx, g.ids, g.style, g.speed)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Audio) != len(g.waveform) {
				t.Fatalf("%d samples, golden %d", len(got.Audio), len(g.waveform))
			}
			ls := logSpectral(t, got.Audio, g.waveform)
			t.Logf("waveform with the graph source vs golden: log-spectral RMS %.3f, Pearson %.4f (host source: %.3f, %.4f)", ls, signalcmp.Pearson(got.Audio, g.waveform), logSpectral(t, tr.Audio, g.waveform), signalcmp.Pearson(tr.Audio, g.waveform))
			if !(ls <= 0.35) {
				t.Errorf("log-spectral RMS %.3f > 0.35", ls)
			}
		})
	}
}
