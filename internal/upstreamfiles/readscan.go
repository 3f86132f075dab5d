package upstreamfiles

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// readScan learns the digest of a forwarded resources/read while its reply
// passes, without holding it: it is fed the bytes of one
// JSON-RPC message in pieces of any size, checks the whole message as JSON
// (a byte at a time outside strings, a run at a time inside them), and
// feeds the decoded bytes of every contents[].text (the JSON string
// unescaped) and contents[].blob (base64 decoded) straight into SHA-256
// and a size count, and, for a SKILL.md, into the text frontmatter is
// parsed from. What it learns counts only when the message ended whole and
// valid: a response (jsonrpc "2.0", an id a client could match to the
// request's (mayAnswer), result xor error, no method) whose result holds exactly one contents entry for the
// requested URI, with text or blob. Anything else is a failure, never a
// digest that differs from what decoding the whole message with
// encoding/json gives (FuzzReadScan).
//
// It is pure: bytes in, an outcome out. Where encoding/json would accept a
// message by a rule a strict reader need not follow (a duplicate key among
// the ones it reads, invalid UTF-8 or a lone surrogate in a text, numbers
// or keys longer than it keeps, nesting past maxScanDepth), it fails.
type readScan struct {
	wantURI string
	wantID  []byte
	skill   bool // collect the text of SKILL.md for its frontmatter
	// portability is the overlay's FrontmatterPortability
	// (servedFrontmatter).
	portability string

	failed bool
	done   bool // the top-level value ended
	state  scanState
	stack  []scanFrame
	next   role // the role of the value about to begin

	// The string or literal being scanned.
	role    role
	isKey   bool
	raw     []byte // captured bytes of a key, literal or small string
	capture bool
	esc     int  // 0: none; 1: after '\'; 2–5: hex digits read + 2
	hex     rune // the \u escape's value so far
	high    rune // a high surrogate waiting for its low half (text)
	utf     [utf8.UTFMax]byte
	nutf    int // bytes of an incomplete rune carried between pieces (text)
	quote   int // in the piece being written: where the next '"' is (len: none), from where it was looked for; -1: not looked for

	// The top-level object.
	id, jsonrpc, code []byte
	hasResult         bool
	hasError          bool
	hasMethod         bool
	hasContents       bool

	// The contents entry being scanned, and the one that matched.
	h       hash.Hash
	stage   []byte // decoded text not yet hashed: escapes and short runs, hashed in large writes
	size    int64
	text    []byte // SKILL.md text, for the frontmatter
	elURI   []byte
	elBody  bool // text or blob seen
	b64     b64Stream
	matched bool
	found   Served
}

// textStage is the size of readScan.stage: decoded text reaches SHA-256 in
// writes of about this size however short the runs between escapes are.
const textStage = 8 << 10

// maxScanDepth bounds the nesting readScan follows; maxScanRaw the bytes of
// a key, literal or small string (id, jsonrpc, uri, error code) it keeps;
// maxScanText the SKILL.md text it keeps for the frontmatter (the most a
// whole skill may hold, SEP-2640).
const (
	maxScanDepth = 64
	maxScanRaw   = 8 << 10
	maxScanText  = 16 << 20
)

type scanState uint8

const (
	sValue      scanState = iota // a value
	sValueOrEnd                  // a value or ']' (after '[')
	sAfterValue                  // ',' or the container's end
	sKeyOrEnd                    // a key or '}' (after '{')
	sKey                         // a key (after ',')
	sColon
	sString
	sLiteral
	sEnd // after the top-level value: whitespace only
)

// role is what a value means to the scan.
type role uint8

const (
	roleOther role = iota
	roleTop
	roleID
	roleJSONRPC
	roleMethod
	roleResult
	roleError
	roleCode
	roleContents
	roleContent
	roleURI
	roleText
	roleBlob
)

type scanFrame struct {
	array bool
	role  role
	seen  uint16 // the roles of the keys met, for duplicates
}

