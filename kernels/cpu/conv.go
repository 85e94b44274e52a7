package cpu

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/tensorforge/forge/internal/filepages"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// colPool recycles im2col scratch so steady-state convolution allocates
// nothing.
var colPool sync.Pool

func getCol(n int) *[]float32 {
	if p, ok := colPool.Get().(*[]float32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]float32, n)
	return &s
}

// conv1d implements OpConv1d. Where the GEMM engine has an offset
// microkernel (AVX-512 or AVX2) it runs as an implicit GEMM per batch item
// and group (gemm.Conv1d: no im2col matrix, the weight packed once per
// backend when it is a constant; on AMX tiles in bfloat16 when the step
// allows it and the weight is a constant); elsewhere as im2col + GEMM.
// Depthwise convolutions (one input channel per group) run direct loops.
func (b *Backend) conv1d(s *kernels.Step, bufs []kernels.Buffer) error {
	xv, wv, out := s.In[0], s.In[1], s.Out[0]
	a, ok := s.Attr.(kernels.ConvAttr)
	if !ok {
		return fmt.Errorf("cpu: conv1d: missing attributes")
	}
	a.BF16 = a.BF16 && !s.F32 // a full-precision graph's step stays in float32
	N, Cin, L := xv.Shape[0], xv.Shape[1], xv.Shape[2]
	Cout, K := wv.Shape[0], wv.Shape[2]
	Lout := out.Shape[2]
	G := a.Groups
	cig, cog := Cin/G, Cout/G
	x := f32s(bufs, xv)[xv.Offset:]
	w := f32s(bufs, wv)[wv.Offset:]
	y := f32s(bufs, out)[out.Offset:]
	var bias []float32
	if len(s.In) > 2 {
		bias = f32s(bufs, s.In[2])[s.In[2].Offset:]
	}
	if N*Cout*Lout == 0 {
		return nil
	}
	if cig == 1 && cog == 1 {
		b.depthwise(x, w, bias, y, N, Cin, L, K, Lout, a)
		return nil
	}
	direct := K == 1 && a.Stride == 1 && a.PadLeft == 0 && a.PadRight == 0
	// With few output frames and long kernels (an STFT as a convolution:
	// K = 256, four frames) im2col's rows would be a handful of elements
	// each; laid out transposed, each (frame, channel) receptive field is
	// one contiguous copy and the GEMM reads the columns transposed.
	// The same layout suits any convolution over a handful of frames (a
	// VAD chunk): the frames become the GEMM's few rows and the constant
	// weight its packed B, instead of a column tile that is mostly empty.
	transposed := !direct && a.Dilation == 1 && cig*K*Lout <= 1<<16 && (K > Lout || Lout <= 8)
	if !transposed && !(a.BF16 && gemm.HasBF16Conv()) && b.winogradConv1d(bufs, wv, x, bias, y, N, Cin, L, Cout, K, Lout, a) {
		return nil
	}
	if e := gemm.Default(); !transposed && e.ConvPath() != "go" && wv.Contiguous() {
		b.implicitConv1d(e, bufs, wv, x, w, bias, y, N, Cin, L, Cout, K, Lout, a)
		return nil
	}
	// Long outputs are done in column tiles so the im2col scratch stays
	// bounded (a 128-channel, 11-tap convolution over 18k frames would
	// otherwise need a 100 MB buffer per call).
	tile := Lout
	if !direct && !transposed {
		tile = im2colTile(cig*K, Lout)
	}
	var colp *[]float32
	if !direct {
		colp = getCol(cig * K * tile)
		defer colPool.Put(colp)
	}
	for n := 0; n < N; n++ {
		for g := 0; g < G; g++ {
			xg := x[(n*Cin+g*cig)*L:]
			yg := y[(n*Cout+g*cog)*Lout : (n*Cout+(g+1)*cog)*Lout]
			wg := w[g*cog*cig*K:]
			switch {
			case transposed:
				col := *colp
				im2colT(col, xg, cig, L, K, Lout, a)
				// yᵀ = colᵀ·wᵀ puts the constant weight in the B slot, where
				// it is packed once per backend instead of on every call.
				wT := kernels.View{Slot: wv.Slot, Offset: wv.Offset + g*cog*cig*K, DType: kernels.F32, Shape: []int{cig * K, cog}, Strides: []int{1, cig * K}}
				if pb := b.packedSGEMMB(bufs, wT, cig*K, cog, true, cig*K); pb != nil && !gemm.Default().UsesBLAS() {
					ytp := getCol(Lout * cog)
					yt := *ytp
					gemm.Default().SGEMMPackedB(false, Lout, col, cig*K, pb, yt, cog)
					for t := 0; t < Lout; t++ {
						for c := 0; c < cog; c++ {
							yg[c*Lout+t] = yt[t*cog+c]
						}
					}
					colPool.Put(ytp)
					break
				}
				gemm.SGEMM(false, true, cog, Lout, cig*K, 1, wg, cig*K, col, cig*K, 0, yg, Lout)
			case direct:
				gemm.SGEMM(false, false, cog, Lout, cig*K, 1, wg, cig*K, xg, Lout, 0, yg, Lout)
			default:
				for t0 := 0; t0 < Lout; t0 += tile {
					tw := min(tile, Lout-t0)
					col := (*colp)[:cig*K*tw]
					b.im2col(col, xg, cig, L, K, t0, tw, a)
					gemm.SGEMM(false, false, cog, tw, cig*K, 1, wg, cig*K, col, tw, 0, yg[t0:], Lout)
				}
			}
			if bias != nil {
				for c := 0; c < cog; c++ {
					bc := bias[g*cog+c]
					row := yg[c*Lout : (c+1)*Lout]
					for t := range row {
						row[t] += bc
					}
				}
			}
		}
	}
	return nil
}

