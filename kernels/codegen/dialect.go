package codegen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Dialect is a source language the lowered form prints to.
type Dialect uint8

// Dialects.
const (
	// CUDA is CUDA C++ as NVRTC compiles it, with no #include: every
	// helper is generated, so the source compiles on any NVRTC from 11.x on.
	CUDA Dialect = iota + 1
	// MSL is the Metal Shading Language (2.x; it includes <metal_stdlib>).
	MSL
)

// String returns the dialect's name ("cuda", "msl").
func (d Dialect) String() string {
	switch d {
	case CUDA:
		return "cuda"
	case MSL:
		return "msl"
	}
	return fmt.Sprintf("dialect(%d)", uint8(d))
}

// HasF64 reports whether the dialect has double-precision arithmetic. Metal
// has none: Wide expressions do not print as MSL, and reductions accumulate
// in float32 there.
func (d Dialect) HasF64() bool { return d == CUDA }

// TypeName spells t in the dialect ("unsigned short", "ushort", ...), for
// code that calls generated kernels from the same language.
func (d Dialect) TypeName(t Type) string { return d.typeName(t) }

// typeName spells t.
func (d Dialect) typeName(t Type) string {
	cu := d == CUDA
	switch t {
	case TBool:
		return "bool"
	case TI8:
		return pick(cu, "signed char", "char")
	case TU8:
		return pick(cu, "unsigned char", "uchar")
	case TU16:
		return pick(cu, "unsigned short", "ushort")
	case TI32:
		return "int"
	case TU32:
		return pick(cu, "unsigned int", "uint")
	case TI64:
		return pick(cu, "long long", "long")
	case TF32:
		return "float"
	case TF64:
		return "double"
	}
	return "?"
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

// floatBits spells the float32 with the given bits (NaN, infinities).
func (d Dialect) floatBits(u uint32) string {
	if d == CUDA {
		return fmt.Sprintf("__uint_as_float(0x%08xu)", u)
	}
	return fmt.Sprintf("as_type<float>(0x%08xu)", u)
}

// literal spells a literal node.
func (d Dialect) literal(n *Node) string {
	switch n.T {
	case TF32, TF64:
		v := n.Lit
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			if n.T == TF64 {
				switch {
				case math.IsNaN(v):
					return "__longlong_as_double(0x7ff8000000000000LL)"
				case v > 0:
					return "__longlong_as_double(0x7ff0000000000000LL)"
				}
				return "__longlong_as_double((long long)0xfff0000000000000ULL)"
			}
			switch {
			case math.IsNaN(v):
				return d.floatBits(0x7fc00000)
			case v > 0:
				return d.floatBits(0x7f800000)
			}
			return d.floatBits(0xff800000)
		}
		bits, suffix := 64, ""
		if n.T == TF32 {
			bits, suffix = 32, "f"
		}
		s := strconv.FormatFloat(v, 'g', -1, bits)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		s += suffix
		if math.Signbit(v) {
			return "(" + s + ")"
		}
		return s
	case TBool:
		if n.Int != 0 {
			return "true"
		}
		return "false"
	case TI64:
		suffix := pick(d == CUDA, "LL", "L")
		if n.Int == math.MinInt64 {
			return fmt.Sprintf("(-9223372036854775807%s - 1%s)", suffix, suffix)
		}
		if n.Int < 0 {
			return fmt.Sprintf("(%d%s)", n.Int, suffix)
		}
		return fmt.Sprintf("%d%s", n.Int, suffix)
	case TI32:
		if n.Int < 0 {
			return fmt.Sprintf("(%d)", n.Int)
		}
		return fmt.Sprint(n.Int)
	case TU32:
		return fmt.Sprintf("%du", n.Int)
	}
	return fmt.Sprintf("((%s)%d)", d.typeName(n.T), n.Int)
}

// mathFn spells a math function of one or two arguments of type t, and the
// helper it needs, if any.
func (d Dialect) mathFn(fn Fn, t Type) (name string, helper string) {
	var base string
	switch fn {
	case FExp:
		base = "exp"
	case FLog:
		base = "log"
	case FSqrt:
		base = "sqrt"
	case FSin:
		base = "sin"
	case FCos:
		base = "cos"
	case FTanh:
		base = "tanh"
	case FErf:
		base = "erf"
	case FFloor:
		base = "floor"
	case FCeil:
		base = "ceil"
	case FTrunc:
		base = "trunc"
	case FRint:
		base = "rint"
	case FAbs:
		base = "fabs"
	case FPow:
		base = "pow"
	case FFmod:
		base = "fmod"
	default:
		return "", ""
	}
	if d == CUDA {
		if t == TF32 {
			return base + "f", ""
		}
		return base, ""
	}
	switch fn {
	case FErf:
		// The Metal standard library has no erf.
		return "fg_erf", "erf"
	case FFloor, FCeil, FTrunc, FRint, FAbs:
		return base, "" // exact in every math mode
	}
	// precise:: keeps the result independent of the library's math mode.
	return "precise::" + base, ""
}

// helperFn spells the conversion helpers, and names the prelude piece
// that defines them.
func helperFn(fn Fn) (name, helper string) {
	switch fn {
	case FHalfToFloat:
		return "fg_h2f", "h2f"
	case FFloatToHalf:
		return "fg_f2h", "f2h"
	case FBF16ToFloat:
		return "fg_bf2f", "bf2f"
	case FFloatToBF16:
		return "fg_f2bf", "f2bf"
	}
	return "", ""
}

// helperOrder fixes the order in which prelude pieces are printed.
var helperOrder = []string{"h2f", "f2h", "bf2f", "f2bf", "erf"}

