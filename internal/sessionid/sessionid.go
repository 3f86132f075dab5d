package sessionid

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// Limits of ids and keys.
const (
	// KeySize is the size of a key in bytes (AES-256).
	KeySize = 32
	// MaxKeys is the most keys a Keys holds: a rotation needs two, and an
	// id that opens under none is tried against each of them.
	MaxKeys = 8
	// MaxLen is the longest id Seal writes and Open reads, in characters:
	// far below the header limits of common proxies (nginx takes 8 KiB a
	// header line by default) and the sidecar's own max-header-bytes.
	MaxLen = 4096
	// MaxState is the most bytes of a State's protocol version,
	// capabilities and clientInfo together that fit in an id of MaxLen.
	MaxState = MaxLen/4*3 - overhead - fixed
)

// The layout of an id before base64url: format, key id, nonce, then the
// sealed plaintext and its tag. The plaintext is the expiry (Unix seconds,
// 8 bytes), the version (1-byte length), the capabilities (2-byte length)
// and clientInfo (the rest). The format byte and the key id are
// authenticated as additional data, with the caller's hash.
const (
	format   = 1
	keyIDLen = 4
	nonceLen = 12
	tagLen   = 16
	overhead = 1 + keyIDLen + nonceLen + tagLen
	fixed    = 8 + 1 + 2
)

// Errors of Seal and Open. A caller treats every Open error alike (an
// unknown session); they differ for tests and metrics.
var (
	ErrTooLarge  = errors.New("sessionid: session state too large for an id")
	ErrMalformed = errors.New("sessionid: not a session id")
	ErrNoKey     = errors.New("sessionid: no key opens the id")
	ErrExpired   = errors.New("sessionid: session expired")
)

// State is what a minted session fixes at initialize.
type State struct {
	// Version is the negotiated legacy protocol version (at most 255 bytes).
	Version string
	// Capabilities and ClientInfo are the client's initialize members, as
	// JSON (compact, as the caller wants them sent again).
	Capabilities json.RawMessage
	ClientInfo   json.RawMessage
	// Expires is when the session ends, whatever its use; ids carry it to
	// the second.
	Expires time.Time
	// Key names the key that opened the id (Open sets it; Seal ignores
	// it), so a holder of the session's state can tell when that key is
	// dropped (Keys.Holds).
	Key KeyRef
}

// KeyRef names one key without telling anything of it: a hash of the
// whole key, where the key id an id carries is a short one.
type KeyRef [sha256.Size]byte

// Keys are the keys of one moment: the first seals, all open. A Keys is
// immutable; a new keys file makes a new one. The zero value seals and
// opens nothing.
type Keys struct {
	keys []key
}

type key struct {
	id   [keyIDLen]byte
	ref  KeyRef
	aead cipher.AEAD
}

// NewKeys returns Keys of raw, each KeySize bytes, the first sealing;
// a key given twice is kept once.
func NewKeys(raw ...[]byte) (*Keys, error) {
	if len(raw) == 0 {
		return nil, errors.New("sessionid: no keys")
	}
	k := &Keys{}
	seen := map[[keyIDLen]byte][]byte{}
	for i, r := range raw {
		if len(r) != KeySize {
			return nil, errors.New("sessionid: key " + strconv.Itoa(i+1) + " is not " + strconv.Itoa(KeySize) + " bytes")
		}
		id := keyID(r)
		if prev, dup := seen[id]; dup && bytes.Equal(prev, r) {
			continue
		}
		seen[id] = r
		block, _ := aes.NewCipher(r) // 32 bytes: never fails
		aead, _ := cipher.NewGCM(block)
		k.keys = append(k.keys, key{id: id, ref: sha256.Sum256(append([]byte("skills-sidecar session key ref\x00"), r...)), aead: aead})
	}
	if len(k.keys) > MaxKeys {
		return nil, errors.New("sessionid: more than " + strconv.Itoa(MaxKeys) + " keys")
	}
	return k, nil
}

