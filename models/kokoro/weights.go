package kokoro

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/tensorforge/forge/internal/filepages"
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/safetensors"
)

// Weights holds Kokoro-82M's parameters by the names KModel gives them
// (hexgrad/kokoro model.py: "bert.…", "bert_encoder.…", "predictor.…",
// "text_encoder.…", "decoder.…"), as float32. The fp32 artifact's tensors
// alias its mapped file; the int8 artifact's are dequantized once at load.
type Weights struct {
	// ID is the artifact the weights came from (weights.KokoroV1 or
	// weights.KokoroV1Int8).
	ID string
	// SHA256 is the source ONNX file's digest, for scorecards.
	SHA256 string

	tensors map[string]tensor
	art     *weights.Artifact
}

// tensor is one float32 tensor.
type tensor struct {
	data  []float32
	shape []int
}

// LoadWeights fetches (on first use, with progress on stderr), converts and
// opens the fp32 artifact, or the int8 one when quantized is set.
func LoadWeights(ctx context.Context, quantized bool) (*Weights, error) {
	id := weights.KokoroV1
	if quantized {
		id = weights.KokoroV1Int8
	}
	a, err := weights.Load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("kokoro: loading weights: %w", err)
	}
	w, err := NewWeights(a)
	if err != nil {
		a.Close()
		return nil, err
	}
	return w, nil
}

// NewWeights reads every tensor of an opened Kokoro artifact. F32 tensors
// are used in place (the artifact must stay open until Close); U8/I8
// tensors with "_scale" and "_zero_point" companions are dequantized to
// float32 copies: the simplest correct route for the int8 artifact.
func NewWeights(a *weights.Artifact) (*Weights, error) {
	w := &Weights{ID: a.ID, tensors: make(map[string]tensor), art: a}
	for _, f := range a.Manifest.Sources {
		if f.Name == "model.onnx" || f.Name == "model_quantized.onnx" {
			w.SHA256 = f.SHA256
		}
	}
	names := a.Names()
	has := make(map[string]bool, len(names))
	for _, n := range names {
		has[n] = true
	}
	for _, name := range names {
		// A quantized weight's companions are folded into it below.
		if base, ok := strings.CutSuffix(name, "_scale"); ok && has[base] {
			continue
		}
		if base, ok := strings.CutSuffix(name, "_zero_point"); ok && has[base] {
			continue
		}
		t, err := a.Tensor(name)
		if err != nil {
			return nil, fmt.Errorf("kokoro: %w", err)
		}
		switch t.DType {
		case safetensors.F32:
			v, err := t.Float32s()
			if err != nil {
				return nil, fmt.Errorf("kokoro: tensor %s: %w", name, err)
			}
			w.tensors[name] = tensor{v, t.Shape}
		case safetensors.U8, safetensors.I8:
			q, err := a.Quantized(name)
			if err != nil {
				return nil, fmt.Errorf("kokoro: tensor %s: %w", name, err)
			}
			w.tensors[name] = tensor{q.Dequantize(), slices.Clone(t.Shape)}
		default:
			return nil, fmt.Errorf("kokoro: tensor %s has dtype %s", name, t.DType)
		}
	}
	if _, ok := w.tensors["bert.embeddings.word_embeddings.weight"]; !ok {
		return nil, fmt.Errorf("kokoro: artifact %s holds no Kokoro weights (%d tensors)", a.ID, len(names))
	}
	return w, nil
}

// Close releases the mapped artifact. Programs compiled from these weights
// must not run afterwards.
func (w *Weights) Close() error {
	if w == nil || w.art == nil {
		return nil
	}
	err := w.art.Close()
	w.art = nil
	return err
}

// releasePages gives back the resident pages of the tensors that lie in
// the mapped fp32 file (see package filepages; the int8 artifact's
// dequantized copies are not released). The packed convolution and
// product weights were released as they were packed; what this releases
// is what the kernels read in place, some 40 MB: the LSTMs' recurrent
// weights, the style projections of every AdaIN, biases and norms. The
// pages come back from the page cache when read again.
func (w *Weights) releasePages() {
	for _, t := range w.tensors {
		filepages.Release(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(t.data))), 4*len(t.data)))
	}
}

// Len returns the number of parameter tensors.
func (w *Weights) Len() int { return len(w.tensors) }

// weightSource is the weights as a param.Source: the modules read them by
// KModel name through a scope, as the other models read their artifacts.
type weightSource struct{ w *Weights }

func (s weightSource) Tensor(name string) (safetensors.Tensor, error) {
	t, ok := s.w.tensors[name]
	if !ok {
		return safetensors.Tensor{}, fmt.Errorf("kokoro: weights %s lack tensor %q", s.w.ID, name)
	}
	data := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(t.data))), 4*len(t.data))
	return safetensors.Tensor{DType: safetensors.F32, Shape: t.shape, Data: data}, nil
}
