package align

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestDTW(t *testing.T) {
	for _, c := range []struct {
		name       string
		cost       []float32
		n, m       int
		rows, cols []int
	}{
		{"one cell", []float32{5}, 1, 1, []int{0}, []int{0}},
		{"diagonal", []float32{0, 9, 9, 9, 0, 9, 9, 9, 0}, 3, 3, []int{0, 1, 2}, []int{0, 1, 2}},
		// a cheap row 0 holds the path for three frames
		{"wait on row 0", []float32{0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 0}, 2, 6, []int{0, 0, 0, 0, 0, 1}, []int{0, 1, 2, 3, 4, 5}},
		{"one frame", []float32{1, 2, 3}, 3, 1, []int{0, 1, 2}, []int{0, 0, 0}},
	} {
		rows, cols, err := DTW(c.cost, c.n, c.m)
		if err != nil || !slices.Equal(rows, c.rows) || !slices.Equal(cols, c.cols) {
			t.Errorf("%s: rows %v cols %v (%v), want %v %v", c.name, rows, cols, err, c.rows, c.cols)
		}
	}
	if _, _, err := DTW([]float32{1, 2}, 2, 2); err == nil {
		t.Error("short cost: no error")
	}
}

func TestMedianFilter(t *testing.T) {
	for _, c := range []struct {
		in, want []float64
		w        int
	}{
		{[]float64{1, 9, 1, 1, 1}, []float64{9, 1, 1, 1, 1}, 3}, // reflected: [9 1 9 1 1 1 1]
		{[]float64{3, 1, 2}, []float64{1, 2, 1}, 3},             // reflected ends: [1 3 1 2 1]
		{[]float64{5, 4, 3, 2, 1, 0, -1, -2}, []float64{4, 4, 3, 2, 1, 0, -1, -1}, 3},
		{[]float64{1, 2, 3}, []float64{1, 2, 3}, 7}, // no longer than w/2: kept
	} {
		x := slices.Clone(c.in)
		medianFilter(x, c.w)
		if !slices.Equal(x, c.want) {
			t.Errorf("median %d of %v: %v, want %v", c.w, c.in, x, c.want)
		}
	}
}

// pieces is a fake vocabulary: token i decodes to pieces[i]; ids ≥ 100 are
// special (decode to ""). "\xc3" and "\xa9" are the halves of "é".
var pieces = []string{" Hello", ",", " wor", "ld", " caf", "\xc3", "\xa9", "!", " (", "hi", ")", "你", "好"}

