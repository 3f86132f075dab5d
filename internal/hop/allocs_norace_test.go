//go:build !race

package hop

// raceAllocs is what the race detector adds to the allocations
// TestInlineWriteAllocations counts: nothing without it.
const raceAllocs = 0
