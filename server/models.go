package server

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"
)

// lazy is a model opened on first use and kept.
type lazy[T interface{ Close() error }] struct {
	id   string
	open func(context.Context) (T, error)
	sem  chan struct{} // held while opening: one Open at a time

	mu     sync.Mutex
	v      T
	ok     bool
	loaded time.Duration
}

func newLazy[T interface{ Close() error }](m Model[T]) *lazy[T] {
	return &lazy[T]{id: m.ID, open: m.Open, sem: make(chan struct{}, 1)}
}

// get returns the model, opening it under base (so that a request that
// gives up does not abort a load other requests wait for) if it is not
// open yet. It gives up waiting when ctx ends.
func (l *lazy[T]) get(ctx, base context.Context) (T, error) {
	if v, ok := l.peek(); ok {
		return v, nil
	}
	var zero T
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	defer func() { <-l.sem }()
	if v, ok := l.peek(); ok {
		return v, nil
	}
	t0 := time.Now()
	v, err := l.open(base)
	if err != nil {
		return zero, err
	}
	l.mu.Lock()
	l.v, l.ok, l.loaded = v, true, time.Since(t0)
	l.mu.Unlock()
	return v, nil
}

func (l *lazy[T]) peek() (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v, l.ok
}

// close closes the model if it was opened.
func (l *lazy[T]) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ok {
		return nil
	}
	l.ok = false
	return l.v.Close()
}

// model is one entry of /v1/models, in OpenAI's shape.
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models lists the served ids and OpenAI's names that resolve to the
// defaults.
func (s *Server) models() []model {
	var out []model
	add := func(id string) { out = append(out, model{ID: id, Object: "model", OwnedBy: "forge"}) }
	for _, m := range s.stt {
		add(m.id)
	}
	if len(s.stt) > 0 {
		add("whisper-1")
	}
	for _, m := range s.tts {
		add(m.id)
	}
	if len(s.tts) > 0 {
		add("tts-1")
		add("tts-1-hd")
	}
	return out
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", s.models()})
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	ms := s.models()
	i := slices.IndexFunc(ms, func(m model) bool { return m.ID == r.PathValue("id") })
	if i < 0 {
		writeError(w, newAPIError(http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			"model "+r.PathValue("id")+" is not served here"))
		return
	}
	writeJSON(w, http.StatusOK, ms[i])
}

// resolve finds the model a request names among ms: "" and OpenAI's names
// (aliases) take the first.
func resolve[T interface{ Close() error }](ms []*lazy[T], name string, aliases ...string) (*lazy[T], bool) {
	if name == "" || slices.Contains(aliases, name) {
		return ms[0], true
	}
	for _, m := range ms {
		if m.id == name {
			return m, true
		}
	}
	return nil, false
}

// ids lists ms' ids.
func ids[T interface{ Close() error }](ms []*lazy[T]) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.id
	}
	return out
}
