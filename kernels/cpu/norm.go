package cpu

import (
	"fmt"
	"math"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/vmath"
)

// softmax implements OpSoftmax on dense f32 data.
func (b *Backend) softmax(s *kernels.Step, bufs []kernels.Buffer) error {
	in, out := s.In[0], s.Out[0]
	attr, ok := s.Attr.(kernels.SoftmaxAttr)
	if !ok {
		return fmt.Errorf("cpu: softmax: missing attributes")
	}
	outerN, n, inner := splitAxis(in.Shape, attr.Axis)
	if n == 0 || outerN*inner == 0 {
		return nil
	}
	x, y := f32s(bufs, in)[in.Offset:], f32s(bufs, out)[out.Offset:]
	rows := outerN * inner
	grain := max(1, 16384/n)
	if !b.split(rows, grain) {
		softmaxRows(x, y, n, inner, attr.Log, 0, rows)
		return nil
	}
	b.parallelFor(rows, grain, func(lo, hi int) { softmaxRows(x, y, n, inner, attr.Log, lo, hi) })
	return nil
}

// softmaxRows normalises rows [lo, hi) of n elements spaced inner apart.
func softmaxRows(x, y []float32, n, inner int, log bool, lo, hi int) {
	{
		for r := lo; r < hi; r++ {
			o, i := r/inner, r%inner
			base := o*n*inner + i
			if inner == 1 {
				softmaxRow(x[base:base+n], y[base:base+n], log)
				continue
			}
			mx := float32(math.Inf(-1))
			for j := 0; j < n; j++ {
				mx = max(mx, x[base+j*inner])
			}
			var sum float64
			for j := 0; j < n; j++ {
				e := vmath.Exp32(x[base+j*inner] - mx)
				if !log {
					y[base+j*inner] = e
				}
				sum += float64(e)
			}
			if log {
				ls := float32(math.Log(sum))
				for j := 0; j < n; j++ {
					y[base+j*inner] = x[base+j*inner] - mx - ls
				}
			} else {
				inv := float32(1 / sum)
				for j := 0; j < n; j++ {
					y[base+j*inner] *= inv
				}
			}
		}
	}
}

// softmaxRow normalises one contiguous row. A row that contains NaN yields
// NaN everywhere, and a row of −∞ yields NaN, as PyTorch.
func softmaxRow(x, y []float32, log bool) {
	mx := vmath.Max(x)
	if log {
		sum := vmath.ExpSub(y, x, mx)
		ls := mx + float32(math.Log(float64(sum)))
		for j, v := range x {
			y[j] = v - ls
		}
		return
	}
	sum := vmath.ExpSub(y, x, mx)
	vmath.Scale(y, 1/sum)
}

// splitAxis returns the products of the extents before, at and after axis.
func splitAxis(shape []int, axis int) (outer, n, inner int) {
	outer, inner = 1, 1
	for i, d := range shape {
		switch {
		case i < axis:
			outer *= d
		case i > axis:
			inner *= d
		}
	}
	return outer, shape[axis], inner
}

// layerNorm implements OpLayerNorm: statistics in float64, over the
// trailing axes from attr.Axis on.
func (b *Backend) layerNorm(s *kernels.Step, bufs []kernels.Buffer) error {
	in, out := s.In[0], s.Out[0]
	attr, ok := s.Attr.(kernels.NormAttr)
	if !ok {
		return fmt.Errorf("cpu: layer_norm: missing attributes")
	}
	rows, n := 1, 1
	for i, d := range in.Shape {
		if i < attr.Axis {
			rows *= d
		} else {
			n *= d
		}
	}
	if rows*n == 0 {
		return nil
	}
	x, y := f32s(bufs, in)[in.Offset:], f32s(bufs, out)[out.Offset:]
	var w, bias []float32
	if len(s.In) > 1 {
		w = f32s(bufs, s.In[1])[s.In[1].Offset:]
	}
	if len(s.In) > 2 {
		bias = f32s(bufs, s.In[2])[s.In[2].Offset:]
	}
	eps := attr.Eps
	if grain := max(1, 16384/n); b.split(rows, grain) {
		b.parallelFor(rows, grain, func(lo, hi int) { layerNormRows(x, y, w, bias, n, eps, lo, hi) })
	} else {
		layerNormRows(x, y, w, bias, n, eps, 0, rows)
	}
	return nil
}

