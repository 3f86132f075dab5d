package inject

import (
	"errors"
	"testing"
	"time"
)

// TestParseWatchEvent reads lines shaped as the API server's JSON watch
// stream sends them (one {"type", "object"} per line; an ERROR's object is
// a Status).
func TestParseWatchEvent(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		line     string
		wantType string
		wantCode int   // an *APIError with this code
		wantErr  error // errors.Is
	}{
		"added":    {line: `{"type":"ADDED","object":{"kind":"Secret","metadata":{"name":"t"}}}`, wantType: "ADDED"},
		"modified": {line: `{"type":"MODIFIED","object":{"kind":"MutatingWebhookConfiguration"}}`, wantType: "MODIFIED"},
		"deleted":  {line: `{"type":"DELETED","object":{}}`, wantType: "DELETED"},
		"bookmark": {line: `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}`, wantType: "BOOKMARK"},
		"gone":     {line: `{"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old resource version"}}`, wantType: "ERROR", wantCode: 410},
		"unknown":  {line: `{"type":"RENAMED","object":{}}`, wantErr: errWatchEvent},
		"no type":  {line: `{"object":{}}`, wantErr: errWatchEvent},
		"not json": {line: `{"type":"ADDED"`, wantErr: errWatchEvent},
		"array":    {line: `[1]`, wantErr: errWatchEvent},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			typ, err := parseWatchEvent([]byte(tc.line))
			var apiErr *APIError
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("parseWatchEvent(%s) = %q, %v; want %v", tc.line, typ, err, tc.wantErr)
				}
			case tc.wantCode != 0:
				if !errors.As(err, &apiErr) || apiErr.Code != tc.wantCode || typ != tc.wantType {
					t.Errorf("parseWatchEvent(%s) = %q, %v; want %s with code %d", tc.line, typ, err, tc.wantType, tc.wantCode)
				}
			case err != nil || typ != tc.wantType:
				t.Errorf("parseWatchEvent(%s) = %q, %v; want %q", tc.line, typ, err, tc.wantType)
			}
		})
	}
}

// FuzzParseWatchEvent: no panic; a type is returned only for the event
// types the API server defines.
func FuzzParseWatchEvent(f *testing.F) {
	f.Add([]byte(`{"type":"ADDED","object":{"metadata":{"name":"t"}}}`))
	f.Add([]byte(`{"type":"ERROR","object":{"code":410,"message":"gone"}}`))
	f.Add([]byte(`{"type":"X"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		typ, err := parseWatchEvent(line)
		switch typ {
		case "", watchAdded, watchModified, watchDeleted, watchBookmark, watchError:
		default:
			t.Errorf("parseWatchEvent(%q) = %q", line, typ)
		}
		if (err == nil) == (typ == "" || typ == watchError) {
			t.Errorf("parseWatchEvent(%q) = %q, %v", line, typ, err)
		}
	})
}

// TestRestoreFrom: a Secret emptied (or left with a CA that has no key) is
// refilled from what the injector held, so no new CA is made while the
// API server still trusts the old one; a Secret with a usable CA, or
// nothing usable held, is left to PlanCerts.
func TestRestoreFrom(t *testing.T) {
	t.Parallel()
	p := CertPolicy{CAValidity: 90 * time.Hour, CertValidity: 30 * time.Hour, Hosts: []string{"127.0.0.1"}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	held, _, err := PlanCerts(CertState{}, nil, p, now)
	if err != nil {
		t.Fatal(err)
	}
	held, _, err = PlanCerts(held, held.CABundle, p, now) // the leaf, once the CA is live
	if err != nil || len(held.Cert) == 0 {
		t.Fatalf("no leaf planned: %v", err)
	}
	other, _, err := PlanCerts(CertState{}, nil, p, now)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(91 * time.Hour) // every CA above has expired
	for name, tc := range map[string]struct {
		cur, held   CertState
		at          time.Time
		want        CertState
		wantRestore bool
	}{
		"emptied":             {cur: CertState{}, held: held, at: now, want: held, wantRestore: true},
		"bundle without key":  {cur: CertState{CABundle: held.CABundle}, held: held, at: now, want: held, wantRestore: true},
		"intact":              {cur: held, held: held, at: now, want: held},
		"another CA":          {cur: other, held: held, at: now, want: other},
		"nothing held":        {cur: CertState{}, held: CertState{}, at: now, want: CertState{}},
		"held CA has expired": {cur: CertState{}, held: held, at: later, want: CertState{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, restored := RestoreFrom(tc.cur, tc.held, tc.at)
			if restored != tc.wantRestore || string(got.CAKey) != string(tc.want.CAKey) || string(got.Cert) != string(tc.want.Cert) {
				t.Errorf("RestoreFrom = (CA key %.20q…, restored %v), want (%.20q…, %v)", got.CAKey, restored, tc.want.CAKey, tc.wantRestore)
			}
		})
	}
}
