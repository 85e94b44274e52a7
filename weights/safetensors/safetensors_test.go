package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
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
	if f.Metadata()["format"] != "pt" || f.Len() != 6 {
		t.Errorf("metadata %v, %d tensors", f.Metadata(), f.Len())
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
	// The messages are the library's; what matters is that each corrupt
	// header is refused, and refused as a header error.
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"short", []byte{1, 2}, "header too small"},
		{"header past end", binary.LittleEndian.AppendUint64(nil, 1000), "invalid header length"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), "header too large"},
		{"bad json", file(`{"x":`, nil), "invalid header deserialization"},
		{"not an object", file(`[1,2]`, nil), "invalid header deserialization"},
		{"unknown dtype", file(`{"x":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, []byte{0}), "invalid DType"},
		{"offsets outside", file(`{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, []byte{0}), "incomplete buffer"},
		{"reversed offsets", file(`{"x":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}}`, []byte{0}), "invalid metadata offset"},
		{"shape mismatch", file(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), "offsets mismatch"},
		{"shape overflow", file(`{"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}}`, make([]byte, 4)), "overflow"},
		{"negative dim", file(`{"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, []byte{0}), "natural numbers"},
		{"dim past int", file(`{"x":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}}`, nil), "does not fit in an int"},
		{"hole", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{0, 0}), "invalid metadata offset"},
		{"overlap", file(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{0, 0}), "invalid metadata offset"},
		{"trailing data", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{0, 0}), "incomplete buffer"},
		{"three offsets", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}}`, []byte{0}), "2 elements"},
		{"bad metadata", file(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "corrupt header") {
				t.Fatalf("err = %v, want a corrupt header error with %q", err, tt.want)
			}
		})
	}
}

