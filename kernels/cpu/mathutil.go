package cpu

import "math"

// roundEven rounds half to even, as torch.round.
func roundEven(x float64) float64 { return math.RoundToEven(x) }

// floorMod is Python's/torch's remainder: the sign follows the divisor.
func floorMod(a, b float64) float64 {
	m := math.Mod(a, b)
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}

// nanMax is torch.maximum: NaN if either is NaN.
func nanMax(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	return math.Max(a, b)
}

// nanMin is torch.minimum: NaN if either is NaN.
func nanMin(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	return math.Min(a, b)
}

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // 0 or NaN
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
