package inject

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// injectorConstants parses annotations.go and returns the value of every
// Annotation* constant, so a constant added without a table row or an
// IsInjectorKey entry is caught.
func injectorConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "annotations.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Annotation") {
					continue
				}
				be, ok := vs.Values[i].(*ast.BinaryExpr)
				lit, ok2 := any(nil), false
				if ok {
					var bl *ast.BasicLit
					bl, ok2 = be.Y.(*ast.BasicLit)
					lit = bl
				}
				if !ok || !ok2 {
					t.Fatalf("%s is not config.AnnotationPrefix + \"name\"", n.Name)
				}
				v, _ := strconv.Unquote(lit.(*ast.BasicLit).Value)
				out[n.Name] = v
			}
		}
	}
	return out
}

// TestInjectorKeys: every injector annotation is one the sidecar skips, is
// in the documentation table, and no runtime key shares its name.
func TestInjectorKeys(t *testing.T) {
	t.Parallel()
	consts := injectorConstants(t)
	if len(consts) == 0 {
		t.Fatal("no Annotation constants found")
	}
	documented := map[string]bool{}
	for _, d := range InjectorAnnotations() {
		documented[d.Name] = true
	}
	runtime := runtimeKeyNames()
	for ident, name := range consts {
		full := config.AnnotationPrefix + name
		if !config.IsInjectorKey(name) {
			t.Errorf("%s (%s): config.IsInjectorKey(%q) = false; the sidecar would call it unknown", ident, full, name)
		}
		if !documented[full] {
			t.Errorf("%s (%s) has no row in InjectorAnnotations", ident, full)
		}
		if runtime[name] {
			t.Errorf("%s (%s) is also a runtime key", ident, full)
		}
	}
	if len(documented) != len(consts) {
		t.Errorf("InjectorAnnotations has %d rows, annotations.go %d constants", len(documented), len(consts))
	}
}

func runtimeKeyNames() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[config.Config]()
	for i := range t.NumField() {
		out[t.Field(i).Tag.Get("key")] = true
	}
	return out
}

// TestRuntimeKeysByAnnotation: every runtime key of config.Table can be set
// through a pod annotation (the sidecar does not skip it), and the ones the
// injector sets by flag are refused on injected pods, naming the
// replacement.
func TestRuntimeKeysByAnnotation(t *testing.T) {
	t.Parallel()
	table := config.Table()
	for key := range runtimeKeyNames() {
		ann := config.AnnotationPrefix + key
		if !strings.Contains(table, "`"+ann+"`") {
			t.Errorf("config.Table lacks %s", ann)
		}
		if config.IsInjectorKey(key) {
			t.Errorf("runtime key %s is skipped by the sidecar as an injector key", key)
			continue
		}
		def := config.Defaults()
		want := reflect.ValueOf(def).FieldByIndex(fieldIndex(key))
		file := ann + "=" + strconv.Quote(sampleValue(key, want.Interface())) + "\n"
		cfg, _, err := config.Load(config.Sources{Annotations: []byte(file)})
		if err != nil {
			t.Errorf("annotation %s: %v", ann, err)
			continue
		}
		if got := reflect.ValueOf(cfg).FieldByIndex(fieldIndex(key)); reflect.DeepEqual(got.Interface(), want.Interface()) {
			t.Errorf("annotation %s=%s left the default %v", ann, sampleValue(key, want.Interface()), got)
		}
		pod := testPod(optIn(ann, sampleValue(key, want.Interface())), 3000)
		_, _, _, err = Mutate(pod.ObjectMeta, pod.Spec, Options{Image: "i"})
		if use, owned := injectorOwnedRuntimeKeys[key]; owned {
			if err == nil || !strings.Contains(err.Error(), use) {
				t.Errorf("injecting a pod with %s: %v, want a refusal naming %s", ann, err, use)
			}
		} else if err != nil {
			t.Errorf("injecting a pod with %s: %v", ann, err)
		}
	}
}

func fieldIndex(key string) []int {
	t := reflect.TypeFor[config.Config]()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("key") == key {
			return []int{i}
		}
	}
	return nil
}

// stringSamples are valid non-default values of the string keys; a new
// string key fails TestRuntimeKeysByAnnotation until it has one here.
var stringSamples = map[string]string{
	"listen": ":8082", "metrics-listen": ":9091", "upstream": "http://127.0.0.1:1/mcp",
	"plugin-dir": "/p", "plugin-layout": "configmaps", "annotations-file": "/a", "cache-scope": "public", "upstream-files": "off",
	"limit-mode": "warn", "frontmatter-portability": "warn", "log-level": "debug", "log-format": "json", "auth-gate": "none",
	"era-bridge": "off", "upstream-command": `["srv","--stdio"]`, "trusted-proxies": "10.0.0.0/8", "host-compat": "prompts,tools",
	"http-server": "net/http",
}

// sampleValue is a valid non-default value for a key.
func sampleValue(key string, def any) string {
	switch v := def.(type) {
	case bool:
		return strconv.FormatBool(!v)
	case int, int64:
		return "7"
	case string:
		if s, ok := stringSamples[key]; ok {
			return s
		}
		return v + "x"
	}
	return "7s" // durations
}
