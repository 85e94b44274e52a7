package kernels

// Coalesce merges neighbouring dimensions that every view walks as one, so
// an elementwise kernel over dense or simply broadcast operands iterates a
// single long row instead of many short ones. All views must share the same
// shape; the returned views share a (possibly shorter) shape. Size-1
// dimensions are dropped. The inputs are not modified.
func Coalesce(views []View) []View {
	if len(views) == 0 {
		return nil
	}
	shape := views[0].Shape
	// Drop size-1 dims.
	keep := make([]int, 0, len(shape))
	for i, d := range shape {
		if d != 1 {
			keep = append(keep, i)
		}
	}
	out := make([]View, len(views))
	for k, v := range views {
		nv := v
		nv.Shape = make([]int, 0, len(keep))
		nv.Strides = make([]int, 0, len(keep))
		for _, i := range keep {
			nv.Shape = append(nv.Shape, v.Shape[i])
			nv.Strides = append(nv.Strides, v.Strides[i])
		}
		out[k] = nv
	}
	if len(keep) == 0 {
		for k := range out {
			out[k].Shape = []int{1}
			out[k].Strides = []int{1}
		}
		return out
	}
	// Merge dim i into dim i+1 (the inner one) when, for every view,
	// stride[i] == stride[i+1]*shape[i+1].
	n := len(out[0].Shape)
	shp := append([]int(nil), out[0].Shape...)
	strides := make([][]int, len(out))
	for k := range out {
		strides[k] = append([]int(nil), out[k].Strides...)
	}
	rs := []int{shp[n-1]}
	rst := make([][]int, len(out))
	for k := range out {
		rst[k] = []int{strides[k][n-1]}
	}
	for i := n - 2; i >= 0; i-- {
		inner := len(rs) - 1
		merge := true
		for k := range out {
			if strides[k][i] != rst[k][inner]*rs[inner] {
				merge = false
				break
			}
		}
		if merge {
			rs[inner] *= shp[i]
			continue
		}
		rs = append(rs, shp[i])
		for k := range out {
			rst[k] = append(rst[k], strides[k][i])
		}
	}
	// rs and rst are innermost-first; reverse.
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	for k := range out {
		s := rst[k]
		for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
			s[i], s[j] = s[j], s[i]
		}
		out[k].Shape = rs
		out[k].Strides = s
	}
	return out
}
