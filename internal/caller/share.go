package caller

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
)

// DefaultSharePercent is the part of each table one caller may hold
// unless configured otherwise (config caller-share-percent): a quarter,
// so at least four callers fill any table, and one alone never does.
const DefaultSharePercent = 25

// DefaultRetryAfter is the Retry-After of a caller refused over its
// share when its table names no other.
const DefaultRetryAfter = 5 * time.Second

// Share is how many of a table of capacity places one caller may hold:
// percent of it, rounded down, at least 1 and at most capacity. A percent
// outside 1..100 is DefaultSharePercent.
func Share(capacity, percent int) int {
	if percent < 1 || percent > 100 {
		percent = DefaultSharePercent
	}
	return min(max(capacity*percent/100, 1), max(capacity, 1))
}

// Refusal is a table's refusal of a place to a caller: over its own share
// (Full false: HTTP 429, Retry-After) or with the table full (Full true:
// HTTP 503). Its Reply is what the caller gets.
type Refusal struct {
	// Table names the table (a metric label; data.table).
	Table string
	// Full is set when the table is full, clear when the caller holds its
	// share.
	Full bool
	// Share is the caller's share of the table, Cap the table's capacity.
	Share, Cap int
	// RetryAfter is sent as Retry-After with a refusal over a share.
	RetryAfter time.Duration
	// Session, when set, names the places of a bound of one session's
	// own (Full is set, Cap is the bound): see SessionBound.
	Session string
}

func (r *Refusal) Error() string {
	if r.Full {
		return r.Table + ": full (" + strconv.Itoa(r.Cap) + ")"
	}
	return r.Table + ": caller holds its share (" + strconv.Itoa(r.Share) + " of " + strconv.Itoa(r.Cap) + ")"
}

// Reason is data.reason of the refusal: "caller_share_exhausted" over a
// share, "<table>_exhausted" for a full table.
func (r *Refusal) Reason() string {
	if r.Full {
		return r.Table + "_exhausted"
	}
	return "caller_share_exhausted"
}

// Reply is the refusal as the caller gets it: a JSON-RPC error (-32603)
// with data.reason and data.table, at HTTP 503 for a full table, at 429
// with Retry-After (whole seconds, at least 1) over a share.
func (r *Refusal) Reply() *reply.Error {
	e := &reply.Error{Status: http.StatusServiceUnavailable, Code: reply.CodeInternalError,
		Data: map[string]string{"reason": r.Reason(), "table": r.Table}}
	if r.Full && r.Session != "" {
		e.Message = "too many " + r.Session + " on this session (" + strconv.Itoa(r.Cap) + "); try again later"
		return e
	}
	if r.Full {
		e.Message = "too many " + tableNoun(r.Table) + " held for all callers (" + strconv.Itoa(r.Cap) + "); try again later"
		return e
	}
	e.Status = http.StatusTooManyRequests
	e.RetryAfter = max(int((r.RetryAfter+time.Second-1)/time.Second), 1)
	e.Message = "this caller holds its share of " + tableNoun(r.Table) + " (" + strconv.Itoa(r.Share) + " of " + strconv.Itoa(r.Cap) + "); try again later"
	return e
}

// SessionBound is the refusal of a place past a bound of one session's own
// (its calls in flight, streams or subscriptions: n of them, the bound
// named table), which no caller shares: refused as a full table is (HTTP
// 503, data.reason "<table>_exhausted", data.table, no Retry-After), not
// as a share (429), since the caller may hold other sessions with room and
// the session keeps its places until it gives them back. what names the
// places in the message. The caller counts it (CallerRefusal, full).
func SessionBound(table string, n int, what string) *Refusal {
	return &Refusal{Table: table, Full: true, Share: n, Cap: n, Session: what}
}

// tableNoun is a table's name as words ("bridge_sessions": "bridge sessions").
func tableNoun(t string) string {
	b := []byte(t)
	for i, c := range b {
		if c == '_' {
			b[i] = ' '
		}
	}
	return string(b)
}

// Table counts the places each caller holds of one bounded table. Its
// zero value is not usable; use NewTable. Safe for concurrent use.
type Table struct {
	name       string
	cap, share int
	retry      time.Duration
	m          *metrics.Metrics

	mu   sync.Mutex
	n    int
	held map[ID]int
}

// TableOptions configure a Table.
type TableOptions struct {
	// Name names the table: a metric label and data.table, a constant
	// of the code (bounded), such as "bridge_sessions".
	Name string
	// Cap is the table's capacity; at least 1.
	Cap int
	// SharePercent is the part of Cap one caller may hold (Share);
	// 0 means DefaultSharePercent.
	SharePercent int
	// RetryAfter is the Retry-After of a refusal over a share; 0 means
	// DefaultRetryAfter.
	RetryAfter time.Duration
	// Metrics counts refusals by table; nil counts nothing.
	Metrics *metrics.Metrics
}

// NewTable returns an empty table.
func NewTable(o TableOptions) *Table {
	o.Cap = max(o.Cap, 1)
	if o.RetryAfter <= 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	o.Metrics.CallerRefusalTable(o.Name)
	return &Table{name: o.Name, cap: o.Cap, share: Share(o.Cap, o.SharePercent), retry: o.RetryAfter,
		m: o.Metrics, held: map[ID]int{}}
}

// Share is how many places one caller may hold.
func (t *Table) Share() int { return t.share }

// Cap is the table's capacity.
func (t *Table) Cap() int { return t.cap }

// Acquire takes a place for id. When id holds its share, or the table is
// full, and makeRoom is not nil, makeRoom(own) is asked (without the
// table's lock) to free a place, one of id's own when own is set (id at
// its share), anyone's otherwise, by Release; when it reports it did,
// Acquire tries again. Otherwise Acquire returns a *Refusal (Full when the
// table is full), counted in the metrics; nil means the place is taken,
// and must be given back with Release.
func (t *Table) Acquire(id ID, makeRoom func(own bool) bool) error {
	for {
		t.mu.Lock()
		own, full := t.held[id] >= t.share, t.n >= t.cap
		if !own && !full {
			t.held[id]++
			t.n++
			t.mu.Unlock()
			return nil
		}
		t.mu.Unlock()
		if makeRoom != nil && makeRoom(own) {
			continue
		}
		// A full table is the refusal everyone gets (503), whatever the
		// caller holds; 429 is for a caller at its share of a table with
		// room for others.
		r := &Refusal{Table: t.name, Full: full, Share: t.share, Cap: t.cap, RetryAfter: t.retry}
		t.m.CallerRefusal(t.name, r.Full)
		return r
	}
}

// Release gives back a place id took.
func (t *Table) Release(id ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[id] <= 0 {
		return
	}
	t.n--
	if t.held[id]--; t.held[id] == 0 {
		delete(t.held, id)
	}
}

// Held is how many places id holds.
func (t *Table) Held(id ID) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held[id]
}

// Len is how many places are held in all.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}
