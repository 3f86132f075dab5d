package inject

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/skills-sidecar/skills-sidecar/internal/inject/manifestcheck"
)

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
	out, names, err := BuildConfigMaps(fsys, ConfigMapOptions{Name: "acme", Namespace: "shop", MaxBytes: 700})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"acme", "acme-1"}; !cmp.Equal(names, want) {
		t.Errorf("names = %q, want %q", names, want)
	}
	objs, err := manifestcheck.Decode(out)
	if err != nil {
		t.Fatalf("output does not decode strictly: %v\n%s", err, out)
	}
	paths := map[string]string{}
	for i, o := range objs {
		cm := o.Value.(*corev1.ConfigMap)
		if cm.Name != names[i] || cm.Namespace != "shop" {
			t.Errorf("ConfigMap %d = %s/%s", i, cm.Namespace, cm.Name)
		}
		items, err := itemsOf(cm, cm.Name, map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			paths[it.Path] = cm.Name
		}
		if b, ok := cm.BinaryData["skills__refunds__logo.png"]; ok && string(b) != "\x89PNG\xff" || i == 1 && !ok {
			t.Errorf("binaryData = %q, want the PNG bytes", cm.BinaryData)
		}
	}
	want := map[string]string{
		".claude-plugin/plugin.json": "acme", "agents/billing-triage.md": "acme", "skills/refunds/SKILL.md": "acme",
		"skills/refunds/assets/big.json": "acme-1", "skills/refunds/logo.png": "acme-1", "skills/refunds/scripts/a_b.py": "acme-1",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		// The split point depends only on sorted order and sizes.
		t.Errorf("paths by ConfigMap (-want +got):\n%s", diff)
	}
}

func TestBuildConfigMapsErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		fsys fstest.MapFS
		opts ConfigMapOptions
		want string
	}{
		"bad name":  {fstest.MapFS{"a": {}}, ConfigMapOptions{Name: "Acme"}, "not a valid object name"},
		"empty":     {fstest.MapFS{".git/x": {}}, ConfigMapOptions{Name: "a"}, "no files"},
		"too large": {fstest.MapFS{"big": {Data: make([]byte, 100)}}, ConfigMapOptions{Name: "a", MaxBytes: 50}, AnnotationPluginImage},
		"long key":  {fstest.MapFS{strings.Repeat("d/", 130) + "f": {}}, ConfigMapOptions{Name: "a"}, "encoded key"},
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
