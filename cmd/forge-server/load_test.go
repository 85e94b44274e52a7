package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/testenv"
)

// A bounded load generator: a fixed number of requests mixing the
// endpoints, sent by a fixed number of concurrent clients. Nothing here
// asserts on time; the figures are reported (t.Log, and as JSON to
// $FORGE_LOAD_REPORT when set).

// kinds of request in the mix, in the order they rotate.
var kinds = []string{"transcribe", "speech", "transcribe-sse", "models"}

// outcome is one request's result.
type outcome struct {
	kind       string
	status     int // 0: transport error
	err        error
	retryAfter string
	latency    time.Duration
}

// loadMix sends total requests from clients goroutines to base, kind i%4
// for the i-th, and returns every outcome. progress, if set, is called
// with each outcome as it comes.
func loadMix(t *testing.T, base string, clients, total int, jfk []byte, progress func(outcome)) ([]outcome, time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Minute} // a hung request fails the run, bounded
	var next atomic.Int64
	out := make([]outcome, total)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= total {
					return
				}
				out[i] = send(hc, base, kinds[i%len(kinds)], jfk)
				if progress != nil {
					progress(out[i])
				}
			}
		}()
	}
	wg.Wait()
	return out, time.Since(t0)
}

// send makes one request of kind and reads its whole response.
func send(hc *http.Client, base, kind string, jfk []byte) outcome {
	o := outcome{kind: kind}
	var req *http.Request
	var err error
	switch kind {
	case "transcribe", "transcribe-sse":
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		fw, _ := mw.CreateFormFile("file", "jfk.wav") // writes to memory: no error
		fw.Write(jfk)
		mw.WriteField("model", "whisper-1")
		if kind == "transcribe-sse" {
			mw.WriteField("stream", "true")
		}
		mw.Close()
		req, err = http.NewRequest("POST", base+"/v1/audio/transcriptions", &b)
		if req != nil {
			req.Header.Set("Content-Type", mw.FormDataContentType())
		}
	case "speech":
		req, err = http.NewRequest("POST", base+"/v1/audio/speech", strings.NewReader(`{"model":"tts-1","voice":"af_heart","input":"Hello there, this is a load test."}`))
	default:
		req, err = http.NewRequest("GET", base+"/v1/models", nil)
	}
	if err != nil {
		o.err = err
		return o
	}
	t0 := time.Now()
	res, err := hc.Do(req)
	if err != nil {
		o.err = err
		return o
	}
	defer res.Body.Close()
	o.status, o.retryAfter = res.StatusCode, res.Header.Get("Retry-After")
	body, err := io.ReadAll(res.Body)
	o.latency = time.Since(t0)
	if err != nil {
		o.err = fmt.Errorf("reading the body: %w", err)
	} else if res.StatusCode == 200 {
		o.err = checkBody(kind, body)
	}
	return o
}

// checkBody makes sure a 200 carried the whole answer.
func checkBody(kind string, b []byte) error {
	switch kind {
	case "transcribe":
		if !strings.Contains(words(string(b)), "your country") {
			return fmt.Errorf("transcription %q", b)
		}
	case "transcribe-sse":
		sc := bufio.NewScanner(bytes.NewReader(b))
		last := ""
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				last = d
			}
		}
		if !strings.Contains(last, `"transcript.text.done"`) || !strings.Contains(words(last), "your country") {
			return fmt.Errorf("stream ended with %q", last)
		}
	case "speech":
		if len(b) < 44+24000 || string(b[:4]) != "RIFF" {
			return fmt.Errorf("speech of %d bytes", len(b))
		}
	}
	return nil
}

// summary is the load report of one run.
type summary struct {
	Clients, Requests int
	WallSeconds       float64
	ByKind            map[string]*kindSummary
	RSSWarmMB         float64            `json:",omitempty"`
	RSSAfterMB        float64            `json:",omitempty"`
	RTF               map[string]float64 `json:",omitempty"`
}