func decodeFake(ids []int32) (string, error) {
	var b []byte
	for _, id := range ids {
		if id < 100 {
			b = append(b, pieces[id]...)
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

func TestSplit(t *testing.T) {
	words, groups, err := Split([]int32{0, 1, 2, 3, 4, 5, 6, 7, 100}, decodeFake, true, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{" Hello", ",", " world", " café", "!", ""}; !slices.Equal(words, want) {
		t.Errorf("words %q, want %q", words, want)
	}
	if len(groups) != 6 || !slices.Equal(groups[3], []int32{4, 5, 6}) || !slices.Equal(groups[5], []int32{100}) {
		t.Errorf("groups %v", groups)
	}
	words, _, err = Split([]int32{11, 12, 100}, decodeFake, false, 100)
	if err != nil || !slices.Equal(words, []string{"你", "好", ""}) {
		t.Errorf("unspaced: %q %v", words, err)
	}
}

func TestMergePunctuation(t *testing.T) {
	in := []Word{{Text: " Hello", Start: 0}, {Text: ",", Start: 1}, {Text: " (", Start: 2}, {Text: "hi", Start: 3}, {Text: ")", Start: 4}, {Text: " world", Start: 5}}
	got := MergePunctuation(in)
	var texts []string
	for _, w := range got {
		texts = append(texts, w.Text)
	}
	if want := []string{" Hello,", " (hi)", " world"}; !slices.Equal(texts, want) || got[1].Start != 3 {
		t.Errorf("merged %q (second starts %v), want %q", texts, got[1].Start, want)
	}
}

// TestTimes: a similarity that puts token k on frames [3k, 3k+3) gives
// each word the start of its first token.
func TestTimes(t *testing.T) {
	words, groups, err := Split([]int32{0, 2, 3, 4, 5, 6, 100}, decodeFake, true, 100) // " Hello", " world", " café", eot
	if err != nil {
		t.Fatal(err)
	}
	n, m := 7, 21 // six text tokens and the end
	sim := make([]float32, n*m)
	for r := range n {
		for f := range m {
			sim[r*m+f] = -1
			if f/3 == r {
				sim[r*m+f] = 1
			}
		}
	}
	probs := []float64{0.9, 0.5, 0.7, 1, 1, 0.4}
	got, err := Times(sim, n, m, words[:len(words)-1], groups[:len(groups)-1], probs)
	if err != nil {
		t.Fatal(err)
	}
	want := []Word{{Text: " Hello", Start: 0, End: 0.06, Probability: 0.9}, {Text: " world", Start: 0.06, End: 0.18, Probability: 0.6}, {Text: " café", Start: 0.18, End: 0.36, Probability: 0.8}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		g := got[i]
		if g.Text != want[i].Text || math.Abs(g.Start-want[i].Start) > 1e-9 || math.Abs(g.End-want[i].End) > 1e-9 || math.Abs(g.Probability-want[i].Probability) > 1e-9 {
			t.Errorf("word %d: %+v, want %+v", i, g, want[i])
		}
	}
	if _, err := Times(sim, n, m, words, groups, probs); err == nil {
		t.Error("rows and tokens disagree: no error")
	}
}

// TestMatrix: standardising over tokens, filtering and averaging heads
// keeps a diagonal a diagonal.
func TestMatrix(t *testing.T) {
	const n, m = 4, 24 // six frames a token: the median filter keeps bands wider than half its width
	head := make([]float32, n*m)
	for r := range n {
		for f := range m {
			head[r*m+f] = 0.01
			if f/6 == r {
				head[r*m+f] = 0.9
			}
		}
	}
	mat, err := Matrix([][]float32{head, head}, n, m)
	if err != nil {
		t.Fatal(err)
	}
	for f := range m {
		best := 0
		for r := range n {
			if mat[r*m+f] > mat[best*m+f] {
				best = r
			}
		}
		if best != f/6 {
			t.Errorf("frame %d: best row %d, want %d", f, best, f/6)
		}
	}
	if _, err := Matrix([][]float32{head[:5]}, n, m); err == nil {
		t.Error("short head: no error")
	}
}

// TestTrimSilence: edges move off quiet positions, inner dips stay, and a
// word quiet throughout keeps its times.
func TestTrimSilence(t *testing.T) {
	loud := make([]float64, 40)
	for p := range loud {
		loud[p] = -1 // noise floor
	}
	for _, p := range []int{5, 6, 7, 9, 10, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32} {
		loud[p] = 1
	}
	words := []Word{{Text: " a", Start: 0, End: 0.30}, {Text: " b", Start: 0.30, End: 0.66}, {Text: " c", Start: 0.66, End: 0.78}}
	got := TrimSilence(words, loud, nil)
	want := [][2]float64{{0.10, 0.22}, {0.40, 0.66}, {0.66, 0.78}}
	for i, w := range got {
		if math.Abs(w.Start-want[i][0]) > 1e-9 || math.Abs(w.End-want[i][1]) > 1e-9 {
			t.Errorf("word %d: [%v, %v], want %v", i, w.Start, w.End, want[i])
		}
	}
	if words[0].Start != 0 {
		t.Error("input changed")
	}
}

// TestTrimSilencePauses: a word whose span crosses a pause keeps the side
// its token attends to and gives the other to the word it touches.
func TestTrimSilencePauses(t *testing.T) {
	loud := make([]float64, 60)
	for p := range loud {
		loud[p] = -1
	}
	for p := 0; p < 10; p++ { // " one": positions 0–9, then a pause to 25
		loud[p] = 1
	}
	for p := 25; p < 40; p++ { // " two": positions 25–39, then quiet
		loud[p] = 1
	}
	// The path gave " one" only 0–7 and " two" 8–59: two's span holds the
	// tail of one (8–9), the pause and itself.
	words := []Word{{Text: " one", Start: 0, End: 0.16, row: 0}, {Text: " two", Start: 0.16, End: 1.2, row: 1}}
	// two's first token attends to 25–39 more than to 8–9.
	matrix := make([]float32, 2*60)
	for p := 25; p < 40; p++ {
		matrix[60+p] = 1
	}
	got := TrimSilence(words, loud, matrix)
	want := [][2]float64{{0, 0.20}, {0.50, 0.80}}
	for i, w := range got {
		if math.Abs(w.Start-want[i][0]) > 1e-9 || math.Abs(w.End-want[i][1]) > 1e-9 {
			t.Errorf("word %d: [%v, %v], want %v", i, w.Start, w.End, want[i])
		}
	}
}
