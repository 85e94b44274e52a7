//go:build !amd64

package gemm

// PanelPath names the kernel [PanelB.MulAdd] runs on this CPU: the
// portable "go" on this architecture.
func PanelPath() string { return "go" }

func panelRows(m, k int, b []float32, a [][]float32, c *[4]*float32, relu bool) {
	panelGo(m, k, b, a, c, relu)
}
