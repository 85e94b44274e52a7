package vad_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/tensorforge/forge/internal/procstat"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/models/vad"
)

// chunks cuts the start of jfk.wav into 512-sample chunks for benchmarks.
func benchChunks(b testing.TB) [][]float32 {
	s := goldenAudio(b, "jfk")
	var out [][]float32
	for off := 0; off+512 <= len(s); off += 512 {
		out = append(out, s[off:off+512])
	}
	return out
}

// benchPaths are the two ways a model computes a chunk: the compiled
// program and the path Model picks here (fast.go on a CPU with AVX-512).
func benchPaths(b *testing.B) []struct {
	name string
	m    *vad.Model
} {
	paths := []struct {
		name string
		m    *vad.Model
	}{{"path=graph", testGraphModel(b)}}
	if m := testModel(b); m.Path() != "graph" {
		paths = append(paths, struct {
			name string
			m    *vad.Model
		}{"path=fast", m})
	}
	return paths
}

// BenchmarkDetector measures one stream: the time per 512-sample chunk
// (run with GOMAXPROCS=1 / -cpu 1 for the one-core figure), on the compiled
// program and on the fast path.
func BenchmarkDetector(b *testing.B) {
	chunks := benchChunks(b)
	for _, p := range benchPaths(b) {
		b.Run(p.name, func(b *testing.B) {
			d, err := p.m.NewDetector(ctx(), vad.Rate16k)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := procstat.CPUTime()
			for i := 0; b.Loop(); i++ {
				if _, err := d.Prob(ctx(), chunks[i%len(chunks)]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/chunk")
			// CPU time of the process: on a shared, loaded machine the wall
			// time includes waiting for a core; this does not.
			b.ReportMetric(float64((procstat.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/chunk")
		})
	}
}

// BenchmarkStreams runs N concurrent streams (one goroutine and detector
// each) and reports the total chunks per second.
func BenchmarkStreams(b *testing.B) {
	m := testModel(b)
	chunks := benchChunks(b)
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			ds := make([]*vad.Detector, n)
			for i := range ds {
				d, err := m.NewDetector(ctx(), vad.Rate16k)
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				ds[i] = d
			}
			per := b.N/n + 1
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := procstat.CPUTime()
			var wg sync.WaitGroup
			for _, d := range ds {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range per {
						if _, err := d.Prob(ctx(), chunks[i%len(chunks)]); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*n)/b.Elapsed().Seconds(), "chunks/s")
			b.ReportMetric(float64(per*n)/(procstat.CPUTime()-cpu0).Seconds(), "chunks/cpu-s")
			b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
		})
	}
}

// BenchmarkNewDetector measures opening a stream: with reuse, a detector
// closed earlier hands its compiled program to the next; fresh, every
// detector stays open, so each compiles its own program and state.
func BenchmarkNewDetector(b *testing.B) {
	m := testModel(b)
	b.Run("reuse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := m.NewDetector(ctx(), vad.Rate16k)
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
	b.Run("fresh", func(b *testing.B) {
		// Engines cache every compiled program, so a new engine and model
		// every 100 detectors keep memory bounded however large b.N is.
		b.ReportAllocs()
		var open []*vad.Detector
		fm := m
		for i := 0; b.Loop(); i++ {
			if i%100 == 0 {
				b.StopTimer()
				for _, d := range open {
					d.Close()
				}
				open = open[:0]
				var err error
				if fm, err = vad.New(graph.NewEngine(cpu.New()), modelArt); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			d, err := fm.NewDetector(ctx(), vad.Rate16k)
			if err != nil {
				b.Fatal(err)
			}
			open = append(open, d)
		}
		b.StopTimer()
		for _, d := range open {
			d.Close()
		}
	})
}
