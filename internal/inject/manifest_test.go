package inject

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/skills-sidecar/skills-sidecar/internal/inject/manifestcheck"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/manifests/*.txtar and docs/kubernetes.md's table")

// TestInjectGolden runs `inject -f` over each testdata/manifests case: the
// output equals the want section, decodes strictly, and a second pass over
// it changes nothing.
func TestInjectGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/manifests/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sec := map[string]*txtar.File{}
			for i := range ar.Files {
				sec[ar.Files[i].Name] = &ar.Files[i]
			}
			flags := strings.Fields(string(sec["flags"].Data))
			got := runInject(t, append(flags, "-f", "-"), sec["in"].Data, ExitOK)
			if *update {
				sec["want"].Data = got
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if diff := cmp.Diff(string(sec["want"].Data), string(got)); diff != "" {
				t.Errorf("inject -f output differs from want (-want +got; go test -update to refresh):\n%s", diff)
			}
			if _, err := manifestcheck.Decode(got); err != nil {
				t.Errorf("output does not decode strictly: %v", err)
			}
			if again := runInject(t, append(flags, "-f", "-"), got, ExitOK); !bytes.Equal(again, got) {
				t.Errorf("a second pass changed the output:\n%s", cmp.Diff(string(got), string(again)))
			}
		})
	}
}

func runInject(t *testing.T, args []string, in []byte, wantCode int) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := RunInject(context.Background(), args, testHost, bytes.NewReader(in), &stdout, &stderr); code != wantCode {
		t.Fatalf("RunInject(%q) = %d, want %d; stderr:\n%s", args, code, wantCode, stderr.String())
	}
	return stdout.Bytes()
}

// TestInjectPassThrough pins that a stream with nothing to inject comes
// back byte for byte, separators and all.
func TestInjectPassThrough(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"empty":        "",
		"comments":     "# only a comment\n",
		"leading sep":  "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n--- # trailing\n\n---\n",
		"no final nl":  "apiVersion: v1\nkind: Service\nmetadata:\n  name: s",
		"not opted in": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: [{name: c, image: i}]\n",
		"crlf":         "apiVersion: v1\r\nkind: Secret\r\nmetadata: {name: s}\r\n---\r\nkind: Thing\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, _, err := InjectManifests([]byte(in), Options{Image: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != in {
				t.Errorf("InjectManifests(%q) = %q, want the input", in, out)
			}
		})
	}
}

