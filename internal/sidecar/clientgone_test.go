package sidecar_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// End to end: a client sends a call and one byte more in
// the same segment, then leaves. Under net/http's server the upstream's
// request is canceled; the sidecar must not keep the upstream call (or a
// quiet stream) for a client that is gone.
func TestClientGoneAfterPipelinedByteEndsUpstreamCall(t *testing.T) {
	for _, server := range []string{"net/http", "h1"} {
		t.Run(server, func(t *testing.T) {
			saw := make(chan bool, 1)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if !strings.Contains(string(b), "tools/call") {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
					return
				}
				select {
				case <-r.Context().Done():
					saw <- true
				case <-time.After(10 * time.Second): // a hang guard: a loaded machine may be slow to see the client go
					saw <- false
				}
			}))
			t.Cleanup(up.Close)
			s := sidecartest.Start(t, up.URL+"/mcp", sidecartest.Options{Config: func(c *config.Config) {
				c.AuthGate = "none"
				if server == "net/http" {
					c.HTTPServer = "net/http"
				}
			}})
			c, err := net.Dial("tcp", strings.TrimPrefix(s.Server.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}`
			io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+strings.TrimPrefix(s.Server.URL, "http://")+
				"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: "+
				strconv.Itoa(len(body))+"\r\n\r\n"+body+"G")
			time.Sleep(300 * time.Millisecond)
			c.Close()
			select {
			case canceled := <-saw:
				if !canceled {
					t.Fatal("the upstream call outlived its client by 10 s")
				}
			case <-time.After(time.Minute):
				t.Fatal("the call never reached the upstream")
			}
		})
	}
}
