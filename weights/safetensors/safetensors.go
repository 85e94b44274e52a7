// Package safetensors reads and writes the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte
// range, then the tensors' bytes back to back.
//
// Open maps the file, so loading costs no copy: a Tensor's Data aliases the
// mapping, and Float32s returns a []float32 view of it when the host is
// little endian and the data aligned (always the case for files that Write
// produced). Parse checks every offset and shape against the buffer length,
// so a corrupt or hostile file is an error, never a panic or an allocation
// larger than the file.
//
// Forge keeps its own small implementation because
// github.com/nlpodyssey/safetensors, the planned dependency, is not served by
// the module proxy reachable here.
package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"unsafe"

	"github.com/tensorforge/forge/weights/internal/mmap"
)

// DType is a safetensors element type, spelled as in the header.
type DType string

// The element types of the format.
const (
	BOOL DType = "BOOL"
	U8   DType = "U8"
	I8   DType = "I8"
	U16  DType = "U16"
	I16  DType = "I16"
	F16  DType = "F16"
	BF16 DType = "BF16"
	U32  DType = "U32"
	I32  DType = "I32"
	F32  DType = "F32"
	U64  DType = "U64"
	I64  DType = "I64"
	F64  DType = "F64"
)

// Size is the width of one element in bytes, 0 for an unknown type.
func (d DType) Size() int {
	switch d {
	case BOOL, U8, I8:
		return 1
	case U16, I16, F16, BF16:
		return 2
	case U32, I32, F32:
		return 4
	case U64, I64, F64:
		return 8
	}
	return 0
}

// Tensor is one named array: dtype, shape (empty for a scalar) and its
// little-endian bytes.
type Tensor struct {
	DType DType
	Shape []int
	Data  []byte
}

// NumElements is the product of Shape (1 for a scalar).
func (t Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// view reinterprets t.Data as []E without copying when possible.
func view[E any](t Tensor, want DType) ([]E, bool, error) {
	if t.DType != want {
		return nil, false, fmt.Errorf("safetensors: tensor is %s, not %s", t.DType, want)
	}
	n := len(t.Data) / want.Size()
	if n == 0 {
		return []E{}, true, nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&t.Data[0]))%uintptr(want.Size()) == 0 {
		return unsafe.Slice((*E)(unsafe.Pointer(&t.Data[0])), n), true, nil
	}
	return make([]E, n), false, nil
}

// Float32s returns the elements of an F32 tensor. The slice aliases the file
// (read-only memory for a mapped file: never write to it) unless the data is
// misaligned or the host big endian, in which case it is a copy.
func (t Tensor) Float32s() ([]float32, error) {
	v, ok, err := view[float32](t, F32)
	if err != nil || ok {
		return v, err
	}
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return v, nil
}

// Int64s returns the elements of an I64 tensor, aliasing like Float32s.
func (t Tensor) Int64s() ([]int64, error) {
	v, ok, err := view[int64](t, I64)
	if err != nil || ok {
		return v, err
	}
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return v, nil
}

// Int32s returns the elements of an I32 tensor, aliasing like Float32s.
func (t Tensor) Int32s() ([]int32, error) {
	v, ok, err := view[int32](t, I32)
	if err != nil || ok {
		return v, err
	}
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return v, nil
}

// Uint8s returns the elements of a U8 tensor (aliasing the file).
func (t Tensor) Uint8s() ([]uint8, error) {
	if t.DType != U8 {
		return nil, fmt.Errorf("safetensors: tensor is %s, not U8", t.DType)
	}
	return t.Data, nil
}

// Int8s returns the elements of an I8 tensor (aliasing the file).
func (t Tensor) Int8s() ([]int8, error) {
	v, _, err := view[int8](t, I8)
	return v, err
}

// File is a parsed safetensors file.
type File struct {
	// Metadata is the header's free-form "__metadata__" map.
	Metadata map[string]string
	names    []string
	tensors  map[string]Tensor
	close    func() error
}

// Names lists the tensors, sorted.
func (f *File) Names() []string { return append([]string(nil), f.names...) }

// Len is the number of tensors.
func (f *File) Len() int { return len(f.names) }

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (Tensor, bool) {
	t, ok := f.tensors[name]
	return t, ok
}