// im2colBudget bounds the im2col scratch of one convolution, in floats
// (8 MB): large enough that each tile's GEMM stays efficient, small
// enough to stay in the last-level cache and to keep memory flat however
// long the sequence.
const im2colBudget = 2 << 20

// im2colTile returns the output columns per tile for an im2col of rows
// rows: all of them when they fit the budget, else a multiple of 16 (at
// least 256).
func im2colTile(rows, Lout int) int {
	if rows*Lout <= im2colBudget {
		return Lout
	}
	return min(Lout, max(256, im2colBudget/rows/16*16))
}

// im2col lays out the receptive fields of output columns [t0, t0+tw):
// col[(c·K + k)·tw + j] = x[c, (t0+j)·stride + k·dilation − padLeft],
// zero outside the input.
func (b *Backend) im2col(col, x []float32, C, L, K, t0, tw int, a kernels.ConvAttr) {
	grain := max(1, 8192/max(tw, 1))
	if !b.split(C*K, grain) {
		im2colRows(col, x, L, K, t0, tw, a, 0, C*K)
		return
	}
	b.parallelFor(C*K, grain, func(lo, hi int) { im2colRows(col, x, L, K, t0, tw, a, lo, hi) })
}

// im2colRows fills rows [lo, hi) of col (one row per input channel and
// tap) for output columns [t0, t0+tw).
func im2colRows(col, x []float32, L, K, t0, tw int, a kernels.ConvAttr, lo, hi int) {
	Lout := tw
	for ck := lo; ck < hi; ck++ {
		c, k := ck/K, ck%K
		row := col[ck*Lout : (ck+1)*Lout]
		xr := x[c*L : (c+1)*L]
		start := t0*a.Stride + k*a.Dilation - a.PadLeft
		if a.Stride == 1 {
			// contiguous run with zero borders
			j0 := min(max(0, -start), Lout)
			j1 := min(Lout, L-start)
			if j1 <= j0 {
				clear(row)
			} else {
				clear(row[:j0])
				copy(row[j0:j1], xr[start+j0:start+j1])
				clear(row[j1:])
			}
			continue
		}
		for t := range row {
			i := t*a.Stride + start
			if i >= 0 && i < L {
				row[t] = xr[i]
			} else {
				row[t] = 0
			}
		}
	}
}

// im2colT lays out the receptive fields transposed, one row per output
// frame: col[t·C·K + c·K + k] = x[c, t·stride + k − padLeft], zero outside
// the input (dilation 1).
func im2colT(col, x []float32, C, L, K, Lout int, a kernels.ConvAttr) {
	for t := 0; t < Lout; t++ {
		start := t*a.Stride - a.PadLeft
		k0 := min(max(0, -start), K) // taps before the input
		k1 := max(k0, min(K, L-start))
		for c := 0; c < C; c++ {
			row := col[(t*C+c)*K : (t*C+c+1)*K]
			clear(row[:k0])
			if k1 > k0 { // else the field lies wholly in the padding
				copy(row[k0:k1], x[c*L+start+k0:c*L+start+k1])
			}
			clear(row[k1:])
		}
	}
}

