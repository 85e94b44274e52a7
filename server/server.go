package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config's limits.
const (
	DefaultMaxConcurrent  = 1
	DefaultMaxQueue       = 8
	DefaultMaxUploadBytes = 25 << 20 // OpenAI's own limit
	DefaultMaxInputChars  = 4096     // OpenAI's limit on speech input
	DefaultRequestTimeout = 5 * time.Minute
)

// Config configures a Server. The zero value of each limit means its
// default.
type Config struct {
	// Transcribers serve transcriptions, translations and live streams,
	// the first by default (and as OpenAI's "whisper-1"); none answers
	// those routes 404.
	Transcribers []Model[Transcriber]
	// Synthesizers serve speech, the first by default (and as "tts-1");
	// none answers it 404.
	Synthesizers []Model[Synthesizer]
	// APIKey, if set, is required as "Authorization: Bearer KEY" on every
	// /v1 route (health, readiness and metrics stay open for probes).
	APIKey string
	// MaxConcurrent is how many requests one model works on at once.
	MaxConcurrent int
	// MaxQueue is how many more requests may wait for one model; beyond
	// it requests get 429 with Retry-After.
	MaxQueue int
	// MaxUploadBytes bounds a transcription's audio file (413 beyond).
	MaxUploadBytes int64
	// MaxInputChars bounds a speech request's input (400 beyond).
	MaxInputChars int
	// RequestTimeout bounds one request's work, waiting included (504
	// beyond), and a live session's length.
	RequestTimeout time.Duration
	// Logger receives the access log and errors; nil discards them.
	Logger *slog.Logger
}

// Server is the HTTP service. Create it with New, serve Handler, and call
// Shutdown to drain it.
type Server struct {
	cfg    Config
	log    *slog.Logger
	met    *metrics
	limits map[string]*limiter // by model id
	stt    []*lazy[Transcriber]
	tts    []*lazy[Synthesizer]
	h      http.Handler

	ready atomic.Bool // every model warmed

	// base is cancelled when Shutdown's deadline passes: every request's
	// context derives from it, so no work outlives the server.
	base     context.Context
	cancel   context.CancelFunc
	work     sync.WaitGroup // requests being served
	mu       sync.Mutex
	draining bool
	sessions map[*liveSession]struct{}
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if len(cfg.Transcribers) == 0 && len(cfg.Synthesizers) == 0 {
		return nil, errors.New("server: Config needs a transcription or a speech model")
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.MaxQueue < 0 {
		return nil, fmt.Errorf("server: MaxQueue %d is negative", cfg.MaxQueue)
	}
	if cfg.MaxQueue == 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if cfg.MaxInputChars <= 0 {
		cfg.MaxInputChars = DefaultMaxInputChars
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, met: newMetrics(), limits: map[string]*limiter{}, sessions: map[*liveSession]struct{}{}}
	s.base, s.cancel = context.WithCancel(context.Background())
	for _, m := range cfg.Transcribers {
		s.stt = append(s.stt, newLazy(m))
	}
	for _, m := range cfg.Synthesizers {
		s.tts = append(s.tts, newLazy(m))
	}
	for _, id := range append(ids(s.stt), ids(s.tts)...) {
		if id == "" {
			return nil, errors.New("server: a model has no id")
		}
		if _, dup := s.limits[id]; dup {
			return nil, fmt.Errorf("server: model id %q served twice", id)
		}
		q, run := s.met.queue.WithLabelValues(id), s.met.inflight.WithLabelValues(id)
		s.limits[id] = newLimiter(cfg.MaxConcurrent, cfg.MaxQueue, func(waiting, running int) {
			q.Set(float64(waiting))
			run.Set(float64(running))
		})
	}
	s.h = s.routes()
	return s, nil
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.h }

// Warm opens every model, recording each one's load time, and marks the
// server ready (/readyz 200) when all are open. Requests that arrive
// earlier wait for their model.
func (s *Server) Warm(ctx context.Context) error {
	for _, m := range s.stt {
		if err := warm(ctx, s, m); err != nil {
			return err
		}
	}
	for _, m := range s.tts {
		if err := warm(ctx, s, m); err != nil {
			return err
		}
	}
	s.ready.Store(true)
	return nil
}

func warm[T interface{ Close() error }](ctx context.Context, s *Server, m *lazy[T]) error {
	if _, err := m.get(ctx, s.base); err != nil {
		return fmt.Errorf("server: opening %s: %w", m.id, err)
	}
	m.mu.Lock()
	d := m.loaded
	m.mu.Unlock()
	s.met.loadTime.WithLabelValues(m.id).Set(d.Seconds())
	s.log.Info("model ready", "model", m.id, "load_ms", d.Milliseconds())
	return nil
}

// Shutdown drains the server: live sessions are told their input has
// ended (they send their last segments and close), and Shutdown waits for
// every request to finish, then closes the models. When ctx ends first,
// the remaining requests are cancelled and Shutdown returns ctx's error
// once they have returned.
// Stop the http.Server (its Shutdown) alongside, so that no new request
// comes in.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	for ls := range s.sessions {
		ls.finish()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.work.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.cancel()
	<-done
	for _, m := range s.stt {
		err = errors.Join(err, m.close())
	}
	for _, m := range s.tts {
		err = errors.Join(err, m.close())
	}
	return err
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	v1 := http.NewServeMux()
	if len(s.stt) > 0 {
		v1.HandleFunc("POST /v1/audio/transcriptions", s.transcribe(false))
		v1.HandleFunc("POST /v1/audio/translations", s.transcribe(true))
		v1.HandleFunc("GET /v1/audio/transcriptions/live", s.live)
	}
	if len(s.tts) > 0 {
		v1.HandleFunc("POST /v1/audio/speech", s.speech)
	}
	v1.HandleFunc("GET /v1/models", s.listModels)
	v1.HandleFunc("GET /v1/models/{id}", s.getModel)
	v1.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, newAPIError(http.StatusNotFound, "invalid_request_error", "", "not_found",
			fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)))
	})
	var api http.Handler = v1
	if s.cfg.APIKey != "" {
		api = bearerAuth(s.cfg.APIKey, v1)
	}
	mux.Handle("/", api)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.Handle("GET /metrics", s.met.handler())
	return s.observe(mux)
}

