package upstreamfiles_test

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// firstPageCallers numbers the benchmark's new callers across its runs.
var firstPageCallers atomic.Int64

// BenchmarkFirstPage measures a new caller's first skills/list page (a new
// bearer token each time: a new authorization context, so the discovery's
// two listings go out and the first resources/list page is the gate's
// verdict) against the same caller's warm page, in process, at a stateless
// go-sdk upstream serving none of the 100-skill plugin. Its CPU profile
// (-cpuprofile) shows what a first page costs the sidecar beyond a warm
// one; skillsbench's firstpage scenario measures the same over sockets
// between processes.
func BenchmarkFirstPage(b *testing.B) {
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("s%03d", i)
	}
	snap := discoveryPlugin(b, names, 4)
	upURL, _ := startGuessUpstream(b, snap, nil)
	side := guessSidecar(b, upURL, snap, true)
	list := func(token string) {
		if _, err := callAs(side, map[string]string{"Authorization": "Bearer " + token}, "skills/list", nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("new caller", func(b *testing.B) {
		for b.Loop() {
			list(fmt.Sprintf("new-%d", firstPageCallers.Add(1)))
		}
	})
	b.Run("warm", func(b *testing.B) {
		list("warm")
		for b.Loop() {
			list("warm")
		}
	})
}