// depthwise runs a convolution whose groups each hold one input and one
// output channel.
func (b *Backend) depthwise(x, w, bias, y []float32, N, C, L, K, Lout int, a kernels.ConvAttr) {
	b.parallelFor(N*C, max(1, 4096/max(Lout*K, 1)), func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			c := nc % C
			xr, yr, wr := x[nc*L:(nc+1)*L], y[nc*Lout:(nc+1)*Lout], w[c*K:(c+1)*K]
			var bc float32
			if bias != nil {
				bc = bias[c]
			}
			for t := range yr {
				acc := bc
				base := t*a.Stride - a.PadLeft
				for k, wk := range wr {
					if i := base + k*a.Dilation; i >= 0 && i < L {
						acc += wk * xr[i]
					}
				}
				yr[t] = acc
			}
		}
	})
}

// convTranspose1d implements OpConvTranspose1d: as stride-many ordinary
// convolutions on gemm.Conv1d where it has an offset microkernel
// (polyphaseConvT), else as GEMM (Wᵀ·x) followed by col2im; depthwise
// weights run a direct loop.
func (b *Backend) convTranspose1d(s *kernels.Step, bufs []kernels.Buffer) error {
	xv, wv, out := s.In[0], s.In[1], s.Out[0]
	a, ok := s.Attr.(kernels.ConvAttr)
	if !ok {
		return fmt.Errorf("cpu: conv_transpose1d: missing attributes")
	}
	a.BF16 = a.BF16 && !s.F32
	N, Cin, L := xv.Shape[0], xv.Shape[1], xv.Shape[2]
	cog, K := wv.Shape[1], wv.Shape[2]
	G := a.Groups
	cig := Cin / G
	Cout := cog * G
	Lout := out.Shape[2]
	x := f32s(bufs, xv)[xv.Offset:]
	w := f32s(bufs, wv)[wv.Offset:]
	y := f32s(bufs, out)[out.Offset:]
	var bias []float32
	if len(s.In) > 2 {
		bias = f32s(bufs, s.In[2])[s.In[2].Offset:]
	}
	if N*Cout*Lout == 0 {
		return nil
	}
	if e := gemm.Default(); a.Dilation == 1 && !(cig == 1 && cog == 1) && e.ConvPath() != "go" && wv.Contiguous() {
		b.polyphaseConvT(e, bufs, wv, x, w, bias, y, N, Cin, L, Cout, K, Lout, a)
		return nil
	}
	// start from the bias
	for n := 0; n < N; n++ {
		for c := 0; c < Cout; c++ {
			row := y[(n*Cout+c)*Lout : (n*Cout+c+1)*Lout]
			var bc float32
			if bias != nil {
				bc = bias[c]
			}
			for t := range row {
				row[t] = bc
			}
		}
	}
	if cig == 1 && cog == 1 {
		b.parallelFor(N*Cin, 1, func(lo, hi int) {
			for nc := lo; nc < hi; nc++ {
				c := nc % Cin
				xr, yr, wr := x[nc*L:(nc+1)*L], y[nc*Lout:(nc+1)*Lout], w[c*K:(c+1)*K]
				for i, xi := range xr {
					base := i*a.Stride - a.PadLeft
					for k, wk := range wr {
						if t := base + k*a.Dilation; t >= 0 && t < Lout {
							yr[t] += wk * xi
						}
					}
				}
			}
		})
		return nil
	}
	colp := getCol(cog * K * L)
	defer colPool.Put(colp)
	col := *colp
	for n := 0; n < N; n++ {
		for g := 0; g < G; g++ {
			// col[(co·K + k), i] = Σ_ci w[ci, co, k] · x[ci, i]
			wg := w[g*cig*cog*K:]
			xg := x[(n*Cin+g*cig)*L:]
			gemm.SGEMM(true, false, cog*K, L, cig, 1, wg, cog*K, xg, L, 0, col, L)
			yg := y[(n*Cout+g*cog)*Lout:]
			b.parallelFor(cog, 1, func(lo, hi int) {
				for co := lo; co < hi; co++ {
					yr := yg[co*Lout : (co+1)*Lout]
					for k := 0; k < K; k++ {
						cr := col[(co*K+k)*L : (co*K+k+1)*L]
						off := k*a.Dilation - a.PadLeft
						for i, v := range cr {
							if t := i*a.Stride + off; t >= 0 && t < Lout {
								yr[t] += v
							}
						}
					}
				}
			})
		}
	}
	return nil
}