// newReadScan returns a scan of the reply to a resources/read of uri sent
// with the raw id.
func newReadScan(uri string, id []byte) *readScan {
	s := &readScan{wantURI: uri, wantID: id, skill: strings.HasSuffix(uri, "/SKILL.md"), h: sha256.New()}
	s.reset()
	return s
}

// reset makes s ready for the next message.
func (s *readScan) reset() {
	*s = readScan{wantURI: s.wantURI, wantID: s.wantID, skill: s.skill, portability: s.portability, h: s.h, stack: s.stack[:0],
		raw: s.raw[:0], text: s.text[:0], stage: s.stage[:0], next: roleTop}
}

func (s *readScan) fail() { s.failed = true }

// Write feeds the next piece of the message. It never fails: a message
// that is not what End accepts makes End report so.
func (s *readScan) Write(p []byte) (int, error) {
	s.quote = -1
	for i := 0; i < len(p) && !s.failed; {
		if s.state == sString {
			i = s.str(p, i)
			continue
		}
		c := p[i]
		if s.state == sLiteral {
			if isLiteralByte(c) {
				s.appendRaw(c)
				i++
				continue
			}
			s.endLiteral()
			continue // c is read again after the literal
		}
		i++
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		switch s.state {
		case sValue, sValueOrEnd:
			if c == ']' && s.state == sValueOrEnd {
				s.close(true)
				continue
			}
			s.begin(c)
		case sAfterValue:
			top := &s.stack[len(s.stack)-1]
			switch {
			case c == ',' && top.array:
				s.state, s.next = sValue, elementRole(top.role)
			case c == ',':
				s.state = sKey
			case c == ']' && top.array, c == '}' && !top.array:
				s.close(top.array)
			default:
				s.fail()
			}
		case sKeyOrEnd, sKey:
			switch {
			case c == '}' && s.state == sKeyOrEnd:
				s.close(false)
			case c == '"':
				s.startString(roleOther, true)
			default:
				s.fail()
			}
		case sColon:
			if c != ':' {
				s.fail()
			}
			s.state = sValue
		case sEnd:
			s.fail() // bytes after the message
		}
	}
	return len(p), nil
}

func isLiteralByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

// elementRole is the role of an array's elements.
func elementRole(array role) role {
	if array == roleContents {
		return roleContent
	}
	return roleOther
}

// begin starts the value whose first byte is c, in the role s.next.
func (s *readScan) begin(c byte) {
	r := s.next
	switch {
	case c == '{':
		if r != roleTop && r != roleResult && r != roleError && r != roleContent && r != roleOther {
			s.fail()
			return
		}
		s.push(scanFrame{role: r})
		s.state = sKeyOrEnd
		if r == roleContent {
			s.h.Reset()
			s.size, s.text, s.stage, s.elURI, s.elBody = 0, s.text[:0], s.stage[:0], nil, false
		}
	case c == '[':
		if r != roleContents && r != roleOther {
			s.fail()
			return
		}
		s.push(scanFrame{array: true, role: r})
		s.state, s.next = sValueOrEnd, elementRole(r)
	case c == '"':
		switch r {
		case roleTop, roleResult, roleError, roleContents, roleContent:
			s.fail()
			return
		case roleText, roleBlob:
			if s.elBody {
				s.fail() // text and blob both
				return
			}
			s.elBody = true
			s.b64.n = 0
		}
		s.startString(r, false)
	case isLiteralByte(c):
		switch r {
		case roleID, roleJSONRPC, roleMethod, roleCode, roleOther:
		default:
			s.fail()
			return
		}
		s.role, s.raw, s.state = r, append(s.raw[:0], c), sLiteral
	default:
		s.fail()
	}
}

func (s *readScan) push(f scanFrame) {
	if len(s.stack) >= maxScanDepth {
		s.fail()
		return
	}
	s.stack = append(s.stack, f)
}

// close ends the innermost container.
func (s *readScan) close(array bool) {
	f := s.stack[len(s.stack)-1]
	if f.array != array {
		s.fail()
		return
	}
	s.stack = s.stack[:len(s.stack)-1]
	if f.role == roleContent {
		s.endContent()
	}
	s.valueDone()
}

