package refdata

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/tensorforge/forge/weights/safetensors"
)

func TestNPYRoundTrip(t *testing.T) {
	b := WriteNPY([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6.5})
	a, err := ParseNPY(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Shape) != 2 || a.Shape[0] != 2 || a.Shape[1] != 3 || a.Data[5] != 6.5 {
		t.Fatalf("got %+v", a)
	}
	for _, bad := range [][]byte{nil, []byte("\x93NUMPY\x01\x00\xff\xff"), b[:len(b)-1]} {
		if _, err := ParseNPY(bad); err == nil {
			t.Errorf("ParseNPY(%q) succeeded", bad)
		}
	}
}

func TestReadSafetensors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.safetensors")
	data := binary.LittleEndian.AppendUint32(nil, 0x3f800000)
	data = binary.LittleEndian.AppendUint32(data, 0x40000000)
	err := safetensors.WriteFile(path, []safetensors.Named{
		{Name: "a", Tensor: safetensors.Tensor{DType: safetensors.F32, Shape: []int{2}, Data: data}},
		{Name: "ids", Tensor: safetensors.Tensor{DType: safetensors.I64, Shape: []int{1}, Data: make([]byte, 8)}},
	}, map[string]string{"x": "y"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if a := m["a"]; len(a.Data) != 2 || a.Data[0] != 1 || a.Data[1] != 2 {
		t.Fatalf("got %+v", m)
	}
	if _, ok := m["ids"]; ok {
		t.Error("an I64 tensor was returned as float32")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSafetensors(path); err == nil {
		t.Error("truncated data accepted")
	}
}

// FuzzParsers checks the NPY parser returns errors, never panics.
func FuzzParsers(f *testing.F) {
	f.Add(WriteNPY([]int{3}, []float32{1, 2, 3}))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseNPY(b)
	})
}
