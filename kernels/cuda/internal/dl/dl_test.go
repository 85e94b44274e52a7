package dl

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCandidates(t *testing.T) {
	s := Spec{Env: "X_LIB", Names: []string{"liba.so.2", "liba.so.1"}, Dirs: []string{"/d1", "/d2"}}
	tests := []struct {
		env  string
		want []string
	}{
		{"", []string{"liba.so.2", "liba.so.1", "/d1/liba.so.2", "/d1/liba.so.1", "/d2/liba.so.2", "/d2/liba.so.1"}},
		{"/opt/liba.so", []string{"/opt/liba.so"}},
	}
	for _, tt := range tests {
		got := s.Candidates(func(k string) string {
			if k == "X_LIB" {
				return tt.env
			}
			return ""
		})
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("env %q: %v, want %v", tt.env, got, tt.want)
		}
	}
}

func TestOpenAndSym(t *testing.T) {
	_, err := Open(Spec{Names: []string{"libforge-absent.so.1"}, Dirs: []string{"/nonexistent"}})
	if !errors.Is(err, ErrNotFound) || err.Error() != "tried libforge-absent.so.1, /nonexistent/libforge-absent.so.1 (none exists)" {
		t.Errorf("Open of a missing library: %v", err)
	}
	// The C library is on every linux machine: it checks the found path
	// and the fallback between symbol names.
	lib, err := Open(Spec{Names: []string{"libforge-absent.so.1", "libc.so.6"}})
	if err != nil {
		t.Skipf("no libc.so.6 to open: %v", err)
	}
	if lib.Path != "libc.so.6" {
		t.Errorf("Path %q", lib.Path)
	}
	addr, name, err := lib.Sym("forge_no_such_symbol", "malloc")
	if err != nil || addr == 0 || name != "malloc" {
		t.Errorf("Sym = %#x, %q, %v; want malloc's address", addr, name, err)
	}
	if _, _, err := lib.Sym("forge_no_such_symbol"); err == nil || !strings.Contains(err.Error(), "exports none of forge_no_such_symbol") {
		t.Errorf("Sym of a missing symbol: %v", err)
	}
}
