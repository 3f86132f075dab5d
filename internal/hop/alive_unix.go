//go:build unix

package hop

import (
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/rawsock"
)

// alive reports whether a pooled connection is still open and quiet: a
// non-blocking peek finds neither end of stream nor unexpected bytes. It
// costs one system call and catches an upstream that closed (or restarted)
// while the connection sat idle, which net/http learns from the read
// goroutine this package does without.
func alive(nc net.Conn) bool { return newPeeker(nc).alive() }

// peeker does alive's peek on one connection. A connection keeps its
// peeker for life, so a reuse allocates nothing: the raw connection and
// the callback are made once, at dial.
type peeker struct {
	rc   syscall.RawConn // nil: the connection has no descriptor to peek at
	bad  bool            // the descriptor could not be had: never alive
	read func(fd uintptr) bool
	buf  [1]byte
	err  error
}

func newPeeker(nc net.Conn) *peeker {
	pk := &peeker{}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return pk
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		pk.bad = true
		return pk
	}
	pk.rc = rc
	pk.read = func(fd uintptr) bool {
		_, pk.err = rawsock.Peek(fd, pk.buf[:])
		return true
	}
	return pk
}

func (pk *peeker) alive() bool {
	switch {
	case pk.bad:
		return false
	case pk.rc == nil:
		return true
	}
	pk.err = nil
	if err := pk.rc.Read(pk.read); err != nil {
		return false
	}
	switch perr := pk.err; {
	case errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK):
		return true // nothing to read: open and quiet
	case perr != nil:
		return false
	default:
		return false // n == 0 is end of stream; n > 0 is a stray byte
	}
}

// watch watches the connection, while a request that goes out in several
// writes is written on nc, for the upstream's end (a close or a reset) or
// an answer that refuses the request (answerScan), and stops the write at
// the first, by a write deadline in the past, so that the round trip reads
// what the upstream said where it would wait for the upstream to read a
// body it may never read: RFC 9112, 9.6, a client sending a body watches
// for a response that says the server does not want the body. A refusal
// stops the write whether or not it says the connection closes: one that
// does not may come from an upstream that reads on, or from one that has
// stopped reading for good, and the connection, the request not written
// whole, is not reused either way. Interim replies (100 Continue, 103
// Early Hints) and a 2xx answer (an upstream may answer while it reads
// on) leave the write to go on: behind a 2xx, on its own goroutine while
// the caller reads the reply (writeRequest), since an upstream that
// streams its reply as it reads would otherwise wait on the caller's read
// while the caller waits on its write.
//
// The watch reads what the upstream sends, at most MaxResponseHead, and
// leaves it in lim.early for the reply's reader, which reads it before the
// socket, and judges each piece once (answerScan): a peek at everything
// sent so far at each piece of it cost work in the answer's length times
// its pieces, and an answer sent a byte at a time, left unread, stopped
// coming after some KiB (seen on Linux), before its head was whole. A
// reply the watch read came while the request was still going out, well
// within ResponseHeaderTimeout, and is taken however late it is read.
//
// stop ends the watch once the write is over and reports whether it
// stopped anything; it leaves nc with no read or write deadline. ended is
// closed when the watch has ended by itself on an answer that stops
// nothing (or one past the bound), for the reply's reader to read at once
// while the write goes on behind it (writeRequest). One goroutine a call,
// besides the write's: only for requests net/http's writer streams (a
// body over maxInline or of unknown length). It stops a write the socket
// holds up, not a read of the request's body: a body that waits in its
// Read (a pipe) holds the round trip, past the caller's cancellation too,
// until the Read returns, where net/http's Transport leaves its writer
// behind. The sidecar's calls carry their bodies in memory.
func (pk *peeker) watch(nc net.Conn, lim *headLimit) (stop func() (saw bool), ended <-chan struct{}) {
	if pk.rc == nil || pk.bad {
		return func() bool { return false }, nil
	}
	done := make(chan bool, 1)
	end := make(chan struct{})
	go func() {
		buf := make([]byte, 0, watchWindow)
		var scan answerScan
		saw := false
		err := pk.rc.Read(func(fd uintptr) bool {
			for {
				if len(buf) == cap(buf) {
					if cap(buf) >= MaxResponseHead {
						return true // past the bound on a reply's head: the watch ends
					}
					// Long interim replies or a long head: room for more,
					// up to the bound.
					looked(len(buf))
					buf = append(make([]byte, 0, min(2*cap(buf), MaxResponseHead)), buf...)
				}
				n, rerr := syscall.Read(int(fd), buf[len(buf):cap(buf)])
				switch {
				case rerr == syscall.EINTR:
					continue
				case errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK):
					return false // nothing yet: wait for it
				case rerr != nil || n <= 0: // a reset, or the upstream's end
					saw = true
					return true
				}
				looked(n)
				buf = buf[:len(buf)+n]
				switch scan.judge(buf) {
				case answerMore:
					continue // more may have come already
				case answerRefuse:
					saw = true
				}
				return true // a head that is no refusal: the watch ends
			}
		})
		saw = saw && err == nil // not when the stop's deadline ended the wait
		if saw {
			nc.SetWriteDeadline(aLongTimeAgo)
		}
		if len(buf) > 0 {
			lim.early = buf
		}
		done <- saw
		if !saw && err == nil {
			close(end)
		}
	}()
	return func() bool {
		nc.SetReadDeadline(aLongTimeAgo) // wakes the watch if it still waits
		saw := <-done
		nc.SetReadDeadline(time.Time{})
		if saw {
			// An answer that came after the write was over (a quick
			// one) stopped no write, and must not stop the next.
			nc.SetWriteDeadline(time.Time{})
		}
		return saw
	}, end
}
