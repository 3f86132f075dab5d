package stdio

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkEcho: one tools/call echo on the go-sdk stdio server (the test
// server's gosdk mode), by a go-sdk client on the process's pipes directly,
// and through the Transport: on a legacy session's own process, and on the
// shared 2026-07-28 process with parallel callers. The difference between
// direct and a Transport row is what the adapter adds (HTTP excluded: the
// Transport is called as the sidecar's proxy calls it).
//
//	go test ./internal/stdio -run '^$' -bench Echo -benchtime 2000x
func BenchmarkEcho(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		argv, env := testCommand(b, "gosdk")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}
		b.ResetTimer()
		for range b.N {
			if _, err := cs.CallTool(context.Background(), params); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("legacy-session", func(b *testing.B) {
		tr := benchTransport(b)
		resp := benchPost(b, tr, "", initReq)
		sid := resp.Header.Get("Mcp-Session-Id")
		b.ResetTimer()
		for range b.N {
			benchPost(b, tr, sid, toolCall(1, "echo", map[string]any{"text": "x"}))
		}
	})
	b.Run("modern-shared-parallel", func(b *testing.B) {
		tr := benchTransport(b)
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		benchPost(b, tr, "", body) // the shared process started
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				benchPost(b, tr, "", body)
			}
		})
	})
}

func benchTransport(b *testing.B) *Transport {
	argv, env := testCommand(b, "gosdk")
	tr := &Transport{Command: argv, Env: env}
	ctx, cancel := context.WithCancel(context.Background())
	tr.Start(ctx)
	b.Cleanup(func() {
		cancel()
		_ = tr.Close()
	})
	for !tr.Ready() {
		select {
		case <-tr.probed:
		case <-ctx.Done():
		}
	}
	return tr
}

func benchPost(b *testing.B, tr *Transport, sid, body string) *http.Response {
	req, _ := http.NewRequest("POST", "http://stdio.invalid/mcp", strings.NewReader(body))
	req.Header.Set("Accept", "application/json")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("%s: %v %v", body, resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
