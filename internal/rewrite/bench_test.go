package rewrite

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// BenchmarkReader reads a 100-event stream: notifications with id: lines,
// as a busy POST or GET stream carries them.
func BenchmarkReader(b *testing.B) {
	var stream bytes.Buffer
	for i := range 100 {
		fmt.Fprintf(&stream, "id: %d\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":%d,\"total\":100}}\n\n", i, i)
	}
	in := stream.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(in), 0)
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

const benchInitialize = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"logging":{},"prompts":{"listChanged":true},"tools":{"listChanged":true},"completions":{}},"serverInfo":{"name":"example-upstream","title":"Example upstream","version":"1.4.2"},"instructions":"This server exposes the billing tools. Call list_invoices before refund_invoice and confirm amounts with the user."}}`

// BenchmarkSpliceDeclaration splices into a typical initialize reply.
func BenchmarkSpliceDeclaration(b *testing.B) {
	msg := []byte(benchInitialize)
	d := SkillsSidecar()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, changed, err := SpliceDeclaration(msg, d); err != nil || !changed {
			b.Fatal(changed, err)
		}
	}
}

// BenchmarkLooksLikeHandshakeResult is the per-event check on GET streams.
func BenchmarkLooksLikeHandshakeResult(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":50,"total":100}}`)
	b.ReportAllocs()
	for b.Loop() {
		if LooksLikeHandshakeResult(msg) {
			b.Fatal("a notification looks like a handshake")
		}
	}
}

// BenchmarkParseMessage parses a small tools/call request.
func BenchmarkParseMessage(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"refund_invoice","arguments":{"invoice":"INV-1009","amount":12.5}}}`)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseMessage(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetKey replaces nextCursor in a resources/list reply.
func BenchmarkSetKey(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":3,"result":{"resources":[{"uri":"file:///a","name":"a"},{"uri":"file:///b","name":"b"}],"nextCursor":"abc"}}`)
	path := []string{"result", "nextCursor"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SetKey(msg, path, []byte(`"def"`)); err != nil {
			b.Fatal(err)
		}
	}
}