// valueDone moves past a value that ended.
func (s *readScan) valueDone() {
	if len(s.stack) == 0 {
		s.state, s.done = sEnd, true
		return
	}
	s.state = sAfterValue
}

func (s *readScan) startString(r role, key bool) {
	s.role, s.isKey, s.state, s.esc, s.high, s.nutf = r, key, sString, 0, 0, 0
	s.capture = key || r == roleID || r == roleJSONRPC || r == roleURI || r == roleCode
	if s.capture {
		s.raw = append(s.raw[:0], '"')
	}
}

func (s *readScan) appendRaw(b ...byte) {
	if len(s.raw)+len(b) > maxScanRaw {
		s.fail()
		return
	}
	s.raw = append(s.raw, b...)
}

func (s *readScan) endLiteral() {
	if !rewrite.Valid(s.raw) {
		s.fail()
		return
	}
	s.store(s.raw)
	s.valueDone()
}

// store keeps the raw bytes of a finished value the scan reads later.
func (s *readScan) store(raw []byte) {
	switch s.role {
	case roleID:
		s.id = bytes.Clone(raw)
	case roleJSONRPC:
		s.jsonrpc = bytes.Clone(raw)
	case roleCode:
		s.code = bytes.Clone(raw)
	case roleURI:
		s.elURI = bytes.Clone(raw)
	}
}

// plainEnd returns where the run of plain string bytes from p[i] ends: at
// the first '"', '\\' or control byte, or len(p); ascii says the run is
// known to hold only ASCII (so it is UTF-8). The first 64 bytes are
// looked at eight at a time (text dense with escapes stops there); a longer
// run is found by the standard library's vector searches, the quote's
// position kept for the rest of the piece so that a run is not searched
// again to the piece's far end after each escape.
func (s *readScan) plainEnd(p []byte, i int) (end int, ascii bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	k, hi := i, uint64(0)
	for ; k+8 <= len(p) && k < i+64; k += 8 {
		x := binary.LittleEndian.Uint64(p[k:])
		q, b := x^'"'*ones, x^'\\'*ones
		// A byte is zero in q or b, or below 0x20 in x, where subtracting
		// borrows into a clear top bit; the lowest such flag is exact.
		if m := ((q-ones)&^q | (b-ones)&^b | (x-0x20*ones)&^x) & highs; m != 0 {
			n := bits.TrailingZeros64(m) / 8
			return k + n, (hi|x&(1<<(8*n)-1))&highs == 0
		}
		hi |= x
	}
	if s.quote < k {
		s.quote = len(p)
		if n := bytes.IndexByte(p[k:], '"'); n >= 0 {
			s.quote = k + n
		}
	}
	e := s.quote
	if n := bytes.IndexByte(p[k:e], '\\'); n >= 0 {
		e = k + n
	}
	if n := indexControl(p[k:e]); n >= 0 {
		e = k + n
	}
	return e, false
}

// indexControl returns the index of the first byte below 0x20 in b, or -1:
// eight bytes at a time, a word having such a byte when subtracting 0x20
// from each byte borrows into a byte whose top bit was clear.
func indexControl(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x-0x20*ones)&^x&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return i
		}
	}
	return -1
}

