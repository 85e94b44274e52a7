package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

func f32bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func sample() []Named {
	return []Named{
		{"b.u8", Tensor{U8, []int{3}, []byte{1, 2, 3}}},
		{"a.f32", Tensor{F32, []int{2, 2}, f32bytes(1, 2, 3, 4)}},
		{"scale", Tensor{F32, []int{}, f32bytes(0.5)}},
		{"ids", Tensor{I64, []int{2}, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 7), math.MaxUint64)}},
		{"empty", Tensor{F32, []int{0, 4}, nil}},
		{"q", Tensor{I8, []int{2}, []byte{0xff, 0x01}}},
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample(), map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if n := binary.LittleEndian.Uint64(b); n%8 != 0 {
		t.Errorf("header length %d not a multiple of 8", n)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || f.Len() != 6 {
		t.Errorf("metadata %v, %d tensors", f.Metadata, f.Len())
	}
	if got := strings.Join(f.Names(), ","); got != "a.f32,b.u8,empty,ids,q,scale" {
		t.Errorf("names %s", got)
	}
	dataStart := 8 + int(binary.LittleEndian.Uint64(b))
	for _, want := range sample() {
		got, ok := f.Tensor(want.Name)
		if !ok {
			t.Fatalf("no %s", want.Name)
		}
		if got.DType != want.DType || len(got.Shape) != len(want.Shape) || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("%s: %+v, want %+v", want.Name, got, want.Tensor)
		}
		// Every tensor is aligned to its element size within the file.
		if len(got.Data) > 0 {
			off := int(uintptr(unsafe.Pointer(&got.Data[0])) - uintptr(unsafe.Pointer(&b[0])))
			if (off-dataStart)%want.DType.Size() != 0 || off%want.DType.Size() != 0 {
				t.Errorf("%s at offset %d: misaligned", want.Name, off)
			}
		}
	}
	a, _ := f.Tensor("a.f32")
	v, err := a.Float32s()
	if err != nil || len(v) != 4 || v[3] != 4 {
		t.Fatalf("Float32s = %v, %v", v, err)
	}
	if &a.Data[0] != (*byte)(unsafe.Pointer(&v[0])) {
		t.Error("Float32s copied aligned data")
	}
	ids, _ := f.Tensor("ids")
	if iv, _ := ids.Int64s(); iv[1] != -1 {
		t.Errorf("Int64s = %v", iv)
	}
	q, _ := f.Tensor("q")
	if qv, _ := q.Int8s(); qv[0] != -1 {
		t.Errorf("Int8s = %v", qv)
	}
	if _, err := q.Float32s(); err == nil {
		t.Error("Float32s of an I8 tensor succeeded")
	}
	// A misaligned view is copied, not refused.
	mis := Tensor{F32, []int{1}, append([]byte{0}, f32bytes(2.5)...)[1:]}
	if mv, err := mis.Float32s(); err != nil || mv[0] != 2.5 {
		t.Errorf("misaligned Float32s = %v, %v", mv, err)
	}
}

func TestWriteFileOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.safetensors")
	if err := WriteFile(p, sample(), nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, _ := f.Tensor("scale")
	if v, _ := s.Float32s(); v[0] != 0.5 {
		t.Errorf("scale = %v", v)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".*tmp*")); len(m) > 0 {
		t.Errorf("temporaries left: %v", m)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}

func TestWriteErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []Named
	}{
		{"size mismatch", []Named{{"x", Tensor{F32, []int{2}, []byte{1, 2, 3}}}}},
		{"duplicate", []Named{{"x", Tensor{U8, []int{1}, []byte{1}}}, {"x", Tensor{U8, []int{1}, []byte{1}}}}},
		{"bad dtype", []Named{{"x", Tensor{"Q4", []int{1}, []byte{1}}}}},
		{"reserved name", []Named{{"__metadata__", Tensor{U8, []int{1}, []byte{1}}}}},
	} {
		if err := Write(&bytes.Buffer{}, tt.in, nil); err == nil {
			t.Errorf("%s: Write succeeded", tt.name)
		}
	}
}

// file builds a safetensors file from a literal header and data.
func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"short", []byte{1, 2}, "shorter than"},
		{"header past end", binary.LittleEndian.AppendUint64(nil, 1000), "exceeds the file"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), "exceeds the file"},
		{"bad json", file(`{"x":`, nil), "header"},
		{"unknown dtype", file(`{"x":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, []byte{0}), "unknown dtype"},
		{"offsets outside", file(`{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, []byte{0}), "outside"},
		{"reversed offsets", file(`{"x":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}}`, []byte{0}), "outside"},
		{"shape mismatch", file(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), "does not match"},
		{"shape overflow", file(`{"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}}`, make([]byte, 4)), "does not match"},
		{"negative dim", file(`{"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, []byte{0}), "negative"},
		{"hole", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{0, 0}), "hole or overlap"},
		{"overlap", file(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{0, 0}), "hole or overlap"},
		{"trailing data", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{0, 0}), "cover 1 of 2"},
		{"three offsets", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}}`, []byte{0}), "2 numbers"},
		{"bad metadata", file(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// FuzzParse: arbitrary bytes give a File or an error, never a panic, and
// every tensor a File returns lies inside the input with a consistent shape.
func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, sample(), map[string]string{"k": "v"})
	f.Add(buf.Bytes())
	f.Add(file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{7}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Parse(b)
		if err != nil {
			return
		}
		total := 0
		for _, n := range st.Names() {
			tn, _ := st.Tensor(n)
			if tn.NumElements()*tn.DType.Size() != len(tn.Data) {
				t.Fatalf("%s: shape %v of %s with %d bytes", n, tn.Shape, tn.DType, len(tn.Data))
			}
			total += len(tn.Data)
		}
		if total > len(b) {
			t.Fatalf("tensors hold %d bytes of a %d-byte input", total, len(b))
		}
	})
}