type kindSummary struct {
	OK, Busy, Other, Errors int
	PerSecond               float64 // 200s per second of the run
	P50, P95, P99           float64 // ms, of the 200s
}

// summarize checks the invariants every run must hold (no 5xx, no
// transport error, every 429 with Retry-After, every 200 whole) and
// returns the figures.
func summarize(t *testing.T, outs []outcome, clients int, wall time.Duration) *summary {
	t.Helper()
	s := &summary{Clients: clients, Requests: len(outs), WallSeconds: wall.Seconds(), ByKind: map[string]*kindSummary{}}
	lat := map[string][]time.Duration{}
	for _, o := range outs {
		k := s.ByKind[o.kind]
		if k == nil {
			k = &kindSummary{}
			s.ByKind[o.kind] = k
		}
		switch {
		case o.err != nil:
			k.Errors++
			t.Errorf("%s: status %d: %v", o.kind, o.status, o.err)
		case o.status == 200:
			k.OK++
			lat[o.kind] = append(lat[o.kind], o.latency)
		case o.status == 429:
			k.Busy++
			if o.retryAfter == "" {
				t.Errorf("%s: 429 without Retry-After", o.kind)
			}
		default:
			k.Other++
			t.Errorf("%s: status %d", o.kind, o.status)
		}
	}
	for kind, k := range s.ByKind {
		if k.OK == 0 {
			t.Errorf("%s: no request succeeded", kind)
			continue
		}
		d := lat[kind]
		slices.Sort(d)
		pct := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1)+0.5)].Microseconds()) / 1000 }
		k.P50, k.P95, k.P99 = pct(0.50), pct(0.95), pct(0.99)
		k.PerSecond = float64(k.OK) / wall.Seconds()
	}
	return s
}

func (s *summary) report(t *testing.T, name string) {
	t.Helper()
	b, _ := json.MarshalIndent(s, "", "  ") // plain data: no error
	t.Logf("%s:\n%s", name, b)
	if path := os.Getenv("FORGE_LOAD_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintf(f, "{%q: %s}\n", name, b)
	}
}

// rtfs reads the mean RTF per endpoint from the server's /metrics.
func rtfs(t *testing.T, base string) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, body, err := get(ctx, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	sum, count := map[string]float64{}, map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || (name != "forge_rtf_sum" && name != "forge_rtf_count") {
			continue
		}
		labels, val, _ := strings.Cut(rest, "} ")
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		if name == "forge_rtf_sum" {
			sum[labels] = v
		} else {
			count[labels] = v
		}
	}
	out := map[string]float64{}
	for l, c := range count {
		if c > 0 {
			out[l] = sum[l] / c
		}
	}
	return out
}

// TestLoad: 32 clients, a fixed mix of transcription (plain and SSE),
// speech and model-list requests against one server.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: the load test runs the models for a few minutes")
	}
	jfk, err := os.ReadFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	p := start(t)
	// Warm-up: every kind, a few at once, so that the programs and buffer
	// pools that concurrency needs exist before RSS is taken.
	warm, wall := loadMix(t, p.URL, 4, 8, jfk, nil)
	summarize(t, warm, 4, wall)
	rssWarm := p.rss(t)
	const clients, total = 32, 96
	outs, wall := loadMix(t, p.URL, clients, total, jfk, nil)
	s := summarize(t, outs, clients, wall)
	rssAfter := p.rss(t)
	s.RSSWarmMB, s.RSSAfterMB = float64(rssWarm)/(1<<20), float64(rssAfter)/(1<<20)
	s.RTF = rtfs(t, p.URL)
	s.report(t, "load")
	if float64(rssAfter) > 1.2*float64(rssWarm) {
		t.Errorf("RSS grew from %.0f MB after warm-up to %.0f MB after the load (limit 1.2×)", s.RSSWarmMB, s.RSSAfterMB)
	}
}
