package scorecards

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Parse decodes and validates one card from JSON. A card with missing
// required fields or out-of-range values is an error (a *ValidationError
// inside) that names them all.
func Parse(data []byte) (*Card, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("scorecard: %w", err)
	}
	var c Card
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("scorecard: %w", err)
	}
	e := &ValidationError{}
	checkPresence(e, raw)
	c.check(e)
	if err := e.orNil(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Read decodes every card in r: a single JSON object, a JSON array of
// objects, or a stream of objects (JSON Lines, as $FORGE_SCORECARD_OUT
// pointing at a .jsonl file collects them). The first bad card stops it with
// an error naming its position. Input without any card is an error.
func Read(r io.Reader) ([]Card, error) {
	br := bufio.NewReader(r)
	first, err := firstNonSpace(br)
	if err == io.EOF {
		return nil, errors.New("scorecard: no scorecard in input")
	}
	if err != nil {
		return nil, fmt.Errorf("scorecard: %w", err)
	}
	var raws []json.RawMessage
	dec := json.NewDecoder(br)
	if first == '[' {
		if err := dec.Decode(&raws); err != nil {
			return nil, fmt.Errorf("scorecard: %w", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, errors.New("scorecard: data after the array")
		}
	} else {
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("scorecard %d: %w", len(raws)+1, err)
			}
			raws = append(raws, raw)
		}
	}
	if len(raws) == 0 {
		return nil, errors.New("scorecard: no scorecard in input")
	}
	cards := make([]Card, 0, len(raws))
	for i, raw := range raws {
		c, err := Parse(raw)
		if err != nil {
			if len(raws) > 1 {
				return nil, fmt.Errorf("card %d: %w", i+1, err)
			}
			return nil, err
		}
		cards = append(cards, *c)
	}
	return cards, nil
}

func firstNonSpace(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if !bytes.ContainsRune([]byte(" \t\r\n"), rune(b)) {
			return b, br.UnreadByte()
		}
	}
}

// ReadFile reads every card in the file at path (see Read).
func ReadFile(path string) ([]Card, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cards, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cards, nil
}

// Load reads the cards at path: a file, or every *.json and *.jsonl file
// directly inside a directory. Cards come back ordered by start time.
func Load(path string) ([]Card, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var files []string
	if fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			n := e.Name()
			if !e.IsDir() && (strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".jsonl")) {
				files = append(files, filepath.Join(path, n))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no *.json or *.jsonl scorecards", path)
		}
	} else {
		files = []string{path}
	}
	var all []Card
	for _, f := range files {
		cards, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, cards...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].StartedAt.Equal(all[j].StartedAt) {
			return all[i].StartedAt.Before(all[j].StartedAt)
		}
		return all[i].RunID < all[j].RunID
	})
	return all, nil
}
