package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	goccy "github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
)

// frontmatterCases is the table of ParseFrontmatter; the fuzz target is
// seeded from it.
var frontmatterCases = map[string]struct {
	in       string
	want     string // compact JSON; "" when an error is wanted
	wantBody string
	wantErr  error
}{
	"simple":            {in: "---\nname: a\ndescription: b\n---\nbody\n", want: `{"name":"a","description":"b"}`, wantBody: "body\n"},
	"key order kept":    {in: "---\nz: 1\na: 2\nm: 3\n---\n", want: `{"z":1,"a":2,"m":3}`},
	"crlf":              {in: "---\r\nname: a\r\nlist:\r\n  - x\r\n---\r\nbody\r\n", want: `{"name":"a","list":["x"]}`, wantBody: "body\r\n"},
	"lone cr":           {in: "---\rname: a\r---\rbody", want: `{"name":"a"}`, wantBody: "body"},
	"bom":               {in: "\uFEFF---\nname: a\n---\n", want: `{"name":"a"}`},
	"no final newline":  {in: "---\nname: a\n---", want: `{"name":"a"}`},
	"delimiter spaces":  {in: "--- \t\nname: a\n---  \nb", want: `{"name":"a"}`, wantBody: "b"},
	"empty document":    {in: "---\n---\n", want: `null`},
	"comment only":      {in: "---\n# nothing\n---\n", want: `null`},
	"body keeps dashes": {in: "---\na: 1\n---\n---\nmore\n", want: `{"a":1}`, wantBody: "---\nmore\n"},
	"scalar document":   {in: "---\njust text\n---\n", want: `"just text"`},
	"crlf block scalar": {in: "---\r\nd: |\r\n  one\r\n  two\r\n---\r\n", want: `{"d":"one\ntwo\n"}`},
	"html not escaped":  {in: "---\nd: <a> & b\n---\n", want: `{"d":"<a> & b"}`},
	// YAML 1.1 readers (PyYAML, yaml.v3) take a raw NEL, LS or PS for a line
	// break, even inside a quoted string; the JSON carries them escaped.
	"yaml 1.1 line breaks escaped": {in: "---\nx: \"a\\Nb\"\nl: \"\\L\"\np: \"\\P\"\n---\n",
		want: `{"x":"a\u0085b","l":"\u2028","p":"\u2029"}`},

	// YAML 1.2 core schema (YAML 1.2.2 §10.3.2), where YAML 1.1 differs.
	"yes is a string":       {in: "---\na: yes\nb: on\nc: Y\nd: off\n---\n", want: `{"a":"yes","b":"on","c":"Y","d":"off"}`},
	"bool spellings":        {in: "---\na: true\nb: False\nc: TRUE\n---\n", want: `{"a":true,"b":false,"c":true}`},
	"leading zero decimal":  {in: "---\na: 010\nb: -007\n---\n", want: `{"a":10,"b":-7}`},
	"octal 0o":              {in: "---\na: 0o17\n---\n", want: `{"a":15}`},
	"hex":                   {in: "---\na: 0x1F\nb: 0xff\n---\n", want: `{"a":31,"b":255}`},
	"plus sign":             {in: "---\na: +12\nb: +1.5\n---\n", want: `{"a":12,"b":1.5}`},
	"binary 1.1 is string":  {in: "---\na: 0b101\n---\n", want: `{"a":"0b101"}`},
	"underscore is string":  {in: "---\na: 1_000\n---\n", want: `{"a":"1_000"}`},
	"sexagesimal string":    {in: "---\na: 1:30\n---\n", want: `{"a":"1:30"}`},
	"floats":                {in: "---\na: 1e3\nb: .5\nc: 1.\nd: -0.0\ne: 6.02e+23\n---\n", want: `{"a":1000,"b":0.5,"c":1,"d":-0,"e":6.02e+23}`},
	"big int exact":         {in: "---\na: 123456789012345678901234567890\n---\n", want: `{"a":123456789012345678901234567890}`},
	"nulls":                 {in: "---\na: ~\nb: null\nc:\nd: NULL\n---\n", want: `{"a":null,"b":null,"c":null,"d":null}`},
	"dates stay strings":    {in: "---\na: 2024-01-15\nb: 2024-01-15T10:30:00Z\n---\n", want: `{"a":"2024-01-15","b":"2024-01-15T10:30:00Z"}`},
	"quoted numbers":        {in: "---\na: \"1.0\"\nb: '007'\n---\n", want: `{"a":"1.0","b":"007"}`},
	"plain key looks bool":  {in: "---\nyes: 1\non: 2\n---\n", want: `{"yes":1,"on":2}`},
	"quoted numeric key":    {in: "---\n\"1\": a\n---\n", want: `{"1":"a"}`},
	"date key is string":    {in: "---\n2024-01-15: release\n---\n", want: `{"2024-01-15":"release"}`},
	"merge-looking value":   {in: "---\na: <<\n---\n", want: `{"a":"<<"}`},
	"bang inside a string":  {in: "---\na: hello!\nb: \"!x\"\n---\n", want: `{"a":"hello!","b":"!x"}`},
	"empty value then bang": {in: "---\na:\nb: c!\n---\n", want: `{"a":null,"b":"c!"}`},

	"no frontmatter":       {in: "# Title\n", wantErr: ErrNoFrontmatter},
	"empty file":           {in: "", wantErr: ErrNoFrontmatter},
	"blank line first":     {in: "\n---\na: 1\n---\n", wantErr: ErrNoFrontmatter},
	"document start value": {in: "--- a\n---\n", wantErr: ErrNoFrontmatter},
	"unterminated":         {in: "---\nname: a\n", wantErr: ErrUnterminatedFrontmatter},
	"only opening":         {in: "---", wantErr: ErrUnterminatedFrontmatter},
	"dots do not close":    {in: "---\na: 1\n...\n", wantErr: ErrUnterminatedFrontmatter},
	"bad utf8":             {in: "---\na: \xff\n---\n", wantErr: ErrFrontmatterEncoding},
	"syntax error":         {in: "---\na: b: c\n---\n", wantErr: ErrFrontmatterSyntax},
	"tab indentation":      {in: "---\na:\n\t- b\n---\n", wantErr: ErrFrontmatterSyntax},
	// YAML 1.2 takes a tab for separating white space; PyYAML (YAML 1.1)
	// only inside a quoted string, a block scalar's text after its
	// indentation, or a comment, and refuses the whole document for a tab
	// anywhere else (safe_load: ScannerError "found character '\t' that
	// cannot start any token"): such a host cannot read the skill.
	"tab after a colon":            {in: "---\na:\tb\n---\n", wantErr: ErrFrontmatterSyntax},
	"trailing tab":                 {in: "---\nname: a\ndescription: b\t\n---\n", wantErr: ErrFrontmatterSyntax},
	"tab inside a plain scalar":    {in: "---\na: b\tc\n---\n", wantErr: ErrFrontmatterSyntax},
	"tab before a comment":         {in: "---\na: 'b'\t# c\n---\n", wantErr: ErrFrontmatterSyntax},
	"tab in a flow sequence":       {in: "---\na: [b,\tc]\n---\n", wantErr: ErrFrontmatterSyntax},
	"tab-only line":                {in: "---\na: b\n\t\nc: d\n---\n", wantErr: ErrFrontmatterSyntax},
	"tab before a key":             {in: "---\na: b\n \tc: d\n---\n", wantErr: ErrFrontmatterSyntax},
	"tab in a block's indentation": {in: "---\na: |\n  x\n\ty\n---\n", wantErr: ErrFrontmatterSyntax},
	"tabs where PyYAML takes them": {in: "---\na: \"x\ty\" # \tc\nb: 'x\ty'\nc: |\n  x\ty\n  \tz\nd: \"x\n\ty\"\n\"k\te\": >\n  p\tq\n---\n",
		want: `{"a":"x\ty","b":"x\ty","c":"x\ty\n\tz\n","d":"x y","k\te":"p\tq\n"}`},
	"merge key":             {in: "---\nbase: {a: 1}\n<<: {b: 2}\n---\n", wantErr: ErrFrontmatterNotJSON},
	"anchor":                {in: "---\na: &x 1\n---\n", wantErr: ErrFrontmatterNotJSON},
	"alias":                 {in: "---\na: &x 1\nb: *x\n---\n", wantErr: ErrFrontmatterNotJSON},
	"explicit str tag":      {in: "---\na: !!str 1\n---\n", wantErr: ErrFrontmatterNotJSON},
	"binary tag":            {in: "---\na: !!binary aGk=\n---\n", wantErr: ErrFrontmatterNotJSON},
	"local tag":             {in: "---\na: !thing x\n---\n", wantErr: ErrFrontmatterNotJSON},
	"non-specific tag":      {in: "---\na: ! 12\n---\n", wantErr: ErrFrontmatterNotJSON},
	"non-specific on map":   {in: "---\na: ! {b: 1}\n---\n", wantErr: ErrFrontmatterNotJSON},
	"tagged key":            {in: "---\n!!str 1: a\n---\n", wantErr: ErrFrontmatterNotJSON},
	"int key":               {in: "---\n1: a\n---\n", wantErr: ErrFrontmatterNotJSON},
	"bool key":              {in: "---\ntrue: a\n---\n", wantErr: ErrFrontmatterNotJSON},
	"null key":              {in: "---\n~: a\n---\n", wantErr: ErrFrontmatterNotJSON},
	"collection key":        {in: "---\n? [a, b]\n: c\n---\n", wantErr: ErrFrontmatterNotJSON},
	"duplicate key":         {in: "---\na: 1\nb: 2\na: 3\n---\n", wantErr: ErrFrontmatterNotJSON},
	"duplicate nested key":  {in: "---\nm:\n  k: 1\n  k: 2\n---\n", wantErr: ErrFrontmatterNotJSON},
	"quoted duplicate key":  {in: "---\na: 1\n\"a\": 2\n---\n", wantErr: ErrFrontmatterNotJSON},
	"nan":                   {in: "---\na: .nan\n---\n", wantErr: ErrFrontmatterNotJSON},
	"inf":                   {in: "---\na: -.Inf\n---\n", wantErr: ErrFrontmatterNotJSON},
	"float overflow":        {in: "---\na: 1e999\n---\n", wantErr: ErrFrontmatterNotJSON},
	"two documents":         {in: "---\na: 1\n...\nb: 2\n---\n", wantErr: ErrFrontmatterSyntax},
	"anchor in list":        {in: "---\nl: [&a x]\n---\n", wantErr: ErrFrontmatterNotJSON},
	"tagged sequence":       {in: "---\nl: !!seq [a]\n---\n", wantErr: ErrFrontmatterNotJSON},
	"set is a tagged map":   {in: "---\ns: !!set {a, b}\n---\n", wantErr: ErrFrontmatterNotJSON},
	"omap is a tagged list": {in: "---\ns: !!omap [a: 1]\n---\n", wantErr: ErrFrontmatterNotJSON},
}

