package kerneltest

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// ND is a dense row-major array of float64: the value type of the textbook
// references. Its element values are the logical values of a tensor, however
// a backend stores them.
type ND struct {
	Shape []int
	Data  []float64
}

// NewND returns a zero-filled array of the given shape.
func NewND(shape ...int) ND {
	return ND{Shape: slices.Clone(shape), Data: make([]float64, numel(shape))}
}

// RandND returns an array of the given shape with values uniform in
// [lo, hi).
func RandND(rng *rand.Rand, lo, hi float64, shape ...int) ND {
	a := NewND(shape...)
	for i := range a.Data {
		a.Data[i] = lo + (hi-lo)*rng.Float64()
	}
	return a
}

// Seq returns an array of the given shape holding 0, 1, 2, ... in
// row-major order.
func Seq(shape ...int) ND {
	a := NewND(shape...)
	for i := range a.Data {
		a.Data[i] = float64(i)
	}
	return a
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Strides returns the row-major strides of a's shape, in elements.
func (a ND) Strides() []int { return denseStrides(a.Shape) }

func denseStrides(shape []int) []int {
	st := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= shape[i]
	}
	return st
}

// Unravel turns a row-major flat index into coordinates of shape.
func Unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}

// At reads a at coordinates of a shape a broadcasts to (NumPy's rules:
// aligned on the right, extent-1 axes repeat).
func (a ND) At(idx []int) float64 {
	off := len(idx) - len(a.Shape)
	st := a.Strides()
	p := 0
	for d := range a.Shape {
		if a.Shape[d] != 1 {
			p += idx[off+d] * st[d]
		}
	}
	return a.Data[p]
}

// F32 returns the values as float32s.
func (a ND) F32() []float32 {
	out := make([]float32, len(a.Data))
	for i, v := range a.Data {
		out[i] = float32(v)
	}
	return out
}

// Round32 rounds a's values to float32 in place, so the reference sees
// what a float32 kernel is given, and returns a.
func (a ND) Round32() ND {
	for i, v := range a.Data {
		a.Data[i] = float64(float32(v))
	}
	return a
}

// Reshape returns a with another shape of the same size (sharing data).
func (a ND) Reshape(shape ...int) ND { a.Shape = shape; return a }

// Clone returns a deep copy of a.
func (a ND) Clone() ND { return ND{Shape: slices.Clone(a.Shape), Data: slices.Clone(a.Data)} }

// BroadcastShape is the NumPy broadcast of shapes (assumed compatible).
func BroadcastShape(shapes ...[]int) []int {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for i, d := range s {
			if j := r - len(s) + i; d != 1 {
				out[j] = d
			}
		}
	}
	return out
}

// Map applies f elementwise to ins, broadcast to their common shape.
func Map(f func(xs ...float64) float64, ins ...ND) ND {
	shapes := make([][]int, len(ins))
	for i, a := range ins {
		shapes[i] = a.Shape
	}
	out := NewND(BroadcastShape(shapes...)...)
	xs := make([]float64, len(ins))
	for i := range out.Data {
		idx := Unravel(i, out.Shape)
		for k, a := range ins {
			xs[k] = a.At(idx)
		}
		out.Data[i] = f(xs...)
	}
	return out
}

// Permute returns a with its axes reordered: axis k of the result is axis
// perm[k] of a.
func Permute(a ND, perm ...int) ND {
	shape := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = a.Shape[p]
	}
	out := NewND(shape...)
	st := a.Strides()
	for i := range out.Data {
		idx := Unravel(i, shape)
		p := 0
		for k, q := range perm {
			p += idx[k] * st[q]
		}
		out.Data[i] = a.Data[p]
	}
	return out
}

// Reduce reduces a over axes with f applied to each group's values in
// row-major order; keep retains the reduced axes with extent 1.
func Reduce(a ND, axes []int, keep bool, f func([]float64) float64) ND {
	var oshape, kshape []int
	for d, n := range a.Shape {
		if slices.Contains(axes, d) {
			kshape = append(kshape, 1)
			if keep {
				oshape = append(oshape, 1)
			}
		} else {
			kshape = append(kshape, n)
			oshape = append(oshape, n)
		}
	}
	groups := make([][]float64, numel(kshape))
	kst := denseStrides(kshape)
	for i, v := range a.Data {
		idx := Unravel(i, a.Shape)
		p := 0
		for d := range idx {
			if !slices.Contains(axes, d) {
				p += idx[d] * kst[d]
			}
		}
		groups[p] = append(groups[p], v)
	}
	out := NewND(oshape...)
	for i := range out.Data {
		out.Data[i] = f(groups[i])
	}
	return out
}

