package onbehalf

import (
	"crypto/sha256"
	"net/http"
	"testing"
)

// TestKeysBytes writes out what each key hashes. A sealed session id is
// sealed over SessionKey's and CredentialKey's bytes (the era bridge), so
// a change of one byte ends every session on an upgrade; CallerKey keys
// what the upstream told a caller.
func TestKeysBytes(t *testing.T) {
	t.Parallel()
	h := http.Header{
		"Authorization":     {"Bearer t"},
		"Cookie":            {"a=1", "b=2"},
		"X-Forwarded-For":   {"192.0.2.1"},
		"X-Forwarded-Host":  {"sidecar:8080"},
		"X-Forwarded-Proto": {"http"},
		"Mcp-Session-Id":    {"s"},
	}
	sum := func(text string) [sha256.Size]byte { return sha256.Sum256([]byte(text)) }
	creds := "Authorization\x00Bearer t\x00Cookie\x00a=1\x00Cookie\x00b=2\x00"
	identity := "X-Forwarded-For\x00192.0.2.1\x00X-Forwarded-Host\x00sidecar:8080\x00X-Forwarded-Proto\x00http\x00"

	if got, want := CredentialKey(h, "authorization", "Cookie"), sum("Authorization\x00Bearer t\x00Cookie\x00a=1\x00Cookie\x00b=2\x00"); got != want {
		t.Errorf("CredentialKey = %x, want the SHA-256 of the credentials' lines", got)
	}
	inner := sum(creds + identity)
	if got, want := SessionKey(h, nil, []byte("extra")), sha256.Sum256(append(inner[:], "extra"...)); got != want {
		t.Errorf("SessionKey = %x, want the SHA-256 of (the default credentials' and the identity's hash, then extra)", got)
	}
	r, _ := http.NewRequest(http.MethodPost, "http://sidecar:8080/mcp", nil)
	r.Host, r.RemoteAddr = "sidecar:8080", "192.0.2.1:5555"
	r.Header = http.Header{"Authorization": {"Bearer t"}, "Mcp-Session-Id": {"s"}}
	if got, want := CallerKey(r, "Authorization", "Mcp-Session-Id"), sum("Authorization\x00Bearer t\x00Mcp-Session-Id\x00s\x00"+identity); got != want {
		t.Errorf("CallerKey = %x, want the SHA-256 of the named headers' and the forwarded identity's lines", got)
	}
}
