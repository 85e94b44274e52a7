//go:build !amd64

package gemm

// PanelPath names the kernel [PanelB.MulAdd] runs on this CPU: the
// portable "go" on this architecture.
func PanelPath() string { return "go" }

func panel4(k int, b []float32, a [][]float32, c0, c1, c2, c3 []float32) {
	panel4Go(k, b, a, c0, c1, c2, c3)
}

func panel1(k int, b, a, c []float32) { panel1Go(k, b, a, c) }
