package kernels

import (
	"fmt"
	"math"

	"github.com/x448/float16"
)

// DType is the element type of a tensor.
type DType uint8

// The element types Forge understands. U8 and I8 hold quantized weights and
// activations; their scale and zero point travel as separate tensors.
const (
	InvalidDType DType = iota
	F32
	F16
	BF16
	I32
	I64
	U8
	I8
	Bool
)

var dtypeNames = [...]string{"invalid", "f32", "f16", "bf16", "i32", "i64", "u8", "i8", "bool"}
var dtypeSizes = [...]int{0, 4, 2, 2, 4, 8, 1, 1, 1}

// String returns the short lower-case name ("f32", "u8", ...).
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size returns the size of one element in bytes (0 for an invalid type).
func (d DType) Size() int {
	if int(d) < len(dtypeSizes) {
		return dtypeSizes[d]
	}
	return 0
}

// Valid reports whether d is one of the defined element types.
func (d DType) Valid() bool { return d > InvalidDType && d <= Bool }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 }

// IsInt reports whether d is an integer type (Bool excluded).
func (d DType) IsInt() bool { return d == I32 || d == I64 || d == U8 || d == I8 }

// ParseDType maps the names used by safetensors ("F32", "BF16", "U8", ...)
// and by this package ("f32", ...) to a DType.
func ParseDType(s string) (DType, error) {
	switch s {
	case "F32", "f32", "float32":
		return F32, nil
	case "F16", "f16", "float16":
		return F16, nil
	case "BF16", "bf16", "bfloat16":
		return BF16, nil
	case "I32", "i32", "int32":
		return I32, nil
	case "I64", "i64", "int64":
		return I64, nil
	case "U8", "u8", "uint8":
		return U8, nil
	case "I8", "i8", "int8":
		return I8, nil
	case "BOOL", "bool":
		return Bool, nil
	}
	return InvalidDType, fmt.Errorf("kernels: unknown dtype %q", s)
}

// F16ToF32 converts IEEE half-precision bits to float32.
func F16ToF32(h uint16) float32 { return float16.Frombits(h).Float32() }

// F32ToF16 converts float32 to IEEE half-precision bits (round to nearest even).
func F32ToF16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// BF16ToF32 converts bfloat16 bits to float32 (exact).
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F32ToBF16 converts float32 to bfloat16 bits, rounding to nearest even and
// keeping NaN a NaN.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep it quiet and non-zero
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}
