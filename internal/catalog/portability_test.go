package catalog

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// ambiguityCases is the table of ParseFrontmatterAmbiguities: the reasons
// an author reads for each YAML 1.1 resolver, and the spellings both
// readers agree on. TestAgreesWithPyYAML runs every input through PyYAML
// too; the fuzz target is seeded from it.
var ambiguityCases = map[string]struct {
	in   string
	want []string // Ambiguity.String() in document order
}{
	"yes value": {"---\nenabled: yes\n---\n", []string{
		`line 2: enabled: yes is the string "yes" in YAML 1.2 but the boolean true in YAML 1.1 (PyYAML); quote it: enabled: "yes"`}},
	"off in a nested map": {"---\nmetadata:\n  audit: Off\n---\n", []string{
		`line 3: metadata.audit: Off is the string "Off" in YAML 1.2 but the boolean false in YAML 1.1 (PyYAML); quote it: audit: "Off"`}},
	"on key": {"---\non: push\n---\n", []string{
		`line 2: key on is the string "on" in YAML 1.2 but the boolean true in YAML 1.1 (PyYAML); quote it: "on": ...`}},
	"octal": {"---\nmode: 0755\n---\n", []string{
		`line 2: mode: 0755 is the integer 755 in YAML 1.2 but the integer 493 in YAML 1.1 (PyYAML); quote it: mode: "0755"`}},
	"base 60": {"---\nt: 1:30\n---\n", []string{
		`line 2: t: 1:30 is the string "1:30" in YAML 1.2 but the integer 90 in YAML 1.1 (PyYAML); quote it: t: "1:30"`}},
	"underscore": {"---\nn: 1_000\n---\n", []string{
		`line 2: n: 1_000 is the string "1_000" in YAML 1.2 but the integer 1000 in YAML 1.1 (PyYAML); quote it: n: "1_000"`}},
	"exponent without dot": {"---\nl: [1e3]\n---\n", []string{
		`line 2: l[0]: 1e3 is the float 1000 in YAML 1.2 but the string "1e3" in YAML 1.1 (PyYAML); quote it: - "1e3"`}},
	"timestamp": {"---\nupdated: 2025-06-02T10:30:00Z\n---\n", []string{
		`line 2: updated: 2025-06-02T10:30:00Z is the string "2025-06-02T10:30:00Z" in YAML 1.2 but a timestamp (a datetime, not a string) in YAML 1.1 (PyYAML); quote it: updated: "2025-06-02T10:30:00Z"`}},
	"date key": {"---\n2025-06-02: released\n---\n", []string{
		`line 2: key 2025-06-02 is the string "2025-06-02" in YAML 1.2 but a date in YAML 1.1 (PyYAML); quote it: "2025-06-02": ...`}},
	"no such date": {"---\nd: 2025-02-30\n---\n", []string{
		`line 2: d: 2025-02-30 is the string "2025-02-30" in YAML 1.2 but an error, refusing the whole document in YAML 1.1 (PyYAML); quote it: d: "2025-02-30"`}},
	"merge-looking value": {"---\na: <<\n---\n", []string{
		`line 2: a: << is the string "<<" in YAML 1.2 but an error, refusing the whole document in YAML 1.1 (PyYAML); quote it: a: "<<"`}},
	"scalar document": {"---\nno\n---\n", []string{
		`line 2: no is the string "no" in YAML 1.2 but the boolean false in YAML 1.1 (PyYAML); quote it: "no"`}},
	"two in order": {"---\na: on\nb: [x, 0b1]\n---\n", []string{
		`line 2: a: on is the string "on" in YAML 1.2 but the boolean true in YAML 1.1 (PyYAML); quote it: a: "on"`,
		`line 3: b[1]: 0b1 is the string "0b1" in YAML 1.2 but the integer 1 in YAML 1.1 (PyYAML); quote it: - "0b1"`}},

	"quoted is fine":          {"---\na: \"yes\"\nb: '0755'\n\"on\": x\nc: \"2025-06-02T10:30:00Z\"\n---\n", nil},
	"bare date is fine":       {"---\ncreated: 2025-06-02\nleap: 2024-02-29\n---\n", nil},
	"shared spellings":        {"---\na: true\nb: False\nc: ~\nd: null\ne:\nf: 12\ng: -3\nh: 1.5\ni: 6.02e+23\nj: 0x1F\n---\n", nil},
	"leading zero same value": {"---\na: 07\nb: 00\nc: 01\n---\n", nil},
	"equals key":              {"---\n=: x\n---\n", nil},
	"block scalar is fine":    {"---\na: |\n  yes\nb: >\n  0755\n---\n", nil},
	"words":                   {"---\nname: pdf\ndescription: Yes, it reads PDFs on Mondays\n---\n", nil},
	"multi-line plain":        {"---\na: 1:30\n  yes\nb: on\n  off\n---\n", nil},
	"comment after":           {"---\na: 12 # yes\nb: x #on\n---\n", nil},
}

func TestParseFrontmatterAmbiguities(t *testing.T) {
	t.Parallel()
	for name, tc := range ambiguityCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fm, body, amb, err := ParseFrontmatterAmbiguities([]byte(tc.in))
			if err != nil {
				t.Fatalf("ParseFrontmatterAmbiguities(%q) error = %v", tc.in, err)
			}
			var got []string
			for _, a := range amb {
				got = append(got, a.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseFrontmatterAmbiguities(%q) (-want +got):\n%s", tc.in, diff)
			}
			fm2, body2, err := ParseFrontmatter([]byte(tc.in))
			if err != nil || !bytes.Equal(fm, fm2) || !bytes.Equal(body, body2) {
				t.Errorf("ParseFrontmatter(%q) = %s, %q, %v; want what ParseFrontmatterAmbiguities read: %s, %q", tc.in, fm2, body2, err, fm, body)
			}
		})
	}
}

