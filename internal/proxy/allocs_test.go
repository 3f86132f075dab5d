package proxy_test

import (
	"net/http"
	"testing"
)

// maxForwardAllocs bounds the heap allocations the sidecar adds to one
// forwarded tools/call: its handler, its net/http server and its upstream
// round trip. It was 89 before the forwarding-cost work, 65 after the
// first steps and is 47 now (52–53 under -race, raceAllocs), most of them
// net/http's server's; the sidecar's own code makes about 14 of them. The
// count is the same from run to run, so the bound is exact: any step
// undone (each saved one allocation or more) fails it (without -race).
const maxForwardAllocs = 47 + raceAllocs

// TestForwardAllocations counts, in process, the allocations of a small
// tools/call through the sidecar against the same call made directly, and
// bounds the difference. Counts, not times: nothing here depends on how
// fast the machine is.
func TestForwardAllocations(t *testing.T) {
	up, _, side := forwardRig(t)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	call := func(target string) func() {
		return func() {
			if status := postOnce(t, client, target, body); status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
		}
	}
	// The fewest of three measures each: a stray allocation of the
	// runtime or of a pool refill lands in one of them, not in all.
	least := func(f func()) float64 {
		f() // warm: connections dialled, pools filled
		m := testing.AllocsPerRun(200, f)
		for range 2 {
			m = min(m, testing.AllocsPerRun(200, f))
		}
		return m
	}
	direct := least(call(up.URL + "/mcp"))
	through := least(call(side.URL + "/mcp"))
	added := through - direct
	t.Logf("allocations per request: direct %.0f, through the sidecar %.0f, added %.0f", direct, through, added)
	if added > maxForwardAllocs {
		t.Errorf("the sidecar adds %.0f allocations per forwarded tools/call, want at most %d", added, maxForwardAllocs)
	}
}
