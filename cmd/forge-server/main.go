// Command forge-server serves Forge's speech models over an
// OpenAI-compatible HTTP API, so that the official openai client
// libraries work unchanged:
//
//	forge-server --addr 127.0.0.1:8080
//
// Routes (package server has the details):
//
//	POST /v1/audio/transcriptions, /v1/audio/translations   Whisper (multipart file; json|text|srt|vtt|verbose_json; stream=true as SSE)
//	POST /v1/audio/speech                                   Kokoro (JSON; wav|pcm, streamed as it is synthesised)
//	GET  /v1/audio/transcriptions/live                      WebSocket: 16-bit PCM in (?rate=), JSON segments out
//	GET  /v1/models, /healthz, /readyz, /metrics
//
// The models are fetched into the model cache on first use, like say's and
// listen's, opened once when the server starts (/readyz answers 200 when
// they are) and shared by every request. Each model works on at most
// --max-concurrent requests at once with --max-queue more waiting; beyond
// that requests get 429 with Retry-After. The server keeps no state
// between requests: run replicas behind a load balancer to scale out
// (deploy/nginx has a configuration).
//
// Flags:
//
//	--addr HOST:PORT        listen address (default 127.0.0.1:8080; port 0 picks one, logged)
//	--api-key KEY           require "Authorization: Bearer KEY" on /v1 (default $FORGE_API_KEY)
//	--whisper SIZES         Whisper models served, comma-separated, the first the default (default tiny)
//	--precision f32|int8    Whisper's arithmetic
//	--tts=false             serve no speech model
//	--kokoro-int8           Kokoro's int8 artifact
//	--device NAME           compute backend: cpu, cuda, metal or auto (default $FORGE_DEVICE, else auto)
//	--max-concurrent N      requests one model works on at once (default 1)
//	--max-queue N           requests that may wait for one model (default 8)
//	--max-upload BYTES      largest audio upload (default 25 MB)
//	--max-input CHARS       longest speech input (default 4096)
//	--request-timeout D     one request's limit, queueing included (default 5m)
//	--shutdown-timeout D    how long SIGTERM waits for requests in flight (default 30s)
//	--log LEVEL             debug, info, warn or error (default info); JSON lines on stderr
//
// SIGTERM or SIGINT stops accepting connections, lets the requests in
// flight finish (live sessions end their input and send their last
// segments) for up to --shutdown-timeout, cancels what is left, and exits
// 0. Exit status 2: bad flags; 1: the server failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tensorforge/forge/internal/backendflag"
	"github.com/tensorforge/forge/internal/gcpace"
	_ "github.com/tensorforge/forge/kernels/backends" // every backend built in, for --device
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/server"
	"github.com/tensorforge/forge/speech"
	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/speech/say"
)

