package gemm

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestPairsOutrunOn: the pair kernel is the default bfloat16 unit on AMD's
// cores only (Intel's issue VDPBF16PS at half the FMAs' rate).
func TestPairsOutrunOn(t *testing.T) {
	for _, tc := range []struct {
		vendor string
		want   bool
	}{
		{"AuthenticAMD", true},
		{"GenuineIntel", false},
		{"HygonGenuine", false},
		{"", false},
	} {
		if got := pairsOutrunOn(tc.vendor); got != tc.want {
			t.Errorf("pairsOutrunOn(%q) = %v, want %v", tc.vendor, got, tc.want)
		}
	}
}

// TestBF16PathFollowsVendor checks this machine's bfloat16 unit against its
// CPUID: AMX where granted, else the pair kernel exactly where the CPU has
// AVX512_BF16 and AMD's cores, else none.
func TestBF16PathFollowsVendor(t *testing.T) {
	vendor := cpuVendor()
	if len(vendor) != 12 {
		t.Fatalf("CPUID vendor %q: want 12 characters", vendor)
	}
	want := ""
	switch {
	case amxReady():
		want = "amx-bf16"
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16 && vendor == "AuthenticAMD":
		want = avx512BF16Kernel.name
	}
	if got := BF16ConvPath(); got != want {
		t.Fatalf("BF16ConvPath() = %q on %s (AVX512_BF16 %v), want %q", got, vendor, cpu.X86.HasAVX512BF16, want)
	}
	t.Logf("%s: bfloat16 unit %q", vendor, want)
}
