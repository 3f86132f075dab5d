//go:build race

package hop

// raceAllocs is what the race detector adds to the allocations
// TestInlineWriteAllocations counts. A race build does not compile
// appendInline's append(b, make([]byte, n)...) into an extension of b, so
// the make allocates on every request; and under it sync.Pool drops a
// quarter of what is put back at random, so the pooled request buffer is
// sometimes made anew (a memory profile of 20,000 requests: 1 and 0.5 per
// request). The exact bound holds without the race detector.
const raceAllocs = 2