func main() {
	gcpace.Apply()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(usageError)):
		fmt.Fprintln(os.Stderr, "forge-server:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "forge-server:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line (exit status 2).
type usageError struct{ error }

type options struct {
	addr, apiKey    string
	whisper         []string
	precision       whisper.Precision
	tts, kokoroInt8 bool
	backend         string
	cfg             server.Config
	shutdown        time.Duration
	level           slog.Level
	maxUploadMB     float64
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("forge-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen `address` host:port")
	fs.StringVar(&o.apiKey, "api-key", os.Getenv("FORGE_API_KEY"), "require this bearer `key` on /v1 routes (default $FORGE_API_KEY)")
	models := fs.String("whisper", "tiny", "Whisper `sizes` served, comma-separated; the first is the default (whisper-1): "+strings.Join(whisper.Models(), ", "))
	prec := fs.String("precision", "f32", "Whisper's arithmetic: f32, int8, or bf16 (the encoder's products in bfloat16 on a CPU with bfloat16 units, AMX, or AVX512_BF16 on AMD; f32 elsewhere)")
	fs.BoolVar(&o.tts, "tts", true, "serve Kokoro text-to-speech")
	fs.BoolVar(&o.kokoroInt8, "kokoro-int8", false, "use Kokoro's int8 artifact")
	device := backendflag.Flag(fs)
	fs.IntVar(&o.cfg.MaxConcurrent, "max-concurrent", server.DefaultMaxConcurrent, "requests one model works on at once")
	fs.IntVar(&o.cfg.MaxQueue, "max-queue", server.DefaultMaxQueue, "requests that may wait for one model (beyond: 429)")
	fs.Float64Var(&o.maxUploadMB, "max-upload", server.DefaultMaxUploadBytes/(1<<20), "largest audio upload in `MiB` (beyond: 413)")
	fs.IntVar(&o.cfg.MaxInputChars, "max-input", server.DefaultMaxInputChars, "longest speech input in `characters`")
	fs.DurationVar(&o.cfg.RequestTimeout, "request-timeout", server.DefaultRequestTimeout, "limit of one request, queueing included")
	fs.DurationVar(&o.shutdown, "shutdown-timeout", 30*time.Second, "how long SIGTERM waits for requests in flight")
	level := fs.String("log", "info", "log `level`: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if err := o.level.UnmarshalText([]byte(*level)); err != nil {
		return nil, usageError{fmt.Errorf("--log %q: %w", *level, err)}
	}
	var err error
	if o.precision, err = whisper.ParsePrecision(*prec); err != nil {
		return nil, usageError{fmt.Errorf("--precision: %w", err)}
	}
	if o.backend, err = backendflag.Choose(*device); err != nil {
		return nil, usageError{err}
	}
	for _, m := range strings.Split(*models, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if _, err := whisper.ArtifactID(m); err != nil {
			return nil, usageError{fmt.Errorf("--whisper: %w", err)}
		}
		o.whisper = append(o.whisper, m)
	}
	if len(o.whisper) == 0 && !o.tts {
		return nil, usageError{errors.New("nothing to serve: --whisper is empty and --tts=false")}
	}
	if !(o.maxUploadMB > 0) || o.cfg.MaxConcurrent < 1 || o.cfg.MaxQueue < 0 || o.cfg.MaxInputChars < 1 || o.cfg.RequestTimeout <= 0 || o.shutdown < 0 {
		return nil, usageError{errors.New("--max-upload, --max-concurrent, --max-input and --request-timeout must be positive, --max-queue and --shutdown-timeout not negative")}
	}
	o.cfg.MaxUploadBytes = int64(o.maxUploadMB * (1 << 20))
	o.cfg.APIKey = o.apiKey
	return o, nil
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: o.level}))
	// One engine for every model: their programs share its buffer pool and
	// run concurrently on its queues.
	eng, err := speech.NewEngine(o.backend, 0)
	if err != nil {
		return err
	}
	cfg := o.cfg
	cfg.Logger = log
	for _, size := range o.whisper {
		id, _ := whisper.ArtifactID(size) // checked by parseFlags
		cfg.Transcribers = append(cfg.Transcribers, server.Model[server.Transcriber]{ID: id, Open: func(ctx context.Context) (server.Transcriber, error) {
			// Warmed up when the model loads, so the first request (a live
			// session's first partial above all) does not pay Whisper's
			// one-time silence-tail encode.
			return listen.New(ctx, listen.Config{Model: size, Precision: o.precision, Engine: eng, Logger: log, WarmUp: true})
		}})
	}
	if o.tts {
		id := "kokoro"
		if o.kokoroInt8 {
			id = "kokoro-int8"
		}
		cfg.Synthesizers = append(cfg.Synthesizers, server.Model[server.Synthesizer]{ID: id, Open: func(ctx context.Context) (server.Synthesizer, error) {
			return say.New(ctx, say.Config{Int8: o.kokoroInt8, Engine: eng, Logger: log})
		}})
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.addr, err)
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("listening", "addr", ln.Addr().String(), "device", o.backend, "whisper", strings.Join(o.whisper, ","), "tts", o.tts, "auth", o.apiKey != "")
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	warmed := make(chan struct{})
	go func() {
		defer close(warmed)
		if err := srv.Warm(ctx); err != nil && ctx.Err() == nil {
			log.Error("loading models failed; requests will retry", "err", err)
		} else if err == nil {
			log.Info("ready")
		}
	}()

	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "deadline", o.shutdown.String())
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdown)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- srv.Shutdown(sctx) }()
	herr := hs.Shutdown(sctx)
	serr := <-drained
	<-warmed
	if herr != nil || serr != nil {
		log.Warn("shutdown deadline passed; requests cancelled", "http", fmt.Sprint(herr), "server", fmt.Sprint(serr))
	}
	log.Info("stopped")
	return nil
}
