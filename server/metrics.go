package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus series. Each Server has its own
// registry (no global one), so tests and embedders can run several.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec   // endpoint, code
	latency   *prometheus.HistogramVec // endpoint, code
	rtf       *prometheus.HistogramVec // endpoint, model
	ttfa      *prometheus.HistogramVec // endpoint, model
	queue     *prometheus.GaugeVec     // model
	inflight  *prometheus.GaugeVec     // model
	rejected  *prometheus.CounterVec   // model
	loadTime  *prometheus.GaugeVec     // model
	audioSecs *prometheus.CounterVec   // endpoint, model
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "forge_http_requests_total", Help: "HTTP requests by endpoint and status code.",
		}, []string{"endpoint", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "forge_http_request_duration_seconds", Help: "Time from request to the last byte of the response.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"endpoint", "code"}),
		rtf: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "forge_rtf", Help: "Real-time factor: processing seconds per second of audio (in for transcription, out for speech).",
			Buckets: []float64{.01, .02, .05, .1, .2, .3, .5, .75, 1, 1.5, 2, 5},
		}, []string{"endpoint", "model"}),
		ttfa: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "forge_ttfa_seconds", Help: "Time from the request's admission to its first audio chunk (speech) or first segment (transcription).",
			Buckets: []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"endpoint", "model"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "forge_queue_depth", Help: "Requests waiting for a model's work slot.",
		}, []string{"model"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "forge_inflight", Help: "Requests holding a model's work slot.",
		}, []string{"model"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "forge_rejected_total", Help: "Requests refused with 429 because a model's slots and queue were full.",
		}, []string{"model"}),
		loadTime: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "forge_model_load_seconds", Help: "How long loading (and warming) a model took.",
		}, []string{"model"}),
		audioSecs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "forge_audio_seconds_total", Help: "Seconds of audio transcribed or synthesised.",
		}, []string{"endpoint", "model"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.rtf, m.ttfa, m.queue, m.inflight, m.rejected, m.loadTime, m.audioSecs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the registry in Prometheus' text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