// NewRandomKey returns a fresh key of KeySize bytes from crypto/rand.
func NewRandomKey() []byte {
	b := make([]byte, KeySize)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// keyID names a key in the ids it seals, so Open tries the one key that
// sealed an id; a hash, so it tells nothing of the key.
func keyID(k []byte) [keyIDLen]byte {
	sum := sha256.Sum256(append([]byte("skills-sidecar session key\x00"), k...))
	return [keyIDLen]byte(sum[:keyIDLen])
}

// Len is the number of keys.
func (k *Keys) Len() int {
	if k == nil {
		return 0
	}
	return len(k.keys)
}

// Holds reports whether k holds the key ref names: whether the ids that
// key sealed still open.
func (k *Keys) Holds(ref KeyRef) bool {
	if k == nil {
		return false
	}
	for _, key := range k.keys {
		if key.ref == ref {
			return true
		}
	}
	return false
}

// Seal writes s as an id for the caller whose credentials hash to caller,
// sealed with the first key. It fails with ErrTooLarge when the id would
// be longer than MaxLen (the client's capabilities and clientInfo are its
// own choice).
func (k *Keys) Seal(s State, caller []byte) (string, error) {
	if k.Len() == 0 {
		return "", ErrNoKey
	}
	if len(s.Version) > 255 || len(s.Capabilities) > 0xffff || len(s.Version)+len(s.Capabilities)+len(s.ClientInfo) > MaxState {
		return "", ErrTooLarge
	}
	plain := make([]byte, 0, fixed+len(s.Version)+len(s.Capabilities)+len(s.ClientInfo))
	plain = binary.BigEndian.AppendUint64(plain, uint64(s.Expires.Unix()))
	plain = append(plain, byte(len(s.Version)))
	plain = append(plain, s.Version...)
	plain = binary.BigEndian.AppendUint16(plain, uint16(len(s.Capabilities)))
	plain = append(plain, s.Capabilities...)
	plain = append(plain, s.ClientInfo...)

	sk := k.keys[0]
	out := make([]byte, 1+keyIDLen+nonceLen, overhead+len(plain))
	out[0] = format
	copy(out[1:], sk.id[:])
	nonce := out[1+keyIDLen:]
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	out = sk.aead.Seal(out, nonce, plain, appendAdditional(make([]byte, 0, 1+keyIDLen+len(caller)), out[:1+keyIDLen], caller))
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// appendAdditional appends to dst the data authenticated besides the
// plaintext: the id's header and the caller's hash, so an id presented by
// another caller does not open, exactly as a tampered one does not.
func appendAdditional(dst, header, caller []byte) []byte {
	return append(append(dst, header...), caller...)
}

// Open returns the state sealed in id for the caller whose credentials hash
// to caller, if a key of k sealed it for that caller and it has not expired
// at now. It never panics on any input.
func (k *Keys) Open(id string, caller []byte, now time.Time) (State, error) {
	if len(id) > MaxLen || len(id) < base64.RawURLEncoding.EncodedLen(overhead) {
		return State{}, ErrMalformed
	}
	// One buffer: the id's bytes, the additional data (the id's header and
	// caller), and the id as text to decode them from; the plaintext is
	// opened in place.
	n := strictURL.DecodedLen(len(id))
	adLen := 1 + keyIDLen + len(caller)
	buf := make([]byte, n+adLen+len(id))
	text := buf[n+adLen:]
	copy(text, id)
	n, err := strictURL.Decode(buf, text)
	if err != nil || n < overhead || buf[0] != format {
		return State{}, ErrMalformed
	}
	raw := buf[:n:n]
	header, nonce, sealed := raw[:1+keyIDLen], raw[1+keyIDLen:1+keyIDLen+nonceLen], raw[1+keyIDLen+nonceLen:]
	ad := appendAdditional(buf[n:n:n+adLen], header, caller)
	var plain []byte
	var ref KeyRef
	opened := false
	if k != nil {
		for _, key := range k.keys {
			if !bytes.Equal(key.id[:], header[1:]) {
				continue
			}
			if p, err := key.aead.Open(sealed[:0], nonce, sealed, ad); err == nil {
				plain, ref, opened = p, key.ref, true
				break
			}
			// A failed Open clears what it opened in place: the sealed
			// bytes again for the next key of the same key id.
			_, _ = strictURL.Decode(buf, text)
		}
	}
	if !opened {
		return State{}, ErrNoKey
	}
	s, ok := decode(plain)
	if !ok {
		return State{}, ErrMalformed
	}
	if !now.Before(s.Expires) {
		return State{}, ErrExpired
	}
	s.Key = ref
	return s, nil
}

// strictURL is the encoding of ids: base64url without padding, strict,
// made once (Encoding.Strict copies the encoding on every call).
var strictURL = base64.RawURLEncoding.Strict()

// decode reads the plaintext layout Seal writes.
func decode(p []byte) (State, bool) {
	if len(p) < fixed {
		return State{}, false
	}
	exp := int64(binary.BigEndian.Uint64(p))
	n := int(p[8])
	p = p[9:]
	if len(p) < n+2 {
		return State{}, false
	}
	s := State{Version: string(p[:n]), Expires: time.Unix(exp, 0)}
	p = p[n:]
	c := int(binary.BigEndian.Uint16(p))
	p = p[2:]
	if len(p) < c {
		return State{}, false
	}
	s.Capabilities, s.ClientInfo = json.RawMessage(p[:c:c]), json.RawMessage(p[c:])
	return s, true
}
