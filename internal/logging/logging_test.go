package logging

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func TestLevels(t *testing.T) {
	tests := []struct {
		flag, env string
		wantDebug bool
		wantWarn  bool
		wantErr   string
	}{
		{flag: "", env: "", wantWarn: true},
		{flag: "", env: "debug", wantDebug: true, wantWarn: true},
		{flag: "warn", env: "debug", wantWarn: true},
		{flag: "DEBUG", env: "", wantDebug: true, wantWarn: true},
		{flag: "error", env: ""},
		{flag: "off", env: ""},
		{flag: "loud", env: "", wantErr: `--log: unknown log level "loud"`},
		{flag: "", env: "chatty", wantErr: `$FORGE_LOG: unknown log level "chatty"`},
	}
	for _, tc := range tests {
		t.Run(tc.flag+"/"+tc.env, func(t *testing.T) {
			t.Setenv(EnvVar, tc.env)
			var buf bytes.Buffer
			l, err := New(&buf, tc.flag)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			l.Debug("dbg-line")
			l.Warn("warn-line")
			_ = l.Sync()
			out := buf.String()
			if got := strings.Contains(out, "dbg-line"); got != tc.wantDebug {
				t.Errorf("debug logged = %v, want %v (output %q)", got, tc.wantDebug, out)
			}
			if got := strings.Contains(out, "warn-line"); got != tc.wantWarn {
				t.Errorf("warn logged = %v, want %v (output %q)", got, tc.wantWarn, out)
			}
		})
	}
}

func TestMustFallsBack(t *testing.T) {
	t.Setenv(EnvVar, "")
	var buf bytes.Buffer
	l := Must(&buf, "bogus")
	l.Info("hidden")
	l.Warn("shown")
	out := buf.String()
	if !strings.Contains(out, `unknown log level "bogus"`) || strings.Contains(out, "hidden") || !strings.Contains(out, "shown") {
		t.Fatalf("output %q", out)
	}
}

func TestFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	v := Flag(fs)
	if err := fs.Parse([]string{"-log", "debug"}); err != nil || *v != "debug" {
		t.Fatalf("parsed %q, %v", *v, err)
	}
}
