//go:build race

package proxy_test

// raceAllocs is what the race detector adds to the allocations
// TestForwardAllocations counts: 5 of its own, and up to 2 more because
// under it sync.Pool drops a quarter of what is put back at random, so the
// pooled header maps and buffers are sometimes made anew (52 measured
// alone, 53 beside the package's other tests). The exact bound holds
// without the race detector.
const raceAllocs = 7
