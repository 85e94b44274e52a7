// Package server is forge-server's HTTP layer: an OpenAI-compatible speech
// API (transcriptions, translations, speech, models), a WebSocket endpoint
// for live transcription, and the operations around them — admission
// control per model, body limits, per-request timeouts, bearer auth,
// structured access logs and Prometheus metrics.
//
// The server owns no model code. It calls a [Transcriber] and a
// [Synthesizer] that the caller supplies (cmd/forge-server wires the Forge
// models in), so that the HTTP behaviour is tested without models and the
// models are shared by every request: the server keeps no state between
// requests, and replicas scale out behind any load balancer.
//
// Routes:
//
//	POST /v1/audio/transcriptions        multipart: file, model, language, prompt, temperature,
//	                                     response_format (json|text|srt|vtt|verbose_json), stream
//	POST /v1/audio/translations          the same, into English
//	POST /v1/audio/speech                JSON: model, input, voice, speed, response_format (wav|pcm)
//	GET  /v1/audio/transcriptions/live   WebSocket: 16-bit PCM in (rate in the query), JSON events out
//	GET  /v1/models, /v1/models/{id}
//	GET  /healthz, /readyz, /metrics
//
// Errors are OpenAI's JSON shape: {"error":{"message","type","param","code"}}.
// Work beyond a model's concurrency and queue is refused with 429 and a
// Retry-After header, so memory stays bounded under any load.
package server
