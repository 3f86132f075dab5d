package rewrite

// Observer watches the messages of one upstream reply while the relay
// passes its bytes on untouched, without holding them (the proxy's tap):
// the JSON body is one message; in an SSE reply each event's data (its
// data lines joined by "\n") is one. It must not block and cannot change the reply.
type Observer interface {
	// Write takes the next bytes of the current message; it never fails.
	Write(p []byte) (int, error)
	// EndMessage says the current message ended whole: the body's clean
	// end, or an SSE event's blank line. d says which clients act on it.
	EndMessage(d Dispatch)
	// Done says the reply ended: clean when the body reached its end
	// (io.EOF), false when it was cut, failed or closed early, or framed
	// so that clients could read it differently. Called once.
	Done(clean bool)
}

// Dispatch says which clients take a message an Observer saw as a
// JSON-RPC message. Clients ignore an SSE event whose type is neither
// absent nor "message" (the streamable HTTP transport sends only those),
// and they read an event's type differently in corner cases: a reader
// that drops the stream's leading byte order mark sees an "event:" line
// that one that keeps it does not, and go-sdk trims white space around
// the type where the SSE rules drop one leading space.
type Dispatch uint8

const (
	// DispatchAll: every client reads the message.
	DispatchAll Dispatch = iota
	// DispatchNone: no client does (an event of another type).
	DispatchNone
	// DispatchSome: some clients read it and others ignore it.
	DispatchSome
)