// TestInjectErrors pins that a bad document fails the whole run, writes
// nothing and names the document and the annotation.
func TestInjectErrors(t *testing.T) {
	t.Parallel()
	const configMaps = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: raw}\ndata: {a_b: x}\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {skills__x__SKILL.md: x}\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a2}\ndata: {skills__x__SKILL.md: y}\n"
	const pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n%s\nspec:\n  containers: [{name: c, image: i, ports: [{containerPort: 3000}]}]\n"
	// What a case adds to the pod's spec.
	specs := map[string]string{
		"host network":          "  hostNetwork: true\n",
		"port named skills-mcp": "  initContainers: [{name: x, image: i, ports: [{name: skills-mcp, containerPort: 9}]}]\n",
	}
	for name, tc := range map[string]struct {
		annotations string
		want        []string
	}{
		"host network":          {"    skills-sidecar.io/inject: \"true\"\n    skills-sidecar.io/plugin-image: i", []string{"document 0 (Pod p)", "spec.hostNetwork", "host-network"}},
		"port named skills-mcp": {"    skills-sidecar.io/inject: \"true\"\n    skills-sidecar.io/plugin-image: i", []string{"document 0 (Pod p)", `container x already has a port named "skills-mcp"`}},
		"bad inject":            {`    skills-sidecar.io/inject: "yes"`, []string{"document 0 (Pod p)", "skills-sidecar.io/inject", `"yes"`}},
		"undecodable key":       {"    skills-sidecar.io/inject: \"true\"\n    skills-sidecar.io/plugin-configmaps: raw", []string{"ConfigMap raw key a_b", "lone _"}},
		"path in two":           {"    skills-sidecar.io/inject: \"true\"\n    skills-sidecar.io/plugin-configmaps: a,a2", []string{`"skills/x/SKILL.md" is ConfigMap a key skills__x__SKILL.md and ConfigMap a2 key skills__x__SKILL.md`}},
		"unknown key":           {"    skills-sidecar.io/inject: \"true\"\n    skills-sidecar.io/plugin-image: i\n    skills-sidecar.io/log-levle: debug", []string{"skills-sidecar.io/log-levle: unknown key"}},
		"two problems":          {"    skills-sidecar.io/inject: \"true\"\n    skills-sidecar.io/plugin-image: i\n    skills-sidecar.io/port: \"0\"\n    skills-sidecar.io/upstream-path: mcp", []string{"skills-sidecar.io/port", "skills-sidecar.io/upstream-path"}},
		"injector-owned key":    {"    skills-sidecar.io/inject: \"true\"\n    skills-sidecar.io/plugin-image: i\n    skills-sidecar.io/listen: \":1\"", []string{"skills-sidecar.io/listen: set by the injector; use skills-sidecar.io/port"}},
		"stdio, no command":     {"    skills-sidecar.io/inject: \"true\"\n    skills-sidecar.io/plugin-image: i\n    skills-sidecar.io/upstream-stdio: c", []string{"document 0 (Pod p)", "skills-sidecar.io/upstream-stdio", "c has no command", "set the container's command"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := strings.Replace(pod, "%s", tc.annotations, 1) + specs[name] + configMaps
			var stdout, stderr bytes.Buffer
			code := RunInject(context.Background(), []string{"-f", "-"}, testHost, strings.NewReader(in), &stdout, &stderr)
			if code != ExitFail || stdout.Len() != 0 {
				t.Fatalf("RunInject = %d with %d bytes out, want %d and nothing", code, stdout.Len(), ExitFail)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// FuzzInjectManifests feeds arbitrary streams: no panic, and output (when
// any) either equals the input or decodes as YAML documents again.
func FuzzInjectManifests(f *testing.F) {
	files, _ := filepath.Glob("testdata/manifests/*.txtar")
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range ar.Files {
			if s.Name == "in" {
				f.Add(s.Data)
			}
		}
	}
	f.Add([]byte("---\n--- x\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, _, err := InjectManifests(in, Options{Image: "x", NativeSidecar: true})
		if err != nil {
			return
		}
		again, _, err := InjectManifests(out, Options{Image: "x", NativeSidecar: true})
		if err != nil {
			t.Fatalf("second pass failed: %v", err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("second pass changed the output")
		}
	})
}

// TestInjectWarnsWhatItCannotRead: what `kubectl get deploy -o yaml` prints
// (a List), and a workload opted in on its own metadata rather than its
// pod template's, pass through unchanged, with a warning saying why
// (found in review: both passed silently, exit 0).
func TestInjectWarnsWhatItCannotRead(t *testing.T) {
	t.Parallel()
	list := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: d}\n"
	misplaced := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  annotations: {skills-sidecar.io/inject: \"true\"}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: i, ports: [{containerPort: 3000}]}]\n"
	for name, tc := range map[string]struct{ in, want string }{
		"list":      {list, "document 0 is a List"},
		"misplaced": {misplaced, "spec/template/metadata/annotations"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, results, err := InjectManifests([]byte(tc.in), Options{Image: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.in {
				t.Errorf("output %q, want the input", out)
			}
			var ws []string
			for _, r := range results {
				ws = append(ws, r.Warnings...)
			}
			if len(ws) != 1 || !strings.Contains(ws[0], tc.want) {
				t.Errorf("warnings %q, want one containing %q", ws, tc.want)
			}
		})
	}
}