// helperText is each prelude piece, written once for both dialects: QUAL is
// the function qualifier, F2U and U2F the float↔bits reinterpretations.
var helperText = map[string]string{
	"h2f": `// fg_h2f widens IEEE half bits to float (exact).
QUAL float fg_h2f(unsigned short h) {
  unsigned int s = (unsigned int)(h & 0x8000u) << 16;
  unsigned int e = ((unsigned int)h >> 10) & 0x1fu;
  unsigned int m = (unsigned int)h & 0x3ffu;
  if (e == 0x1fu) return U2F(s | 0x7f800000u | (m << 13));
  if (e == 0u) {
    float f = (float)m * 5.9604644775390625e-8f;
    return s != 0u ? -f : f;
  }
  return U2F(s | ((e + 112u) << 23) | (m << 13));
}
`,
	"f2h": `// fg_f2h narrows float to IEEE half bits, rounding to nearest even.
QUAL unsigned short fg_f2h(float f) {
  unsigned int x = F2U(f);
  unsigned int s = (x >> 16) & 0x8000u;
  unsigned int a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return (unsigned short)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (unsigned short)(s | 0x7c00u);
  if (a < 0x38800000u) {
    float t = U2F(a) * 16777216.0f;
    unsigned int q = (unsigned int)t;
    float r = t - (float)q;
    if (r > 0.5f || (r == 0.5f && (q & 1u) != 0u)) q += 1u;
    return (unsigned short)(s | q);
  }
  a -= 0x38000000u;
  a += 0xfffu + ((a >> 13) & 1u);
  return (unsigned short)(s | (a >> 13));
}
`,
	"bf2f": `// fg_bf2f widens bfloat16 bits to float (exact).
QUAL float fg_bf2f(unsigned short b) { return U2F((unsigned int)b << 16); }
`,
	"f2bf": `// fg_f2bf narrows float to bfloat16 bits, rounding to nearest even; NaN stays a quiet NaN.
QUAL unsigned short fg_f2bf(float f) {
  unsigned int u = F2U(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
`,
	"erf": `// fg_erf is erff (after N. Juffa; max. error about 1 ulp): Metal's library has no erf.
QUAL float fg_erf(float a) {
  float t = fabs(a);
  float s = a * a;
  float r;
  if (t > 0.927734375f) {
    r = fma(-1.72853470e-5f, t, 3.83197126e-4f);
    float u = fma(-3.88396438e-3f, t, 2.42546219e-2f);
    r = fma(r, s, u);
    r = fma(r, t, -1.06777877e-1f);
    r = fma(r, t, -6.34846687e-1f);
    r = fma(r, t, -1.28717512e-1f);
    r = fma(r, t, -t);
    r = 1.0f - precise::exp(r);
    r = copysign(r, a);
  } else {
    r = -5.96761703e-4f;
    r = fma(r, s, 4.99119423e-3f);
    r = fma(r, s, -2.67681349e-2f);
    r = fma(r, s, 1.12819925e-1f);
    r = fma(r, s, -3.76125336e-1f);
    r = fma(r, s, 1.28379166e-1f);
    r = fma(r, a, a);
  }
  return r;
}
`,
}

// cudaHelperText replaces a piece of helperText in CUDA sources with one
// that gives the same bits in fewer instructions. The portable fg_f2h took
// about 15 of the ~118 instructions an element of the f16 GELU after
// Whisper's fc1 (ncu, H100); sm_53 and later round to half in one cvt,
// which is IEEE round-to-nearest-even too. NaNs keep the portable form's
// quiet NaN with the payload's top bits, which cvt would make canonical.
var cudaHelperText = map[string]string{
	"f2h": `// fg_f2h narrows float to IEEE half bits, rounding to nearest even (as the portable form does).
QUAL unsigned short fg_f2h(float f) {
  unsigned int x = F2U(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
`,
}

// prelude spells the helper pieces in used, in a fixed order.
func (d Dialect) prelude(used map[string]bool) string {
	var rep *strings.Replacer
	if d == CUDA {
		rep = strings.NewReplacer("QUAL", "static __device__ __forceinline__", "F2U", "__float_as_uint", "U2F", "__uint_as_float")
	} else {
		rep = strings.NewReplacer("QUAL", "static inline", "F2U", "as_type<uint>", "U2F", "as_type<float>")
	}
	var b strings.Builder
	for _, h := range helperOrder {
		if used[h] {
			text := helperText[h]
			if t, ok := cudaHelperText[h]; ok && d == CUDA {
				text = t
			}
			// Guarded, so that sources can be concatenated into one
			// program (the compile checks do; a backend may too).
			g := "FG_HELPER_" + strings.ToUpper(h)
			fmt.Fprintf(&b, "#ifndef %s\n#define %s\n%s#endif\n", g, g, rep.Replace(text))
		}
	}
	return b.String()
}

// header opens every source of the dialect.
func (d Dialect) header(kind string) string {
	if d == CUDA {
		return "// Generated by forge kernels/codegen (" + kind + ", CUDA C++). Do not edit.\n"
	}
	return "// Generated by forge kernels/codegen (" + kind + ", Metal Shading Language). Do not edit.\n" +
		"#include <metal_stdlib>\nusing namespace metal;\n"
}

// Key is the cache key of a generated source in dialect d: a hex SHA-256
// of the dialect and the text. The text is a function of the lowered form
// (whose hash is also in the kernel's name) and of this generator, so a
// change to either changes the key. A backend's disk cache adds what else
// the compiled code depends on: the target architecture and the compiler's
// version (NVRTC's, Metal's).
func Key(d Dialect, src string) string {
	h := sha256.New()
	h.Write([]byte(d.String()))
	h.Write([]byte{0})
	h.Write([]byte(src))
	return hex.EncodeToString(h.Sum(nil))
}
