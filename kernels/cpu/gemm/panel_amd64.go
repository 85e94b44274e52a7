package gemm

import "golang.org/x/sys/cpu"

// panel4AVX512 adds four rows of A (a0..a3, k values each) times one packed
// panel b (k×64) to the 64 columns of c0..c3, summing in depth blocks of
// kb ≥ 1, then clamps at zero when relu ≠ 0.
//
//go:noescape
func panel4AVX512(k, kb int, b, a0, a1, a2, a3, c0, c1, c2, c3 *float32, relu int)

// panel2AVX512 is panel4AVX512 for two rows.
//
//go:noescape
func panel2AVX512(k, kb int, b, a0, a1, c0, c1 *float32, relu int)

// panel1AVX512 is panel4AVX512 for one row.
//
//go:noescape
func panel1AVX512(k, kb int, b, a, c *float32, relu int)

var panelAVX512 = cpu.X86.HasAVX512F

// PanelPath names the kernel [PanelB.MulAdd] runs on this CPU: "avx512" or
// the portable "go".
func PanelPath() string {
	if panelAVX512 {
		return "avx512"
	}
	return "go"
}

// panelRows runs m = 1, 2 or 4 rows of a over one panel b into the panel's
// columns at c[0..m).
func panelRows(m, k int, b []float32, a [][]float32, c *[4]*float32, relu bool) {
	if !panelAVX512 {
		panelGo(m, k, b, a, c, relu)
		return
	}
	r := 0
	if relu {
		r = 1
	}
	switch m {
	case 4:
		panel4AVX512(k, panelDepth, &b[0], &a[0][0], &a[1][0], &a[2][0], &a[3][0], c[0], c[1], c[2], c[3], r)
	case 2:
		panel2AVX512(k, panelDepth, &b[0], &a[0][0], &a[1][0], c[0], c[1], r)
	default:
		panel1AVX512(k, panelDepth, &b[0], &a[0][0], c[0], r)
	}
}
