package caller

import (
	"context"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// req is a request from peer (host:port) with headers h (name, value, ...).
func req(peer string, h ...string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "http://sidecar/mcp", nil)
	r.RemoteAddr = peer
	for i := 0; i+1 < len(h); i += 2 {
		r.Header.Add(h[i], h[i+1])
	}
	return r
}

var (
	gateOn  = &Resolver{Credentials: []string{"Authorization", "Cookie"}}
	gateOff = &Resolver{}
	behind  = &Resolver{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
)

// TestOf: who is one caller and who is another (each row a pair of
// requests and whether they are the same caller).
func TestOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  *Resolver
		a, b *http.Request
		same bool
	}{
		{"one token from two addresses", gateOn,
			req("192.0.2.1:1", "Authorization", "Bearer t"), req("192.0.2.2:2", "Authorization", "Bearer t"), true},
		{"two tokens from one address", gateOn,
			req("192.0.2.1:1", "Authorization", "Bearer t"), req("192.0.2.1:1", "Authorization", "Bearer u"), false},
		{"one token with two invented cookies", gateOn,
			req("192.0.2.1:1", "Authorization", "Bearer t", "Cookie", "a=1"), req("192.0.2.1:1", "Authorization", "Bearer t", "Cookie", "a=2"), true},
		{"two cookies without a token", gateOn,
			req("192.0.2.1:1", "Cookie", "a=1"), req("192.0.2.1:1", "Cookie", "a=2"), false},
		{"no token: the address", gateOn,
			req("192.0.2.1:1"), req("192.0.2.1:9"), true},
		{"gate off: a token does not make another caller", gateOff,
			req("192.0.2.1:1", "Authorization", "Bearer t"), req("192.0.2.1:1", "Authorization", "Bearer u"), true},
		{"forged X-Forwarded-For from an untrusted peer", gateOff,
			req("192.0.2.1:1", "X-Forwarded-For", "198.51.100.7"), req("192.0.2.1:1", "X-Forwarded-For", "198.51.100.8"), true},
		{"forged Forwarded from an untrusted peer", gateOff,
			req("192.0.2.1:1", "Forwarded", "for=198.51.100.7"), req("192.0.2.1:1"), true},
		{"two clients behind a trusted proxy", behind,
			req("10.1.1.1:1", "X-Forwarded-For", "198.51.100.7"), req("10.1.1.1:1", "X-Forwarded-For", "198.51.100.8"), false},
		{"a client's own forged hop left of the proxy's is ignored", behind,
			req("10.1.1.1:1", "X-Forwarded-For", "203.0.113.1, 198.51.100.7"), req("10.1.1.1:1", "X-Forwarded-For", "203.0.113.2, 198.51.100.7"), true},
		{"two trusted hops are walked past", behind,
			req("10.1.1.1:1", "X-Forwarded-For", "198.51.100.7, 10.2.2.2"), req("10.9.9.9:1", "X-Forwarded-For", "198.51.100.7"), true},
		{"Forwarded before X-Forwarded-For", behind,
			req("10.1.1.1:1", "Forwarded", `for="198.51.100.7:4711";proto=https`, "X-Forwarded-For", "198.51.100.9"), req("10.1.1.1:1", "X-Forwarded-For", "198.51.100.7"), true},
		{"a junk hop is the proxy itself", behind,
			req("10.1.1.1:1", "X-Forwarded-For", "junk-1"), req("10.1.1.1:1", "X-Forwarded-For", "junk-2"), true},
		{"a junk hop is not the client left of it", behind,
			req("10.1.1.1:1", "X-Forwarded-For", "198.51.100.7, junk"), req("10.1.1.1:1", "X-Forwarded-For", "198.51.100.8, junk"), true},
		{"IPv6 by /64", gateOff,
			req("[2001:db8:1:2::1]:1"), req("[2001:db8:1:2:ffff::9]:1"), true},
		{"IPv6 other /64", gateOff,
			req("[2001:db8:1:2::1]:1"), req("[2001:db8:1:3::1]:1"), false},
		{"IPv4-mapped is IPv4", gateOff,
			req("[::ffff:192.0.2.1]:1"), req("192.0.2.1:2"), true},
		{"a Unix socket peer is one caller", gateOff,
			req("@"), req(""), true},
		{"a request built for a caller: its last hop is the peer", gateOff,
			req("", "X-Forwarded-For", "198.51.100.7, 192.0.2.1"), req("192.0.2.1:1", "X-Forwarded-For", "198.51.100.8"), true},
		{"requests built for two callers", gateOff,
			req("", "X-Forwarded-For", "192.0.2.1"), req("", "X-Forwarded-For", "192.0.2.2"), false},
		{"credentials and an address never collide", gateOn,
			req("192.0.2.1:1", "Authorization", "x"), req("192.0.2.1:1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.res.Of(tt.a) == tt.res.Of(tt.b); got != tt.same {
				t.Errorf("Of(a) == Of(b) = %v, want %v", got, tt.same)
			}
		})
	}
}

// TestOfBound: a request made under a context WithRequest bound is judged
// by the client's request (the proxy's outbound one appends the peer to
// X-Forwarded-For and has no RemoteAddr of its own).
func TestOfBound(t *testing.T) {
	t.Parallel()
	in := req("192.0.2.1:1", "X-Forwarded-For", "198.51.100.7")
	out := req("", "X-Forwarded-For", "198.51.100.7, 192.0.2.1")
	out = out.WithContext(WithRequest(context.Background(), in))
	if gateOff.Of(out) != gateOff.Of(in) {
		t.Error("Of(outbound) differs from Of(the client's request) bound to its context")
	}
	if gateOff.Of(out) == gateOff.Of(req("192.0.2.2:1")) {
		t.Error("Of(outbound) equals another peer's")
	}
	var nilRes *Resolver
	if nilRes.Of(in) != gateOff.Of(in) || !nilRes.Of(in).ByAddress() {
		t.Error("a nil Resolver is not the zero Resolver")
	}
	if gateOn.Of(req("192.0.2.1:1", "Cookie", "a")).ByAddress() {
		t.Error("a caller with credentials is known by its address")
	}
}

