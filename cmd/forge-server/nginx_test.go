package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/testenv"
)

// TestNginx: two replicas behind Debian's nginx with deploy/nginx's
// configuration, the load mix through it, and one replica stopped
// (SIGTERM) once 6 model requests have succeeded: its requests in flight
// finish, the rest fail over to the other replica, nothing hangs, no 5xx.
func TestNginx(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: the scale-out test runs two servers under load")
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		if _, err = os.Stat("/usr/sbin/nginx"); err != nil {
			t.Skip("SKIPPED — NO NGINX: the scale-out test needs Debian's nginx (scripts/deps.sh installs it)")
		}
		nginx = "/usr/sbin/nginx"
	}
	jfk, err := os.ReadFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	r1 := start(t, "--shutdown-timeout", "2m")
	r2 := start(t, "--shutdown-timeout", "2m")
	front := nginxFront(t, nginx, r1, r2)

	const clients, total = 32, 64
	var stopped sync.WaitGroup
	var mu sync.Mutex
	heavy := 0
	outs, wall := loadMix(t, front, clients, total, jfk, func(o outcome) {
		if o.kind == "models" || o.status != 200 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if heavy++; heavy == 6 {
			stopped.Add(1)
			go func() { defer stopped.Done(); r1.stop(t) }()
		}
	})
	stopped.Wait()
	s := summarize(t, outs, clients, wall)
	s.report(t, "nginx, one replica stopped")
	select {
	case <-r1.done:
	default:
		t.Error("the stopped replica is still running")
	}

	// nginx's own 413 for an upload over its limit is OpenAI's JSON too.
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", "big.wav") // to memory: no error
	fw.Write(make([]byte, 28<<20))
	mw.Close()
	res, err := http.Post(front+"/v1/audio/transcriptions", mw.FormDataContentType(), &b)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 413 || !strings.Contains(string(body), `"code":"file_too_large"`) {
		t.Errorf("28 MB upload through nginx: %d %s", res.StatusCode, body)
	}
}

// nginxFront runs nginx on a free loopback port with deploy/nginx/forge.conf
// pointed at the replicas, and returns its URL.
func nginxFront(t *testing.T, nginx string, replicas ...*proc) string {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "deploy", "nginx", "forge.conf"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nginx binds it next; nothing else on loopback races for it in a test
	site := strings.Replace(string(conf), "listen 127.0.0.1:8080;", "listen "+addr+";", 1)
	for i, r := range replicas {
		site = strings.Replace(site, fmt.Sprintf("server 127.0.0.1:%d ", 8081+i), "server "+strings.TrimPrefix(r.URL, "http://")+" ", 1)
	}
	dir := t.TempDir()
	// nginx's workers run as an unprivileged user when the test is root:
	// they must reach the temporary folders it makes in dir.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "forge.conf"), []byte(site), 0o644)
	main := fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 512; }
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/forge.conf;
}
`, dir)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt) // nginx: fast shutdown
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx error log:\n%s", tail(string(log), 4096))
		}
	})
	url := "http://" + addr
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code, _, err := get(ctx, url+"/readyz")
		cancel()
		if err == nil && code == 200 {
			return url
		}
		select {
		case <-exited:
			t.Fatalf("nginx exited: %s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if i > 300 {
			t.Fatalf("nginx not answering after 30 s: %v %d", err, code)
		}
	}
}
