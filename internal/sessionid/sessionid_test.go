package sessionid

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"go/build"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	t0     = time.Unix(1_900_000_000, 0)
	alice  = bytes.Repeat([]byte{1}, 32)
	bob    = bytes.Repeat([]byte{2}, 32)
	keyA   = bytes.Repeat([]byte{0xa}, KeySize)
	keyB   = bytes.Repeat([]byte{0xb}, KeySize)
	sample = State{Version: "2025-06-18", Capabilities: json.RawMessage(`{"roots":{"listChanged":true}}`),
		ClientInfo: json.RawMessage(`{"name":"c","version":"1"}`), Expires: t0.Add(time.Hour)}
)

func keys(t *testing.T, raw ...[]byte) *Keys {
	t.Helper()
	k, err := NewKeys(raw...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k := keys(t, keyA)
	id, err := k.Seal(sample, alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range id {
		if c <= ' ' || c > '~' {
			t.Fatalf("id %q: character %q is not visible ASCII", id, c)
		}
	}
	got, err := k.Open(id, alice, t0)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	want := sample
	want.Key = k.keys[0].ref
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Open (-sealed +opened):\n%s", diff)
	}
	if id2, _ := k.Seal(sample, alice); id2 == id {
		t.Errorf("two seals of one state gave one id %q: the nonce is not fresh", id)
	}
}

// TestHolds: the key an id names as its opener (State.Key) is held by
// every Keys that holds that key, whatever its place, and by no other:
// what tells the holder of a session's state that its key was dropped.
func TestHolds(t *testing.T) {
	t.Parallel()
	id, _ := keys(t, keyA, keyB).Seal(sample, alice)
	st, err := keys(t, keyB, keyA).Open(id, alice, t0)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		k    *Keys
		want bool
	}{
		"both, a first":  {keys(t, keyA, keyB), true},
		"both, b first":  {keys(t, keyB, keyA), true},
		"a alone":        {keys(t, keyA), true},
		"a dropped":      {keys(t, keyB), false},
		"no keys at all": {nil, false},
	} {
		if got := c.k.Holds(st.Key); got != c.want {
			t.Errorf("%s: Holds = %v, want %v", name, got, c.want)
		}
	}
	if (KeyRef{}) == st.Key || keys(t, keyA).keys[0].ref == keys(t, keyB).keys[0].ref {
		t.Errorf("key refs do not tell keys apart")
	}
}

// TestOpenRefuses: every id Open exists to refuse is refused, with the
// reason.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	k := keys(t, keyA)
	id, _ := k.Seal(sample, alice)
	for name, c := range map[string]struct {
		keys   *Keys
		id     string
		caller []byte
		now    time.Time
		want   error
	}{
		"another caller":      {k, id, bob, t0, ErrNoKey},
		"no credentials":      {k, id, nil, t0, ErrNoKey},
		"at expiry":           {k, id, alice, sample.Expires, ErrExpired},
		"after expiry":        {k, id, alice, sample.Expires.Add(time.Hour), ErrExpired},
		"another key":         {keys(t, keyB), id, alice, t0, ErrNoKey},
		"no keys":             {nil, id, alice, t0, ErrNoKey},
		"empty":               {k, "", alice, t0, ErrMalformed},
		"not base64url":       {k, id[:20] + "+" + id[21:], alice, t0, ErrMalformed},
		"padded":              {k, id + "=", alice, t0, ErrMalformed},
		"truncated":           {k, truncated(id), alice, t0, ErrMalformed},
		"a byte short":        {k, byteShort(id), alice, t0, ErrNoKey},
		"cut to the header":   {k, id[:48], alice, t0, ErrNoKey},
		"a random session id": {k, "dGhpcyBpcyBub3QgYSBzZXNzaW9uIGlkIGF0IGFsbC4uLi4uLi4uLi4", alice, t0, ErrMalformed},
		"longer than MaxLen":  {k, strings.Repeat("A", MaxLen+1), alice, t0, ErrMalformed},
		"another format":      {k, "B" + id[1:], alice, t0, ErrMalformed},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := c.keys.Open(c.id, c.caller, c.now); !errors.Is(err, c.want) {
				t.Errorf("Open = %v, want %v", err, c.want)
			}
		})
	}
}

// truncated cuts id to a length no base64 text has (4n+1 characters):
// cut by one character, it may still be strict base64 (when the bits the
// new last character leaves over are zero), which makes it an id a byte
// short (byteShort), not malformed.
func truncated(id string) string {
	n := len(id) - 1
	for n%4 != 1 {
		n--
	}
	return id[:n]
}

// byteShort is id with its last byte cut, encoded again: well formed,
// and its tag cut.
func byteShort(id string) string {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1])
}

