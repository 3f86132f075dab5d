//go:build race

package hop

// raceAllocs is what the race detector adds to the allocations
// TestInlineWriteAllocations counts: under it sync.Pool drops a quarter of
// what is put back at random, so the pooled request buffer (a slice and
// the pointer the pool holds) is sometimes made anew; 1 measured in ten
// runs of 100 requests. The exact bound holds without the race detector.
const raceAllocs = 2
