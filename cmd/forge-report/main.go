// Command forge-report turns scorecards into reports and compares them.
//
//	forge-report [-out reports] [-date YYYY-MM-DD] PATH...
//
// reads every scorecard in the given files and directories (*.json and
// *.jsonl) and writes OUT/DATE-scorecards.md, a table of runs and of each
// run's stages, with OUT/DATE-stages.svg, a bar chart of per-stage busy
// time.
//
//	forge-report diff [-max-ratio 1.10] [-metrics rtf,ttfa_ms] BASE HEAD
//
// compares two scorecards or sets (medians per pipeline/backend/device) and
// exits 1 when a metric of HEAD is worse than BASE by more than the ratio:
// a CI gate.
//
// Exit codes, as every Forge command: 0 success (and -h), 1 a failed run
// (a file that does not load, a regression), 2 a bad command line.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/scorecards"
	"go.uber.org/zap"
)

// errRegression makes the process exit 1 without repeating the report.
var errRegression = errors.New("regressions found")

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, errRegression):
		os.Exit(1)
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errFlags):
		os.Exit(2) // the flag package has said why
	default:
		fmt.Fprintln(os.Stderr, "forge-report:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// errFlags is a flag error the flag package has already printed.
var errFlags = errors.New("bad flags")

// usageError marks a bad command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// parseFlags parses args into fs, marking a bad flag as errFlags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return errFlags
	}
	return err
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "diff" {
		return runDiff(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("forge-report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "reports", "directory for the report files")
	date := fs.String("date", time.Now().Format(time.DateOnly), "report date (YYYY-MM-DD), used in the title and file names")
	level := logging.Flag(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forge-report [-out DIR] [-date YYYY-MM-DD] PATH...\n       forge-report diff [-max-ratio R] [-metrics a,b] BASE HEAD")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log := logging.Must(stderr, *level)
	if fs.NArg() == 0 {
		fs.Usage()
		return usageError{errors.New("no scorecard files or directories given")}
	}
	if _, err := time.Parse(time.DateOnly, *date); err != nil {
		return usageError{fmt.Errorf("-date %q is not YYYY-MM-DD", *date)}
	}
	var cards []scorecards.Card
	for _, p := range fs.Args() {
		cs, err := scorecards.Load(p)
		if err != nil {
			return err
		}
		log.Debug("loaded scorecards", zap.String("path", p), zap.Int("cards", len(cs)))
		cards = append(cards, cs...)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	svgName := *date + "-stages.svg"
	mdPath := filepath.Join(*out, *date+"-scorecards.md")
	svgPath := filepath.Join(*out, svgName)
	if err := os.WriteFile(svgPath, []byte(renderSVG(cards)), 0o644); err != nil {
		return err
	}
	md := renderMarkdown(cards, *date, svgName, fs.Args())
	if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout, mdPath)
	fmt.Fprintln(stdout, svgPath)
	return nil
}

func runDiff(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("forge-report diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxRatio := fs.Float64("max-ratio", 1.10, "fail when head/base exceeds this for any compared metric")
	metrics := fs.String("metrics", "", "comma-separated metrics to gate on (e.g. rtf,ttfa_ms,busy_ms); default all")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageError{errors.New("diff needs BASE and HEAD (files or directories of scorecards)")}
	}
	base, err := scorecards.Load(fs.Arg(0))
	if err != nil {
		return err
	}
	head, err := scorecards.Load(fs.Arg(1))
	if err != nil {
		return err
	}
	var names []string
	if *metrics != "" {
		names = strings.Split(*metrics, ",")
	}
	cmp := scorecards.Diff(base, head)
	worse := cmp.Worse(*maxRatio, names...)
	fmt.Fprint(stdout, renderDiff(cmp, worse, *maxRatio))
	if len(worse) > 0 {
		return errRegression
	}
	return nil
}
