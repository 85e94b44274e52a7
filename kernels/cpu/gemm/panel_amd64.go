package gemm

import "golang.org/x/sys/cpu"

// panel4AVX512 adds four rows of A (a0..a3, k values each) times one packed
// panel b (k×64) to the 64 columns of c0..c3.
//
//go:noescape
func panel4AVX512(k int, b, a0, a1, a2, a3, c0, c1, c2, c3 *float32)

// panel1AVX512 adds one row of A times one packed panel to c (64 columns).
//
//go:noescape
func panel1AVX512(k int, b, a, c *float32)

var panelAVX512 = cpu.X86.HasAVX512F

// PanelPath names the kernel [PanelB.MulAdd] runs on this CPU: "avx512" or
// the portable "go".
func PanelPath() string {
	if panelAVX512 {
		return "avx512"
	}
	return "go"
}

func panel4(k int, b []float32, a [][]float32, c0, c1, c2, c3 []float32) {
	if panelAVX512 {
		panel4AVX512(k, &b[0], &a[0][0], &a[1][0], &a[2][0], &a[3][0], &c0[0], &c1[0], &c2[0], &c3[0])
		return
	}
	panel4Go(k, b, a, c0, c1, c2, c3)
}

func panel1(k int, b, a, c []float32) {
	if panelAVX512 {
		panel1AVX512(k, &b[0], &a[0], &c[0])
		return
	}
	panel1Go(k, b, a, c)
}