// str scans string bytes from p[i] and returns where it stopped.
func (s *readScan) str(p []byte, i int) int {
	if s.esc != 0 {
		s.escape(p[i])
		return i + 1
	}
	e := len(p)
	if s.role == roleBlob {
		// base64 holds no quote, backslash or control byte: three
		// vectorised searches, and the decoder refuses any other stray.
		if k := bytes.IndexByte(p[i:], '"'); k >= 0 {
			e = i + k
		}
		if k := bytes.IndexByte(p[i:e], '\\'); k >= 0 {
			e = i + k
		}
		if bytes.IndexByte(p[i:e], '\n') >= 0 || bytes.IndexByte(p[i:e], '\r') >= 0 {
			s.fail()
			return e
		}
		if !s.b64.write(s, p[i:e]) {
			s.fail()
		}
	} else {
		var ascii bool
		e, ascii = s.plainEnd(p, i)
		seg := p[i:e]
		if len(seg) > 0 && s.high != 0 {
			s.fail() // a high surrogate not followed by its low half
			return e
		}
		switch {
		case s.role == roleText && ascii && s.nutf == 0:
			s.textBytes(seg)
		case s.role == roleText:
			s.textRaw(seg)
		case s.capture:
			s.appendRaw(seg...)
		}
	}
	if e == len(p) || s.failed {
		return e
	}
	switch c := p[e]; {
	case c == '\\':
		if s.nutf > 0 {
			s.fail()
			return e
		}
		if s.role == roleText && s.high == 0 && e+1 < len(p) {
			if d := jsonEscapes[p[e+1]]; d != 0 {
				s.textByte(d) // the common case, without the state machine
				return e + 2
			}
		}
		s.esc = 1
		if s.capture {
			s.appendRaw(c)
		}
		// The escape is read here while the piece holds it, not a byte
		// per trip through Write.
		j := e + 1
		for ; s.esc != 0 && j < len(p) && !s.failed; j++ {
			s.escape(p[j])
		}
		return j
	case c == '"':
		s.endString()
	default:
		s.fail() // a control byte
	}
	return e + 1
}

// escape reads one byte of an escape sequence.
func (s *readScan) escape(c byte) {
	if s.capture {
		s.appendRaw(c)
	}
	if s.esc == 1 {
		d := jsonEscapes[c]
		switch {
		case c == 'u':
			s.esc, s.hex = 2, 0
		case d == 0:
			s.fail()
		default:
			s.esc = 0
			s.decoded(rune(d))
		}
		return
	}
	v := hexValue(c)
	if v < 0 {
		s.fail()
		return
	}
	s.hex = s.hex<<4 | rune(v)
	if s.esc++; s.esc < 6 {
		return
	}
	s.esc = 0
	s.decoded(s.hex)
}

// jsonEscapes maps the letter after '\\' of each one-letter JSON escape to
// the byte it stands for; 0 for any other.
var jsonEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func hexValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// decoded takes the character an escape stands for.
func (s *readScan) decoded(r rune) {
	isHigh, isLow := r >= 0xD800 && r < 0xDC00, r >= 0xDC00 && r < 0xE000
	if s.role != roleText {
		if s.role == roleBlob {
			switch {
			case r == '\r' || r == '\n': // base64 decoders skip them
			case r < 0x80 && s.b64.write(s, []byte{byte(r)}):
			default:
				s.fail()
			}
		}
		return // a key or other string: only its syntax matters
	}
	switch {
	case s.high != 0 && isLow:
		r = 0x10000 + (s.high-0xD800)<<10 + (r - 0xDC00)
		s.high = 0
	case s.high != 0 || isLow:
		s.fail() // a lone surrogate: encoding/json would put U+FFFD in its place
		return
	case isHigh:
		s.high = r
		return
	}
	s.textRune(r)
}

// textRaw takes a run of plain text bytes, which must be UTF-8: a rune cut
// between two pieces waits in s.utf for its end.
func (s *readScan) textRaw(seg []byte) {
	if s.nutf > 0 {
		for s.nutf < len(s.utf) && len(seg) > 0 && !utf8.FullRune(s.utf[:s.nutf]) {
			s.utf[s.nutf] = seg[0]
			s.nutf++
			seg = seg[1:]
		}
		if !utf8.FullRune(s.utf[:s.nutf]) {
			return
		}
		if !utf8.Valid(s.utf[:s.nutf]) {
			s.fail()
			return
		}
		s.textBytes(s.utf[:s.nutf])
		s.nutf = 0
	}
	t := len(seg)
	for k := 1; k <= utf8.UTFMax-1 && k <= len(seg); k++ {
		if b := seg[len(seg)-k]; b >= 0xC0 {
			if !utf8.FullRune(seg[len(seg)-k:]) {
				t = len(seg) - k
			}
			break
		} else if b < 0x80 {
			break
		}
	}
	if !utf8.Valid(seg[:t]) {
		s.fail()
		return
	}
	s.textBytes(seg[:t])
	s.nutf = copy(s.utf[:], seg[t:])
}

