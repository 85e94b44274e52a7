package refdata

import (
	"encoding/binary"
	"testing"
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

func TestSafetensors(t *testing.T) {
	h := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"x":"y"}}`
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(b, h...)
	b = binary.LittleEndian.AppendUint32(b, 0x3f800000)
	b = binary.LittleEndian.AppendUint32(b, 0x40000000)
	m, err := ParseSafetensors(b)
	if err != nil {
		t.Fatal(err)
	}
	if a := m["a"]; len(a.Data) != 2 || a.Data[0] != 1 || a.Data[1] != 2 {
		t.Fatalf("got %+v", m)
	}
	if _, err := ParseSafetensors(b[:len(b)-1]); err == nil {
		t.Error("truncated data accepted")
	}
}

// FuzzParsers checks the two parsers return errors, never panic.
func FuzzParsers(f *testing.F) {
	f.Add(WriteNPY([]int{3}, []float32{1, 2, 3}))
	f.Add([]byte("\x08\x00\x00\x00\x00\x00\x00\x00{\"a\":{}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseNPY(b)
		ParseSafetensors(b)
	})
}
