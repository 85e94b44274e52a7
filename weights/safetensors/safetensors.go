// Package safetensors is Forge's thin layer over
// github.com/nlpodyssey/safetensors, the reader and writer of the
// safetensors format (https://github.com/huggingface/safetensors): an
// 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range relative to the end of the header, then the
// tensors' bytes back to back.
//
// The library parses and validates the header (length capped by the
// buffer, offsets contiguous and covering the data exactly, shapes that
// match their bytes) and lays files out; this package adds what Forge
// needs around it: Open maps the file and hands the buffer to the
// library's Deserialize, so a Tensor's Data is the library's zero-copy
// view of the mapping; DType keeps the header's spelling (the manifest and
// the models compare it as text); Float32s and friends view the bytes in
// place; Write checks what the library leaves to its caller (sizes, names)
// and gives scalars the [] shape that Python readers require. Errors name
// the file, so a corrupt header says which one.
package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"unsafe"

	st "github.com/nlpodyssey/safetensors"

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

// lib maps d to the library's dtype; false for a spelling the format does
// not define.
func (d DType) lib() (st.DType, bool) {
	v, err := st.ParseDType(string(d))
	return v, err == nil
}

// Size is the width of one element in bytes, 0 for an unknown type.
func (d DType) Size() int {
	v, ok := d.lib()
	if !ok {
		return 0
	}
	return int(v.Size())
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
	names    []string
	tensors  map[string]Tensor
	metadata func() map[string]string
	close    func() error
}

// Metadata is the header's free-form "__metadata__" map (nil when the
// header has none). It is decoded on first use: loading a model never
// needs it.
func (f *File) Metadata() map[string]string { return f.metadata() }

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

// Open maps the safetensors file at path and parses its header. A file that
// does not parse is an error naming path.
func Open(path string) (*File, error) {
	m, err := mmap.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(m.Data)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.close = m.Close
	return f, nil
}

// Parse reads a whole safetensors file from b through the library's
// Deserialize. Tensor data aliases b. Beyond the library's checks, every
// dimension must fit in an int (a shape with a zero may carry any other
// number).
func Parse(b []byte) (*File, error) {
	s, err := st.Deserialize(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors: corrupt header: %w", err)
	}
	views := s.Tensors()
	f := &File{tensors: make(map[string]Tensor, len(views)), names: make([]string, 0, len(views))}
	for _, v := range views {
		dims := v.TensorView.Shape()
		shape := make([]int, len(dims))
		for i, d := range dims {
			if d > math.MaxInt {
				return nil, fmt.Errorf("safetensors: corrupt header: tensor %q: dimension %d does not fit in an int", v.Name, d)
			}
			shape[i] = int(d)
		}
		data := v.TensorView.Data()
		f.tensors[v.Name] = Tensor{
			DType: DType(v.TensorView.DType().String()),
			Shape: shape,
			// The library's view runs to the end of the buffer; capping
			// it keeps an append from writing into the next tensor (or
			// faulting on a read-only mapping).
			Data: data[:len(data):len(data)],
		}
		f.names = append(f.names, v.Name)
	}
	sort.Strings(f.names)
	// Deserialize has validated the header, __metadata__ included, so
	// decoding it again cannot fail.
	header := b[8 : 8+binary.LittleEndian.Uint64(b)]
	f.metadata = sync.OnceValue(func() map[string]string {
		var h struct {
			Metadata map[string]string `json:"__metadata__"`
		}
		json.Unmarshal(header, &h)
		return h.Metadata
	})
	return f, nil
}

// Named pairs a tensor with its name, for Write.
type Named struct {
	Name string
	Tensor
}

// libView presents a Tensor to the library's writer.
type libView struct {
	dtype st.DType
	shape []uint64
	data  []byte
}

func (v libView) DType() st.DType { return v.dtype }
func (v libView) Shape() []uint64 { return v.shape }
func (v libView) Data() []byte    { return v.data }
func (v libView) DataLen() uint64 { return uint64(len(v.data)) }

// Write serializes tensors with metadata to w through the library's
// SerializeToWriter. The library lays tensors out widest dtype first (then
// by name) after a header padded to 8 bytes, so every tensor is aligned to
// its element size and can be viewed in place. Write checks first what the
// library trusts its caller with: known dtypes, bytes that match each
// shape, unique names other than "__metadata__" (the format allows any
// other string, "" included).
func Write(w io.Writer, tensors []Named, metadata map[string]string) error {
	views := make(map[string]libView, len(tensors))
	for _, t := range tensors {
		if t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if _, dup := views[t.Name]; dup {
			return fmt.Errorf("safetensors: duplicate tensor %q", t.Name)
		}
		dt, ok := t.DType.lib()
		if !ok {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		// Python readers want [] for a scalar; a nil shape would be null.
		shape := make([]uint64, len(t.Shape))
		for i, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("safetensors: tensor %q: negative dimension in %v", t.Name, t.Shape)
			}
			shape[i] = uint64(d)
		}
		if want := t.NumElements() * t.DType.Size(); want != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q: %d bytes for shape %v of %s (want %d)", t.Name, len(t.Data), t.Shape, t.DType, want)
		}
		views[t.Name] = libView{dt, shape, t.Data}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := st.SerializeToWriter(views, metadata, bw); err != nil {
		return fmt.Errorf("safetensors: %w", err)
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
