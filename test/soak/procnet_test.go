package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// procNetSample is /proc/net/tcp with a listener on 8080 (0x1F90), a
// connection from it to a client, one to an upstream on 3000 (0x0BB8) and
// one in TIME_WAIT (06) to the upstream.
const procNetSample = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 101 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 102 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:A0B2 0100007F:0BB8 01 00000000:00000000 00:00000000 00000000  1000        0 103 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:A0B3 0100007F:0BB8 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
`

func TestParseProcNetTCP(t *testing.T) {
	t.Parallel()
	got, err := ParseProcNetTCP(strings.NewReader(procNetSample))
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]TCPConn{
		101: {LocalPort: 8080, RemotePort: 0, State: 0x0A},
		102: {LocalPort: 8080, RemotePort: 54321, State: tcpEstablished},
		103: {LocalPort: 41138, RemotePort: 3000, State: tcpEstablished},
		0:   {LocalPort: 41139, RemotePort: 3000, State: 6},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseProcNetTCP (-want +got):\n%s", diff)
	}
	if s := CountSockets(got, []uint64{101, 102, 103, 999}, 3000, 8080); s != (Sockets{Upstream: 1, Inbound: 1}) {
		t.Errorf("CountSockets = %+v, want 1 upstream, 1 inbound (the listener and an unknown inode not counted)", s)
	}
}

func TestParseProcNetTCPBroken(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"short line":   "header\n   0: 0100007F:1F90 00000000:0000 0A\n",
		"no port":      "header\n   0: 0100007F 00000000:0000 0A 0 0 0 0 0 101\n",
		"bad state":    "header\n   0: 0100007F:1F90 00000000:0000 ZZ 0 0 0 0 0 101\n",
		"bad inode":    "header\n   0: 0100007F:1F90 00000000:0000 0A 0 0 0 0 0 x\n",
		"port too big": "header\n   0: 0100007F:1FFFF 00000000:0000 0A 0 0 0 0 0 1\n",
	}
	for name, in := range tests {
		if _, err := ParseProcNetTCP(strings.NewReader(in)); !errors.Is(err, errProcNet) {
			t.Errorf("%s: ParseProcNetTCP error = %v, want errProcNet", name, err)
		}
	}
}

// TestReadSocketsLive counts this process's own loopback connections: one
// dialled to a "upstream" listener (counted from the dialling side) and one
// accepted on a "listen" port.
func TestReadSocketsLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	in, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	c1, err := net.Dial("tcp", up.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := net.Dial("tcp", in.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	a1, err := up.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close()
	a2, err := in.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	time.Sleep(10 * time.Millisecond)
	got, err := ReadSockets(os.Getpid(), port(up.Addr().String()), port(in.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	// Upstream: c1 (remote port is up's). Inbound: a2 (local port is in's).
	// Other: a1 (accepted on up) and c2 (dialled to in).
	if want := (Sockets{Upstream: 1, Inbound: 1, Other: 2}); got != want {
		t.Errorf("ReadSockets = %+v, want %+v", got, want)
	}
}

// FuzzParseProcNetTCP: any text parses or fails with errProcNet.
func FuzzParseProcNetTCP(f *testing.F) {
	f.Add(procNetSample)
	f.Add("header\n   0: 0100007F:1F90 00000000:0000 0A\n")
	f.Fuzz(func(t *testing.T, in string) {
		if _, err := ParseProcNetTCP(strings.NewReader(in)); err != nil && !errors.Is(err, errProcNet) && !errors.Is(err, bufio.ErrTooLong) {
			t.Errorf("ParseProcNetTCP error = %v, want errProcNet", err)
		}
	})
}