// Sum adds x, for Reduce.
func Sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// Mean averages x, for Reduce.
func Mean(x []float64) float64 { return Sum(x) / float64(len(x)) }

// Prod multiplies x, for Reduce.
func Prod(x []float64) float64 {
	p := 1.0
	for _, v := range x {
		p *= v
	}
	return p
}

// Max is the largest of x, NaN if any is (torch.max), for Reduce.
func Max(x []float64) float64 { return x[argExtreme(x, 1)] }

// Min is the smallest of x, NaN if any is (torch.min), for Reduce.
func Min(x []float64) float64 { return x[argExtreme(x, -1)] }

// ArgMax is the index of the first maximum of x (of the first NaN, if
// any), for Reduce.
func ArgMax(x []float64) float64 { return float64(argExtreme(x, 1)) }

// ArgMin is the index of the first minimum of x (of the first NaN, if
// any), for Reduce.
func ArgMin(x []float64) float64 { return float64(argExtreme(x, -1)) }

// Variance returns the variance with correction subtracted from the count
// (0: population, 1: unbiased), for Reduce.
func Variance(correction int) func([]float64) float64 {
	return func(x []float64) float64 {
		m := Mean(x)
		s := 0.0
		for _, v := range x {
			s += (v - m) * (v - m)
		}
		return s / float64(len(x)-correction)
	}
}

func argExtreme(x []float64, sign float64) int {
	best := 0
	for i, v := range x {
		if math.IsNaN(v) {
			return i
		}
		if sign*v > sign*x[best] {
			best = i
		}
	}
	return best
}

// Softmax is softmax (or log-softmax) of a along axis.
func Softmax(a ND, axis int, log bool) ND {
	out := NewND(a.Shape...)
	st := a.Strides()
	for i := range a.Data {
		idx := Unravel(i, a.Shape)
		base := i - idx[axis]*st[axis]
		mx := math.Inf(-1)
		for j := 0; j < a.Shape[axis]; j++ {
			mx = math.Max(mx, a.Data[base+j*st[axis]])
		}
		s := 0.0
		for j := 0; j < a.Shape[axis]; j++ {
			s += math.Exp(a.Data[base+j*st[axis]] - mx)
		}
		if log {
			out.Data[i] = a.Data[i] - mx - math.Log(s)
		} else {
			out.Data[i] = math.Exp(a.Data[i]-mx) / s
		}
	}
	return out
}

// meanRstd returns the mean of x and 1/sqrt(var+eps) (population
// variance).
func meanRstd(x []float64, eps float64) (float64, float64) {
	m := Mean(x)
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return m, 1 / math.Sqrt(s/float64(len(x))+eps)
}

// LayerNorm normalises x over its trailing axes from axis on, then
// multiplies by w and adds b (each shaped like those axes; empty Data for
// none).
func LayerNorm(x ND, w, b ND, axis int, eps float64) ND {
	n := numel(x.Shape[axis:])
	out := NewND(x.Shape...)
	for r := 0; r*n < len(x.Data); r++ {
		row := x.Data[r*n : (r+1)*n]
		m, rs := meanRstd(row, eps)
		for j, v := range row {
			y := (v - m) * rs
			if len(w.Data) > 0 {
				y *= w.Data[j]
			}
			if len(b.Data) > 0 {
				y += b.Data[j]
			}
			out.Data[r*n+j] = y
		}
	}
	return out
}

