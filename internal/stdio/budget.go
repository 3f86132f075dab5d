package stdio

import (
	"sync"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
)

// budget counts the bytes of the messages the Transport holds for
// callers' streams and has not yet handed to their readers, for every
// process together, with each caller's share: the queues bound each
// stream, the budget what a caller holds over all its streams (a caller
// may have as many as its share of Transport.Calls, and the replies of
// calls it does not read wait too). A caller holding nothing may take any
// one message, as an empty queue may, so that a reply as long as a line
// may be is never refused for its length alone; the whole budget likewise.
// Safe for concurrent use.
type budget struct {
	cap, share int
	refused    func(full bool) // counts a refusal

	mu   sync.Mutex
	n    int
	held map[caller.ID]int
}

func newBudget(capacity, percent int, refused func(full bool)) *budget {
	capacity = max(capacity, 1)
	return &budget{cap: capacity, share: caller.Share(capacity, percent), refused: refused, held: map[caller.ID]int{}}
}

// take counts n bytes for who, or refuses them: over who's share (a
// caller holding something) or over the whole budget (when anything is
// held), the latter first, as a full table's refusal is everyone's.
func (b *budget) take(who caller.ID, n int) *caller.Refusal {
	b.mu.Lock()
	held := b.held[who]
	full := b.n > 0 && b.n+n > b.cap
	own := held > 0 && held+n > b.share
	if !full && !own {
		b.held[who] = held + n
		b.n += n
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	b.refused(full)
	return &caller.Refusal{Table: TableQueuedBytes, Full: full, Share: b.share, Cap: b.cap, RetryAfter: caller.DefaultRetryAfter}
}

// force counts n bytes for who past any bound: an error the sidecar
// writes itself in place of a reply, a few hundred bytes, held until it
// is handed over as any message is.
func (b *budget) force(who caller.ID, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held[who] += n
	b.n += n
}

// give gives back n bytes who took.
func (b *budget) give(who caller.ID, n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, b.held[who])
	b.n -= n
	if b.held[who] -= n; b.held[who] == 0 {
		delete(b.held, who)
	}
}

// Len is how many bytes are held in all.
func (b *budget) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
