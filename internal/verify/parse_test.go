package verify

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var sseTests = map[string]struct {
	in   string
	want []string // data of each event, "name|data" when named
	err  error
}{
	"lf":                  {in: "data: a\n\ndata: b\n\n", want: []string{"a", "b"}},
	"crlf":                {in: "data: a\r\n\r\ndata: b\r\n\r\n", want: []string{"a", "b"}},
	"cr":                  {in: "data: a\r\rdata: b\r\r", want: []string{"a", "b"}},
	"multi-line data":     {in: "data: a\ndata:b\n\n", want: []string{"a\nb"}},
	"comments and id":     {in: ": keep-alive\nid: 7\nretry: 10\ndata: x\n\n", want: []string{"x"}},
	"named event":         {in: "event: message\ndata: x\n\nevent: ping\ndata: y\n\n", want: []string{"message|x", "ping|y"}},
	"no final blank":      {in: "data: x", want: []string{"x"}},
	"no data":             {in: "id: 1\n\n: c\n\n", want: nil},
	"field without colon": {in: "data\n\n", want: []string{""}},
	"too large":           {in: "data: " + strings.Repeat("x", 100) + "\n\n", err: ErrTooLarge},
}

func TestReadSSE(t *testing.T) {
	t.Parallel()
	for name, tt := range sseTests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []string
			err := readSSE(strings.NewReader(tt.in), 64, func(ev sseEvent) bool {
				s := string(ev.data)
				if ev.name != "" {
					s = ev.name + "|" + s
				}
				got = append(got, s)
				return false
			})
			if !errors.Is(err, tt.err) {
				t.Fatalf("readSSE(%q) error = %v, want %v", tt.in, err, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); tt.err == nil && diff != "" {
				t.Errorf("readSSE(%q) events (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func FuzzReadSSE(f *testing.F) {
	for _, tt := range sseTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n := 0
		_ = readSSE(strings.NewReader(in), 256, func(ev sseEvent) bool {
			if len(ev.data) > 256 {
				t.Fatalf("event of %d bytes passed a 256-byte bound", len(ev.data))
			}
			n++
			return n > 100
		})
	})
}

var frontmatterTests = map[string]struct {
	in   string
	want string // JSON; "" when err
	err  error
}{
	"simple":           {in: "---\nname: a\ndescription: b\n---\nbody", want: `{"name":"a","description":"b"}`},
	"bom and crlf":     {in: "\xEF\xBB\xBF---\r\nname: a\r\n---\r\n", want: `{"name":"a"}`},
	"cr only":          {in: "---\rname: a\r---\r", want: `{"name":"a"}`},
	"yaml 1.2 types":   {in: "---\na: yes\nb: 010\nc: 0x1F\nd: 1.50\ne: ~\nf: true\ng: 2024-01-15\n---\n", want: `{"a":"yes","b":10,"c":31,"d":1.5,"e":null,"f":true,"g":"2024-01-15"}`},
	"block scalars":    {in: "---\nd: >-\n  one\n  two\nl: |\n  x\n  y\n---\n", want: `{"d":"one two","l":"x\ny\n"}`},
	"nested":           {in: "---\nmetadata:\n  k: v\nlist: [1, \"2\"]\n---\n", want: `{"metadata":{"k":"v"},"list":[1,"2"]}`},
	"empty":            {in: "---\n---\n", want: `null`},
	"delimiter blanks": {in: "---  \nname: a\n--- \t\n", want: `{"name":"a"}`},
	"no frontmatter":   {in: "# title\n", err: ErrNoFrontmatter},
	"unterminated":     {in: "---\nname: a\n", err: ErrNoFrontmatter},
	"bad yaml":         {in: "---\nname: [a\n---\n", err: ErrFrontmatterYAML},
	"merge key":        {in: "---\nbase: &b {x: 1}\nm:\n  <<: *b\n---\n", err: ErrFrontmatterNotJSON},
	"alias":            {in: "---\na: &x 1\nb: *x\n---\n", err: ErrFrontmatterNotJSON},
	"explicit tag":     {in: "---\na: !!binary aGk=\n---\n", err: ErrFrontmatterNotJSON},
	"int key":          {in: "---\n1: a\n---\n", err: ErrFrontmatterNotJSON},
	"duplicate key":    {in: "---\na: 1\na: 2\n---\n", err: ErrFrontmatterNotJSON},
	"nan":              {in: "---\na: .nan\n---\n", err: ErrFrontmatterNotJSON},
	"not utf-8":        {in: "---\na: \xff\n---\n", err: ErrFrontmatterYAML},
}

func TestParseFrontmatter(t *testing.T) {
	t.Parallel()
	for name, tt := range frontmatterTests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := parseFrontmatter([]byte(tt.in))
			if !errors.Is(err, tt.err) {
				t.Fatalf("parseFrontmatter(%q) error = %v, want %v", tt.in, err, tt.err)
			}
			if tt.err != nil {
				return
			}
			want, err := decodeJSON([]byte(tt.want))
			if err != nil {
				t.Fatal(err)
			}
			if d := diffJSON("", want, got); d != "" {
				t.Errorf("parseFrontmatter(%q) differs: %s", tt.in, d)
			}
		})
	}
}

