// Command soak runs the built say or listen over a long input and samples
// the process's resident memory, to show whether it stays flat once warmed
// up (issue 15). It is not part of make test: a run takes minutes (listen
// over an hour of audio) to an hour (say over 10,000 words on 2 cores).
//
//	go run ./scripts/soak [flags] say    # bin/say over -words words of prose
//	go run ./scripts/soak [flags] listen # bin/listen over -seconds of speech
//
// say reads prose from -text, by default the licence texts every Debian
// system carries (/usr/share/common-licenses), cleaned of addresses and
// numbers and repeated until -words words. listen reads a WAV file built
// from the clips in ../shared/data, in a seeded random order with 0.1–2 s
// of silence between them, until -seconds seconds.
//
// It prints the CPU, the wall time and the resident set size at 10 %, 50 %
// and 100 % of the run (the first tenth is the warm-up) and its maximum, and
// with -csv writes every sample (seconds, RSS bytes).
//
// Flags:
//
//	-bin PATH      the binary (default bin/say or bin/listen)
//	-words N       say: words of text (default 10000)
//	-text FILE     say: prose to read instead of the licence texts
//	-seconds N     listen: seconds of audio (default 3600)
//	-shared DIR    listen: the shared data folder (default ../shared)
//	-every D       sampling interval (default 2s)
//	-csv FILE      write the samples
//	-work DIR      where the input and output files go (default a temporary folder)
//	-- ARGS        further arguments for the binary
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// config holds the parsed flags.
type config struct {
	mode      string // "say" or "listen"
	bin       string
	words     int
	text      string
	seconds   int
	shared    string
	every     time.Duration
	csv, work string
	extra     []string
	licences  []string // prose read when -text is not given
}

func parseFlags(args []string) (*config, error) {
	c := &config{licences: licenceFiles}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.StringVar(&c.bin, "bin", "", "the binary (default bin/say or bin/listen)")
	fs.IntVar(&c.words, "words", 10000, "say: words of text")
	fs.StringVar(&c.text, "text", "", "say: prose to read instead of the licence texts")
	fs.IntVar(&c.seconds, "seconds", 3600, "listen: seconds of audio")
	fs.StringVar(&c.shared, "shared", filepath.Join("..", "shared"), "listen: the shared data folder")
	fs.DurationVar(&c.every, "every", 2*time.Second, "sampling interval")
	fs.StringVar(&c.csv, "csv", "", "write the samples to this file")
	fs.StringVar(&c.work, "work", "", "folder for the input and output files (default a temporary one)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 || (rest[0] != "say" && rest[0] != "listen") {
		return nil, errors.New("name the program to soak: say or listen")
	}
	c.mode, c.extra = rest[0], rest[1:]
	if len(c.extra) > 0 && c.extra[0] == "--" {
		c.extra = c.extra[1:]
	}
	if c.bin == "" {
		c.bin = filepath.Join("bin", c.mode)
	}
	if c.words <= 0 || c.seconds <= 0 || c.every <= 0 {
		return nil, errors.New("-words, -seconds and -every must be positive")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("reads resident memory from /proc: Linux only, not %s", runtime.GOOS)
	}
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	if c.work == "" {
		if c.work, err = os.MkdirTemp("", "forge-soak-"); err != nil {
			return fmt.Errorf("work folder: %w", err)
		}
		defer os.RemoveAll(c.work)
	} else if err := os.MkdirAll(c.work, 0o755); err != nil {
		return fmt.Errorf("work folder: %w", err)
	}
	var cmd *exec.Cmd
	var desc string
	switch c.mode {
	case "say":
		text, err := soakText(c)
		if err != nil {
			return err
		}
		out := filepath.Join(c.work, "soak.wav")
		cmd = exec.CommandContext(ctx, c.bin, append([]string{"-o", out}, c.extra...)...)
		cmd.Stdin = strings.NewReader(text)
		desc = fmt.Sprintf("%s over %d words", c.bin, len(strings.Fields(text)))
	case "listen":
		in := filepath.Join(c.work, "soak-in.wav")
		if err := writeSoakAudio(in, c.shared, c.seconds); err != nil {
			return err
		}
		cmd = exec.CommandContext(ctx, c.bin, append(append([]string{}, c.extra...), in)...)
		desc = fmt.Sprintf("%s over %d s of audio", c.bin, c.seconds)
	}
	logPath := filepath.Join(c.work, c.mode+".out")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("output log: %w", err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	samples, wall, err := sample(cmd, c.every)
	if err != nil {
		return fmt.Errorf("%s: %w (its output: %s)", desc, err, tail(logPath))
	}
	if c.csv != "" {
		if err := writeCSV(c.csv, samples); err != nil {
			return err
		}
	}
	s := summarize(samples)
	fmt.Fprintf(stdout, "%s\ncpu: %s, %d cores\nwall %.0f s; RSS MiB at 10%% %.0f, 50%% %.0f, 100%% %.0f, max %.0f; after warm-up %+.1f%%\n",
		desc, cpuModel(), runtime.NumCPU(), wall.Seconds(), mib(s.at10), mib(s.at50), mib(s.end), mib(s.max), s.growth())
	return nil
}

// rssSample is the resident set size of the soaked process at a moment.
type rssSample struct {
	at  time.Duration // since the start
	rss int64         // bytes
}

// sample starts cmd and reads its resident set size every interval until
// it exits.
func sample(cmd *exec.Cmd, every time.Duration) ([]rssSample, time.Duration, error) {
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var out []rssSample
	for {
		select {
		case err := <-done:
			return out, time.Since(t0), err
		case <-tick.C:
			b, err := os.ReadFile(status)
			if err != nil {
				continue // exiting
			}
			if rss, ok := parseVmRSS(string(b)); ok {
				out = append(out, rssSample{time.Since(t0), rss})
			}
		}
	}
}

// parseVmRSS reads the VmRSS line of /proc/PID/status (in kB) as bytes.
func parseVmRSS(status string) (int64, bool) {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// summary is a run's RSS at 10 %, 50 % and the end of its samples, and
// the largest.
type summary struct{ at10, at50, end, max int64 }

func summarize(s []rssSample) summary {
	if len(s) == 0 {
		return summary{}
	}
	at := func(frac float64) int64 { return s[min(len(s)-1, int(frac*float64(len(s))))].rss }
	var m int64
	for _, x := range s {
		m = max(m, x.rss)
	}
	return summary{at10: at(0.1), at50: at(0.5), end: s[len(s)-1].rss, max: m}
}

// growth is the change from the end of the warm-up to the end, in percent.
func (s summary) growth() float64 {
	if s.at10 == 0 {
		return 0
	}
	return 100 * float64(s.end-s.at10) / float64(s.at10)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func writeCSV(path string, samples []rssSample) error {
	var b strings.Builder
	b.WriteString("seconds,rss_bytes\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%.1f,%d\n", s.at.Seconds(), s.rss)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("samples: %w", err)
	}
	return nil
}

// cpuModel returns the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// tail returns the last lines of a log file, for errors.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unreadable"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], " | ")
}