// implicitConv1d runs a convolution on gemm.Conv1d, group by group.
func (b *Backend) implicitConv1d(e *gemm.Engine, bufs []kernels.Buffer, wv kernels.View, x, w, bias, y []float32, N, Cin, L, Cout, K, Lout int, a kernels.ConvAttr) {
	G := a.Groups
	cig, cog := Cin/G, Cout/G
	shape := gemm.Conv1dShape{Cin: cig, L: L, K: K, Stride: a.Stride, Dilation: a.Dilation, PadLeft: a.PadLeft, Lout: Lout}
	var scratch *gemm.ConvWeight
	for g := 0; g < G; g++ {
		wg := w[g*cog*cig*K : (g+1)*cog*cig*K]
		pw := b.packedConv(bufs, wv, g, cog, cig, K, a.BF16 && gemm.HasBF16Conv())
		if pw == nil {
			if scratch == nil {
				scratch = convWeightPool.Get().(*gemm.ConvWeight)
				defer convWeightPool.Put(scratch)
			}
			e.PackConvWeightInto(scratch, cog, cig*K, wg, cig*K)
			pw = scratch
		}
		groupItems(x, bias, y, N, Cin, L, Cout, Lout, G, g, func(xg, bg, yg []float32) {
			e.Conv1d(pw, shape, xg, L, yg, Lout, bg)
		})
		if pw != scratch {
			// A pack used in place from the pack file gives its
			// resident pages back once its convolution has run
			// (filepages.Release leaves a pack on the heap alone):
			// Kokoro's decoder and generator run each convolution once
			// a chunk, and held every pack resident to the end of it. A
			// page used again comes back from the page cache. On the
			// 2-core Intel VM (family 6 model 207, float32 packs), say's
			// 30-word paragraph peaked at 361–371 MiB instead of
			// 571–577, "Button." at 188–190 instead of 400, the audio
			// bit-identical and no slower.
			filepages.Release(pw.Words())
		}
	}
}

// groupItems calls fn with group g's input channels, bias and output
// channels of each of the N batch items of a convolution of G groups.
func groupItems(x, bias, y []float32, N, Cin, L, Cout, Lout, G, g int, fn func(xg, bg, yg []float32)) {
	cig, cog := Cin/G, Cout/G
	var bg []float32
	if bias != nil {
		bg = bias[g*cog : (g+1)*cog]
	}
	for n := 0; n < N; n++ {
		fn(x[(n*Cin+g*cig)*L:(n*Cin+(g+1)*cig)*L], bg, y[(n*Cout+g*cog)*Lout:(n*Cout+(g+1)*cog)*Lout])
	}
}

// convWeightPool recycles the packing of weights that are not constants
// (computed in the program), so that such convolutions allocate nothing
// in the steady state either.
var convWeightPool = sync.Pool{New: func() any { return new(gemm.ConvWeight) }}

// convKey identifies a constant convolution weight (one group of it) by
// where it lives.
type convKey struct {
	data            uintptr
	off, group      int
	rows, cin, taps int
	bf16            bool
	winograd        bool // transformed for gemm.WinogradConv1d (winograd.go)
}

