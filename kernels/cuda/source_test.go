package cuda

import (
	"os"
	"strings"
	"testing"

	"github.com/tensorforge/forge/kernels/cuda/nvrtc"
)

// TestFixedKernelsCompile compiles the hand-written kernels with whatever
// NVRTC this machine has (Debian's 11.8 in CI: no GPU needed) for sm_90,
// and checks that every entry point the backend looks up is in the PTX, so
// an error in kernels.cu fails here rather than on the first GPU run.
func TestFixedKernelsCompile(t *testing.T) {
	lib, err := nvrtc.Default()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must compile the CUDA kernels, but NVRTC is missing: %v", err)
		}
		t.Skipf("SKIPPED: no NVRTC here (apt-get install libnvrtc11.2 from Debian non-free), kernels.cu is not compile-checked: %v", err)
	}
	ptx, log, err := lib.Compile(fixedSource, "kernels.cu", nvrtc.ArchOption("compute_90"), "--std=c++14")
	if err != nil {
		t.Fatalf("kernels.cu does not compile: %v\n%s", err, log)
	}
	for _, name := range fixedKernels {
		if !strings.Contains(string(ptx), ".entry "+name+"(") {
			t.Errorf("entry point %s is not in the PTX", name)
		}
	}
	major, minor := lib.Version()
	t.Logf("NVRTC %d.%d: %d kernels, %d bytes of PTX", major, minor, len(fixedKernels), len(ptx))
}
