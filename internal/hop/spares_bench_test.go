package hop

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkNewCallerBurst: each iteration is a new caller (a new
// Authorization value) sending three requests at once, as a first
// skills/list page's discovery does, to a net/http upstream on loopback;
// with Spares they go out on connections dialled ahead instead of three
// dials on the critical path. Back to back, the refill's dials compete
// with the next burst; spaced, each burst starts once the refill is done
// (the time between bursts is not counted), which is the latency a new
// caller sees when new callers do not arrive all at once.
func BenchmarkNewCallerBurst(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"resources":[]}}`)
	}))
	defer up.Close()
	srv := up.URL
	for _, spaced := range []bool{false, true} {
		for _, spares := range []int{0, 4} {
			name := fmt.Sprintf("back-to-back/spares=%d", spares)
			if spaced {
				name = fmt.Sprintf("spaced/spares=%d", spares)
			}
			b.Run(name, func(b *testing.B) {
				tr := &Transport{Spares: spares, Partition: []string{"Authorization"}, MaxIdle: 64}
				defer tr.CloseIdleConnections()
				burst(b, tr, srv, "Bearer warm-up")
				b.ResetTimer()
				for i := range b.N {
					if spaced {
						b.StopTimer()
						for tr.filling() {
							time.Sleep(50 * time.Microsecond)
						}
						b.StartTimer()
					}
					burst(b, tr, srv, fmt.Sprint("Bearer ", i))
				}
			})
		}
	}
}

func burst(b *testing.B, tr *Transport, url, cred string) {
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`))
			req.Header.Set("Authorization", cred)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
}