func FuzzParseFrontmatter(f *testing.F) {
	for _, tt := range frontmatterTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := parseFrontmatter(in)
		if err != nil {
			return
		}
		// Whatever parses must have a JSON form that reads back equal.
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("parseFrontmatter(%q) gave a value with no JSON form: %v", in, err)
		}
		back, err := decodeJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffJSON("", v, back); d != "" {
			t.Fatalf("parseFrontmatter(%q) does not round-trip through JSON: %s", in, d)
		}
	})
}

func TestDiffJSON(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		a, b string
		want string
	}{
		"equal, key order": {a: `{"a":1,"b":[true,null]}`, b: `{"b":[true,null],"a":1}`},
		"number forms":     {a: `{"n":1}`, b: `{"n":1.0e0}`},
		"missing field":    {a: `{"a":1,"b":2}`, b: `{"a":1}`, want: "b: missing"},
		"extra field":      {a: `{"a":1}`, b: `{"a":1,"z":0}`, want: "z: unexpected field"},
		"string vs number": {a: `{"v":"1.0"}`, b: `{"v":1}`, want: `v: 1, want "1.0"`},
		"array length":     {a: `{"l":[1]}`, b: `{"l":[1,2]}`, want: "l: 2 items, want 1"},
		"nested value":     {a: `{"m":{"k":"v"}}`, b: `{"m":{"k":"w"}}`, want: `m.k: "w", want "v"`},
		"big ints differ":  {a: `{"n":9007199254740993}`, b: `{"n":9007199254740992}`, want: "n: 9007199254740992, want 9007199254740993"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, _ := decodeJSON([]byte(tt.a))
			b, _ := decodeJSON([]byte(tt.b))
			if got := diffJSON("", a, b); got != tt.want {
				t.Errorf("diffJSON(%s, %s) = %q, want %q", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

var entryTests = map[string]struct {
	in        string
	wantCheck string // a check that must fail ("" for none)
}{
	"good":                 {in: `{"uri":"skill://a/b/SKILL.md","frontmatter":{"name":"b","description":"d"},"resources":[{"uri":"skill://a/b/SKILL.md","digest":"sha256:` + strings.Repeat("0", 64) + `","size":3}]}`},
	"not an object":        {in: `[1]`, wantCheck: "entry.shape"},
	"uri not SKILL.md":     {in: `{"uri":"skill://a/b/README.md","frontmatter":{},"resources":[]}`, wantCheck: "entry.shape"},
	"empty segment":        {in: `{"uri":"skill://a//b/SKILL.md","frontmatter":{},"resources":[]}`, wantCheck: "entry.shape"},
	"frontmatter string":   {in: `{"uri":"skill://b/SKILL.md","frontmatter":"x","resources":[]}`, wantCheck: "entry.shape"},
	"resources other str":  {in: `{"uri":"skill://b/SKILL.md","frontmatter":{"name":"b","description":"d"},"resources":"static"}`, wantCheck: "entry.shape"},
	"resource no uri":      {in: `{"uri":"skill://b/SKILL.md","frontmatter":{"name":"b","description":"d"},"resources":[{}]}`, wantCheck: "entry.shape"},
	"negative size":        {in: `{"uri":"skill://b/SKILL.md","frontmatter":{"name":"b","description":"d"},"resources":[{"uri":"skill://b/SKILL.md","digest":"sha256:` + strings.Repeat("0", 64) + `","size":-1}]}`, wantCheck: "resources.size"},
	"fractional size":      {in: `{"uri":"skill://b/SKILL.md","frontmatter":{"name":"b","description":"d"},"resources":[{"uri":"skill://b/SKILL.md","digest":"sha256:` + strings.Repeat("0", 64) + `","size":1.5}]}`, wantCheck: "resources.size"},
	"no description":       {in: `{"uri":"skill://b/SKILL.md","frontmatter":{"name":"b"},"resources":"dynamic"}`, wantCheck: "frontmatter.fields"},
	"long name":            {in: `{"uri":"skill://` + strings.Repeat("a", 65) + `/SKILL.md","frontmatter":{"name":"` + strings.Repeat("a", 65) + `","description":"d"},"resources":"dynamic"}`, wantCheck: "name.rule"},
	"metadata not strings": {in: `{"uri":"skill://b/SKILL.md","frontmatter":{"name":"b","description":"d","metadata":{"k":1}},"resources":"dynamic"}`, wantCheck: "frontmatter.fields"},
}

func TestCheckEntry(t *testing.T) {
	t.Parallel()
	for name, tt := range entryTests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v, err := decodeJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var cs checks
			checkEntry(v, false, &cs)
			var failed []string
			for _, c := range cs.list {
				if c.Status == StatusFail {
					failed = append(failed, c.Name)
				}
			}
			if tt.wantCheck == "" && len(failed) > 0 || tt.wantCheck != "" && !contains(failed, tt.wantCheck) {
				t.Errorf("checkEntry(%s) failed %q, want %q", tt.in, failed, tt.wantCheck)
			}
		})
	}
}

func FuzzCheckEntry(f *testing.F) {
	for _, tt := range entryTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := decodeJSON(in)
		if err != nil {
			return
		}
		var cs checks
		e := checkEntry(v, true, &cs)
		if e != nil && !e.dynamic {
			impliedTree(e) // must not panic on whatever passed the checks
		}
		if _, _, err := decodeContent(in, "skill://b/SKILL.md"); err == nil && !json.Valid(in) {
			t.Fatalf("decodeContent accepted invalid JSON %q", in)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
