package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http/httputil"
	"testing"
	"testing/iotest"
)

// The chunked decoder is held to net/http's (httputil.NewChunkedReader):
// the same data, the same verdict (the body ends well, ends short, or is
// refused), and the same bytes left after the last chunk's size line.

type chunkOutcome struct {
	Data              string
	OK, UnexpectedEOF bool
	Rest              string
}

func decode(data []byte, trickle bool, mine bool) chunkOutcome {
	var src io.Reader = bytes.NewReader(data)
	if trickle {
		src = iotest.OneByteReader(src)
	}
	br := bufio.NewReaderSize(src, 4<<10)
	var r io.Reader
	if mine {
		r = &chunked{br: br}
	} else {
		r = httputil.NewChunkedReader(br)
	}
	got, err := io.ReadAll(r)
	o := chunkOutcome{Data: string(got), OK: err == nil, UnexpectedEOF: errors.Is(err, io.ErrUnexpectedEOF)}
	if o.OK {
		rest, _ := io.ReadAll(br)
		o.Rest = string(rest)
	}
	return o
}

var chunkCases = []string{
	"5\r\nhello\r\n0\r\n\r\n",
	"5\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\nGET",
	"5;name=value\r\nhello\r\n0;x\r\n\r\n",
	"5 \t\r\nhello\r\n0\r\n\r\n",
	"A\r\n0123456789\r\n0\r\n\r\n",
	"a\r\n0123456789\r\n0\r\n\r\n",
	"5\nhello\r\n0\r\n\r\n",      // bare LF
	"5\r\r\nhello\r\n0\r\n\r\n",  // stray CR
	"5\r\nhelloXX0\r\n\r\n",      // data not followed by CRLF
	"5\r\nhel",                   // cut short
	"5\r\nhello",                 // cut before the CRLF
	"5\r\nhello\r\n",             // cut before the last chunk
	"\r\nhello\r\n0\r\n\r\n",     // empty size
	"-5\r\nhello\r\n0\r\n\r\n",   // sign
	"0x5\r\nhello\r\n0\r\n\r\n",  // prefix
	"fffffffffffffffff\r\nx\r\n", // seventeen digits
	"ffffffffffffffff\r\nx",      // sixteen
	"1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n",
}

func TestChunkedSameAsNetHTTP(t *testing.T) {
	for _, c := range chunkCases {
		for _, trickle := range []bool{false, true} {
			got, want := decode([]byte(c), trickle, true), decode([]byte(c), trickle, false)
			if got != want {
				t.Errorf("%q (trickle %v):\n got  %+v\n want %+v", c, trickle, got, want)
			}
		}
	}
}

// Many small chunks with long extensions are framing without data, which
// both decoders refuse past 16 KiB.
func TestChunkedRefusesFramingWithoutData(t *testing.T) {
	var b bytes.Buffer
	for b.Len() < 40<<10 {
		b.WriteString("1;" + string(bytes.Repeat([]byte("e"), 200)) + "\r\nx\r\n")
	}
	b.WriteString("0\r\n\r\n")
	got, want := decode(b.Bytes(), false, true), decode(b.Bytes(), false, false)
	if got.OK || want.OK {
		t.Fatalf("accepted: ours %v, net/http's %v", got.OK, want.OK)
	}
}

func FuzzChunked(f *testing.F) {
	for _, c := range chunkCases {
		f.Add([]byte(c), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, trickle bool) {
		got, want := decode(data, trickle, true), decode(data, trickle, false)
		if got != want {
			t.Errorf("%.300q (trickle %v):\n got  %.300v\n want %.300v", data, trickle, got, want)
		}
	})
}
