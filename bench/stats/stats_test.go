package stats

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// checkPercentile verifies pct against the definition of the nearest-rank
// percentile, independent of any index arithmetic: the answer v must be a
// sample, at least p% of the samples must be <= v, and fewer than p% must be
// < v.
func checkPercentile(pct func([]time.Duration, float64) time.Duration, sorted []time.Duration, p float64) error {
	v := pct(sorted, p)
	if !slices.Contains(sorted, v) {
		return fmt.Errorf("percentile(%v, %v) = %v, not a sample", sorted, p, v)
	}
	var le, lt int
	for _, s := range sorted {
		if s <= v {
			le++
		}
		if s < v {
			lt++
		}
	}
	need := p / 100 * float64(len(sorted))
	if float64(le) < need || float64(lt) >= need {
		return fmt.Errorf("percentile(%v, %v) = %v: %d samples <= it and %d < it, want >= %.2f and < %.2f",
			sorted, p, v, le, lt, need, need)
	}
	return nil
}

func TestPercentileTable(t *testing.T) {
	t.Parallel()
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := map[string]struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		"empty":            {sorted: nil, p: 50, want: 0},
		"one":              {sorted: ms(7), p: 99, want: 7 * time.Millisecond},
		"median of four":   {sorted: ms(1, 2, 3, 4), p: 50, want: 2 * time.Millisecond},
		"median of five":   {sorted: ms(1, 2, 3, 4, 5), p: 50, want: 3 * time.Millisecond},
		"p99 of hundred":   {sorted: ms(seq(1, 100)...), p: 99, want: 99 * time.Millisecond},
		"p99 of thousand":  {sorted: ms(seq(1, 1000)...), p: 99, want: 990 * time.Millisecond},
		"p100 is max":      {sorted: ms(1, 2, 3), p: 100, want: 3 * time.Millisecond},
		"p0 is min":        {sorted: ms(1, 2, 3), p: 0, want: 1 * time.Millisecond},
		"above 100 is max": {sorted: ms(1, 2, 3), p: 150, want: 3 * time.Millisecond},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := Percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

func seq(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

// TestPercentileDefinition checks Percentile against the definition on
// random inputs, including many ties.
func TestPercentileDefinition(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + r.IntN(300)
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(r.IntN(50))
		}
		slices.Sort(s)
		for _, p := range []float64{1, 25, 50, 90, 99, 99.9, 100} {
			if err := checkPercentile(Percentile, s, p); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCheckPercentileCatchesWrong shows the checker above fails on the
// classic mistakes: an index off by one and a truncating rank.
func TestCheckPercentileCatchesWrong(t *testing.T) {
	t.Parallel()
	wrong := map[string]func([]time.Duration, float64) time.Duration{
		"index p*n": func(s []time.Duration, p float64) time.Duration {
			return s[min(int(p/100*float64(len(s))), len(s)-1)]
		},
		"truncated rank": func(s []time.Duration, p float64) time.Duration {
			return s[max(int(p/100*float64(len(s)))-1, 0)]
		},
	}
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = time.Duration(i + 1)
	}
	odd := s[:7]
	for name, pct := range wrong {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			caught := false
			for _, in := range [][]time.Duration{s, odd} {
				for _, p := range []float64{50, 99} {
					if checkPercentile(pct, in, p) != nil {
						caught = true
					}
				}
			}
			if !caught {
				t.Errorf("checkPercentile accepted the %s implementation", name)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	in := []time.Duration{5, 1, 4, 2, 3}
	want := Summary{N: 5, P50: 3, P90: 5, P99: 5, Max: 5}
	if diff := cmp.Diff(want, Summarize(in)); diff != "" {
		t.Errorf("Summarize mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Summary{}, Summarize(nil)); diff != "" {
		t.Errorf("Summarize(nil) mismatch (-want +got):\n%s", diff)
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   []float64
		want float64
	}{
		"none": {in: nil, want: 0},
		"odd":  {in: []float64{9, 1, 5}, want: 5},
		"even": {in: []float64{4, 1, 3, 2}, want: 2.5},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := slices.Clone(tc.in)
			if got := Median(in); got != tc.want {
				t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if diff := cmp.Diff(tc.in, in); diff != "" {
				t.Errorf("Median modified its input (-want +got):\n%s", diff)
			}
		})
	}
}
