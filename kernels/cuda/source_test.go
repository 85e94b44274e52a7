package cuda

import (
	"os"
	"strings"
	"testing"

	"github.com/tensorforge/forge/kernels/cuda/nvrtc"
)

// TestFixedKernelsCompile compiles the hand-written kernels with whatever
// NVRTC this machine has (Debian's 11.8 in CI: no GPU needed) for sm_90,
// as PTX and as machine code (which also runs the PTX compiler, so register
// and shared-memory limits are checked too), and checks that every entry
// point the backend looks up is in the PTX, so an error in kernels.cu or
// attention.cu fails here rather than on the first GPU run.
func TestFixedKernelsCompile(t *testing.T) {
	lib, err := nvrtc.Default()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must compile the CUDA kernels, but NVRTC is missing: %v", err)
		}
		t.Skipf("SKIPPED: no NVRTC here (apt-get install libnvrtc11.2 from Debian non-free), kernels.cu is not compile-checked: %v", err)
	}
	major, minor := lib.Version()
	for _, p := range fixedPrograms {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			ptx, log, err := lib.Compile(p.src, p.name, nvrtc.ArchOption("compute_90"), "--std=c++14")
			if err != nil {
				t.Fatalf("%s does not compile: %v\n%s", p.name, err, log)
			}
			for _, name := range p.kernels {
				if !strings.Contains(string(ptx), ".entry "+name+"(") {
					t.Errorf("entry point %s is not in the PTX", name)
				}
			}
			t.Logf("NVRTC %d.%d: %d kernels, %d bytes of PTX", major, minor, len(p.kernels), len(ptx))
			if !lib.CanCompileBinary() {
				return
			}
			bin, _, err := lib.CompileBinary(p.src, p.name, nvrtc.ArchOption("sm_90"), "--std=c++14")
			if err != nil {
				t.Fatalf("%s does not compile to machine code: %v", p.name, err)
			}
			t.Logf("%d bytes of machine code", len(bin))
		})
	}
}