// TestOpenNamesFile: a corrupt file on disk is an error that names it.
func TestOpenNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := os.WriteFile(p, file(`{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, []byte{0}), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "corrupt header") {
		t.Fatalf("Open of a corrupt file: %v, want an error naming %s", err, p)
	}
}

// TestRoundTripEveryDType writes and reads back one tensor of every dtype
// of the format (Forge converts F32, F16, F64, BOOL, U8, I8, I32 and I64),
// each at an odd length so that a wrong element size or a misaligned
// layout shows, plus a scalar.
func TestRoundTripEveryDType(t *testing.T) {
	dtypes := []DType{BOOL, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64}
	var in []Named
	for i, dt := range dtypes {
		if dt.Size() == 0 {
			t.Fatalf("%s: no size", dt)
		}
		data := make([]byte, 3*dt.Size())
		for j := range data {
			data[j] = byte(17*i + j + 1)
		}
		in = append(in, Named{"t." + string(dt), Tensor{dt, []int{3}, data}})
		in = append(in, Named{"s." + string(dt), Tensor{dt, nil, data[:dt.Size()]}})
	}
	p := filepath.Join(t.TempDir(), "all.safetensors")
	if err := WriteFile(p, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Len() != len(in) {
		t.Fatalf("%d tensors, want %d", f.Len(), len(in))
	}
	for _, want := range in {
		got, ok := f.Tensor(want.Name)
		if !ok {
			t.Fatalf("no %s", want.Name)
		}
		if got.DType != want.DType || len(got.Shape) != len(want.Shape) || got.NumElements() != want.NumElements() || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("%s: %s%v %v, want %s%v %v", want.Name, got.DType, got.Shape, got.Data, want.DType, want.Shape, want.Data)
		}
		if uintptr(unsafe.Pointer(&got.Data[0]))%uintptr(want.DType.Size()) != 0 {
			t.Errorf("%s: misaligned in the mapping", want.Name)
		}
		if cap(got.Data) != len(got.Data) {
			t.Errorf("%s: capacity %d runs past its %d bytes", want.Name, cap(got.Data), len(got.Data))
		}
	}
}

// TestPythonConventions reads a written file with nothing but
// encoding/json, the way Python's safetensors does: an 8-byte little-endian
// header length, a JSON object starting with '{' and padded with spaces to
// 8 bytes, "__metadata__" a map of strings, every other key an object with
// exactly dtype, shape ([] for a scalar, never null) and data_offsets
// relative to the end of the header, contiguous from 0 to the end of the
// file.
func TestPythonConventions(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample(), map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	n := binary.LittleEndian.Uint64(b)
	header := b[8 : 8+n]
	if n%8 != 0 || header[0] != '{' {
		t.Fatalf("header of %d bytes starting %q", n, header[:1])
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		t.Fatal(err)
	}
	var meta map[string]string
	if err := json.Unmarshal(raw["__metadata__"], &meta); err != nil || meta["format"] != "pt" {
		t.Errorf("__metadata__ %s: %v", raw["__metadata__"], err)
	}
	delete(raw, "__metadata__")
	type span struct{ begin, end uint64 }
	var spans []span
	for _, want := range sample() {
		var e map[string]json.RawMessage
		if err := json.Unmarshal(raw[want.Name], &e); err != nil || len(e) != 3 {
			t.Fatalf("%s: entry %s: %v", want.Name, raw[want.Name], err)
		}
		var dtype string
		var shape []int
		var off [2]uint64
		json.Unmarshal(e["dtype"], &dtype)
		json.Unmarshal(e["data_offsets"], &off)
		if string(e["shape"]) == "null" || json.Unmarshal(e["shape"], &shape) != nil {
			t.Fatalf("%s: shape %s", want.Name, e["shape"])
		}
		if dtype != string(want.DType) || len(shape) != len(want.Shape) {
			t.Errorf("%s: %s%v, want %s%v", want.Name, dtype, shape, want.DType, want.Shape)
		}
		if !bytes.Equal(b[8+n+off[0]:8+n+off[1]], want.Data) {
			t.Errorf("%s: bytes at data_offsets %v differ", want.Name, off)
		}
		spans = append(spans, span{off[0], off[1]})
	}
	if len(raw) != len(sample()) {
		t.Errorf("header holds %d tensors, want %d", len(raw), len(sample()))
	}
	sort.Slice(spans, func(i, j int) bool {
		return spans[i].begin < spans[j].begin || spans[i].begin == spans[j].begin && spans[i].end < spans[j].end
	})
	var at uint64
	for _, s := range spans {
		if s.begin != at {
			t.Fatalf("data not contiguous: span %v at %d", s, at)
		}
		at = s.end
	}
	if 8+n+at != uint64(len(b)) {
		t.Errorf("data ends at %d of %d bytes", 8+n+at, len(b))
	}
}

// TestReadsOtherLayouts: files laid out by other writers (Forge's earlier
// one ordered by element size then name; Python's by dtype then name; any
// order is legal) read the same.
func TestReadsOtherLayouts(t *testing.T) {
	// F32 "a", I32 "b", F32 "c" interleaved by name, header keys sorted,
	// no __metadata__, header not padded.
	data := append(append(f32bytes(1), binary.LittleEndian.AppendUint32(nil, 7)...), f32bytes(3)...)
	b := file(`{"a":{"data_offsets":[0,4],"dtype":"F32","shape":[1]},"b":{"data_offsets":[4,8],"dtype":"I32","shape":[]},"c":{"data_offsets":[8,12],"dtype":"F32","shape":[1,1]}}`, data)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata() != nil {
		t.Errorf("metadata %v", f.Metadata())
	}
	c, _ := f.Tensor("c")
	bt, _ := f.Tensor("b")
	cv, _ := c.Float32s()
	bv, _ := bt.Int32s()
	if len(cv) != 1 || cv[0] != 3 || len(bv) != 1 || bv[0] != 7 || len(bt.Shape) != 0 {
		t.Errorf("c = %v, b = %v %v", cv, bv, bt.Shape)
	}
}

// FuzzParse runs arbitrary bytes through the library path: they give a
// File or an error, never a panic; every tensor a File returns lies inside
// the input with a consistent shape; and what parses writes back to a file
// that parses to the same tensors and metadata.
func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, sample(), map[string]string{"k": "v"})
	f.Add(buf.Bytes())
	f.Add(file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{7}))
	f.Add(file(`{"__metadata__":{"a":"b"},"x":{"dtype":"F16","shape":[],"data_offsets":[0,2]}}`, []byte{7, 8}))
	f.Add(file(`{"x":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}}`, nil))
	f.Add(file(`null`, nil))
	f.Add(file(`{"":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}}`, []byte{1}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Parse(b)
		if err != nil {
			return
		}
		var lo, hi uintptr
		if len(b) > 0 {
			lo, hi = uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&b[0]))+uintptr(len(b))
		}
		var again []Named
		for _, n := range st.Names() {
			tn, _ := st.Tensor(n)
			if tn.NumElements()*tn.DType.Size() != len(tn.Data) {
				t.Fatalf("%s: shape %v of %s with %d bytes", n, tn.Shape, tn.DType, len(tn.Data))
			}
			if len(tn.Data) > 0 {
				p := uintptr(unsafe.Pointer(&tn.Data[0]))
				if p < lo || p+uintptr(len(tn.Data)) > hi {
					t.Fatalf("%s: %d bytes outside the input", n, len(tn.Data))
				}
			}
			again = append(again, Named{n, tn})
		}
		var out bytes.Buffer
		if err := Write(&out, again, st.Metadata()); err != nil {
			t.Fatalf("writing back: %v", err)
		}
		back, err := Parse(out.Bytes())
		if err != nil {
			t.Fatalf("parsing what was written back: %v", err)
		}
		if back.Len() != st.Len() || len(back.Metadata()) != len(st.Metadata()) {
			t.Fatalf("written back: %d tensors, %d metadata; want %d, %d", back.Len(), len(back.Metadata()), st.Len(), len(st.Metadata()))
		}
		for _, nt := range again {
			bt, ok := back.Tensor(nt.Name)
			if !ok || bt.DType != nt.DType || len(bt.Shape) != len(nt.Shape) || !bytes.Equal(bt.Data, nt.Data) {
				t.Fatalf("%s changed on the way back", nt.Name)
			}
		}
	})
}