// GroupNorm normalises x [N, C, ...] over groups of C/groups channels and
// all trailing axes, then applies per-channel w and b (empty Data for
// none).
func GroupNorm(x ND, groups int, w, b ND, eps float64) ND {
	N, C := x.Shape[0], x.Shape[1]
	L := numel(x.Shape[2:])
	cg := C / groups
	out := NewND(x.Shape...)
	for n := 0; n < N; n++ {
		for g := 0; g < groups; g++ {
			base := (n*C + g*cg) * L
			m, rs := meanRstd(x.Data[base:base+cg*L], eps)
			for c := g * cg; c < (g+1)*cg; c++ {
				for j := 0; j < L; j++ {
					i := (n*C+c)*L + j
					y := (x.Data[i] - m) * rs
					if len(w.Data) > 0 {
						y *= w.Data[c]
					}
					if len(b.Data) > 0 {
						y += b.Data[c]
					}
					out.Data[i] = y
				}
			}
		}
	}
	return out
}

// MatMul multiplies a [B..., M, K] by b [B..., K, N] (equal batch axes);
// ta and tb mean the operand's data holds its two trailing axes swapped.
func MatMul(a, b ND, ta, tb bool) ND {
	r := len(a.Shape)
	M, K := a.Shape[r-2], a.Shape[r-1]
	if ta {
		M, K = K, M
	}
	N := b.Shape[len(b.Shape)-1]
	if tb {
		N = b.Shape[len(b.Shape)-2]
	}
	batch := numel(a.Shape[:r-2])
	out := NewND(append(slices.Clone(a.Shape[:r-2]), M, N)...)
	for bi := 0; bi < batch; bi++ {
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				s := 0.0
				for k := 0; k < K; k++ {
					var av, bv float64
					if ta {
						av = a.Data[bi*M*K+k*M+i]
					} else {
						av = a.Data[bi*M*K+i*K+k]
					}
					if tb {
						bv = b.Data[bi*K*N+j*K+k]
					} else {
						bv = b.Data[bi*K*N+k*N+j]
					}
					s += av * bv
				}
				out.Data[bi*M*N+i*N+j] = s
			}
		}
	}
	return out
}

// Attention is softmax(q·kᵀ + mask)·v for q [B..., n, d], k [B..., s, d],
// v [B..., s, dv] (equal batch axes) and mask [n, s] or [B..., n, s]
// (empty Data for none).
func Attention(q, k, v, mask ND) ND {
	r := len(q.Shape)
	s := MatMul(q, k, false, true)
	if len(mask.Data) > 0 {
		for i := range s.Data {
			s.Data[i] += mask.Data[i%len(mask.Data)]
		}
	}
	return MatMul(Softmax(s, r-1, false), v, false, false)
}

// Conv1d is a 1-D cross-correlation (torch.nn.functional.conv1d) of x
// [N, Cin, L] with w [Cout, Cin/groups, K] and bias b [Cout] (nil for
// none).
func Conv1d(x, w ND, b []float64, stride, padL, padR, dil, groups int) ND {
	N, Cin, L := x.Shape[0], x.Shape[1], x.Shape[2]
	Cout, cig, K := w.Shape[0], w.Shape[1], w.Shape[2]
	Lout := (L+padL+padR-dil*(K-1)-1)/stride + 1
	cog := Cout / groups
	out := NewND(N, Cout, Lout)
	for n := 0; n < N; n++ {
		for co := 0; co < Cout; co++ {
			g := co / cog
			for t := 0; t < Lout; t++ {
				s := 0.0
				if b != nil {
					s = b[co]
				}
				for ci := 0; ci < cig; ci++ {
					for k := 0; k < K; k++ {
						if i := t*stride + k*dil - padL; i >= 0 && i < L {
							s += w.Data[(co*cig+ci)*K+k] * x.Data[(n*Cin+g*cig+ci)*L+i]
						}
					}
				}
				out.Data[(n*Cout+co)*Lout+t] = s
			}
		}
	}
	return out
}