// TestOpenRefusesEveryOneCharEdit: an id changed in any one character
// does not open (the tag covers every byte, strict base64 every bit).
func TestOpenRefusesEveryOneCharEdit(t *testing.T) {
	t.Parallel()
	k := keys(t, keyA)
	id, _ := k.Seal(sample, alice)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range id {
		for _, r := range []byte{alphabet[(strings.IndexByte(alphabet, id[i])+1)%64], alphabet[(strings.IndexByte(alphabet, id[i])+33)%64]} {
			bad := id[:i] + string(r) + id[i+1:]
			if _, err := k.Open(bad, alice, t0); err == nil {
				t.Fatalf("id with character %d changed to %q opened", i, r)
			}
		}
	}
}

// TestOpenTriesEveryKeyOfAnID: two keys whose ids collide (4 bytes of a
// hash: rare, not impossible) both open what they sealed, though Open
// opens in place and a failed try clears what it opened; and an id opens
// again, its state whole, after any number of opens, failed or not.
func TestOpenTriesEveryKeyOfAnID(t *testing.T) {
	t.Parallel()
	a, b := keys(t, keyA), keys(t, keyB)
	collide := &Keys{keys: []key{{id: b.keys[0].id, aead: a.keys[0].aead}, b.keys[0]}}
	byB, _ := b.Seal(sample, alice)
	got, err := collide.Open(byB, alice, t0)
	if err != nil {
		t.Fatalf("an id sealed by the second of two keys with one key id: Open = %v", err)
	}
	want := sample
	want.Key = b.keys[0].ref // the key that opened it, not the first of its key id
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Open (-sealed +opened):\n%s", diff)
	}
	caller := bytes.Clone(alice)
	for i := range 3 {
		if _, err := b.Open(byB, bob, t0); !errors.Is(err, ErrNoKey) {
			t.Fatalf("open %d with another caller: %v, want ErrNoKey", i, err)
		}
		got, err := b.Open(byB, caller, t0)
		if err != nil || !cmp.Equal(want, got) {
			t.Fatalf("open %d: %+v, %v; want the sealed state", i, got, err)
		}
		if !bytes.Equal(caller, alice) {
			t.Fatalf("open %d changed the caller's hash to %x", i, caller)
		}
	}
}

