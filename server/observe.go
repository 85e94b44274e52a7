package server

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// recorder remembers a response's status and size for the access log and
// metrics. It passes Flush and Hijack through (streaming and WebSocket),
// and Unwrap for http.ResponseController.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("server: connection cannot be hijacked")
	}
	if r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	return h.Hijack()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// observe wraps h with the access log, the request metrics and panic
// recovery: a bug in one request answers 500 and is logged, and the
// server goes on.
func (s *Server) observe(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 64 {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		rec := &recorder{ResponseWriter: w}
		aborted := false
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler { //nolint:errorlint // the sentinel is compared as net/http does
					aborted = true
				} else {
					s.log.Error("panic serving request", "request_id", id, "panic", fmt.Sprint(p))
					if rec.status == 0 {
						writeError(rec, newAPIError(http.StatusInternalServerError, "server_error", "", "internal_error", "the server failed to process the request"))
					}
				}
			}
			s.record(r, rec, id, start, aborted)
			if aborted {
				panic(http.ErrAbortHandler) // net/http drops the connection without logging
			}
		}()
		h.ServeHTTP(rec, r)
	})
}

// record writes the access log line and the request metrics.
func (s *Server) record(r *http.Request, rec *recorder, id string, start time.Time, aborted bool) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	endpoint := endpointOf(r)
	code := strconv.Itoa(status)
	if aborted {
		code = "aborted"
	}
	d := time.Since(start)
	s.met.requests.WithLabelValues(endpoint, code).Inc()
	s.met.latency.WithLabelValues(endpoint, code).Observe(d.Seconds())
	level := slog.LevelInfo
	if status >= 500 || aborted {
		level = slog.LevelWarn
	}
	s.log.LogAttrs(r.Context(), level, "request",
		slog.String("request_id", id),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("endpoint", endpoint),
		slog.Int("status", status),
		slog.Bool("aborted", aborted),
		slog.Int64("bytes", rec.bytes),
		slog.Float64("ms", float64(d.Microseconds())/1000),
		slog.String("remote", r.RemoteAddr),
	)
}

// endpointOf names a request's route for metrics: the mux pattern it
// matched without the method, so that unknown paths do not mint series.
func endpointOf(r *http.Request) string {
	p := r.Pattern
	if _, path, ok := strings.Cut(p, " "); ok {
		p = path
	}
	if p == "" || p == "/" {
		return "other"
	}
	return p
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on supported systems
	return hex.EncodeToString(b[:])
}