// ConvTranspose1d is torch.nn.functional.conv_transpose1d of x [N, Cin, L]
// with w [Cin, Cout/groups, K] and bias b [Cout] (nil for none); padL and
// padR trim the full output on either side.
func ConvTranspose1d(x, w ND, b []float64, stride, padL, padR, outPad, dil, groups int) ND {
	N, Cin, L := x.Shape[0], x.Shape[1], x.Shape[2]
	cog, K := w.Shape[1], w.Shape[2]
	cig := Cin / groups
	Cout := cog * groups
	Lout := (L-1)*stride - padL - padR + dil*(K-1) + outPad + 1
	out := NewND(N, Cout, Lout)
	for n := 0; n < N; n++ {
		for co := 0; co < Cout; co++ {
			for t := 0; t < Lout; t++ {
				if b != nil {
					out.Data[(n*Cout+co)*Lout+t] = b[co]
				}
			}
		}
		for ci := 0; ci < Cin; ci++ {
			g := ci / cig
			for i := 0; i < L; i++ {
				for c := 0; c < cog; c++ {
					co := g*cog + c
					for k := 0; k < K; k++ {
						if t := i*stride + k*dil - padL; t >= 0 && t < Lout {
							out.Data[(n*Cout+co)*Lout+t] += x.Data[(n*Cin+ci)*L+i] * w.Data[(ci*cog+c)*K+k]
						}
					}
				}
			}
		}
	}
	return out
}

// LSTM runs one direction of a single-layer LSTM (PyTorch gate order i, f,
// g, o) over x [T, B, I] from state h0, c0 [B·H]; reverse runs backwards
// in time. It returns y [T, B, H] and the final state.
func LSTM(x ND, wih, whh, bih, bhh ND, h0, c0 []float64, reverse bool) (y ND, h, c []float64) {
	T, B, I := x.Shape[0], x.Shape[1], x.Shape[2]
	H := whh.Shape[1]
	y = NewND(T, B, H)
	h = slices.Clone(h0)
	c = slices.Clone(c0)
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	for s := 0; s < T; s++ {
		t := s
		if reverse {
			t = T - 1 - s
		}
		nh := make([]float64, B*H)
		for b := 0; b < B; b++ {
			gates := make([]float64, 4*H)
			for g := 0; g < 4*H; g++ {
				v := bih.Data[g] + bhh.Data[g]
				for i := 0; i < I; i++ {
					v += wih.Data[g*I+i] * x.Data[(t*B+b)*I+i]
				}
				for j := 0; j < H; j++ {
					v += whh.Data[g*H+j] * h[b*H+j]
				}
				gates[g] = v
			}
			for j := 0; j < H; j++ {
				ig, fg, gg, og := sig(gates[j]), sig(gates[H+j]), math.Tanh(gates[2*H+j]), sig(gates[3*H+j])
				c[b*H+j] = fg*c[b*H+j] + ig*gg
				nh[b*H+j] = og * math.Tanh(c[b*H+j])
				y.Data[(t*B+b)*H+j] = nh[b*H+j]
			}
		}
		h = nh
	}
	return y, h, c
}

// Gather picks slices of a along axis by indices (numpy.take; negative
// indices count from the end): the result has shape a.shape[:axis] +
// idx.shape + a.shape[axis+1:].
func Gather(a ND, axis int, idx ND) ND {
	shape := append(append(slices.Clone(a.Shape[:axis]), idx.Shape...), a.Shape[axis+1:]...)
	out := NewND(shape...)
	dim := a.Shape[axis]
	src := make([]int, len(a.Shape))
	for i := range out.Data {
		o := Unravel(i, shape)
		copy(src, o[:axis])
		j := int(idx.Data[numelIndex(o[axis:axis+len(idx.Shape)], idx.Shape)])
		if j < 0 {
			j += dim
		}
		src[axis] = j
		copy(src[axis+1:], o[axis+len(idx.Shape):])
		out.Data[i] = a.Data[numelIndex(src, a.Shape)]
	}
	return out
}

// numelIndex is the row-major flat index of coordinates idx in shape.
func numelIndex(idx, shape []int) int {
	p := 0
	for d, i := range idx {
		p = p*shape[d] + i
	}
	return p
}

// RepeatInterleave repeats slice i of a along axis counts[i] times.
func RepeatInterleave(a ND, axis int, counts []int) ND {
	shape := slices.Clone(a.Shape)
	shape[axis] = 0
	var from []int
	for i, c := range counts {
		shape[axis] += c
		for range c {
			from = append(from, i)
		}
	}
	out := NewND(shape...)
	for i := range out.Data {
		o := Unravel(i, shape)
		o[axis] = from[o[axis]]
		out.Data[i] = a.Data[numelIndex(o, a.Shape)]
	}
	return out
}

