package inject

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"sigs.k8s.io/yaml"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/inject/manifestcheck"
)

// decodeConfigMaps decodes BuildConfigMaps' output strictly and returns
// every file it holds by decoded path, with the ConfigMap holding it.
func decodeConfigMaps(t *testing.T, out []byte) ([]*corev1.ConfigMap, map[string]string, map[string][]byte) {
	t.Helper()
	objs, err := manifestcheck.Decode(out)
	if err != nil {
		t.Fatalf("output does not decode strictly: %v", err)
	}
	var cms []*corev1.ConfigMap
	where, data := map[string]string{}, map[string][]byte{}
	add := func(cm *corev1.ConfigMap, k string, v []byte) {
		p, err := catalog.DecodeKey(k)
		if err != nil {
			t.Fatalf("ConfigMap %s key %s: %v", cm.Name, k, err)
		}
		if prev, dup := where[p]; dup {
			t.Fatalf("%s is in ConfigMap %s and %s", p, prev, cm.Name)
		}
		where[p], data[p] = cm.Name, v
	}
	for _, o := range objs {
		cm := o.Value.(*corev1.ConfigMap)
		cms = append(cms, cm)
		for k, v := range cm.Data {
			add(cm, k, []byte(v))
		}
		for k, v := range cm.BinaryData {
			add(cm, k, v)
		}
	}
	return cms, where, data
}

func TestBuildConfigMaps(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		".claude-plugin/plugin.json":     {Data: []byte(`{"name":"acme"}`)},
		"skills/refunds/SKILL.md":        {Data: []byte("---\nname: refunds\n---\n")},
		"skills/refunds/logo.png":        {Data: []byte{0x89, 'P', 'N', 'G', 0xff}},
		"skills/refunds/scripts/a_b.py":  {Data: []byte(strings.Repeat("x", 300))},
		".git/config":                    {Data: []byte("ignored")},
		"skills/refunds/.hidden":         {Data: []byte("ignored")},
		"agents/billing-triage.md":       {Data: []byte(strings.Repeat("y", 300))},
		"skills/refunds/assets/big.json": {Data: []byte(strings.Repeat("z", 300))},
	}
	out, names, err := BuildConfigMaps(fsys, ConfigMapOptions{Name: "acme", Namespace: "shop", Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"acme", "acme-1", "acme-2"}; !cmp.Equal(names, want) {
		t.Errorf("names = %q, want %q", names, want)
	}
	cms, _, data := decodeConfigMaps(t, out)
	for i, cm := range cms {
		if cm.Name != names[i] || cm.Namespace != "shop" {
			t.Errorf("ConfigMap %d = %s/%s", i, cm.Namespace, cm.Name)
		}
	}
	want := map[string][]byte{}
	for p, f := range fsys {
		if !strings.HasPrefix(p, ".git/") && !strings.HasSuffix(p, ".hidden") {
			want[p] = f.Data
		}
	}
	if diff := cmp.Diff(want, data); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(out), "binaryData:\n  skills__refunds__logo.png: iVBOR/8=") {
		t.Errorf("the PNG is not in binaryData as base64:\n%s", out)
	}
}

// plugin returns a plugin folder of n files of size bytes each.
func plugin(n, size int) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i := range n {
		fsys[fmt.Sprintf("skills/s%02d/file%03d.md", i%10, i)] = &fstest.MapFile{Data: []byte(strings.Repeat("a", size))}
	}
	return fsys
}

func assignment(t *testing.T, fsys fstest.MapFS, opts ConfigMapOptions) map[string]string {
	t.Helper()
	out, _, err := BuildConfigMaps(fsys, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, where, _ := decodeConfigMaps(t, out)
	return where
}

// TestBuildConfigMapsStable grows, adds and removes files and checks that
// no other file changes ConfigMap: each one stays where a kubelet already
// mounted it.
func TestBuildConfigMapsStable(t *testing.T) {
	t.Parallel()
	base := plugin(150, 3000) // about 450 KB: two or three ConfigMaps
	for name, opts := range map[string]ConfigMapOptions{
		"pinned count": {Name: "p", Count: 5},
		"automatic":    {Name: "p"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			before := assignment(t, base, opts)
			grown := plugin(150, 3000)
			grown["skills/s03/file013.md"] = &fstest.MapFile{Data: []byte(strings.Repeat("b", 20_000))}
			delete(grown, "skills/s07/file107.md")
			grown["skills/s01/new.md"] = &fstest.MapFile{Data: []byte("new")}
			after := assignment(t, grown, opts)
			if n, m := len(slices.Compact(slices.Sorted(maps.Values(before)))), len(slices.Compact(slices.Sorted(maps.Values(after)))); n != m {
				t.Fatalf("count %d -> %d; the test wants a growth that keeps it", n, m)
			}
			for p, cm := range before {
				if now, ok := after[p]; ok && now != cm {
					t.Errorf("%s moved from %s to %s", p, cm, now)
				}
			}
			if len(after) != 150 {
				t.Errorf("after: %d files, want 150", len(after))
			}
		})
	}
}

