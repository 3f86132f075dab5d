package inject

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/kubeletvolume"
	"github.com/skills-sidecar/skills-sidecar/internal/lint"
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

// TestKubeletGrowAndShrink: a plugin rendered with the default command
// line (`inject configmap --name acme DIR`, no --mounted) grows past what
// one ConfigMap holds and shrinks back, each time rendered again the same
// way, under a pod injected once with the first render's annotation; the
// kubelet updates the volumes one by one, in either order. After every
// single volume update `lint --layout configmaps` reads the mounts with
// nothing skipped and every skill the plugin had before and after the
// render whole (a file moved between ConfigMaps would be missing from one
// of them for a while), and once all are updated it serves the new plugin.
func TestKubeletGrowAndShrink(t *testing.T) {
	t.Parallel()
	small, large := growingPlugin(20, 4000), growingPlugin(80, 4000) // one ConfigMap's worth, two
	for _, order := range []string{"in name order", "in reverse order"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			out, names := renderDefault(t, small)
			p := mountSpares(t, out, names)
			p.wantServed(t, small)
			prev := small
			for _, step := range []struct {
				name   string
				plugin fstest.MapFS
			}{{"grow", large}, {"shrink", small}} {
				out, again := renderDefault(t, step.plugin)
				if !slices.Equal(again, names) {
					t.Errorf("%s: the annotation changed from %v to %v; running pods mount the first", step.name, names, again)
				}
				written := configMapsByName(t, out)
				order := slices.Clone(names)
				if strings.HasPrefix(t.Name(), "TestKubeletGrowAndShrink/in_reverse") {
					slices.Reverse(order)
				}
				for _, name := range order {
					p.syncOptional(t, name, written[name]) // a ConfigMap not written: pruned, an empty volume
					p.wantWhole(t, step.name+" after syncing "+name, prev, step.plugin)
				}
				p.wantServed(t, step.plugin)
				prev = step.plugin
			}
		})
	}
}

// renderDefault runs `inject configmap --name acme DIR` over the plugin and
// returns the ConfigMaps written and the annotation it prints.
func renderDefault(t *testing.T, plugin fstest.MapFS) ([]byte, []string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, plugin); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := RunInject(context.Background(), []string{"configmap", "--name", "acme", dir}, testHost, nil, &stdout, &stderr); code != ExitOK {
		t.Fatalf("inject configmap: exit %d: %s", code, stderr.String())
	}
	m := regexp.MustCompile(`plugin-configmaps: "([^"]*)"`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("inject configmap printed no annotation: %s", stderr.String())
	}
	return stdout.Bytes(), strings.Split(m[1], ",")
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

// lint runs `lint --layout configmaps --format json` over the pod's plugin
// folder and returns its report; nothing skipped, or the test fails.
func (p pod) lint(t *testing.T, when string) lintReport {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := lint.Run(context.Background(), []string{"--layout", "configmaps", "--format", "json", p.pluginAt}, &stdout, &stderr)
	var r lintReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || code != lint.ExitOK {
		t.Fatalf("%s: lint --layout configmaps: exit %d, %v: %s%s", when, code, err, stdout.String(), stderr.String())
	}
	return r
}

// lintReport is what the test reads of lint's JSON report.
type lintReport struct {
	Skills []struct {
		URI   string `json:"uri"`
		Files int    `json:"files"`
	} `json:"skills"`
}

// wantWhole: lint reads the mounts, and every skill of both plugins is
// served whole (the plugins here do not change a file's bytes).
func (p pod) wantWhole(t *testing.T, when string, before, after fstest.MapFS) {
	t.Helper()
	files := map[string]int{}
	for _, sk := range p.lint(t, when).Skills {
		files[sk.URI] = sk.Files
	}
	for name := range before {
		if _, both := after[name]; !both || !strings.HasSuffix(name, "/SKILL.md") {
			continue
		}
		uri := "skill://" + strings.TrimPrefix(name, "skills/")
		if want := filesUnder(before, path.Dir(name)); files[uri] != want {
			t.Errorf("%s: %s served with %d files, want %d: a file is in no mounted volume", when, uri, files[uri], want)
		}
	}
}

func filesUnder(fsys fstest.MapFS, dir string) int {
	n := 0
	for name := range fsys {
		if strings.HasPrefix(name, dir+"/") {
			n++
		}
	}
	return n
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
