package bridge

import (
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
)

// TestEvictionSparesWaitingSessions: at the cap, a new caller's session
// evicts the least recently used session that has no call waiting for a
// client's retry, not an older one that has (found in review: random new
// credentials could end other callers' input_required calls).
func TestEvictionSparesWaitingSessions(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h := testHolder(2, func() time.Time { return now })
	open := func(*session) {}
	old := h.get("old", anyone, open) // least recently used, with a call waiting
	old.release()
	now = now.Add(time.Second)
	h.get("newer", anyone, open).release()
	p := &pendingCalls{places: testTable(4), timeout: time.Hour, expired: func(*upcall) {}}
	if _, err := p.add(&upcall{s: old}); err != nil {
		t.Fatal("add refused")
	}
	now = now.Add(time.Second)
	h.get("third", anyone, open).release()
	if _, ok := h.m["old"]; !ok {
		t.Errorf("the session with a waiting call was evicted; held %v", keys(h))
	}
	if _, ok := h.m["newer"]; ok {
		t.Errorf("the idle newer session was kept, the waiting one should have been spared instead; held %v", keys(h))
	}
	// Once its call is taken, it is evictable again.
	for tok := range p.m {
		if p.take(tok, "", "", [32]byte{}) == nil {
			t.Fatal("take failed")
		}
	}
	now = now.Add(time.Second)
	h.get("fourth", anyone, open).release()
	if _, ok := h.m["old"]; ok {
		t.Errorf("the session whose call was taken was still spared; held %v", keys(h))
	}
}

// TestPutAfterDeadlineExpires: a call a retry took and puts back after its
// deadline passed is ended at once, not kept forever (found in review: the
// timer fired while the retry held it, and put kept it with no timer).
func TestPutAfterDeadlineExpires(t *testing.T) {
	expired := make(chan *upcall, 2)
	p := &pendingCalls{places: testTable(4), timeout: 20 * time.Millisecond, expired: func(c *upcall) { expired <- c }}
	c := &upcall{key: "k"}
	tok, _ := p.add(c)
	if p.take(tok, "k", "", [32]byte{}) != c {
		t.Fatal("take failed")
	}
	time.Sleep(40 * time.Millisecond) // the deadline passes while the retry holds it
	p.put(tok, c)
	select {
	case got := <-expired:
		if got != c {
			t.Fatal("another call expired")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call put back after its deadline never expired")
	}
	if n := p.len(); n != 0 {
		t.Errorf("%d calls pending after the expiry, want 0", n)
	}

	// Put back in time: kept, then ended at its own deadline (a second
	// set, with a deadline of a second; a machine stalled between add and
	// len for longer than that has the call expire honestly, and the set
	// is made again).
	var c2 *upcall
	for try := 1; ; try++ {
		p = &pendingCalls{places: testTable(4), timeout: time.Second, expired: func(c *upcall) { expired <- c }}
		c2 = &upcall{key: "k"}
		added := time.Now()
		tok2, _ := p.add(c2)
		p.take(tok2, "k", "", [32]byte{})
		p.put(tok2, c2)
		n := p.len()
		if n == 1 {
			break
		}
		if took := time.Since(added); took < time.Second || try == 3 {
			t.Fatalf("%d calls pending %v after an in-time put, want 1", n, took)
		}
		<-expired
	}
	select {
	case got := <-expired:
		if got != c2 {
			t.Fatal("another call expired")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call put back in time never expired at its deadline")
	}
}

// anyone is one caller, whose share is the whole table (testTable).
var anyone caller.ID

// testTable is a table of n places whose share is all of it.
func testTable(n int) *caller.Table {
	return caller.NewTable(caller.TableOptions{Name: "test", Cap: n, SharePercent: 100})
}

// testHolder is a holder of max sessions whose one caller may hold them all.
func testHolder(max int, now func() time.Time) *holder {
	return &holder{sessions: testTable(max), listens: testTable(max), idle: time.Hour, now: now}
}

func keys(h *holder) []string {
	var out []string
	for k := range h.m {
		out = append(out, k)
	}
	return out
}