// textBytes takes decoded text. What fits in the stage waits there, so
// SHA-256 sees large writes; a run too big for it is hashed in place.
func (s *readScan) textBytes(b []byte) {
	s.size += int64(len(b))
	big := len(b) > textStage/2
	if big || len(s.stage)+len(b) > cap(s.stage) {
		s.flushStage() // what was staged goes first
	}
	if big {
		s.h.Write(b)
	} else {
		s.stage = append(s.stage, b...)
	}
	s.keepText(b)
}

// textByte takes one ASCII byte an escape decoded to.
func (s *readScan) textByte(d byte) {
	if len(s.stage) == cap(s.stage) {
		s.flushStage()
	}
	s.stage = append(s.stage, d)
	s.size++
	s.keepText(s.stage[len(s.stage)-1:])
}

// textRune takes the character an escape decoded to.
func (s *readScan) textRune(r rune) {
	if len(s.stage)+utf8.UTFMax > cap(s.stage) {
		s.flushStage()
	}
	n := len(s.stage)
	s.stage = utf8.AppendRune(s.stage, r)
	s.size += int64(len(s.stage) - n)
	s.keepText(s.stage[n:])
}

// flushStage hashes the staged text, making the stage on first use.
func (s *readScan) flushStage() {
	if s.stage == nil {
		s.stage = make([]byte, 0, textStage)
		return
	}
	s.h.Write(s.stage)
	s.stage = s.stage[:0]
}

// keepText keeps the text of a SKILL.md for its frontmatter.
func (s *readScan) keepText(b []byte) {
	if s.skill {
		if len(s.text)+len(b) > maxScanText {
			s.fail()
			return
		}
		s.text = append(s.text, b...)
	}
}

func (s *readScan) endString() {
	if s.high != 0 || s.nutf > 0 {
		s.fail()
		return
	}
	if s.capture {
		s.appendRaw('"')
	}
	if s.isKey {
		s.key()
		return
	}
	switch s.role {
	case roleBlob:
		n, ok := s.b64.end()
		if !ok {
			s.fail()
			return
		}
		s.h.Write(n)
		s.size += int64(len(n))
	default:
		s.store(s.raw)
	}
	s.valueDone()
}

// key takes the key in s.raw: it gives the role of the value after it.
func (s *readScan) key() {
	f := &s.stack[len(s.stack)-1]
	name := string(s.raw[1 : len(s.raw)-1])
	if bytes.IndexByte(s.raw, '\\') >= 0 {
		name = ""
		_ = json.Unmarshal(s.raw, &name)
	}
	if foldsToKnown(f.role, name) {
		s.fail() // "Text" beside "text": encoding/json's readers take either, others only one
		return
	}
	r := keyRoles[f.role][name] // roleOther when not a key the scan reads
	switch r {
	case roleMethod:
		s.hasMethod = true
	case roleResult:
		s.hasResult = true
	case roleError:
		s.hasError = true
	case roleContents:
		s.hasContents = true
	}
	if r != roleOther {
		if f.seen&(1<<r) != 0 {
			s.fail() // a duplicate: which one counts is a reader's guess
			return
		}
		f.seen |= 1 << r
	}
	s.next, s.state = r, sColon
}

// keyRoles are the keys the scan reads, by the role of the object they are
// in, with the role each gives its value.
var keyRoles = map[role]map[string]role{
	roleTop:     {"id": roleID, "jsonrpc": roleJSONRPC, "method": roleMethod, "result": roleResult, "error": roleError},
	roleResult:  {"contents": roleContents},
	roleError:   {"code": roleCode},
	roleContent: {"uri": roleURI, "text": roleText, "blob": roleBlob},
}