// Close releases the mapping behind a File from Open; tensors read from it
// must not be used afterwards. It is a no-op for a File from Parse.
func (f *File) Close() error {
	if f == nil || f.close == nil {
		return nil
	}
	c := f.close
	f.close = nil
	return c()
}

// Open maps the safetensors file at path and parses its header.
func Open(path string) (*File, error) {
	m, err := mmap.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(m.Data)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	f.close = m.Close
	return f, nil
}

// maxHeader bounds the JSON header, as the reference implementation does.
const maxHeader = 100 << 20

type headerEntry struct {
	DType       DType   `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// Parse reads a whole safetensors file from b. Tensor data aliases b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, errors.New("safetensors: file shorter than its 8-byte header length")
	}
	hlen := binary.LittleEndian.Uint64(b)
	if hlen > maxHeader || hlen > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the file (%d bytes)", hlen, len(b))
	}
	header := b[8 : 8+hlen]
	data := b[8+hlen:]
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(header))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	f := &File{tensors: make(map[string]Tensor, len(raw))}
	type span struct {
		name       string
		begin, end int64
	}
	spans := make([]span, 0, len(raw))
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__: %w", err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		size := e.DType.Size()
		if size == 0 {
			return nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", name, e.DType)
		}
		if len(e.DataOffsets) != 2 {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets must hold 2 numbers", name)
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin < 0 || end < begin || end > int64(len(data)) {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d,%d] outside the %d data bytes", name, begin, end, len(data))
		}
		shape := make([]int, len(e.Shape))
		n := int64(1)
		for i, d := range e.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors: tensor %q: negative dimension in %v", name, e.Shape)
			}
			if d != 0 && n > (end-begin)/d {
				// n*d exceeds the bytes available: the shape cannot fit.
				n = -1
				break
			}
			n *= d
			shape[i] = int(d)
		}
		if n < 0 || n*int64(size) != end-begin {
			return nil, fmt.Errorf("safetensors: tensor %q: shape %v of %s does not match its %d bytes", name, e.Shape, e.DType, end-begin)
		}
		f.tensors[name] = Tensor{DType: e.DType, Shape: shape, Data: data[begin:end:end]}
		f.names = append(f.names, name)
		spans = append(spans, span{name, begin, end})
	}
	// The data must be covered exactly once, without holes or overlaps.
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	var at int64
	for _, s := range spans {
		if s.begin != at {
			return nil, fmt.Errorf("safetensors: tensor %q starts at %d, expected %d (hole or overlap)", s.name, s.begin, at)
		}
		at = s.end
	}
	if at != int64(len(data)) {
		return nil, fmt.Errorf("safetensors: tensors cover %d of %d data bytes", at, len(data))
	}
	sort.Strings(f.names)
	return f, nil
}

// Named pairs a tensor with its name, for Write.
type Named struct {
	Name string
	Tensor
}

// Write serializes tensors with metadata to w. Tensors are laid out widest
// dtype first (then by name) after a header padded to 8 bytes, so every
// tensor is aligned to its element size and can be viewed in place.
func Write(w io.Writer, tensors []Named, metadata map[string]string) error {
	order := append([]Named(nil), tensors...)
	sort.SliceStable(order, func(i, j int) bool {
		si, sj := order[i].DType.Size(), order[j].DType.Size()
		if si != sj {
			return si > sj
		}
		return order[i].Name < order[j].Name
	})
	header := make(map[string]any, len(order)+1)
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for i, t := range order {
		if t.Name == "__metadata__" || t.Name == "" {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("safetensors: duplicate tensor %q", t.Name)
		}
		if t.DType.Size() == 0 {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		if want := t.NumElements() * t.DType.Size(); want != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q: %d bytes for shape %v of %s (want %d)", t.Name, len(t.Data), t.Shape, t.DType, want)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": [2]int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
		order[i] = t
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors: header: %w", err)
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hj)))
	bw.Write(n[:])
	bw.Write(hj)
	for _, t := range order {
		if _, err := bw.Write(t.Data); err != nil {
			return fmt.Errorf("safetensors: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

// WriteFile writes tensors to path atomically: a temporary file in the same
// directory, synced, then renamed over path.
func WriteFile(path string, tensors []Named, metadata map[string]string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := Write(tmp, tensors, metadata); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}
