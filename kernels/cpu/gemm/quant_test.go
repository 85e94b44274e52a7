package gemm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The first three cases are the examples of the ONNX operator specification
// for DynamicQuantizeLinear (expected scale, zero point and output as the
// spec lists them); the rest pin the edges onnxruntime defines.
func TestQuantizeU8MatchesONNX(t *testing.T) {
	cases := []struct {
		name  string
		x     []float32
		scale float32
		zp    uint8
		q     []uint8
	}{
		{"spec mixed", []float32{0, 2, -3, -2.5, 1.34, 0.5}, 0.019607844, 153, []uint8{153, 255, 0, 26, 221, 179}},
		{"spec negative", []float32{-1.0, -2.1, -1.3, -2.5, -3.34, -4.0}, 0.015686275, 255, []uint8{191, 121, 172, 96, 42, 0}},
		{"spec positive", []float32{1, 2.1, 1.3, 2.5, 3.34, 4.0, 1.5, 2.6, 3.9, 4.0, 3.0, 2.345}, 0.015686275, 0,
			[]uint8{64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149}},
		// scale = 1 exactly, so x/scale = x: halves round to even.
		{"half to even", []float32{0, 255, 0.5, 1.5, 2.5, -0, 254.5}, 1, 0, []uint8{0, 255, 0, 2, 2, 0, 254}},
		// max == min (all zero): onnxruntime uses scale 1, zp 0.
		{"all zero", []float32{0, 0, 0}, 1, 0, []uint8{0, 0, 0}},
		{"empty", nil, 1, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := make([]uint8, len(tc.x))
			scale, zp, err := QuantizeU8(q, tc.x)
			if err != nil {
				t.Fatal(err)
			}
			if scale != tc.scale || zp != tc.zp || !slices.Equal(q, tc.q) {
				t.Fatalf("got scale %v zp %d q %v, want scale %v zp %d q %v", scale, zp, q, tc.scale, tc.zp, tc.q)
			}
		})
	}
}

// TestQuantizeU8RoundTrip checks the defining property on a ramp: every value
// comes back within half a step, and the zero point encodes 0 exactly.
func TestQuantizeU8RoundTrip(t *testing.T) {
	x := make([]float32, 1001)
	for i := range x {
		x[i] = float32(i-300) / 97
	}
	q := make([]uint8, len(x))
	scale, zp, err := QuantizeU8(q, x)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		back := (float32(q[i]) - float32(zp)) * scale
		if d := math.Abs(float64(back - v)); d > float64(scale)/2*1.0001 {
			t.Fatalf("x[%d] = %v → %d → %v, off by %v > scale/2 = %v", i, v, q[i], back, d, scale/2)
		}
	}
	q0 := make([]uint8, 1)
	QuantizeU8With(q0, []float32{0}, scale, zp)
	if q0[0] != zp {
		t.Fatalf("0 quantizes to %d, want the zero point %d", q0[0], zp)
	}
}

func TestQuantizeU8RejectsNonFinite(t *testing.T) {
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		q := make([]uint8, 3)
		if _, _, err := QuantizeU8(q, []float32{1, bad, 2}); err == nil {
			t.Errorf("QuantizeU8 accepted %v", bad)
		}
	}
}

// TestQuantizeSIMDMatchesGo compares the dispatched (SIMD where available)
// quantizer and min/max scan with the scalar reference on every tail length,
// half-way values, saturation and non-finite inputs.
func TestQuantizeSIMDMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	special := []float32{0.5, 1.5, 2.5, -0.5, -1.5, 254.5, 255.5, -300, 1e30, -1e30, float32(math.NaN())}
	for n := 0; n <= 70; n++ {
		x := randSlice(r, n)
		for i := range x {
			x[i] *= 100
			if r.IntN(4) == 0 {
				x[i] = special[r.IntN(len(special))]
			}
		}
		for _, sc := range []struct{ scale, zp float32 }{{1, 0}, {1, 128}, {0.37, 17}, {3, 255}} {
			got, want := make([]uint8, n+1), make([]uint8, n+1)
			got[n], want[n] = 99, 99 // a byte past the end must survive
			quantize(got[:n], x, sc.scale, sc.zp)
			quantizeGo(want[:n], x, sc.scale, sc.zp)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d scale=%v zp=%v: SIMD %v, Go %v (x=%v)", n, sc.scale, sc.zp, got, want, x)
			}
		}
		finite := slices.DeleteFunc(slices.Clone(x), func(v float32) bool { return v != v || math.IsInf(float64(v), 0) })
		for _, in := range [][]float32{x, finite} {
			lo, hi, bad := minMax(in)
			wlo, whi, wbad := minMaxGo(in)
			if bad != wbad || (!bad && (lo != wlo || hi != whi)) {
				t.Fatalf("n=%d: minMax = %v %v %v, want %v %v %v", len(in), lo, hi, bad, wlo, whi, wbad)
			}
		}
	}
}