func TestParseFrontmatter(t *testing.T) {
	t.Parallel()
	for name, tc := range frontmatterCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fm, body, err := ParseFrontmatter([]byte(tc.in))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ParseFrontmatter(%q) error = %v, want %v", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFrontmatter(%q) error = %v", tc.in, err)
			}
			if string(fm) != tc.want {
				t.Errorf("ParseFrontmatter(%q) = %s, want %s", tc.in, fm, tc.want)
			}
			if string(body) != tc.wantBody {
				t.Errorf("ParseFrontmatter(%q) body = %q, want %q", tc.in, body, tc.wantBody)
			}
			if !json.Valid(fm) {
				t.Errorf("ParseFrontmatter(%q) = %s, not valid JSON", tc.in, fm)
			}
		})
	}
}

// TestFrontmatterRefusalReasons pins that a refusal names the construct and
// the line (counted from the opening delimiter) in words an author can act on.
func TestFrontmatterRefusalReasons(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ in, want string }{
		"merge":     {"---\na: 1\n<<: {b: 2}\n---\n", `line 3: merge key "<<" is not allowed`},
		"alias":     {"---\na: &x 1\n", ""},
		"anchor":    {"---\na: &x 1\n---\n", "line 2: anchor &x is not allowed"},
		"tag":       {"---\na: !!binary aGk=\n---\n", "line 2: explicit tag !!binary is not allowed"},
		"bang":      {"---\na: ! 12\n---\n", "line 2: explicit tag ! is not allowed"},
		"duplicate": {"---\na: 1\na: 2\n---\n", `line 3: duplicate key "a"`},
		"int key":   {"---\n10: a\n---\n", `line 2: mapping key "10" is a integer, not a string`},
		"nan":       {"---\na: .NaN\n---\n", `line 2: ".NaN" is NaN or infinite; JSON has no such number`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, _, err := ParseFrontmatter([]byte(tc.in))
			if err == nil {
				t.Fatalf("ParseFrontmatter(%q) succeeded, want an error", tc.in)
			}
			if tc.want != "" && !strings.HasSuffix(err.Error(), tc.want) {
				t.Errorf("ParseFrontmatter(%q) error = %q, want it to end %q", tc.in, err, tc.want)
			}
		})
	}
}

