package kernels

import "fmt"

// GemmLayout reads the two trailing axes of v as a rows×cols GEMM operand
// and reports whether it is stored transposed (column-major) and its
// leading dimension. It fails when neither axis has a unit stride or the
// leading dimension is too small, e.g. a broadcast (stride 0) matrix; the
// graph compiler then passes a dense copy instead.
func GemmLayout(v View) (trans bool, ld int, err error) {
	r := len(v.Shape)
	if r < 2 {
		return false, 0, fmt.Errorf("kernels: GEMM operand of rank %d", r)
	}
	rows, cols := v.Shape[r-2], v.Shape[r-1]
	rs, cs := v.Strides[r-2], v.Strides[r-1]
	if cs == 1 || cols <= 1 {
		ld := rs
		if rows <= 1 {
			ld = cols
		}
		if ld >= max(cols, 1) {
			return false, ld, nil
		}
	}
	if rs == 1 || rows <= 1 {
		ld := cs
		if cols <= 1 {
			ld = rows
		}
		if ld >= max(rows, 1) {
			return true, ld, nil
		}
	}
	return false, 0, fmt.Errorf("kernels: GEMM operand %v with strides %v has no usable layout", v.Shape, v.Strides)
}