// layerNormRows normalises rows [lo, hi) of n elements.
func layerNormRows(x, y, w, bias []float32, n int, eps float32, lo, hi int) {
	for r := lo; r < hi; r++ {
		xr, yr := x[r*n:(r+1)*n], y[r*n:(r+1)*n]
		mean, rstd := meanRstd(xr, eps)
		normalize(xr, yr, mean, rstd, w, bias)
	}
}

// meanRstd returns the mean and 1/sqrt(var+eps) of x (population variance).
func meanRstd(x []float32, eps float32) (float32, float32) {
	mean := vmath.SumF64(x) / float64(len(x))
	ss := vmath.SumSqDevF64(x, mean)
	return float32(mean), float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
}

// meanRstdOnePass is meanRstd from one pass over x (sum and sum of
// squares in float64): group and instance norms run over long sequences,
// where each pass is a trip through memory.
func meanRstdOnePass(x []float32, eps float32) (float32, float32) {
	sum, sq := vmath.SumAndSquaresF64(x)
	n := float64(len(x))
	mean := sum / n
	v := max(sq/n-mean*mean, 0)
	return float32(mean), float32(1 / math.Sqrt(v+float64(eps)))
}

// normalize writes (x−mean)·rstd, then ·w + bias where given (w and bias
// are indexed like x).
func normalize(x, y []float32, mean, rstd float32, w, bias []float32) {
	switch {
	case w != nil && bias != nil:
		for j, v := range x {
			y[j] = (v-mean)*rstd*w[j] + bias[j]
		}
	case w != nil:
		for j, v := range x {
			y[j] = (v - mean) * rstd * w[j]
		}
	default:
		for j, v := range x {
			y[j] = (v - mean) * rstd
		}
	}
}

// groupNorm implements OpGroupNorm on dense [N, C, ...] data.
func (b *Backend) groupNorm(s *kernels.Step, bufs []kernels.Buffer) error {
	in, out := s.In[0], s.Out[0]
	attr, ok := s.Attr.(kernels.NormAttr)
	if !ok {
		return fmt.Errorf("cpu: group_norm: missing attributes")
	}
	N, C := in.Shape[0], in.Shape[1]
	L := 1
	for _, d := range in.Shape[2:] {
		L *= d
	}
	G := attr.Groups
	cg := C / G
	if N*C*L == 0 {
		return nil
	}
	x, y := f32s(bufs, in)[in.Offset:], f32s(bufs, out)[out.Offset:]
	var w, bias []float32
	if len(s.In) > 1 {
		w = f32s(bufs, s.In[1])[s.In[1].Offset:]
	}
	if len(s.In) > 2 {
		bias = f32s(bufs, s.In[2])[s.In[2].Offset:]
	}
	eps := attr.Eps
	if grain := max(1, 16384/(cg*L)); b.split(N*G, grain) {
		b.parallelFor(N*G, grain, func(lo, hi int) { groupNormRows(x, y, w, bias, C, L, G, eps, lo, hi) })
	} else {
		groupNormRows(x, y, w, bias, C, L, G, eps, 0, N*G)
	}
	return nil
}

// groupNormRows normalises (batch, group) pairs [lo, hi).
func groupNormRows(x, y, w, bias []float32, C, L, G int, eps float32, lo, hi int) {
	cg := C / G
	{
		for r := lo; r < hi; r++ {
			n, g := r/G, r%G
			base := (n*C + g*cg) * L
			mean, rstd := meanRstdOnePass(x[base:base+cg*L], eps)
			for c := g * cg; c < (g+1)*cg; c++ {
				off := (n*C + c) * L
				xr, yr := x[off:off+L], y[off:off+L]
				sc, sh := rstd, -mean*rstd
				if w != nil {
					sc, sh = rstd*w[c], -mean*rstd*w[c]
					if bias != nil {
						sh += bias[c]
					}
				}
				vmath.Affine(yr, xr, sc, sh)
			}
		}
	}
}