// foldsToKnown reports whether name is not one of the keys read in an
// object of role in but equal to one under Unicode case folding, which is
// how encoding/json matches a struct field: a go-sdk client would read
// that member where the scan, like a JavaScript client, would not, so no
// one digest can stand for what clients read.
func foldsToKnown(in role, name string) bool {
	for k := range keyRoles[in] {
		if name != k && strings.EqualFold(name, k) {
			return true
		}
	}
	return false
}

// endContent judges the contents entry that just ended.
func (s *readScan) endContent() {
	if s.elURI == nil {
		s.fail() // every entry has a uri (ResourceContents)
		return
	}
	var uri string
	if json.Unmarshal(s.elURI, &uri) != nil || uri != s.wantURI {
		return
	}
	if s.matched || !s.elBody {
		s.fail() // two entries for the URI, or one with neither text nor blob
		return
	}
	s.matched = true
	s.h.Write(s.stage)
	s.stage = s.stage[:0]
	s.found = Served{Upstream: true, Digest: "sha256:" + hex.EncodeToString(s.h.Sum(nil)), Size: s.size}
	if s.skill {
		s.found.Frontmatter, s.found.Withheld = servedFrontmatter(s.text, s.portability)
	}
}

// scanOutcome is what a whole message turned out to be.
type scanOutcome uint8

const (
	scanInvalid  scanOutcome = iota // not a JSON-RPC message readScan accepts
	scanOther                       // a message, but not the reply to this request
	scanServed                      // the reply, with the served bytes' digest
	scanNotFound                    // the reply: not found (either era's code)
	scanRefused                     // the reply: another error
)

// End judges the message fed so far as a whole and returns what it is and,
// for scanServed, what it serves. s is then ready for the next message.
func (s *readScan) End() (scanOutcome, Served) {
	defer s.reset()
	if s.failed || !s.done || string(s.jsonrpc) != `"2.0"` {
		return scanInvalid, Served{}
	}
	if s.id == nil || !mayAnswer(s.wantID, s.id) {
		return scanOther, Served{}
	}
	if s.hasMethod {
		if s.hasResult || s.hasError {
			return scanInvalid, Served{} // a request to one reader, perhaps the reply to another
		}
		return scanOther, Served{} // a server request that reuses the id
	}
	switch {
	case s.hasResult == s.hasError:
		return scanInvalid, Served{}
	case s.hasError:
		if c := string(s.code); c == "-32002" || c == "-32602" {
			return scanNotFound, Served{}
		}
		return scanRefused, Served{}
	case !s.matched:
		return scanInvalid, Served{}
	}
	return scanServed, s.found
}

// b64Stream decodes standard base64 that arrives in pieces, hashChunk
// characters at a time: a chunk is decoded once the next character shows
// it is not the last (only the last may hold padding).
type b64Stream struct {
	buf [hashChunk]byte
	n   int
	out [hashChunk / 4 * 3]byte
}

// write decodes what it can of p into s's hash and size; false: p is not
// base64.
func (d *b64Stream) write(s *readScan, p []byte) bool {
	for len(p) > 0 {
		if d.n == 0 && len(p) > hashChunk {
			if !d.chunk(s, p[:hashChunk]) {
				return false
			}
			p = p[hashChunk:]
			continue
		}
		k := copy(d.buf[d.n:], p)
		d.n += k
		p = p[k:]
		if d.n == hashChunk && len(p) > 0 {
			if !d.chunk(s, d.buf[:]) {
				return false
			}
			d.n = 0
		}
	}
	return true
}

// chunk decodes a chunk that is not the last.
func (d *b64Stream) chunk(s *readScan, src []byte) bool {
	n, err := decodeBase64(d.out[:], src)
	if err != nil || n != len(d.out) {
		return false // padding before the end
	}
	s.h.Write(d.out[:n])
	s.size += int64(n)
	return true
}

// end decodes the last chunk and returns its bytes.
func (d *b64Stream) end() ([]byte, bool) {
	n, err := decodeBase64(d.out[:], d.buf[:d.n])
	return d.out[:n], err == nil
}
