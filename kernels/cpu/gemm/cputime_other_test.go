//go:build !unix

package gemm

// cpuSeconds is unavailable here; benchmarks then skip the per-CPU metric.
func cpuSeconds() float64 { return 0 }
