package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// errProcNet is wrapped by every line of /proc/net/tcp that cannot be read.
var errProcNet = errors.New("soak: /proc/net/tcp syntax")

// tcpEstablished is the kernel's TCP_ESTABLISHED state number, as printed
// (in hex) in the st column of /proc/net/tcp.
const tcpEstablished = 0x01

// TCPConn is one row of /proc/net/tcp.
type TCPConn struct {
	LocalPort, RemotePort int
	State                 int
}

// ParseProcNetTCP reads /proc/net/tcp (proc(5)): a header line, then one
// socket per line with local and remote address as HEXIP:HEXPORT, the state
// in hex and the inode in the tenth column. It returns the sockets by inode.
func ParseProcNetTCP(r io.Reader) (map[uint64]TCPConn, error) {
	out := map[uint64]TCPConn{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if n == 1 || len(f) == 0 {
			continue // header
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("%w: line %d has %d fields", errProcNet, n, len(f))
		}
		lp, err1 := hexPort(f[1])
		rp, err2 := hexPort(f[2])
		st, err3 := strconv.ParseUint(f[3], 16, 8)
		ino, err4 := strconv.ParseUint(f[9], 10, 64)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", errProcNet, n, err)
		}
		out[ino] = TCPConn{LocalPort: lp, RemotePort: rp, State: int(st)}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read /proc/net/tcp: %w", err)
	}
	return out, nil
}

func hexPort(addr string) (int, error) {
	_, p, ok := strings.Cut(addr, ":")
	if !ok {
		return 0, fmt.Errorf("address %q has no port", addr)
	}
	v, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return 0, fmt.Errorf("port of %q: %w", addr, err)
	}
	return int(v), nil
}

// Sockets counts a process's established TCP connections by peer.
type Sockets struct {
	// Upstream are connections to the upstream's port: the sidecar's
	// keep-alive pool (and requests in flight).
	Upstream int `json:"upstream"`
	// Inbound are connections accepted on the sidecar's listeners.
	Inbound int `json:"inbound"`
	// Other is every other established connection.
	Other int `json:"other"`
}

// CountSockets classifies the established connections among conns that
// belong to the socket inodes in inodes.
func CountSockets(conns map[uint64]TCPConn, inodes []uint64, upstreamPort int, listenPorts ...int) Sockets {
	var s Sockets
	for _, ino := range inodes {
		c, ok := conns[ino]
		if !ok || c.State != tcpEstablished {
			continue
		}
		switch {
		case c.RemotePort == upstreamPort:
			s.Upstream++
		case containsInt(listenPorts, c.LocalPort):
			s.Inbound++
		default:
			s.Other++
		}
	}
	return s
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// ReadSockets reads the socket inodes of pid from /proc/PID/fd and its
// network namespace's /proc/PID/net/tcp, and counts them (Linux only).
func ReadSockets(pid, upstreamPort int, listenPorts ...int) (Sockets, error) {
	dir := fmt.Sprintf("/proc/%d", pid)
	links, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return Sockets{}, fmt.Errorf("read fds of %d: %w", pid, err)
	}
	var inodes []uint64
	for _, l := range links {
		target, err := os.Readlink(filepath.Join(dir, "fd", l.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if v, ok := strings.CutPrefix(target, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64); err == nil {
				inodes = append(inodes, ino)
			}
		}
	}
	f, err := os.Open(filepath.Join(dir, "net", "tcp"))
	if err != nil {
		return Sockets{}, fmt.Errorf("read sockets of %d: %w", pid, err)
	}
	defer f.Close()
	conns, err := ParseProcNetTCP(f)
	if err != nil {
		return Sockets{}, err
	}
	return CountSockets(conns, inodes, upstreamPort, listenPorts...), nil
}