// FuzzOf: whatever forwarding headers a client sends, Of does not panic,
// and from an untrusted peer they change nothing.
func FuzzOf(f *testing.F) {
	for _, s := range []string{"198.51.100.7", "a, b, 10.0.0.1", `for="[2001:db8::1]:80";by=x`, "for=unknown, for=_hidden", "[::1", "\"", ",,,", "fe80::1%eth0"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, xff, fwd string) {
		r := req("10.1.1.1:1", "X-Forwarded-For", xff, "Forwarded", fwd)
		_ = behind.Of(r)
		r.RemoteAddr = "192.0.2.1:1"
		if behind.Of(r) != behind.Of(req("192.0.2.1:1")) {
			t.Errorf("forwarding headers %q, %q from an untrusted peer changed the caller", xff, fwd)
		}
	})
}

// TestBindIsWithRequest: a context Bind made judges as WithRequest's does,
// answers every other key as the context it was bound to, and ends with
// it (so that what waits on it below, context.AfterFunc included, sees
// the client leave).
func TestBindIsWithRequest(t *testing.T) {
	t.Parallel()
	type key struct{}
	in := req("192.0.2.1:1", "X-Forwarded-For", "198.51.100.7")
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	var b Bound
	// An outbound request that by itself names no caller: only the bound
	// request can make it the client's.
	out := req("").WithContext(Bind(&b, parent, in))
	if gateOff.Of(out) != gateOff.Of(in) || gateOff.Of(out) == gateOff.Of(req("")) {
		t.Error("Of(outbound) under Bind differs from Of(the client's request)")
	}
	if v := out.Context().Value(key{}); v != "v" {
		t.Errorf("another key under Bind: %v, want the parent's value", v)
	}
	fired := make(chan struct{})
	context.AfterFunc(out.Context(), func() { close(fired) })
	cancel()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the parent did not reach an AfterFunc on the bound context")
	}
	if out.Context().Err() == nil {
		t.Error("the bound context did not end with its parent")
	}
}

// methodCtx is a context with an AfterFunc method of its own, which the
// context package allows a parent to have; it records what it was given.
type methodCtx struct {
	context.Context
	got []func()
}

func (m *methodCtx) AfterFunc(f func()) func() bool {
	m.got = append(m.got, f)
	return func() bool { return true }
}

// A Bound passes AfterFunc on to the bound context's own method, and on
// any other context does what context.AfterFunc does.
func TestBoundAfterFunc(t *testing.T) {
	var b Bound
	m := &methodCtx{Context: context.Background()}
	Bind(&b, m, req("192.0.2.1:1"))
	ran := false
	b.AfterFunc(func() { ran = true })
	if len(m.got) != 1 {
		t.Fatalf("%d functions reached the bound context's AfterFunc, want 1", len(m.got))
	}
	m.got[0]()
	if !ran {
		t.Error("the function passed on is not the one given")
	}
	ctx, cancel := context.WithCancel(context.Background())
	Bind(&b, ctx, req("192.0.2.1:1"))
	done := make(chan struct{})
	stop := b.AfterFunc(func() { close(done) })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the function did not run when the bound context ended")
	}
	if stop() {
		t.Error("stop after the function ran: true, want false")
	}
}

// slotMethodCtx is a context that registers by slot; it records what it
// was given and what was stopped.
type slotMethodCtx struct {
	context.Context
	got     []func()
	stopped []int
}

func (m *slotMethodCtx) AfterFuncSlot(f func()) (int, bool) {
	m.got = append(m.got, f)
	return len(m.got) + 6, true // a slot of its own numbering
}

func (m *slotMethodCtx) StopSlot(slot int) bool {
	m.stopped = append(m.stopped, slot)
	return slot == 7
}

// A Bound passes AfterFuncSlot and StopSlot on to the bound context's own
// methods, slot and verdicts as they are; on a context without them it
// registers nothing and says so.
func TestBoundAfterFuncSlot(t *testing.T) {
	var b Bound
	m := &slotMethodCtx{Context: context.Background()}
	Bind(&b, m, req("192.0.2.1:1"))
	ran := false
	slot, ok := b.AfterFuncSlot(func() { ran = true })
	if !ok || slot != 7 || len(m.got) != 1 {
		t.Fatalf("AfterFuncSlot: slot %d, %v, %d functions passed on; want 7, true, 1", slot, ok, len(m.got))
	}
	m.got[0]()
	if !ran {
		t.Error("the function passed on is not the one given")
	}
	if !b.StopSlot(7) || b.StopSlot(8) || len(m.stopped) != 2 || m.stopped[0] != 7 || m.stopped[1] != 8 {
		t.Errorf("StopSlot passed on %v, want [7 8] with their verdicts", m.stopped)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	Bind(&b, ctx, req("192.0.2.1:1"))
	if _, ok := b.AfterFuncSlot(func() { t.Error("registered on a context without slots, and ran") }); ok {
		t.Error("AfterFuncSlot on a context without slots: ok")
	}
	if b.StopSlot(0) {
		t.Error("StopSlot on a context without slots: true")
	}
	cancel()
	time.Sleep(20 * time.Millisecond) // a function wrongly registered runs by then
}