// TestFrontmatterMatchesIndependentParse reads every file of the corpus in
// four encodings (as written, CRLF, BOM, BOM+CRLF) and compares the JSON
// ParseFrontmatter makes with what a second, independent YAML parser
// (goccy/go-yaml) reads from the same served bytes, field by field and in
// key order. The corpus avoids the few scalars where goccy keeps YAML 1.1
// habits (010, 1e3, 1_000); the table above pins those against the spec.
func TestFrontmatterMatchesIndependentParse(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "frontmatter", "*.md"))
	if err != nil || len(paths) < 5 {
		t.Fatalf("corpus: %v files, err %v", len(paths), err)
	}
	variants := map[string]func([]byte) []byte{
		"lf":       func(b []byte) []byte { return b },
		"crlf":     toCRLF,
		"bom":      func(b []byte) []byte { return append([]byte("\uFEFF"), b...) },
		"bom+crlf": func(b []byte) []byte { return append([]byte("\uFEFF"), toCRLF(b)...) },
	}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for vname, variant := range variants {
			t.Run(filepath.Base(p)+"/"+vname, func(t *testing.T) {
				t.Parallel()
				served := variant(bytes.Clone(src))
				fm, _, err := ParseFrontmatter(served)
				if err != nil {
					t.Fatalf("ParseFrontmatter: %v", err)
				}
				got, err := orderedFromJSON(fm)
				if err != nil {
					t.Fatalf("frontmatter %s: %v", fm, err)
				}
				want, err := independentParse(served)
				if err != nil {
					t.Fatalf("independent parse: %v", err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("frontmatter differs from an independent YAML parse (-independent +catalog):\n%s", diff)
				}
			})
		}
	}
}

