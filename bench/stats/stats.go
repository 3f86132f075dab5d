// Package stats owns the arithmetic of the benchmark harness: percentiles of
// latency samples and the median of repeated measurements.
//
// It is pure: no clock, no I/O. It must not decide what is measured or how
// results are printed; that belongs to the harness and report packages.
package stats

import (
	"math"
	"slices"
	"time"
)

// Summary describes one set of latency samples.
type Summary struct {
	// N is the number of samples.
	N int
	// P50, P90, P99 and Max are nearest-rank percentiles; all zero when N is 0.
	P50, P90, P99, Max time.Duration
}

// Summarize sorts samples in place and returns their percentiles. A nil or
// empty slice gives the zero Summary.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	return Summary{
		N:   len(samples),
		P50: Percentile(samples, 50),
		P90: Percentile(samples, 90),
		P99: Percentile(samples, 99),
		Max: samples[len(samples)-1],
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted: the smallest sample such that at least p percent of all samples
// are less than or equal to it. It returns 0 for an empty slice; p <= 0
// gives the minimum and p > 100 the maximum.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Median returns the median of xs without modifying it: the middle value of
// an odd count, the mean of the two middle values of an even count, and 0 for
// none. Repeats of one measurement are combined with it, metric by metric.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