// TestBuildConfigMapsCountGrows: when the plugin outgrows its count, a file
// moves only into the new ConfigMap, never between two existing ones.
func TestBuildConfigMapsCountGrows(t *testing.T) {
	t.Parallel()
	before := assignment(t, plugin(100, 3000), ConfigMapOptions{Name: "p"})
	after := assignment(t, plugin(100, 6000), ConfigMapOptions{Name: "p"})
	counts := func(m map[string]string) int {
		seen := map[string]bool{}
		for _, cm := range m {
			seen[cm] = true
		}
		return len(seen)
	}
	n, m := counts(before), counts(after)
	if m <= n {
		t.Fatalf("count %d -> %d; the test wants the plugin to outgrow its count", n, m)
	}
	moved := 0
	for p, cm := range before {
		if after[p] != cm {
			moved++
			var i int
			if _, err := fmt.Sscanf(after[p], "p-%d", &i); err != nil || i < n {
				t.Errorf("%s moved from %s to %s, an existing ConfigMap", p, cm, after[p])
			}
		}
	}
	t.Logf("count %d -> %d moved %d of %d files", n, m, moved, len(before))
}

// TestBuildConfigMapsFitLastApplied checks every ConfigMap against the API
// server's own annotation size check, with the JSON `kubectl apply` copies
// into kubectl.kubernetes.io/last-applied-configuration: text full of
// characters JSON escapes, and binary files.
func TestBuildConfigMapsFitLastApplied(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{}
	for i := range 40 {
		fsys[fmt.Sprintf("skills/x/t%02d.html", i)] = &fstest.MapFile{Data: []byte(strings.Repeat("<a href=\"&\">\n\t\\", 2000))}
		fsys[fmt.Sprintf("skills/x/b%02d.bin", i)] = &fstest.MapFile{Data: []byte(strings.Repeat("\xff\x00\x01", 7000))}
	}
	lastApplied := func(t *testing.T, opts ConfigMapOptions) error {
		out, _, err := BuildConfigMaps(fsys, opts)
		if err != nil {
			t.Fatal(err)
		}
		var errs []error
		for _, doc := range strings.Split(string(out), "---\n")[1:] {
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(j, &obj); err != nil {
				t.Fatal(err)
			}
			applied, _ := json.Marshal(obj)
			if err := apivalidation.ValidateAnnotationsSize(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied)}); err != nil {
				errs = append(errs, err)
			}
		}
		return fmt.Errorf("%v", errs)
	}
	if err := lastApplied(t, ConfigMapOptions{Name: "p"}); err.Error() != "[]" {
		t.Errorf("default bound: %v", err)
	}
	// The judge can fail: the old 900 KiB bound does not fit.
	if err := lastApplied(t, ConfigMapOptions{Name: "p", MaxBytes: 900 << 10}); err.Error() == "[]" {
		t.Error("900 KiB ConfigMaps passed the annotation size check")
	}
}

func TestBuildConfigMapsErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		fsys fstest.MapFS
		opts ConfigMapOptions
		want string
	}{
		"bad name":                    {fstest.MapFS{"a": {}}, ConfigMapOptions{Name: "Acme"}, "not a valid object name"},
		"empty":                       {fstest.MapFS{".git/x": {}}, ConfigMapOptions{Name: "a"}, "no files"},
		"file too large":              {fstest.MapFS{"big": {Data: make([]byte, 2000)}}, ConfigMapOptions{Name: "a", MaxBytes: 1024}, "never split"},
		"count too small":             {plugin(100, 3000), ConfigMapOptions{Name: "a", Count: 1}, "raise the count"},
		"too many":                    {plugin(100, 200_000), ConfigMapOptions{Name: "a"}, AnnotationPluginImage},
		"bound too large":             {plugin(1, 1), ConfigMapOptions{Name: "a", MaxBytes: 2 << 20}, "max bytes"},
		"count too large":             {plugin(1, 1), ConfigMapOptions{Name: "a", Count: MaxConfigMaps + 1}, "count"},
		"long key":                    {fstest.MapFS{strings.Repeat("d/", 130) + "f": {}}, ConfigMapOptions{Name: "a"}, "encoded key"},
		"not UTF-8 name":              {fstest.MapFS{"skills/\xff": {}}, ConfigMapOptions{Name: "a"}, "could not decode"},
		"past the mounted":            {plugin(100, 3000), ConfigMapOptions{Name: "a", Mounted: 1}, "workloads mount 1"},
		"mounted under count":         {plugin(1, 1), ConfigMapOptions{Name: "a", Count: 3, Mounted: 2}, "mounted 2"},
		"name too long for its label": {plugin(1, 1), ConfigMapOptions{Name: strings.Repeat("a", 64)}, "63 characters"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, _, err := BuildConfigMaps(tc.fsys, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("BuildConfigMaps = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
