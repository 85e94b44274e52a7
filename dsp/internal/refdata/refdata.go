// Package refdata reads the reference files the dsp tests compare
// against: ../shared beside the repository, NumPy .npy/.npz arrays and
// safetensors tensors. It is deliberately tiny (float32/float64 only) and
// used by tests alone; Forge's real weight loading lives in its weights
// package.
package refdata

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/weights/safetensors"
)

// SharedFile returns the path of rel under ../shared, or skips t loudly
// when the file is absent.
func SharedFile(t testing.TB, rel string) string { return testenv.Shared(t, rel) }

// Array is a float array with its shape, row-major.
type Array struct {
	Shape []int
	Data  []float64
}

var (
	descrRe   = regexp.MustCompile(`'descr':\s*'([^']*)'`)
	fortranRe = regexp.MustCompile(`'fortran_order':\s*(True|False)`)
	shapeRe   = regexp.MustCompile(`'shape':\s*\(([^)]*)\)`)
)

// ParseNPY decodes a little-endian float32 or float64 C-order .npy file.
func ParseNPY(b []byte) (Array, error) {
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		return Array{}, errors.New("npy: bad magic")
	}
	var hlen, off int
	switch b[6] {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:])), 10
	case 2, 3:
		if len(b) < 12 {
			return Array{}, errors.New("npy: truncated header length")
		}
		hlen, off = int(binary.LittleEndian.Uint32(b[8:])), 12
	default:
		return Array{}, fmt.Errorf("npy: version %d", b[6])
	}
	if hlen < 0 || off+hlen > len(b) {
		return Array{}, errors.New("npy: truncated header")
	}
	h := string(b[off : off+hlen])
	d, f, s := descrRe.FindStringSubmatch(h), fortranRe.FindStringSubmatch(h), shapeRe.FindStringSubmatch(h)
	if d == nil || f == nil || s == nil {
		return Array{}, fmt.Errorf("npy: header %q lacks descr, fortran_order or shape", h)
	}
	if f[1] != "False" {
		return Array{}, errors.New("npy: Fortran order not supported")
	}
	var a Array
	count := 1
	for _, part := range strings.Split(s[1], ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 || (n > 0 && count > math.MaxInt32/n) {
			return Array{}, fmt.Errorf("npy: bad shape %q", s[1])
		}
		a.Shape = append(a.Shape, n)
		count *= n
	}
	data := b[off+hlen:]
	switch d[1] {
	case "<f4":
		if len(data) < 4*count {
			return Array{}, fmt.Errorf("npy: %d data bytes for %d float32", len(data), count)
		}
		a.Data = make([]float64, count)
		for i := range a.Data {
			a.Data[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
		}
	case "<f8":
		if len(data) < 8*count {
			return Array{}, fmt.Errorf("npy: %d data bytes for %d float64", len(data), count)
		}
		a.Data = make([]float64, count)
		for i := range a.Data {
			a.Data[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
		}
	default:
		return Array{}, fmt.Errorf("npy: dtype %q not supported", d[1])
	}
	return a, nil
}

// ReadNPZ reads every array of an .npz (a zip of .npy files), keyed by
// name without the .npy suffix.
func ReadNPZ(path string) (map[string]Array, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out := map[string]Array{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(rc, 1<<30))
		rc.Close()
		if err != nil {
			return nil, err
		}
		a, err := ParseNPY(b)
		if err != nil {
			return nil, fmt.Errorf("%s in %s: %w", f.Name, path, err)
		}
		out[strings.TrimSuffix(f.Name, ".npy")] = a
	}
	return out, nil
}

// Tensor is one float32 tensor from a safetensors file.
type Tensor struct {
	Shape []int
	Data  []float32
}

// ReadSafetensors reads the F32 tensors of the safetensors file at path
// (through the project's own reader, weights/safetensors); tensors of other
// dtypes are skipped.
func ReadSafetensors(path string) (map[string]Tensor, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]Tensor{}
	for _, name := range f.Names() {
		t, _ := f.Tensor(name)
		if t.DType != safetensors.F32 {
			continue
		}
		d, err := t.Float32s()
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
		// Copy: the file's mapping goes away with Close.
		out[name] = Tensor{Shape: t.Shape, Data: append([]float32(nil), d...)}
	}
	return out, nil
}

// WriteNPY encodes a float32 array as .npy (used to build test inputs).
func WriteNPY(shape []int, data []float32) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	sh := strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	h := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", sh)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	var buf bytes.Buffer
	buf.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&buf, binary.LittleEndian, uint16(len(h)))
	buf.WriteString(h)
	for _, v := range data {
		binary.Write(&buf, binary.LittleEndian, v)
	}
	return buf.Bytes()
}
