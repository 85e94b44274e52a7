package cpu

import (
	"fmt"
	"sync"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/kernels/cpu/vmath"
)

// lstm implements OpLSTM. The input projection of all time steps is one
// GEMM per direction; each step then adds h·W_hhᵀ and applies the gates in
// PyTorch order (i, f, g, o). Directions run concurrently.
func (b *Backend) lstm(s *kernels.Step, bufs []kernels.Buffer) error {
	a, ok := s.Attr.(kernels.LSTMAttr)
	if !ok {
		return fmt.Errorf("cpu: lstm: missing attributes")
	}
	xv := s.In[0]
	D := 1
	if a.Bidirectional {
		D = 2
	}
	H := a.Hidden
	T, B, I := xv.Shape[0], xv.Shape[1], xv.Shape[2]
	if a.BatchFirst {
		T, B = B, T
	}
	h0v, c0v := s.In[1+4*D], s.In[2+4*D]
	yv, hv, cv := s.Out[0], s.Out[1], s.Out[2]
	x := f32s(bufs, xv)[xv.Offset:]
	y := f32s(bufs, yv)[yv.Offset:]
	hN := f32s(bufs, hv)[hv.Offset:]
	cN := f32s(bufs, cv)[cv.Offset:]
	h0 := f32s(bufs, h0v)[h0v.Offset:]
	c0 := f32s(bufs, c0v)[c0v.Offset:]
	// Index of x[t, b, :] / y[t, b, :] rows.
	row := func(t, bi int) int {
		if a.BatchFirst {
			return bi*T + t
		}
		return t*B + bi
	}
	var wg sync.WaitGroup
	for d := 0; d < D; d++ {
		wg.Add(1)
		go func(d int) {
			defer wg.Done()
			in := func(k int) []float32 { v := s.In[1+4*d+k]; return f32s(bufs, v)[v.Offset:] }
			wih, whh, bih, bhh := in(0), in(1), in(2), in(3)
			gx := make([]float32, T*B*4*H)
			// gx[row] = x[row]·W_ihᵀ (rows in x's own order)
			if T*B > 0 && I > 0 {
				gemm.SGEMM(false, true, T*B, 4*H, I, 1, x, I, wih, I, 0, gx, 4*H)
			}
			h := make([]float32, B*H)
			c := make([]float32, B*H)
			copy(h, h0[d*B*H:(d+1)*B*H])
			copy(c, c0[d*B*H:(d+1)*B*H])
			gates := make([]float32, B*4*H)
			tc := make([]float32, H)
			bias := make([]float32, 4*H)
			for j := range bias {
				bias[j] = bih[j] + bhh[j]
			}
			for step := 0; step < T; step++ {
				t := step
				if d == 1 {
					t = T - 1 - step
				}
				// gates = h·W_hhᵀ, then + gx + biases
				gemm.SGEMM(false, true, B, 4*H, H, 1, h, H, whh, H, 0, gates, 4*H)
				for bi := 0; bi < B; bi++ {
					g := gates[bi*4*H : (bi+1)*4*H]
					r := row(t, bi)
					gxr := gx[r*4*H : (r+1)*4*H]
					for j := range g {
						g[j] += gxr[j] + bias[j]
					}
					vmath.Sigmoid(g[:2*H], g[:2*H])
					vmath.Tanh(g[2*H:3*H], g[2*H:3*H])
					vmath.Sigmoid(g[3*H:], g[3*H:])
					hb, cb := h[bi*H:(bi+1)*H], c[bi*H:(bi+1)*H]
					for j := 0; j < H; j++ {
						cb[j] = g[H+j]*cb[j] + g[j]*g[2*H+j]
					}
					vmath.Tanh(tc, cb)
					for j := 0; j < H; j++ {
						hb[j] = g[3*H+j] * tc[j]
					}
					copy(y[r*D*H+d*H:r*D*H+(d+1)*H], hb)
				}
			}
			copy(hN[d*B*H:(d+1)*B*H], h)
			copy(cN[d*B*H:(d+1)*B*H], c)
		}(d)
	}
	wg.Wait()
	return nil
}
