package rewrite

// Observer watches the messages of one upstream reply while the relay
// passes its bytes on untouched, without holding them (the proxy's tap):
// the JSON body is one message; in an SSE reply each event's data (its
// data lines joined by "\n") is one. It must not block and cannot change the reply.
type Observer interface {
	// Write takes the next bytes of the current message; it never fails.
	Write(p []byte) (int, error)
	// EndMessage says the current message ended whole: the body's clean
	// end, or an SSE event's blank line.
	EndMessage()
	// Done says the reply ended: clean when the body reached its end
	// (io.EOF), false when it was cut, failed or closed early. Called once.
	Done(clean bool)
}
