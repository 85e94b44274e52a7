package scorecards

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzRead: any bytes give cards or an error, never a panic; whatever is
// accepted is valid and survives a write/read round trip unchanged.
func FuzzRead(f *testing.F) {
	var one bytes.Buffer
	if err := Encode(&one, fullCard()); err != nil {
		f.Fatal(err)
	}
	line, _ := json.Marshal(fullCard())
	minimal := `{"schema":"forge.scorecard/v1","run_id":"r","started_at":"2025-01-01T00:00:00Z","pipeline":"p","host":{"os":"linux","arch":"amd64","cores":1,"go":"go1"},"wall_seconds":0}`
	for _, seed := range []string{
		one.String(),
		"[" + string(line) + "," + string(line) + "]",
		string(line) + "\n" + minimal + "\n",
		minimal,
		strings.Replace(minimal, `"cores":1`, `"cores":-1`, 1),
		strings.Replace(minimal, `"wall_seconds":0`, `"wall_seconds":1e400`, 1),
		`{"schema":null,"host":null}`,
		`[{}]`,
		`[`,
		"",
		"\x00\xff",
		`{"stages":[{"name":"a","latency_p50_ms":2,"latency_p95_ms":1,"latency_max_ms":3}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cards, err := Read(bytes.NewReader(data))
		if err != nil {
			if len(cards) != 0 {
				t.Fatalf("cards returned with error %v", err)
			}
			return
		}
		if len(cards) == 0 {
			t.Fatal("no cards and no error")
		}
		for i := range cards {
			if err := cards[i].Validate(); err != nil {
				t.Fatalf("accepted card %d is invalid: %v", i, err)
			}
			var buf bytes.Buffer
			if err := Encode(&buf, &cards[i]); err != nil {
				t.Fatalf("accepted card %d cannot be written: %v", i, err)
			}
			back, err := Parse(buf.Bytes())
			if err != nil {
				t.Fatalf("written card %d does not read back: %v\n%s", i, err, buf.Bytes())
			}
			if !reflect.DeepEqual(normal(back), normal(&cards[i])) {
				t.Fatalf("card %d changed in a round trip:\n%+v\n%+v", i, *back, cards[i])
			}
		}
	})
}

// normal makes empty and nil collections compare equal (omitempty drops
// both) and strips the time's location, which JSON does not keep exactly.
func normal(c *Card) Card {
	n := *c
	if len(n.Models) == 0 {
		n.Models = nil
	}
	if len(n.Stages) == 0 {
		n.Stages = nil
	}
	if len(n.Labels) == 0 {
		n.Labels = nil
	}
	n.StartedAt = n.StartedAt.UTC()
	return n
}
