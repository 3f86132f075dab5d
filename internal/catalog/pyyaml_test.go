package catalog

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// PyYAMLEnv names the Python interpreter whose PyYAML TestAgreesWithPyYAML
// asks (scripts/check-pyyaml.sh sets it to Debian's python3 with
// python3-yaml). Unset, the test looks for python3 on PATH and skips when
// it finds none or none with PyYAML; set, a missing PyYAML fails the test.
const pyyamlEnv = "PYYAML_PYTHON"

// pyyamlPython returns an interpreter that can import yaml, or skips.
func pyyamlPython(t *testing.T) string {
	t.Helper()
	py, explicit := os.LookupEnv(pyyamlEnv)
	if !explicit {
		var err error
		if py, err = exec.LookPath("python3"); err != nil {
			t.Skipf("no python3 on PATH and %s unset: PyYAML unavailable", pyyamlEnv)
		}
	}
	out, err := exec.Command(py, "-c", "import yaml; print(yaml.__version__)").CombinedOutput()
	if err != nil {
		if explicit {
			t.Fatalf("%s=%s cannot import yaml: %v\n%s", pyyamlEnv, py, err, out)
		}
		t.Skipf("%s cannot import yaml (%v): PyYAML unavailable", py, err)
	}
	t.Logf("PyYAML %s (%s)", strings.TrimSpace(string(out)), py)
	return py
}

// pyyamlResult is one line of testdata/pyyaml/tojson.py's answer.
type pyyamlResult struct {
	OK    json.RawMessage `json:"ok"`
	Error string          `json:"error"`
}

// readWithPyYAML loads every text with PyYAML's safe_load, in one process.
func readWithPyYAML(t *testing.T, py string, texts []string) []pyyamlResult {
	t.Helper()
	in, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join("testdata", "pyyaml", "tojson.py"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tojson.py: %v\n%s", err, stderr.Bytes())
	}
	var res []pyyamlResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(texts) {
		t.Fatalf("tojson.py answered %d results for %d texts (%v)", len(res), len(texts), err)
	}
	return res
}

// TestAgreesWithPyYAML is the differential test of the YAML 1.1 classifier:
// many frontmatter documents (the parser's table and corpus, its fuzz
// corpus, and generated documents with one scalar each in every position
// a scalar takes) are read by PyYAML's safe_load and by ParseFrontmatter.
// Of the documents the sidecar accepts, the classifier must flag exactly
// those whose JSON differs from PyYAML's (or that PyYAML refuses): every
// document served without a flag reads the same in a Python host.
func TestAgreesWithPyYAML(t *testing.T) {
	t.Parallel()
	py := pyyamlPython(t)
	docs := differentialDocs(t)
	texts := make([]string, len(docs))
	for i, d := range docs {
		text, _, err := splitFrontmatter([]byte(d))
		if err != nil {
			t.Fatalf("document %q: %v", d, err)
		}
		texts[i] = string(text)
	}
	res := readWithPyYAML(t, py, texts)
	var served, flagged, refused int
	for i, d := range docs {
		fm, _, amb, err := ParseFrontmatterAmbiguities([]byte(d))
		if err != nil {
			refused++
			continue
		}
		served++
		if len(amb) > 0 {
			flagged++
		}
		same, why := sameAsPyYAML(fm, res[i])
		switch {
		case same && len(amb) > 0:
			t.Errorf("flagged, but PyYAML reads it alike (%s):\n%s\nflags: %v", fm, texts[i], amb)
		case !same && len(amb) == 0:
			t.Errorf("PyYAML reads it differently and nothing flags it:\n%s\nsidecar %s\nPyYAML  %s", texts[i], fm, why)
		}
	}
	t.Logf("%d documents: %d refused by the sidecar, %d accepted, %d of them flagged", len(docs), refused, served, flagged)
	if flagged < 100 || served-flagged < 100 {
		t.Errorf("too few documents on one side (%d flagged, %d not): the generator lost its reach", flagged, served-flagged)
	}
}

// sameAsPyYAML compares the sidecar's JSON with PyYAML's reading, key order
// kept and numbers by exact value (1000 and 1000.0 are one number to a
// host comparing values). why shows PyYAML's side.
func sameAsPyYAML(fm json.RawMessage, r pyyamlResult) (same bool, why string) {
	if r.Error != "" {
		return false, "refuses it: " + r.Error
	}
	ours, err1 := orderedFromJSON(fm)
	theirs, err2 := orderedFromJSON(r.OK)
	if err1 != nil || err2 != nil {
		return false, "undecodable: " + string(r.OK)
	}
	return cmp.Equal(ours, theirs), string(r.OK)
}

