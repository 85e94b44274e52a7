package codegen_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/tensorforge/forge/kernels/codegen"
	"github.com/tensorforge/forge/kernels/cuda/nvrtc"
)

// TestCUDACompiles compiles every CUDA kernel the generator produces for
// the seeded random set and the conformance kit's steps to PTX for
// compute_90 with NVRTC, and checks that each kernel is in the PTX.
func TestCUDACompiles(t *testing.T) {
	lib, err := nvrtc.Default()
	if err != nil {
		missing(t, "no NVRTC, generated CUDA is NOT compile-checked: %v (on Debian: enable non-free, apt-get install libnvrtc11.2)", err)
	}
	steps := append(generatorSteps(), kitSteps(t)...)
	srcs, _ := sources(t, codegen.CUDA, steps)
	batches := batch(srcs, 40)
	errs := make([]error, len(batches))
	ptxs := make([]string, len(batches))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, b := range batches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ptx, _, err := lib.Compile(join(b), "batch.cu", nvrtc.ArchOption("compute_90"))
			ptxs[i], errs[i] = string(ptx), err
		}()
	}
	wg.Wait()
	for i, b := range batches {
		if errs[i] != nil {
			t.Errorf("batch %d: %v", i, errs[i])
			continue
		}
		for _, s := range b {
			if !strings.Contains(ptxs[i], ".entry "+s.name+"(") {
				t.Errorf("PTX of batch %d lacks kernel %s", i, s.name)
			}
		}
	}
	maj, mnr := lib.Version()
	t.Logf("NVRTC %d.%d (%s) compiled %d distinct CUDA kernels from %d steps in %d programs for compute_90", maj, mnr, lib.Path(), len(srcs), len(steps), len(batches))
}
