package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/testenv"
)

// The tests of this package run the built forge-server on loopback, as a
// user or a load balancer would.

var built struct {
	once sync.Once
	bin  string
	dir  string
}

// binary builds forge-server once per test process.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "forge-server-test-")
		if err != nil {
			t.Fatal(err)
		}
		built.dir = dir
		cmd := exec.Command("go", "build", "-o", dir+"/forge-server", ".")
		cmd.Dir = testenv.RepoRoot(t) + "/cmd/forge-server"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		built.bin = dir + "/forge-server"
	})
	if built.bin == "" {
		t.Fatal("forge-server did not build")
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// proc is a forge-server process.
type proc struct {
	cmd  *exec.Cmd
	URL  string // http://127.0.0.1:PORT
	done chan struct{}
	log  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs forge-server on a free loopback port with args, waits until
// it is ready (models loaded: at most 5 minutes, a first fetch included)
// and stops it when the test ends.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"--addr", "127.0.0.1:0", "--device", "cpu"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: &syncBuffer{}}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.log, line)
			var ev struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Msg == "listening" {
				addr <- ev.Addr
			}
		}
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("forge-server log (last 4 KB):\n%s", tail(p.log.String(), 4096))
		}
	})
	select {
	case a := <-addr:
		p.URL = "http://" + a
	case <-p.done:
		t.Fatalf("forge-server exited: %s", p.log.String())
	case <-time.After(time.Minute):
		t.Fatal("forge-server did not listen within a minute")
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		res, err := http.Get(p.URL + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("forge-server not ready within 5 minutes")
		}
		select {
		case <-p.done:
			t.Fatalf("forge-server exited: %s", p.log.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits for the exit (3 minutes at most, then
// SIGKILL).
func (p *proc) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Minute): // its queue drains first
		t.Error("forge-server did not exit within 3 minutes of SIGTERM")
		p.cmd.Process.Kill()
		<-p.done
	}
}

// rss is the process's resident memory in bytes, from /proc.
func (p *proc) rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Skipf("SKIPPED: no /proc to read RSS from: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// get fetches url's body (bounded by ctx).
func get(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}