// differentialDocs gathers the documents of TestAgreesWithPyYAML.
func differentialDocs(t *testing.T) []string {
	t.Helper()
	var docs []string
	for _, tc := range frontmatterCases {
		docs = append(docs, tc.in)
	}
	for _, tc := range ambiguityCases {
		docs = append(docs, tc.in)
	}
	paths, _ := filepath.Glob(filepath.Join("testdata", "frontmatter", "*.md"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	docs = append(docs, fuzzCorpus(t, "FuzzParseFrontmatter", "FuzzAmbiguities")...)
	// The same documents as served with CRLF line endings and a BOM.
	for _, d := range slices.Clone(docs) {
		docs = append(docs, "\uFEFF"+strings.ReplaceAll(d, "\n", "\r\n"))
	}
	for _, s := range differentialScalars() {
		docs = append(docs, scalarPlacements(s)...)
	}
	kept := docs[:0]
	for _, d := range docs {
		if _, _, err := splitFrontmatter([]byte(d)); err == nil {
			kept = append(kept, d)
		}
	}
	return kept
}

// scalarPlacements puts the plain scalar s in every position a scalar
// takes: a value, a key, a list item, a flow list item, a flow mapping's key
// and value, a nested value.
func scalarPlacements(s string) []string {
	return []string{
		"---\nk: " + s + "\n---\n",
		"---\n" + s + ": v\n---\n",
		"---\nl:\n  - " + s + "\n---\n",
		"---\nf: [" + s + ", x]\n---\n",
		"---\nm: {" + s + ": x}\n---\n",
		"---\nm: {x: " + s + "}\n---\n",
		"---\nn:\n  k: " + s + "\n---\n",
	}
}

// differentialScalars is the hand-picked spellings around every YAML 1.1
// and 1.2 resolver, then random strings over the characters those
// resolvers look at (seeded: the same list on every run).
func differentialScalars() []string {
	out := []string{
		"yes", "Yes", "YES", "yEs", "y", "Y", "n", "N", "no", "No", "NO", "on", "On", "ON", "oN",
		"off", "Off", "OFF", "true", "True", "TRUE", "tRue", "false", "False", "FALSE",
		"~", "null", "Null", "NULL", "nUll", "<<", "=", "==", "<",
		"0", "-0", "+0", "00", "01", "07", "08", "010", "-010", "0777", "0_7", "0_", "0b", "0b1", "0b_",
		"0b101", "-0b1", "0o17", "0o", "0x", "0x1F", "0xff", "0x_1", "+0x1F", "-0x1", "0X1F",
		"1_000", "1__", "1:30", "1:5", "1:60", "-1:30", "190:20:30", "1:30.5", "1:30.", "0:30",
		"1e3", "1E3", "1e+3", "1.e3", "1.0e3", "1.0e+3", "1.0E-3", "6.02e+23", ".5", "-.5", "+.5",
		"._", ".5_", "1.", "1._", "1.5_0", "-0.0", "1.0", "123456789012345678901234567890",
		"1.0e+400", "1e400", ".inf", ".nan", "-.inf", ".Inf",
		"2025-06-02", "2024-02-29", "2025-02-29", "2025-02-30", "0000-01-01", "0001-01-01",
		"9999-12-31", "2025-13-01", "2025-6-2", "2025-06-02T10:30:00Z", "2025-06-02t10:30:00",
		"2025-06-02T10:30:00", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5",
		"2025-6-2 1:02:03", "2025-06-02T25:00:00", "2025-06-02T10:30:00+24", "2025-06-02 10:30:00.1234567",
	}
	rng := rand.New(rand.NewPCG(2640, 28))
	const alphabet = "0000111222357789_:.-+eEbxoyYnNtTZ "
	for range 3000 {
		var b strings.Builder
		for n := 1 + rng.IntN(8); n > 0; n-- {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		s := strings.TrimSpace(b.String())
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// fuzzCorpus reads the committed inputs of the named fuzz targets
// (testdata/fuzz/NAME/*, "go test fuzz v1" files of one []byte each).
func fuzzCorpus(t *testing.T, targets ...string) []string {
	t.Helper()
	var out []string
	for _, target := range targets {
		paths, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(b), "\n") {
				if arg, ok := strings.CutPrefix(line, "[]byte("); ok {
					if s, err := strconv.Unquote(strings.TrimSuffix(arg, ")")); err == nil {
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}
