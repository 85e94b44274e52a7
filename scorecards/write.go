package scorecards

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// EnvVar names the environment variable that sends scorecards somewhere
// when no --scorecard flag is given, so CI can collect them from every run.
const EnvVar = "FORGE_SCORECARD_OUT"

// Flag registers the --scorecard flag on fs and returns its value, for Save.
func Flag(fs *flag.FlagSet) *string {
	return fs.String("scorecard", "", "write a JSON scorecard of the run to `FILE` (a directory: a new file in it; *.jsonl: append a line; -: stdout); default $"+EnvVar)
}

// Destination returns where a scorecard should go: the flag's value if set,
// else $FORGE_SCORECARD_OUT, else "" (nowhere).
func Destination(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(EnvVar)
}

// Save writes c to Destination(flagValue) and returns the file written, or
// "" when no scorecard was asked for.
func Save(flagValue string, c *Card) (string, error) {
	dest := Destination(flagValue)
	if dest == "" {
		return "", nil
	}
	return Write(dest, c)
}

// Encode validates c and writes it to w as indented JSON and a newline.
func Encode(w io.Writer, c *Card) error {
	b, err := marshal(c, true)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func marshal(c *Card, indent bool) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("scorecard: %w", err)
	}
	return buf.Bytes(), nil
}

// Write validates c and writes it to dest, returning the file written:
//   - "-": standard output;
//   - an existing directory, or a path ending in a separator: a new file in
//     it named pipeline-time-runid.json;
//   - a path ending in .jsonl: one compact line appended (many runs, one
//     file);
//   - any other path: the file is replaced atomically (written beside it,
//     then renamed).
func Write(dest string, c *Card) (string, error) {
	if dest == "-" {
		return dest, Encode(os.Stdout, c)
	}
	if strings.HasSuffix(dest, string(os.PathSeparator)) || isDir(dest) {
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return "", fmt.Errorf("scorecard: %w", err)
		}
		dest = filepath.Join(dest, FileName(c))
	}
	if strings.HasSuffix(dest, ".jsonl") {
		b, err := marshal(c, false)
		if err != nil {
			return "", err
		}
		f, err := os.OpenFile(dest, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return "", fmt.Errorf("scorecard: %w", err)
		}
		_, err = f.Write(b) // one write per line, so concurrent runs do not interleave
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("scorecard: write %s: %w", dest, err)
		}
		return dest, nil
	}
	b, err := marshal(c, true)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".scorecard-*.tmp")
	if err != nil {
		return "", fmt.Errorf("scorecard: %w", err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("scorecard: write %s: %w", dest, err)
	}
	return dest, nil
}

// FileName is the name Write gives a card in a directory:
// pipeline-YYYYMMDDTHHMMSSZ-runid.json, sortable by time per pipeline.
func FileName(c *Card) string {
	safe := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
				return r
			}
			return '_'
		}, s)
	}
	return fmt.Sprintf("%s-%s-%s.json", safe(c.Pipeline), c.StartedAt.UTC().Format("20060102T150405Z"), safe(c.RunID))
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
