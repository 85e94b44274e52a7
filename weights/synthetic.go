package weights

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tensorforge/forge/weights/safetensors"
)

// Synthetic returns an artifact with exactly the tensors a manifest lists
// (names, dtypes, shapes) filled with seeded random values, so that a model
// can be built and run where its real weights cannot be moved (a lent GPU
// machine that takes a few tens of MB), for comparing two backends on the
// same numbers. The values follow the usual initialisations, so activations
// stay in range: matrices and filters N(0, 1/fan-in), norm gains near 1,
// biases near 0, quantized weights uniform bytes with zero points at the
// middle and scales that give the same spread. What such a model says is
// meaningless; that two backends say the same is the point.
//
// Deep generators do not survive random weights: Kokoro's durations and
// spectra leave any sane range (measured: minutes of audio, amplitudes of
// 1e29), so its GPU checks use the real int8 artifact instead. Encoders
// and decoders of the Whisper kind run fine on them.
func Synthetic(man Manifest, seed uint64) (*Artifact, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	names := make([]string, 0, len(man.Shapes))
	for n := range man.Shapes {
		names = append(names, n)
	}
	slices.Sort(names) // the draws must not depend on map order
	tensors := make([]safetensors.Named, 0, len(names))
	for _, n := range names {
		info := man.Shapes[n]
		t := safetensors.Tensor{DType: info.DType, Shape: slices.Clone(info.Shape)}
		count := t.NumElements()
		var err error
		t.Data, err = synthesize(n, info, count, man.Shapes, rng)
		if err != nil {
			return nil, fmt.Errorf("weights: synthetic %s: %w", man.ID, err)
		}
		tensors = append(tensors, safetensors.Named{Name: n, Tensor: t})
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, tensors, map[string]string{"synthetic_seed": fmt.Sprint(seed)}); err != nil {
		return nil, fmt.Errorf("weights: synthetic %s: %w", man.ID, err)
	}
	f, err := safetensors.Parse(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("weights: synthetic %s: %w", man.ID, err)
	}
	m := man
	m.WeightsSHA256 = fmt.Sprintf("synthetic-seed-%d", seed)
	return &Artifact{ID: man.ID, Manifest: m, Weights: f}, nil
}

// synthesize draws one tensor's bytes.
func synthesize(name string, info TensorInfo, count int, all map[string]TensorInfo, rng *rand.Rand) ([]byte, error) {
	b := make([]byte, count*info.DType.Size())
	switch info.DType {
	case safetensors.F32:
		lo := strings.ToLower(name)
		gen := func() float64 { return 0.02 * rng.NormFloat64() }
		switch {
		case strings.HasSuffix(lo, "_scale"):
			// w = (q − zero)·scale with q uniform over 256 levels has a
			// spread of 74·scale: aim for 1/√fan-in.
			fan := fanIn(all[strings.TrimSuffix(name, "_scale")].Shape)
			s := 1 / (74 * math.Sqrt(float64(fan)))
			gen = func() float64 { return s }
		case len(info.Shape) >= 2 && count > 1 && !strings.Contains(lo, "window") && !strings.Contains(lo, "alpha"):
			s := 1 / math.Sqrt(float64(fanIn(info.Shape)))
			gen = func() float64 { return s * rng.NormFloat64() }
		case strings.Contains(lo, "window") || strings.Contains(lo, "alpha") || strings.HasSuffix(lo, "gamma") ||
			strings.HasSuffix(lo, ".weight") && (strings.Contains(lo, "norm") || strings.Contains(lo, "ln")):
			// Gains, snake frequencies, window sums: near 1 and positive
			// (some are divisors).
			gen = func() float64 { return 1 + 0.05*math.Abs(rng.NormFloat64()) }
		}
		for i := range count {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(gen())))
		}
	case safetensors.U8:
		mid := strings.HasSuffix(name, "_zero_point")
		for i := range b {
			if mid {
				b[i] = 128
			} else {
				b[i] = byte(rng.IntN(256))
			}
		}
	case safetensors.I8:
		if !strings.HasSuffix(name, "_zero_point") {
			for i := range b {
				b[i] = byte(int8(rng.IntN(255) - 127))
			}
		}
	default:
		return nil, fmt.Errorf("tensor %s has dtype %s, which synthetic weights do not fill", name, info.DType)
	}
	return b, nil
}

// fanIn is the number of inputs each output of a weight sums: every
// dimension but the first.
func fanIn(shape []int) int {
	n := 1
	for _, d := range shape[min(1, len(shape)):] {
		n *= d
	}
	return max(n, 1)
}
