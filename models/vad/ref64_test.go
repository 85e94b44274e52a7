package vad

import (
	"fmt"
	"math"
)

// Probs64 scores a clip as Probs does, in float64 arithmetic straight from
// the modules' weights: no folding, no panels, no compiled program. It is
// the yardstick for how far each float32 path (the compiled program, the
// fast path) strays by rounding alone.
func Probs64(m *Model, samples []float32, rate int) ([]float64, error) {
	b, err := m.branch(rate)
	if err != nil {
		return nil, err
	}
	if b.geometry.rate != rate {
		return nil, fmt.Errorf("branch for %d Hz", rate)
	}
	f64 := func(x []float32) []float64 {
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = float64(v)
		}
		return y
	}
	N, bins, H := b.filter, b.bins, Hidden
	basis := f64(b.stft.basis.Float32s())
	dec := &b.decoder
	wih, whh := f64(dec.wih.Float32s()), f64(dec.whh.Float32s())
	bih, bhh := f64(dec.bih.Float32s()), f64(dec.bhh.Float32s())
	convW, convB := f64(dec.convW.Float32s()), float64(dec.convB.Float32s()[0])
	h, c := make([]float64, H), make([]float64, H)
	ctxt := make([]float64, b.context)
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	var out []float64
	for off := 0; off < len(samples); off += b.chunk {
		x := append([]float64(nil), ctxt...)
		for i := range b.chunk {
			v := 0.0
			if off+i < len(samples) {
				v = float64(samples[off+i])
			}
			x = append(x, v)
		}
		copy(ctxt, x[len(x)-b.context:])
		n := len(x)
		for i := range b.pad { // reflect
			x = append(x, x[n-2-i])
		}
		// STFT magnitude [bins][frames].
		frames := (len(x)-N)/b.hop + 1
		act := make([][]float64, bins) // [channel][time]
		for k := range bins {
			act[k] = make([]float64, frames)
			for f := range frames {
				var re, im float64
				for i := range N {
					re += basis[k*N+i] * x[f*b.hop+i]
					im += basis[(bins+k)*N+i] * x[f*b.hop+i]
				}
				act[k][f] = math.Sqrt(re*re + im*im)
			}
		}
		for _, blk := range b.encoder {
			w, bias := f64(blk.w.Float32s()), f64(blk.b.Float32s())
			tIn := len(act[0])
			tOut := (tIn+2-blk.ker)/blk.stride + 1
			next := make([][]float64, blk.out)
			for co := range blk.out {
				next[co] = make([]float64, tOut)
				for o := range tOut {
					s := bias[co]
					for ci := range blk.in {
						for tap := range blk.ker {
							if t := o*blk.stride + tap - 1; t >= 0 && t < tIn {
								s += w[(co*blk.in+ci)*blk.ker+tap] * act[ci][t]
							}
						}
					}
					next[co][o] = max(s, 0)
				}
			}
			act = next
		}
		g := make([]float64, 4*H)
		for j := range g {
			s := bih[j] + bhh[j]
			for i := range H {
				s += wih[j*H+i]*act[i][0] + whh[j*H+i]*h[i]
			}
			g[j] = s
		}
		y := convB
		for j := range H {
			c[j] = sig(g[H+j])*c[j] + sig(g[j])*math.Tanh(g[2*H+j])
			h[j] = sig(g[3*H+j]) * math.Tanh(c[j])
			y += max(h[j], 0) * convW[j]
		}
		out = append(out, sig(y))
	}
	return out, nil
}