// Pad adds before[i] and after[i] elements on axis i, filled by mode
// (value for PadConstant).
func Pad(a ND, mode kernels.PadMode, value float64, before, after []int) ND {
	shape := slices.Clone(a.Shape)
	for i := range shape {
		shape[i] += before[i] + after[i]
	}
	out := NewND(shape...)
	for i := range out.Data {
		o := Unravel(i, shape)
		inside := true
		for d := range o {
			n := a.Shape[d]
			j := o[d] - before[d]
			switch {
			case j >= 0 && j < n:
			case mode == kernels.PadReflect:
				for j < 0 || j >= n {
					if j < 0 {
						j = -j
					}
					if j >= n {
						j = 2*(n-1) - j
					}
				}
			case mode == kernels.PadReplicate:
				j = max(0, min(j, n-1))
			default:
				inside = false
			}
			o[d] = j
		}
		if inside {
			out.Data[i] = a.Data[numelIndex(o, a.Shape)]
		} else {
			out.Data[i] = value
		}
	}
	return out
}

// Cumsum is the running sum of a along axis; exclusive shifts it by one
// (the first is 0), reverse runs from the end.
func Cumsum(a ND, axis int, exclusive, reverse bool) ND {
	out := NewND(a.Shape...)
	st := a.Strides()
	n := a.Shape[axis]
	for i := range a.Data {
		idx := Unravel(i, a.Shape)
		if idx[axis] != 0 {
			continue
		}
		acc := 0.0
		for q := 0; q < n; q++ {
			j := q
			if reverse {
				j = n - 1 - q
			}
			p := i + j*st[axis]
			if exclusive {
				out.Data[p] = acc
				acc += a.Data[p]
			} else {
				acc += a.Data[p]
				out.Data[p] = acc
			}
		}
	}
	return out
}

// MatMulInteger is ONNX MatMulInteger: (a − aZero)·(b − bZero) for a
// [M, K], b [K, N] and bZero of one or N values.
func MatMulInteger(a, b ND, aZero float64, bZero []float64) ND {
	M, K, N := a.Shape[0], a.Shape[1], b.Shape[1]
	out := NewND(M, N)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			zb := bZero[0]
			if len(bZero) > 1 {
				zb = bZero[j]
			}
			s := 0.0
			for k := 0; k < K; k++ {
				s += (a.Data[i*K+k] - aZero) * (b.Data[k*N+j] - zb)
			}
			out.Data[i*N+j] = s
		}
	}
	return out
}

// ConvInteger1d is ONNX ConvInteger for x [N, Cin, L] and w [Cout, Cin, K]
// (one group): padding takes the value xZero, so padded taps add nothing.
func ConvInteger1d(x, w ND, xZero, wZero float64, stride, padL, padR, dil int) ND {
	xs := x.Clone()
	for i := range xs.Data {
		xs.Data[i] -= xZero
	}
	ws := w.Clone()
	for i := range ws.Data {
		ws.Data[i] -= wZero
	}
	return Conv1d(xs, ws, nil, stride, padL, padR, dil, 1)
}

// DynamicQuantize is ONNX DynamicQuantizeLinear, in float32 arithmetic as
// the specification states it: the range includes 0, scale =
// (max − min)/255, zero point = saturate(round(−min/scale)), q =
// saturate(round(x/scale) + zero point), rounding half to even.
func DynamicQuantize(x ND) (q ND, scale, zero float64) {
	lo, hi := float32(0), float32(0)
	for _, v := range x.Data {
		lo, hi = min(lo, float32(v)), max(hi, float32(v))
	}
	s := float32(1)
	if hi != lo {
		s = (hi - lo) / 255
	}
	sat := func(v float32) float32 { return max(0, min(255, v)) }
	zp := sat(float32(math.RoundToEven(float64(-lo / s))))
	q = NewND(x.Shape...)
	for i, v := range x.Data {
		q.Data[i] = float64(sat(float32(math.RoundToEven(float64(float32(v)/s))) + zp))
	}
	return q, float64(s), float64(zp)
}

// LinearQ is x [M, K] times ((w − zero)·scale)ᵀ for a byte weight w
// [N, K].
func LinearQ(x, w ND, scale, zero float64) ND {
	wd := w.Clone()
	for i := range wd.Data {
		wd.Data[i] = (wd.Data[i] - zero) * scale
	}
	return MatMul(x, wd, false, true)
}
