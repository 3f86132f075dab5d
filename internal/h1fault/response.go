package h1fault

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Response is one response as the judge read it off the wire.
type Response struct {
	Proto  string // "HTTP/1.1"
	Status int
	Reason string
	// Fields are the header fields in order, names as sent.
	Fields [][2]string
	Body   []byte
	// Chunked is true when the body came in the chunked coding,
	// Trailers then holding its trailer fields.
	Chunked  bool
	Trailers [][2]string
	// CloseDelimited is true when the body had no length and ran to the
	// connection's close (RFC 9112 6.3, point 8).
	CloseDelimited bool
}

// Get returns the values of the field name (ASCII case-insensitive), in
// order.
func (r *Response) Get(name string) []string {
	var out []string
	for _, f := range r.Fields {
		if equalFoldASCII(f[0], name) {
			out = append(out, f[1])
		}
	}
	return out
}

// HasToken reports whether a comma-separated field (Connection,
// Transfer-Encoding) holds token, ASCII case-insensitive.
func (r *Response) HasToken(name, token string) bool {
	for _, v := range r.Get(name) {
		for _, t := range strings.Split(v, ",") {
			if equalFoldASCII(trimOWS(t), token) {
				return true
			}
		}
	}
	return false
}

// maxHead bounds a response head the judge reads: a server that answers
// with an endless head fails rather than filling memory.
const maxHead = 64 << 10

// maxBody bounds a body the judge reads.
const maxBody = 8 << 20

// ErrIncomplete is returned (wrapped) when the connection ended inside a
// response: its head, a chunk, or a body shorter than its Content-Length.
var ErrIncomplete = errors.New("response incomplete")

// ReadResponse reads one response from br, strictly by RFC 9112: a
// status-line (section 4), field lines ended by CRLF with no obs-fold,
// bare CR or LF, or whitespace before the colon (sections 2.2 and 5), and
// a body framed by section 6.3 for a request of method (HEAD, and any 1xx,
// 204 or 304 response, have none). A 1xx response is returned as it is:
// the caller reads again for the final one. io.EOF means the connection
// closed before a response began.
func ReadResponse(br *bufio.Reader, method string) (*Response, error) {
	var head int
	line, err := readLine(br, &head)
	if err != nil {
		if errors.Is(err, io.EOF) && head == 0 {
			return nil, io.EOF
		}
		return nil, err
	}
	r := &Response{}
	if err := parseStatusLine(line, r); err != nil {
		return nil, err
	}
	r.Fields, err = readFields(br, &head)
	if err != nil {
		return nil, err
	}
	if err := readBody(br, method, r); err != nil {
		return r, err
	}
	return r, nil
}

// readLine reads a line ended by CRLF, counting its bytes in *n against
// maxHead, and refuses a bare CR or LF (RFC 9112 2.2: a sender MUST NOT
// generate a bare CR; the judge takes no bare LF from a server either).
func readLine(br *bufio.Reader, n *int) (string, error) {
	var b []byte
	for {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF && (len(b) > 0 || *n > 0) {
				return "", fmt.Errorf("%w: connection closed inside the head", ErrIncomplete)
			}
			return "", err
		}
		*n++
		if *n > maxHead {
			return "", fmt.Errorf("response head over %d bytes", maxHead)
		}
		switch c {
		case '\n':
			return "", fmt.Errorf("bare LF in response head after %q", b)
		case '\r':
			c2, err := br.ReadByte()
			if err != nil {
				return "", fmt.Errorf("%w: connection closed after a CR", ErrIncomplete)
			}
			*n++
			if c2 != '\n' {
				return "", fmt.Errorf("bare CR in response head after %q", b)
			}
			return string(b), nil
		}
		b = append(b, c)
	}
}