// packedConv returns group g of a weight that lives in read-only (wrapped)
// memory packed for gemm.Conv1d (in bfloat16 for the AMX path when bf16 is
// set), packing it on first use; nil when the weight may change between
// launches. Such weights are packed per call, always in float32.
func (b *Backend) packedConv(bufs []kernels.Buffer, wv kernels.View, g, rows, cin, taps int, bf16 bool) *gemm.ConvWeight {
	wb, ok := bufs[wv.Slot].(*buffer)
	if !ok || !wb.wrapped {
		return nil
	}
	key := convKey{data: uintptr(unsafe.Pointer(unsafe.SliceData(wb.b))), off: wv.Offset, group: g, rows: rows, cin: cin, taps: taps, bf16: bf16}
	if pw, ok := b.convW.Load(key); ok { // the hot path: no closures built
		return pw.(*gemm.ConvWeight)
	}
	// The form leads the disk key: a file holding both precisions' packs
	// keeps each precision's together (sorted), so the pages faulted in
	// around one pack are of the same precision.
	diskKey := func(fileOff int64) string {
		return fmt.Sprintf("conv %t %d %d %d %d %d %d", bf16, fileOff, wv.Offset, g, rows, cin, taps)
	}
	from := func(words []byte) (*gemm.ConvWeight, error) {
		return gemm.Default().ConvWeightFrom(rows, cin, taps, bf16, words)
	}
	pw, _ := keptPack(b, &b.convW, wb, key, diskKey, from, func() *gemm.ConvWeight {
		depth := cin * taps
		w := f32s(bufs, wv)[wv.Offset+g*rows*depth:][:rows*depth]
		var pw *gemm.ConvWeight
		if bf16 {
			pw = gemm.Default().PackConvWeightBF16(rows, cin, taps, w)
		}
		if pw == nil {
			pw = gemm.Default().PackConvWeight(rows, depth, w, depth)
		}
		releasePacked(w)
		return pw
	})
	return pw
}

// releasePacked lets the kernel drop the resident pages of a constant
// weight that has just been packed, where it lies in a mapped weight file
// (package filepages): the kernels read only the pack from now on, and a
// page read again comes back from the page cache. Kokoro's bfloat16
// decoder and generator would otherwise keep their 200 MB of float32
// weights resident beside the 100 MB of packs.
func releasePacked(w []float32) {
	filepages.Release(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 4*len(w)))
}

// polyphaseConvT runs a transposed convolution (dilation 1) as S ordinary
// ones, one per output phase: output frame t = q·S + r − P collects
// x[q − m]·w[r + S·m] for m < K_r = ⌈(K − r)/S⌉, a K_r-tap convolution of x
// with the phase's taps reversed. Each phase's frames are computed
// contiguously (bias included) and then spread into y with stride S: no
// col2im scatter-add, and the weights of each phase are packed once.
func (b *Backend) polyphaseConvT(e *gemm.Engine, bufs []kernels.Buffer, wv kernels.View, x, w, bias, y []float32, N, Cin, L, Cout, K, Lout int, a kernels.ConvAttr) {
	G, S, P := a.Groups, a.Stride, a.PadLeft
	cig, cog := Cin/G, Cout/G
	var scratch *gemm.ConvWeight
	for g := 0; g < G; g++ {
		var bg []float32
		if bias != nil {
			bg = bias[g*cog : (g+1)*cog]
		}
		// Every phase reads all of the group's weight: its pages are
		// released once the last phase is packed.
		packed := false
		for r := 0; r < S; r++ {
			q0 := -floorDivInt(r-P, S) // first q with q·S + r − P ≥ 0
			t0 := q0*S + r - P
			if t0 >= Lout {
				continue
			}
			lr := (Lout-1-t0)/S + 1
			kr := (K - r + S - 1) / S
			colp := getCol(cog * lr)
			tmp := *colp
			if kr <= 0 {
				for co := 0; co < cog; co++ {
					var v float32
					if bg != nil {
						v = bg[co]
					}
					row := tmp[co*lr : (co+1)*lr]
					for i := range row {
						row[i] = v
					}
				}
			} else {
				pw, fresh := b.packedConvT(bufs, wv, g, r, cig, cog, K, S, kr, a.BF16 && gemm.HasBF16Conv())
				packed = packed || fresh
				if pw == nil {
					if scratch == nil {
						scratch = convWeightPool.Get().(*gemm.ConvWeight)
						defer convWeightPool.Put(scratch)
					}
					wp := getCol(cog * cig * kr)
					phaseWeight(*wp, w, g, r, cig, cog, K, S, kr)
					e.PackConvWeightInto(scratch, cog, cig*kr, *wp, cig*kr)
					colPool.Put(wp)
					pw = scratch
				}
				shape := gemm.Conv1dShape{Cin: cig, L: L, K: kr, Stride: 1, Dilation: 1, PadLeft: kr - 1 - q0, Lout: lr}
				for n := 0; n < N; n++ {
					xg := x[(n*Cin+g*cig)*L : (n*Cin+(g+1)*cig)*L]
					if n > 0 {
						// tmp holds batch item n−1's phase: spread it first.
						spreadPhase(y[((n-1)*Cout+g*cog)*Lout:], tmp, cog, lr, Lout, t0, S)
					}
					e.Conv1d(pw, shape, xg, L, tmp, lr, bg)
				}
				spreadPhase(y[((N-1)*Cout+g*cog)*Lout:], tmp, cog, lr, Lout, t0, S)
				colPool.Put(colp)
				continue
			}
			for n := 0; n < N; n++ {
				spreadPhase(y[(n*Cout+g*cog)*Lout:], tmp, cog, lr, Lout, t0, S)
			}
			colPool.Put(colp)
		}
		if packed {
			releasePacked(w[g*cig*cog*K : (g+1)*cig*cog*K])
		}
	}
}

