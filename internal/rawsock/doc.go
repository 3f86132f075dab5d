// Package rawsock reads and writes a connection's socket as net.Conn does,
// and a pipe as *os.File does, through the runtime's poller, with the same
// deadlines, Close and errors, but issues each read and write as a raw
// system call: the goroutine never enters the scheduler's system-call
// state.
//
// Why: a goroutine entering a system call after the process sat idle wakes
// the runtime's monitor thread (sysmon), which then polls every 20 µs until
// the process is idle again and goes back to sleep. For a hop that waits on
// its upstream between every read and write, that is several thread sleeps
// and wake-ups per forwarded request, and on a virtual machine each costs
// more than the read or write itself. A read or write of a non-blocking
// socket or pipe never blocks (it fails with EAGAIN, and the poller waits),
// so the scheduler has nothing to hand over while it runs.
//
// It owns the raw calls (socket reads and writes, pipe reads and writes,
// hop's one-byte peek), their retry loops, and the wrappers that put them
// behind io.Reader and io.Writer, for sockets (NewReader, NewWriter) and
// pipes (NewFileReader, NewFileWriter), which differ in the calls they make
// and the errors they shape. It does not own buffering, deadlines (set them
// on the net.Conn or the *os.File) or closing. Only stream sockets, and
// pipes and FIFOs the poller watches, on Linux (but 386) take the raw path:
// anything else (TLS, net.Pipe, a wrapped connection, a regular file,
// standard output, another system) is returned as it is.
package rawsock