// TestRotation: the three steps of a rotation never leave an id that
// some replica sealed unopenable by another.
func TestRotation(t *testing.T) {
	t.Parallel()
	old := keys(t, keyA)
	step1 := keys(t, keyA, keyB) // new key added after the first
	step2 := keys(t, keyB, keyA) // moved first
	step3 := keys(t, keyB)       // old one dropped
	byOld, _ := old.Seal(sample, alice)
	byStep1, _ := step1.Seal(sample, alice)
	byStep2, _ := step2.Seal(sample, alice)
	for _, c := range []struct {
		name string
		id   string
		k    *Keys
		ok   bool
	}{
		{"old id, step 1", byOld, step1, true},
		{"old id, step 2", byOld, step2, true},
		{"step 1 id, old replica", byStep1, old, true},
		{"step 2 id, step 1 replica", byStep2, step1, true},
		{"step 2 id, old replica (steps skipped)", byStep2, old, false},
		{"old id, step 3", byOld, step3, false},
		{"step 2 id, step 3", byStep2, step3, true},
	} {
		if _, err := c.k.Open(c.id, alice, t0); (err == nil) != c.ok {
			t.Errorf("%s: Open = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

func TestSealLimits(t *testing.T) {
	t.Parallel()
	k := keys(t, keyA)
	s := sample
	s.ClientInfo = json.RawMessage(`{"name":"` + strings.Repeat("x", MaxState-len(s.Version)-len(s.Capabilities)-len(`{"name":""}`)) + `"}`)
	id, err := k.Seal(s, alice)
	if err != nil || len(id) > MaxLen {
		t.Fatalf("Seal at MaxState: %d characters, %v; want at most %d", len(id), err, MaxLen)
	}
	if got, err := k.Open(id, alice, t0); err != nil || !bytes.Equal(got.ClientInfo, s.ClientInfo) {
		t.Fatalf("Open at MaxState: %v", err)
	}
	s.ClientInfo = append(s.ClientInfo[:len(s.ClientInfo)-2:len(s.ClientInfo)-2], `x"}`...)
	if _, err := k.Seal(s, alice); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Seal one byte past MaxState = %v, want ErrTooLarge", err)
	}
	if _, err := (&Keys{}).Seal(sample, alice); !errors.Is(err, ErrNoKey) {
		t.Errorf("Seal without keys = %v, want ErrNoKey", err)
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	a, b := EncodeKey(keyA), EncodeKey(keyB)
	for name, c := range map[string]struct {
		in   string
		want int    // keys, or 0 for an error
		err  string // part of the error
	}{
		"one":                       {a + "\n", 1, ""},
		"two, CRLF, blank, comment": {"# rotation\r\n" + b + "\r\n\r\n" + a, 2, ""},
		"unpadded and URL":          {strings.TrimRight(a, "=") + "\n" + strings.NewReplacer("+", "-", "/", "_").Replace(b), 2, ""},
		"duplicate kept once":       {a + "\n" + a, 1, ""},
		"empty":                     {"", 0, "no key"},
		"only comments":             {"# none\n", 0, "no key"},
		"short key":                 {"AAAA\n", 0, "line 1"},
		"not base64":                {a + "\n" + "not a key!", 0, "line 2"},
		"too many":                  {strings.Repeat(a[:10]+"\n", 0) + manyKeys(MaxKeys+1), 0, "more than"},
		"too large":                 {strings.Repeat("#", MaxKeysFile+1), 0, "larger"},
	} {
		t.Run(name, func(t *testing.T) {
			k, err := ParseKeys([]byte(c.in))
			switch {
			case c.want == 0 && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("ParseKeys = %v, want an error with %q", err, c.err)
			case c.want == 0:
				if strings.Contains(err.Error(), a[:8]) {
					t.Errorf("error %q quotes a key", err)
				}
			case err != nil || k.Len() != c.want:
				t.Fatalf("ParseKeys = %d keys, %v; want %d", k.Len(), err, c.want)
			}
		})
	}
	// The first line seals.
	k, _ := ParseKeys([]byte(b + "\n" + a))
	id, _ := k.Seal(sample, alice)
	if _, err := keys(t, keyB).Open(id, alice, t0); err != nil {
		t.Errorf("an id sealed with the file's keys does not open with its first key alone: %v", err)
	}
}

func manyKeys(n int) string {
	var sb strings.Builder
	for i := range n {
		sb.WriteString(EncodeKey(bytes.Repeat([]byte{byte(i + 1)}, KeySize)) + "\n")
	}
	return sb.String()
}

// TestPure: the package reads no file, clock, network or logger.
func TestPure(t *testing.T) {
	t.Parallel()
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"bytes": true, "crypto/aes": true, "crypto/cipher": true, "crypto/rand": true, "crypto/sha256": true,
		"encoding/base64": true, "encoding/binary": true, "encoding/json": true, "errors": true, "fmt": true, "strconv": true, "time": true}
	for _, imp := range p.Imports {
		if !allowed[imp] {
			t.Errorf("sessionid imports %s: it must stay pure", imp)
		}
	}
}

// FuzzOpen: Open never panics, and whatever opens was sealed: a fuzzed id
// opens only for the caller it was sealed for, with the state sealed (the
// seeds are sealed in each fuzzing process anew, so the id itself is not
// compared).
func FuzzOpen(f *testing.F) {
	k, _ := NewKeys(keyA, keyB)
	id, _ := k.Seal(sample, alice)
	want := sample
	want.Key = k.keys[0].ref // the key that sealed it
	f.Add(id, alice)
	f.Add(id[:len(id)-1], alice)
	f.Add(id, bob)
	f.Add("", []byte(nil))
	f.Add("AQ"+strings.Repeat("A", 60), alice)
	f.Fuzz(func(t *testing.T, in string, caller []byte) {
		s, err := k.Open(in, caller, t0)
		if err == nil && (!bytes.Equal(caller, alice) || !cmp.Equal(s, want)) {
			t.Fatalf("Open(%q, %x) opened %+v", in, caller, s)
		}
	})
}

// FuzzParseKeys: ParseKeys never panics and returns keys only within its
// limits.
func FuzzParseKeys(f *testing.F) {
	f.Add([]byte(EncodeKey(keyA) + "\n" + EncodeKey(keyB)))
	f.Add([]byte("# c\r\n\r\nAAAA"))
	f.Add([]byte(manyKeys(MaxKeys + 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseKeys(b)
		if err == nil && (k.Len() == 0 || k.Len() > MaxKeys) {
			t.Fatalf("ParseKeys(%q) = %d keys", b, k.Len())
		}
	})
}

// BenchmarkSealOpen: what a minted session costs each request that
// presents it (Open) and each initialize (Seal), for a typical client.
func BenchmarkSealOpen(b *testing.B) {
	k, _ := NewKeys(keyA, keyB)
	id, _ := k.Seal(sample, alice)
	b.Run("seal", func(b *testing.B) {
		for b.Loop() {
			_, _ = k.Seal(sample, alice)
		}
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.Open(id, alice, t0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