// parseStatusLine: status-line = HTTP-version SP status-code SP
// [ reason-phrase ] (RFC 9112 4; the SP before an empty reason is
// required, though section 4 asks recipients to be lenient, the judge is
// not).
func parseStatusLine(line string, r *Response) error {
	if len(line) < 12 || !strings.HasPrefix(line, "HTTP/") || line[6] != '.' ||
		!isDigit(line[5]) || !isDigit(line[7]) || line[8] != ' ' || len(line) > 12 && line[12] != ' ' {
		return fmt.Errorf("malformed status line %q", line)
	}
	if len(line) == 12 {
		return fmt.Errorf("status line without the SP before the reason %q", line)
	}
	for i := 9; i < 12; i++ {
		if !isDigit(line[i]) {
			return fmt.Errorf("malformed status code in %q", line)
		}
	}
	if line[5] != '1' {
		return fmt.Errorf("not an HTTP/1 status line %q", line)
	}
	r.Proto = line[:8]
	r.Status, _ = strconv.Atoi(line[9:12])
	if r.Status < 100 {
		return fmt.Errorf("status code %d below 100", r.Status)
	}
	r.Reason = line[13:]
	for i := 0; i < len(r.Reason); i++ {
		if c := r.Reason[i]; c != '\t' && (c < ' ' || c == 0x7f) {
			return fmt.Errorf("control byte in reason phrase %q", line)
		}
	}
	return nil
}

// readFields reads field lines up to the empty line (RFC 9112 5).
func readFields(br *bufio.Reader, n *int) ([][2]string, error) {
	var out [][2]string
	for {
		line, err := readLine(br, n)
		if err != nil {
			return nil, err
		}
		if line == "" {
			return out, nil
		}
		name, value, err := parseField(line)
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{name, value})
	}
}

// parseField splits field-line = field-name ":" OWS field-value OWS
// (RFC 9112 5; RFC 9110 5.1 and 5.5): a token name right against its
// colon, a value of VCHAR, obs-text, SP and HTAB.
func parseField(line string) (string, string, error) {
	if line[0] == ' ' || line[0] == '\t' {
		return "", "", fmt.Errorf("obs-fold or leading whitespace in field line %q", line)
	}
	i := strings.IndexByte(line, ':')
	if i <= 0 {
		return "", "", fmt.Errorf("field line without a name and colon %q", line)
	}
	name := line[:i]
	for j := 0; j < len(name); j++ {
		if !isTchar(name[j]) {
			return "", "", fmt.Errorf("field name not a token %q", line)
		}
	}
	value := strings.Trim(line[i+1:], " \t")
	for j := 0; j < len(value); j++ {
		if c := value[j]; c != '\t' && (c < ' ' || c == 0x7f) {
			return "", "", fmt.Errorf("control byte in field value %q", line)
		}
	}
	return name, value, nil
}

// readBody reads r's body as RFC 9112 6.3 frames it.
func readBody(br *bufio.Reader, method string, r *Response) error {
	if method == "HEAD" || r.Status < 200 || r.Status == 204 || r.Status == 304 {
		return nil // point 1
	}
	if te := r.Get("Transfer-Encoding"); len(te) > 0 {
		// Point 4 for a response: chunked must be the final coding, and
		// the judge takes no coding but chunked from a server.
		if len(te) != 1 || !equalFoldASCII(trimOWS(te[0]), "chunked") {
			return fmt.Errorf("transfer-encoding %q: the judge reads chunked alone", te)
		}
		if len(r.Get("Content-Length")) > 0 {
			return errors.New("both transfer-encoding and content-length in a response")
		}
		if r.Proto == "HTTP/1.0" {
			// RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message
			// makes its framing faulty.
			return errors.New("transfer-encoding in an HTTP/1.0 response")
		}
		r.Chunked = true
		return readChunked(br, r)
	}
	if cl := r.Get("Content-Length"); len(cl) > 0 {
		n, err := contentLength(cl)
		if err != nil {
			return err
		}
		if n > maxBody {
			return fmt.Errorf("content-length %d over the judge's bound", n)
		}
		r.Body = make([]byte, n)
		if got, err := io.ReadFull(br, r.Body); err != nil {
			r.Body = r.Body[:got]
			return fmt.Errorf("%w: body of %d bytes of a content-length of %d", ErrIncomplete, got, n)
		}
		return nil
	}
	r.CloseDelimited = true
	b, err := io.ReadAll(io.LimitReader(br, maxBody+1))
	r.Body = b
	if err != nil {
		return fmt.Errorf("reading a close-delimited body: %w", err)
	}
	if len(b) > maxBody {
		return errors.New("close-delimited body over the judge's bound")
	}
	return nil
}