func toCRLF(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }

// kv is one key of an ordered map, the common form both parses become.
type kv struct {
	K string
	V any
}

// independentParse splits the way a simple client would (strip a BOM, find
// the lines "---") and parses with goccy/go-yaml into ordered maps.
func independentParse(served []byte) (any, error) {
	text := strings.TrimPrefix(string(served), "\uFEFF")
	lines := strings.SplitAfter(text, "\n")
	if strings.TrimRight(lines[0], " \t\r\n") != "---" {
		return nil, fmt.Errorf("no opening delimiter")
	}
	var yamlText strings.Builder
	for _, l := range lines[1:] {
		if strings.TrimRight(l, " \t\r\n") == "---" {
			var v any
			if err := goccy.UnmarshalWithOptions([]byte(yamlText.String()), &v, goccy.UseOrderedMap()); err != nil {
				return nil, err
			}
			return normalizeGoccy(v)
		}
		yamlText.WriteString(l)
	}
	return nil, fmt.Errorf("no closing delimiter")
}

func normalizeGoccy(v any) (any, error) {
	switch v := v.(type) {
	case goccy.MapSlice:
		out := []kv{}
		for _, it := range v {
			k, ok := it.Key.(string)
			if !ok {
				return nil, fmt.Errorf("key %v is %T", it.Key, it.Key)
			}
			nv, err := normalizeGoccy(it.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, kv{k, nv})
		}
		return out, nil
	case []any:
		out := []any{}
		for _, it := range v {
			nv, err := normalizeGoccy(it)
			if err != nil {
				return nil, err
			}
			out = append(out, nv)
		}
		return out, nil
	case int, int64, uint64, float64, uint, int32:
		return normalizeNumber(fmt.Sprint(v))
	case nil, string, bool:
		return v, nil
	}
	return nil, fmt.Errorf("unexpected %T %v", v, v)
}

