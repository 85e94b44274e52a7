package cpu_test

import (
	"testing"

	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// TestConformance checks every op and random fused expressions of the CPU
// backend, the correctness oracle of every other backend, against the
// textbook float64 references.
func TestConformance(t *testing.T) {
	kerneltest.Check(t, cpu.New(), kerneltest.AgainstFloat64())
}