// contentLength: Content-Length = 1*DIGIT (RFC 9110 8.6); several lines,
// or a list, of one same value are that value, anything else is invalid.
func contentLength(vals []string) (int, error) {
	n := -1
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			p = trimOWS(p)
			if p == "" || len(p) > 12 {
				return 0, fmt.Errorf("invalid content-length %q", vals)
			}
			for i := 0; i < len(p); i++ {
				if !isDigit(p[i]) {
					return 0, fmt.Errorf("invalid content-length %q", vals)
				}
			}
			m, _ := strconv.Atoi(p)
			if n >= 0 && m != n {
				return 0, fmt.Errorf("differing content-lengths %q", vals)
			}
			n = m
		}
	}
	return n, nil
}

// readChunked reads a chunked body (RFC 9112 7.1): chunk = chunk-size
// [ chunk-ext ] CRLF chunk-data CRLF, ended by last-chunk, a trailer
// section and CRLF.
func readChunked(br *bufio.Reader, r *Response) error {
	var body bytes.Buffer
	n := 0
	for {
		line, err := readLine(br, &n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: connection closed before a chunk", ErrIncomplete)
			}
			r.Body = body.Bytes()
			return err
		}
		size, err := chunkSize(line)
		if err != nil {
			r.Body = body.Bytes()
			return err
		}
		if size == 0 {
			r.Body = body.Bytes()
			r.Trailers, err = readFields(br, &n)
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: connection closed in the trailer section", ErrIncomplete)
			}
			return err
		}
		if int64(body.Len())+size > maxBody {
			r.Body = body.Bytes()
			return errors.New("chunked body over the judge's bound")
		}
		if _, err := io.CopyN(&body, br, size); err != nil {
			r.Body = body.Bytes()
			return fmt.Errorf("%w: connection closed inside a chunk", ErrIncomplete)
		}
		crlf := make([]byte, 2)
		if _, err := io.ReadFull(br, crlf); err != nil {
			r.Body = body.Bytes()
			return fmt.Errorf("%w: connection closed after chunk data", ErrIncomplete)
		}
		if string(crlf) != "\r\n" {
			r.Body = body.Bytes()
			return fmt.Errorf("chunk data not followed by CRLF but %q", crlf)
		}
	}
}

// chunkSize parses chunk-size = 1*HEXDIG before an optional chunk-ext
// (";" with BWS around it, RFC 9112 7.1.1), bounded so it cannot wrap.
func chunkSize(line string) (int64, error) {
	hex := line
	if i := strings.IndexByte(line, ';'); i >= 0 {
		hex = strings.TrimRight(line[:i], " \t")
	}
	if hex == "" || len(hex) > 15 {
		return 0, fmt.Errorf("invalid chunk size line %q", line)
	}
	var n int64
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, fmt.Errorf("invalid chunk size line %q", line)
		}
		n = n<<4 | int64(d)
	}
	return n, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isTchar: tchar of RFC 9110 5.6.2.
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// equalFoldASCII reports whether s and t are equal ignoring the case of
// ASCII letters alone: tokens are ASCII (RFC 9110 5.6.2), and a Kelvin
// sign or a long s, which strings.EqualFold folds to "k" and "s", is no
// letter of one. The judge keeps its own rather than ask the code it
// judges.
func equalFoldASCII(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// trimOWS cuts the optional white space around s: spaces and tabs only
// (RFC 9110 5.6.3), not every Unicode space as strings.TrimSpace does.
func trimOWS(s string) string { return strings.Trim(s, " \t") }