// TestFlowColonRefused pins the one place where yaml.v3 splits a flow
// collection unlike YAML 1.2 (and PyYAML): a plain scalar ending in ":"
// before a flow indicator is a key there, not part of a string.
func TestFlowColonRefused(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"---\nf: [a:, x]\n---\n", "---\nm: {x: 730:}\n---\n", "---\nm: {a:: b}\n---\n"} {
		if _, _, err := ParseFrontmatter([]byte(in)); !errors.Is(err, ErrFrontmatterSyntax) {
			t.Errorf("ParseFrontmatter(%q) error = %v, want %v", in, err, ErrFrontmatterSyntax)
		}
	}
	if _, _, err := ParseFrontmatter([]byte("---\nf: [\"a:\", b:c]\nk: a:b\n---\n")); err != nil {
		t.Errorf("quoted, inner and block colons: error = %v", err)
	}
}

// FuzzAmbiguities checks the classifier on any input: it reports nothing
// beside an error, the JSON is ParseFrontmatter's, and every fix it shows
// works: the quoted spelling is the same string and is not ambiguous.
func FuzzAmbiguities(f *testing.F) {
	for _, tc := range ambiguityCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range frontmatterCases {
		f.Add([]byte(tc.in))
	}
	// Scalars near the 1024-character limit on implicit keys: a value
	// whose quoted spelling is too long for a key, and keys whose quoted
	// spelling just fits (1024 characters) or does not (1025 and 1026).
	f.Add([]byte("---\nv: 1_" + strings.Repeat("0", 1021) + "\n---\n"))
	f.Add([]byte("---\n1_" + strings.Repeat("0", 1020) + ": x\n---\n"))
	f.Add([]byte("---\n1_" + strings.Repeat("0", 1021) + ": x\n---\n"))
	f.Add([]byte("---\nm:\n  1_" + strings.Repeat("0", 1022) + ": x\n---\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fm, _, amb, err := ParseFrontmatterAmbiguities(b)
		if err != nil {
			if fm != nil || amb != nil {
				t.Fatalf("ParseFrontmatterAmbiguities(%q) returned values with error %v", b, err)
			}
			return
		}
		if fm2, _, err := ParseFrontmatter(b); err != nil || !bytes.Equal(fm, fm2) {
			t.Fatalf("ParseFrontmatter(%q) = %s, %v; ParseFrontmatterAmbiguities read %s", b, fm2, err, fm)
		}
		for _, a := range amb {
			if a.YAML11 == a.YAML12 {
				t.Fatalf("%q: ambiguity %v reads alike", b, a)
			}
			var quoted bytes.Buffer
			writeJSONString(&quoted, a.Text)
			// As a key, the quoted text is an implicit key only up to 1024
			// characters (YAML 1.2.2 §7.4.2; YAML 1.1 and PyYAML alike);
			// a longer one must be explicit, and a key's fix must say so.
			key := quoted.String() + ": v\n"
			keyFix := quoted.String() + ": ..."
			if utf8.RuneCount(quoted.Bytes()) > 1024 {
				key = "? " + quoted.String() + "\n: v\n"
				keyFix = "? " + quoted.String() + " "
			}
			if a.Key && !strings.HasPrefix(a.Fix, keyFix) {
				t.Fatalf("%q: the fix for key %s is %s, want it to begin %s", b, quoted.String(), a.Fix, keyFix)
			}
			doc := "---\nk: " + quoted.String() + "\n" + key + "---\n"
			fixed, _, again, err := ParseFrontmatterAmbiguities([]byte(doc))
			if err != nil || len(again) > 0 {
				t.Fatalf("%q: the fix %s does not hold: %s %v %v", b, a.Fix, fixed, again, err)
			}
			var want bytes.Buffer
			want.WriteString(`{"k":` + quoted.String() + `,` + quoted.String() + `:"v"}`)
			if !bytes.Equal(fixed, want.Bytes()) {
				t.Fatalf("%q: the fix %s reads %s, want %s", b, a.Fix, fixed, want.Bytes())
			}
		}
	})
}

// FuzzRead11 checks the YAML 1.1 reader alone on any scalar: no panic, a
// number for every numeric reading JSON can carry, and agreement with the
// core schema wherever both resolve a spelling to the same text (a string).
func FuzzRead11(f *testing.F) {
	for _, s := range differentialScalars()[:120] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, num := read11(s)
		switch r {
		case read11Int:
			if num == nil || !num.IsInt() {
				t.Fatalf("read11(%q) = integer %v", s, num)
			}
		case read11Str:
			if num != nil {
				t.Fatalf("read11(%q) = string with number %v", s, num)
			}
			if coreTag(s) == tagStr && yaml11Differs(s, tagStr, false) != "" {
				t.Fatalf("%q is a string to both readers but flagged", s)
			}
		}
		if k, _ := key11(s); k != r && s != "=" {
			t.Fatalf("key11(%q) = %v, read11 = %v", s, k, r)
		}
	})
}
