package methods

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestListingKeysAreExact: what the upstream lists, by which the sidecar
// leaves its own entries out of a merged listing (and forwards a call of
// the name), is read as the caller's client reads the same page, member
// names matched exactly (go-sdk decodes case-sensitively, JavaScript
// objects are keyed exactly), the last of duplicates counting: an entry's
// "Name" or "URI" is not its name or URI, and one entry that does not
// decode hides none of the others.
func TestListingKeysAreExact(t *testing.T) {
	names := pageNames(json.RawMessage(`{"tools":[{"name":"a","Name":"b"},{"Name":"c"},{"name":5},{"name":"d"}]}`), "tools")
	if want := map[string]bool{"a": true, "d": true}; !reflect.DeepEqual(names, want) {
		t.Errorf("pageNames = %v; want %v", names, want)
	}
	uris := pageURIs(json.RawMessage(`{"resources":[{"uri":"skill://a/SKILL.md","URI":"skill://b/SKILL.md"},{"URI":"skill://c/SKILL.md"}],` +
		`"Resources":[{"uri":"skill://e/SKILL.md"}]}`))
	if want := map[string]bool{"skill://a/SKILL.md": true}; !reflect.DeepEqual(uris, want) {
		t.Errorf("pageURIs = %v; want %v", uris, want)
	}
}

// FuzzListingKeys holds pageNames, pageURIs and readContents to readings
// of the same bytes through maps, whose keys encoding/json matches exactly
// (last of duplicates winning), as a client reads them.
func FuzzListingKeys(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a","Name":"b"},{"Name":"c"},{"name":5}],"resources":[{"uri":"x","URI":"y"},3]}`))
	f.Add([]byte(`{"uri":"skill://a/SKILL.md","text":"t","Text":"folded","blob":null,"mimeType":"text/markdown"}`))
	f.Add([]byte(`{"resources":{"uri":"x"},"tools":null}`))
	f.Add([]byte(`{"uri":5}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // results are valid JSON
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(in, &m)
		wantNames := map[string]bool{}
		var toolItems []json.RawMessage
		_ = json.Unmarshal(m["tools"], &toolItems)
		for _, it := range toolItems {
			var e map[string]json.RawMessage
			var name string
			if json.Unmarshal(it, &e) == nil && json.Unmarshal(e["name"], &name) == nil && e["name"] != nil && string(e["name"]) != "null" {
				wantNames[name] = true
			}
		}
		if got := pageNames(in, "tools"); !reflect.DeepEqual(got, wantNames) {
			t.Fatalf("pageNames(%q) = %v; want %v", in, got, wantNames)
		}
		var wantURIs map[string]bool
		var entries []json.RawMessage
		if json.Unmarshal(m["resources"], &entries) == nil {
			wantURIs = map[string]bool{}
			for _, it := range entries {
				var e map[string]json.RawMessage
				var uri string
				if json.Unmarshal(it, &e) == nil && e["uri"] != nil && string(e["uri"]) != "null" && json.Unmarshal(e["uri"], &uri) == nil {
					wantURIs[uri] = true
				}
			}
		}
		if got := pageURIs(in); !reflect.DeepEqual(got, wantURIs) {
			t.Fatalf("pageURIs(%q) = %v; want %v", in, got, wantURIs)
		}
		var want contents
		var c map[string]json.RawMessage
		wantOK := json.Unmarshal(in, &c) == nil
		for key, dst := range map[string]any{"uri": &want.URI, "mimeType": &want.MIMEType, "text": &want.Text, "blob": &want.Blob} {
			if raw, ok := c[key]; wantOK && ok && json.Unmarshal(raw, dst) != nil {
				wantOK = false
			}
		}
		got, err := readContents(in)
		if (err == nil) != wantOK || wantOK && !reflect.DeepEqual(got, want) {
			t.Fatalf("readContents(%q) = %+v, %v; want %+v, ok %v", in, got, err, want, wantOK)
		}
	})
}