// spreadPhase writes one phase's frames (cog rows of lr) into y (rows of
// Lout) at t0, t0 + S, ….
func spreadPhase(y, tmp []float32, cog, lr, Lout, t0, S int) {
	for co := 0; co < cog; co++ {
		src := tmp[co*lr : (co+1)*lr]
		dst := y[co*Lout:]
		for i, v := range src {
			dst[t0+i*S] = v
		}
	}
}

// phaseWeight writes phase r of a transposed-convolution weight w [Cin,
// cog, K] (group g) as an ordinary convolution weight [cog, cig, kr]: tap j
// is w's tap r + S·(kr − 1 − j).
func phaseWeight(dst, w []float32, g, r, cig, cog, K, S, kr int) {
	for co := 0; co < cog; co++ {
		for ci := 0; ci < cig; ci++ {
			src := w[((g*cig+ci)*cog+co)*K:]
			out := dst[(co*cig+ci)*kr : (co*cig+ci+1)*kr]
			for j := range out {
				out[j] = src[r+S*(kr-1-j)]
			}
		}
	}
}

// floorDivInt divides rounding toward −∞.
func floorDivInt(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// convTKey identifies one phase of a constant transposed-convolution
// weight.
type convTKey struct {
	data       uintptr
	off, group int
	phase, s   int
	cig, cog   int
	taps       int
	bf16       bool
}

// packedConvT returns phase r of group g of a constant (wrapped) transposed
// convolution weight, packed on first use (in bfloat16 for the AMX path
// when bf16 is set), and whether this call packed it; nil for weights that
// may change.
func (b *Backend) packedConvT(bufs []kernels.Buffer, wv kernels.View, g, r, cig, cog, K, S, kr int, bf16 bool) (*gemm.ConvWeight, bool) {
	wb, ok := bufs[wv.Slot].(*buffer)
	if !ok || !wb.wrapped {
		return nil, false
	}
	key := convTKey{data: uintptr(unsafe.Pointer(unsafe.SliceData(wb.b))), off: wv.Offset, group: g, phase: r, s: S, cig: cig, cog: cog, taps: K, bf16: bf16}
	if pw, ok := b.convW.Load(key); ok {
		return pw.(*gemm.ConvWeight), false
	}
	diskKey := func(fileOff int64) string {
		return fmt.Sprintf("convT %t %d %d %d %d %d %d %d %d", bf16, fileOff, wv.Offset, g, r, S, cig, cog, K)
	}
	from := func(words []byte) (*gemm.ConvWeight, error) {
		return gemm.Default().ConvWeightFrom(cog, cig, kr, bf16, words)
	}
	return keptPack(b, &b.convW, wb, key, diskKey, from, func() *gemm.ConvWeight {
		wp := make([]float32, cog*cig*kr)
		phaseWeight(wp, f32s(bufs, wv)[wv.Offset:], g, r, cig, cog, K, S, kr)
		var pw *gemm.ConvWeight
		if bf16 {
			pw = gemm.Default().PackConvWeightBF16(cog, cig, kr, wp)
		}
		if pw == nil {
			pw = gemm.Default().PackConvWeight(cog, cig*kr, wp, cig*kr)
		}
		return pw
	})
}