// normalizeNumber turns a number into an exact rational string, so 1e3,
// 1000 and 1000.0 compare equal and big integers lose nothing.
func normalizeNumber(s string) (any, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("number %q", s)
	}
	return "number:" + r.RatString(), nil
}

// orderedFromJSON decodes JSON keeping object key order.
func orderedFromJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			out := []kv{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, kv{k.(string), v})
			}
			_, err := dec.Token()
			return out, err
		case '[':
			out := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		}
	case json.Number:
		return normalizeNumber(tok.String())
	}
	return tok, nil
}

func FuzzParseFrontmatter(f *testing.F) {
	for _, tc := range frontmatterCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte("---\nx: \"a\\Nb\"\n---\n")) // \N is NEL (U+0085), a line break to YAML 1.1
	f.Fuzz(func(t *testing.T, b []byte) {
		fm, body, err := ParseFrontmatter(b)
		if err != nil {
			if fm != nil || body != nil {
				t.Fatalf("ParseFrontmatter(%q) returned values with error %v", b, err)
			}
			return
		}
		if !json.Valid(fm) {
			t.Fatalf("ParseFrontmatter(%q) = %s, not valid JSON", b, fm)
		}
		if !bytes.HasSuffix(b, body) {
			t.Fatalf("ParseFrontmatter(%q) body %q is not a suffix of the input", b, body)
		}
		// The JSON must itself be stable: parsing it as YAML (JSON is YAML
		// 1.2) gives back the same JSON.
		again, _, err := ParseFrontmatter([]byte("---\n" + string(fm) + "\n---\n"))
		if err != nil {
			// JSON strings with characters YAML forbids unescaped (or very
			// deep nesting) may not re-parse; that is not this property.
			return
		}
		if !jsonEqual(fm, again) {
			t.Fatalf("ParseFrontmatter(%q) = %s, but as YAML it reads %s", b, fm, again)
		}
	})
}

func jsonEqual(a, b []byte) bool {
	x, err1 := orderedFromJSON(a)
	y, err2 := orderedFromJSON(b)
	return err1 == nil && err2 == nil && cmp.Equal(x, y)
}

func FuzzSplitFrontmatter(f *testing.F) {
	for _, tc := range frontmatterCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		text, body, err := splitFrontmatter(b)
		if err != nil {
			return
		}
		if !bytes.HasSuffix(b, body) {
			t.Fatalf("splitFrontmatter(%q) body %q is not a suffix", b, body)
		}
		if !bytes.Contains(b, text) {
			t.Fatalf("splitFrontmatter(%q) text %q is not in the input", b, text)
		}
		for line := range bytes.Lines(normalizeNewlines(text)) {
			if isDelimiter(bytes.TrimRight(line, "\n")) {
				t.Fatalf("splitFrontmatter(%q) text %q contains a delimiter line", b, text)
			}
		}
	})
}