// begin registers a request as work Shutdown waits for, and returns its
// context: cancelled when the client goes away, when the server's drain
// deadline passes, or after RequestTimeout. end must be called when the
// request is done. It fails when the server is draining.
func (s *Server) begin(r *http.Request) (ctx context.Context, end func(), ok bool) {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		return nil, nil, false
	}
	s.work.Add(1)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	stop := context.AfterFunc(s.base, cancel)
	return ctx, func() { stop(); cancel(); s.work.Done() }, true
}

// admit takes a slot of model's limiter, answering 429 (queue full) or the
// context's error itself when it cannot; release is nil then.
func (s *Server) admit(ctx context.Context, w http.ResponseWriter, model string) (release func()) {
	l := s.limits[model]
	release, err := l.acquire(ctx)
	if errors.Is(err, errBusy) {
		s.met.rejected.WithLabelValues(model).Inc()
		e := newAPIError(http.StatusTooManyRequests, "rate_limit_error", "", "server_busy",
			fmt.Sprintf("model %s is busy (all work slots and the queue are full); retry later", model))
		e.retryAfter = l.retryAfter()
		writeError(w, e)
		return nil
	}
	if err != nil {
		writeError(w, classify(ctx, err))
		return nil
	}
	return release
}

// draining answers a request that arrived while the server drains.
func unavailable(w http.ResponseWriter) {
	e := newAPIError(http.StatusServiceUnavailable, "server_error", "", "shutting_down", "the server is shutting down; retry on another replica")
	e.retryAfter = 1
	w.Header().Set("Connection", "close")
	writeError(w, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a client gone away has nothing to be told
}
