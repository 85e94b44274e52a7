package vad

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/weights"
)

// NewGraphOnly is New with the fast path turned off: every stream runs the
// compiled program, the reference the fast path is checked against.
func NewGraphOnly(eng *graph.Engine, a *weights.Artifact) (*Model, error) {
	m, err := New(eng, a)
	if err != nil {
		return nil, err
	}
	m.fast = map[int]*fastNet{}
	return m, nil
}
