package inject

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/kubeletvolume"
)

// growingPlugin is a plugin of skills s00..s(n-1), each a SKILL.md and a
// file of size bytes.
func growingPlugin(n, size int) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i := range n {
		fsys[fmt.Sprintf("skills/s%02d/SKILL.md", i)] = kubeletSkill(fmt.Sprintf("s%02d", i), "A skill.")
		fsys[fmt.Sprintf("skills/s%02d/notes.txt", i)] = &fstest.MapFile{Data: []byte(strings.Repeat("n", size))}
	}
	return fsys
}

// TestKubeletGrowAndShrink: a plugin rendered with --mounted 3 grows from
// one ConfigMap to two and shrinks back (the ConfigMap it no longer writes
// pruned), under a pod injected once; the kubelet updates the volumes one
// by one, in either order. After every single volume update the sidecar's
// reader (the one lint --layout configmaps uses) loads the mounts without
// an error, and once all are updated it serves every file of the plugin.
func TestKubeletGrowAndShrink(t *testing.T) {
	t.Parallel()
	small, large := growingPlugin(20, 4000), growingPlugin(80, 4000) // one ConfigMap, two
	opts := ConfigMapOptions{Name: "acme", Mounted: 3}
	for _, order := range []string{"in name order", "in reverse order"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			out, names, err := BuildConfigMaps(small, opts)
			if err != nil {
				t.Fatal(err)
			}
			p := mountSpares(t, out, names)
			p.wantServed(t, small)
			for _, step := range []struct {
				name   string
				plugin fstest.MapFS
			}{{"grow", large}, {"shrink", small}} {
				out, again, err := BuildConfigMaps(step.plugin, opts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(again, names) {
					t.Fatalf("%s: the annotation changed from %v to %v; want the mounted names kept", step.name, names, again)
				}
				written := configMapsByName(t, out)
				order := slices.Clone(names)
				if strings.HasPrefix(t.Name(), "TestKubeletGrowAndShrink/in_reverse") {
					slices.Reverse(order)
				}
				for _, name := range order {
					p.syncOptional(t, name, written[name]) // a ConfigMap not written: pruned, an empty volume
					p.wantLoads(t, step.name+" after syncing "+name)
				}
				p.wantServed(t, step.plugin)
				if step.name == "grow" && len(written) != 2 {
					t.Fatalf("grow wrote %d ConfigMaps; the test wants two", len(written))
				}
			}
		})
	}
}

// mountSpares injects a Deployment naming names and mounts its ConfigMap
// volumes as the kubelet does: a ConfigMap in out with its keys, one not
// written (a spare, which must be optional) as an empty folder.
func mountSpares(t *testing.T, out []byte, names []string) pod {
	t.Helper()
	spec, _ := injectDeployment(t, out, names)
	p := layOut(t, spec)
	for i, v := range spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		if optional := v.ConfigMap.Optional != nil && *v.ConfigMap.Optional; optional != (i > 0) {
			t.Errorf("volume %s of ConfigMap %s: optional %v; want every one but the first optional", v.Name, v.ConfigMap.Name, optional)
		}
	}
	if len(p.mounts) != len(names) {
		t.Fatalf("mounts %v, want one per name %v", p.mounts, names)
	}
	written := configMapsByName(t, out)
	for _, name := range names {
		p.syncOptional(t, name, written[name])
	}
	return p
}

func configMapsByName(t *testing.T, out []byte) map[string]*corev1.ConfigMap {
	t.Helper()
	cms, _, _ := decodeConfigMaps(t, out)
	m := map[string]*corev1.ConfigMap{}
	for _, cm := range cms {
		if cm.Labels[PluginLabel] != "acme" {
			t.Errorf("ConfigMap %s labels %v; want %s=acme for kubectl apply --prune", cm.Name, cm.Labels, PluginLabel)
		}
		m[cm.Name] = cm
	}
	return m
}

// syncOptional is the kubelet's sync of one optional ConfigMap volume: the
// ConfigMap's keys, or none when it does not exist.
func (p pod) syncOptional(t *testing.T, name string, cm *corev1.ConfigMap) {
	t.Helper()
	if cm == nil {
		if err := kubeletvolume.Write(p.mounts[name], map[string][]byte{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	p.sync(t, cm)
}

func (p pod) load(t *testing.T) (*catalog.Snapshot, error) {
	t.Helper()
	return catalog.LoadFS(os.DirFS(p.pluginAt), catalog.Options{Layout: catalog.LayoutConfigMaps})
}

func (p pod) wantLoads(t *testing.T, when string) {
	t.Helper()
	if _, err := p.load(t); err != nil {
		t.Fatalf("%s: the mounts do not load: %v", when, err)
	}
}

// wantServed: the mounts serve exactly the plugin's skill files.
func (p pod) wantServed(t *testing.T, plugin fstest.MapFS) {
	t.Helper()
	s, err := p.load(t)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, sk := range s.Skills() {
		for _, f := range sk.Files {
			got = append(got, strings.TrimPrefix(f.URI, "skill://"))
		}
	}
	for name := range plugin {
		want = append(want, strings.TrimPrefix(name, "skills/"))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("served %d files, want %d: %v", len(got), len(want), got)
	}
}
