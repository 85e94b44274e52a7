package main

import (
	"encoding/json"
	"testing"

	"github.com/tensorforge/forge/speech/listen"
)

// TestLiveLine: a live event's JSON line carries the final's words (with
// --words) in the JSON lines' word shape, and no words otherwise.
func TestLiveLine(t *testing.T) {
	words := []listen.Word{{Text: " Go", Start: 0.1, End: 0.40000000000000002, Probability: 0.9}, {Text: " forward.", Start: 0.4004, End: 1, Probability: 0.8}}
	for _, c := range []struct {
		name string
		e    listen.Event
		want string
	}{
		{"partial", listen.Event{Kind: listen.Partial, Committed: " Go", Tentative: " for", End: 0.5},
			`{"type":"partial","utterance":0,"start":0,"end":0.5,"committed":" Go","tentative":" for"}`},
		{"final without words", listen.Event{Kind: listen.Final, Committed: " Go forward.", End: 1, Segments: []listen.Segment{{Text: " Go forward."}}},
			`{"type":"final","utterance":0,"start":0,"end":1,"committed":" Go forward.","tentative":""}`},
		{"final with words", listen.Event{Kind: listen.Final, Committed: " Go forward.", End: 1, Segments: []listen.Segment{{Text: " Go forward.", Words: words}}},
			`{"type":"final","utterance":0,"start":0,"end":1,"committed":" Go forward.","tentative":"","words":[{"word":"Go","start":0.1,"end":0.4,"probability":0.9},{"word":"forward.","start":0.4,"end":1,"probability":0.8}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(liveLine(c.e))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Errorf("got  %s\nwant %s", b, c.want)
			}
		})
	}
}
