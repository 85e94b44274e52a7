package kokoro

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// TestPartialBackend speaks a short sentence ("Hello world.", from the
// golden file's phonemes and style) on an engine whose backend supports
// only fused expressions and matrix products: every other step (the
// convolutions, LSTMs, norms, gathers, cumsums, ...) runs on the host with
// copies in between. The waveform must equal the CPU backend's bit for
// bit, since the same CPU kernels compute every step; the generator's
// source is built on the graph on both, as on a device.
func TestPartialBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	ctx := context.Background()
	ref := loadTestModel(t).GraphSource() // as New sets it for any backend but the CPU
	g := loadGolden(t, "hello_af_heart")
	want, err := ref.Synthesize(ctx, g.ids, g.style, g.speed)
	if err != nil {
		t.Fatal(err)
	}
	dev, host := kerneltest.NewPartial(), cpu.New()
	eng := graph.NewEngine(dev, graph.WithHost(host))
	m, err := New(eng, ref.Weights())
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Synthesize(ctx, g.ids, g.style, g.speed)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples, the CPU backend gives %d", len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("sample %d is %v on the partitioned engine, %v on the CPU backend", i, got[i], want[i])
		}
	}
	st, c := eng.Stats(), dev.Counts()
	t.Logf("kokoro, %q (%d samples): %d device steps (%v), %d host steps, %d transfers (%d bytes), %d programs compiled, %d constants uploaded (%d bytes)",
		"Hello world.", len(got), c.Launches, c.PerOp, host.Stats().Dispatches, st.Transfers, st.TransferBytes, st.Compiles, c.Wraps, c.WrapBytes)
	if st.Transfers == 0 || host.Stats().Dispatches == 0 {
		t.Errorf("nothing ran on the host: the engine did not partition")
	}
}

// TestHandoffOnDevice: on a device whose memory the host cannot address
// (a double running every op), a chunk's stages hand their intermediates
// over in device memory (graph.Held). The host reads only what it must
// see, each value once: the durations, which set the next graph's shapes;
// F0, energy and the aligned text features, which streamed windows slice;
// the waveform. Before, the sources and the decoder's features went to
// the host and back: 73 MB of copies for the benchmark paragraph, against
// 2.6 MB now.
func TestHandoffOnDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	ctx := context.Background()
	ref := loadTestModel(t).GraphSource()
	g := loadGolden(t, "hello_af_heart")
	dev := kerneltest.NewPartial(kerneltest.AllOps()...)
	m, err := New(graph.NewEngine(dev, graph.WithHost(cpu.New())), ref.Weights())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(ctx, g.ids, g.style, g.speed); err != nil { // folds constants
		t.Fatal(err)
	}
	before := dev.Counts()
	tr, err := m.Forward(ctx, g.ids, g.style, g.speed)
	if err != nil {
		t.Fatal(err)
	}
	c := dev.Counts()
	want := 4*len(tr.DurationsFloat) + 8*len(tr.Durations) + 4*(len(tr.F0)+len(tr.N)+len(tr.ASR)+len(tr.Audio))
	if got := c.ReadBytes - before.ReadBytes; got != int64(want) {
		t.Errorf("the host read %d bytes from the device, want %d (durations, F0, N, ASR, audio)", got, want)
	}
	t.Logf("%d reads (%d bytes), %d writes (%d bytes)", c.Reads-before.Reads, c.ReadBytes-before.ReadBytes, c.Writes-before.Writes, c.WriteBytes-before.WriteBytes)
}

// TestNewLengthNoConstants: on a device, a chunk of a length not met
// before compiles new programs but uploads no new constants: a constant
// of the chunk's length would stay in device memory for the engine's life
// (graph.Engine keeps constants by content), one more for every length a
// long run meets. The graph source's sample positions were such a
// constant: 16 bytes a sample, 3.8 MB for a 10-s chunk.
func TestNewLengthNoConstants(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	ctx := context.Background()
	ref := loadTestModel(t)
	g := loadGolden(t, "hello_af_heart")
	dev := kerneltest.NewPartial(kerneltest.AllOps()...)
	m, err := New(graph.NewEngine(dev, graph.WithHost(cpu.New())), ref.Weights())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Synthesize(ctx, g.ids, g.style, g.speed); err != nil {
		t.Fatal(err)
	}
	shorter := append(slices.Clone(g.ids[:len(g.ids)-2]), 0) // one phoneme fewer
	before := dev.Counts()
	if _, err := m.Synthesize(ctx, shorter, g.style, g.speed); err != nil {
		t.Fatal(err)
	}
	if c := dev.Counts(); c.Wraps != before.Wraps {
		t.Errorf("a chunk of a new length uploaded %d constants (%d bytes)", c.Wraps-before.Wraps, c.WrapBytes-before.WrapBytes)
	}
}
