package stage

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBucketsCoverValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := r.Uint64() >> r.UintN(64)
		i := histIndex(v)
		lo, w := histBounds(i)
		if i == histBuckets-1 {
			if v < lo {
				t.Fatalf("v=%d in overflow bucket starting at %d", v, lo)
			}
			continue
		}
		if v < lo || v >= lo+w {
			t.Fatalf("v=%d in bucket %d = [%d, %d)", v, i, lo, lo+w)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		name string
		gen  func() time.Duration
	}{
		{"uniform µs", func() time.Duration { return time.Duration(r.Int64N(1000)) * time.Microsecond }},
		{"lognormal", func() time.Duration { return time.Duration(1e6 * (1 + r.ExpFloat64()*r.ExpFloat64())) }},
		{"tiny", func() time.Duration { return time.Duration(r.Int64N(10)) }},
		{"constant", func() time.Duration { return 42 * time.Millisecond }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			vals := make([]time.Duration, 5001)
			for i := range vals {
				vals[i] = tc.gen()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			s := h.Summary()
			if s.Count != int64(len(vals)) || s.Max != vals[len(vals)-1] {
				t.Fatalf("count %d max %v, want %d %v", s.Count, s.Max, len(vals), vals[len(vals)-1])
			}
			for _, q := range []struct {
				got time.Duration
				p   float64
			}{{s.P50, 0.50}, {s.P95, 0.95}} {
				exact := vals[int(q.p*float64(len(vals))+0.999999)-1]
				// Bucket width is 1/16 of the power of two below the value,
				// and the estimate is the bucket's top: never below exact.
				if q.got < exact || float64(q.got-exact) > float64(exact)/16 {
					t.Errorf("p%v = %v, exact %v", q.p*100, q.got, exact)
				}
			}
		})
	}
}

func TestHistogramEdges(t *testing.T) {
	var h Histogram
	if s := h.Summary(); s != (Summary{}) {
		t.Errorf("empty summary %+v", s)
	}
	h.Record(-5)
	h.Record(100 * time.Hour)
	s := h.Summary()
	if s.Count != 2 || s.Max != 100*time.Hour || s.P50 != 0 || h.Quantile(1) != 100*time.Hour {
		t.Errorf("summary %+v", s)
	}
	var g Histogram
	g.Record(time.Millisecond)
	g.Merge(&h)
	if g.Count() != 3 || g.Summary().Max != 100*time.Hour {
		t.Errorf("merged %+v", g.Summary())
	}
}
