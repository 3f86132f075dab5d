package proxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const toolsCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`

// rawPost sends body over a fresh connection with the given extra header
// lines and returns the reply as net/http reads it, with its body read whole.
func rawPost(t *testing.T, u, body string, lines ...string) (*http.Response, []byte, error) {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimSuffix(u, "/mcp"), "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
	for _, l := range lines {
		req += l + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestHopByHopHeadersStayOnTheirHop(t *testing.T) {
	t.Parallel()
	var got http.Header
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Connection", "X-Up-Hop")
		w.Header().Set("X-Up-Hop", "dropped")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Up-End", "kept")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	resp, _, err := rawPost(t, u, toolsCall,
		"Connection: keep-alive, X-Client-Hop", "X-Client-Hop: dropped", "Keep-Alive: timeout=5",
		"Upgrade: websocket", "Proxy-Authorization: Basic eA==", "Te: trailers, deflate", "X-Client-End: kept")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"X-Client-Hop", "Keep-Alive", "Upgrade", "Proxy-Authorization"} {
		if v, ok := got[k]; ok {
			t.Errorf("upstream saw hop-by-hop %s: %q", k, v)
		}
	}
	if g := got.Get("X-Client-End"); g != "kept" {
		t.Errorf("upstream saw X-Client-End %q, want kept", g)
	}
	if g := got.Get("Te"); g != "trailers" {
		t.Errorf("upstream saw Te %q, want trailers (the one value a proxy passes)", g)
	}
	for _, k := range []string{"X-Up-Hop", "Keep-Alive"} {
		if v, ok := resp.Header[k]; ok {
			t.Errorf("client saw hop-by-hop %s: %q", k, v)
		}
	}
	if g := resp.Header.Get("X-Up-End"); g != "kept" {
		t.Errorf("client saw X-Up-End %q, want kept", g)
	}
}

func TestForwardedHeaders(t *testing.T) {
	t.Parallel()
	var got http.Header
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
	if _, _, err := rawPost(t, u, toolsCall, "X-Forwarded-For: 203.0.113.7", "Forwarded: for=198.51.100.1"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"X-Forwarded-For":   "203.0.113.7, 127.0.0.1",
		"X-Forwarded-Host":  host,
		"X-Forwarded-Proto": "http",
		"Forwarded":         "",
		"User-Agent":        "", // the client sent none; none is made up
	}
	for k, v := range want {
		if g := got.Get(k); g != v {
			t.Errorf("upstream saw %s %q, want %q", k, g, v)
		}
	}
}

func TestTrailersPass(t *testing.T) {
	t.Parallel()
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Announced")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "body")
		w.Header().Set("X-Announced", "a")
		w.Header().Set(http.TrailerPrefix+"X-Late", "b")
	})
	resp, b, err := rawPost(t, u, toolsCall, "Te: trailers")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "body" {
		t.Fatalf("body %q, want body", b)
	}
	if g, h := resp.Trailer.Get("X-Announced"), resp.Trailer.Get("X-Late"); g != "a" || h != "b" {
		t.Fatalf("trailers X-Announced %q X-Late %q, want a and b (%v)", g, h, resp.Trailer)
	}
}

// TestChunkedJSONLeavesWithItsLength: go-sdk sends JSON replies chunked; a
// small one goes to the client whole with a Content-Length, a large one
// streams through unchanged.
func TestChunkedJSONLeavesWithItsLength(t *testing.T) {
	t.Parallel()
	for _, size := range []int{100, 200 << 10} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			t.Parallel()
			reply := `{"jsonrpc":"2.0","id":1,"result":{"pad":"` + strings.Repeat("x", size) + `"}}`
			u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for i := 0; i < len(reply); i += 1000 {
					io.WriteString(w, reply[i:min(i+1000, len(reply))])
					w.(http.Flusher).Flush() // chunked, in many chunks
				}
			})
			resp, b, err := rawPost(t, u, toolsCall)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != reply {
				t.Fatalf("reply of %d bytes came as %d bytes", len(reply), len(b))
			}
			small := size < 32<<10
			if got := resp.ContentLength == int64(len(reply)); got != small {
				t.Fatalf("%d-byte reply: Content-Length %d, transfer %v; want a length only for a reply within one buffer",
					len(reply), resp.ContentLength, resp.TransferEncoding)
			}
		})
	}
}

// TestQuietStreamGetsItsHeaders: an SSE reply whose first event is slow to
// come still gets its headers to the client at once.
func TestQuietStreamGetsItsHeaders(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	})
	defer close(release)
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(toolsCall))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				err = errors.New("Content-Type " + ct)
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no response headers while the upstream held its first event")
	}
}

// TestUpstreamCutMidBody: a reply the upstream breaks off must reach the
// client broken, not as a clean, shorter reply.
func TestUpstreamCutMidBody(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"text/event-stream", "application/json", "text/plain"} {
		t.Run(ct, func(t *testing.T) {
			t.Parallel()
			u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ct)
				if ct == "text/plain" {
					w.Header().Set("Content-Length", "1000") // the rest chunked
				}
				io.WriteString(w, "data: partial")
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			})
			_, b, err := rawPost(t, u, toolsCall)
			if err == nil {
				t.Fatalf("client read %q and a clean end; want an error (no reply, or a cut one)", b)
			}
		})
	}
}

// TestStreamBurstsAndLulls: a stream alternating events far larger than
// the buffer a quiet stream waits with and small ones arrives byte for byte.
func TestStreamBurstsAndLulls(t *testing.T) {
	t.Parallel()
	var want strings.Builder
	var events []string
	for i, size := range []int{10, 100 << 10, 3, 2048, 2047, 70 << 10, 1} {
		ev := "id: " + strconv.Itoa(i) + "\ndata: " + strings.Repeat(string(rune('a'+i)), size) + "\n\n"
		events = append(events, ev)
		want.WriteString(ev)
	}
	u := rawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond) // let the sidecar's reads see each event on its own
		}
	})
	_, b, err := rawPost(t, u, toolsCall)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want.String() {
		t.Fatalf("stream of %d bytes arrived as %d bytes, or changed", want.Len(), len(b))
	}
}
