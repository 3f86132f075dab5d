//go:build !race

package proxy_test

// raceAllocs is what the race detector adds to the allocations
// TestForwardAllocations counts: nothing without it.
const raceAllocs = 0
