package gemm

import "testing"

// TestPanelMulAddPortable runs TestPanelMulAdd's table through the portable
// kernel on a machine whose AVX-512 kernels would otherwise take it: the
// portable kernel is what arm64 and older x86 run, and it once counted the
// repeated fourth row of a three-row call twice.
func TestPanelMulAddPortable(t *testing.T) {
	if !panelAVX512 {
		t.Skip("TestPanelMulAdd already ran the portable kernel here")
	}
	panelAVX512 = false
	defer func() { panelAVX512 = true }()
	TestPanelMulAdd(t)
}
