package inject

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/inject/manifestcheck"
	"github.com/skills-sidecar/skills-sidecar/internal/kubeletvolume"
)

const kubeletDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: server}
spec:
  selector: {matchLabels: {app: server}}
  template:
    metadata:
      labels: {app: server}
      annotations:
        skills-sidecar.io/inject: "true"
        skills-sidecar.io/plugin-configmaps: %s
    spec:
      containers:
        - name: server
          image: example/server:1
          ports: [{name: http, containerPort: 3000}]
`

func kubeletSkill(name, desc string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: " + desc + "\n---\nBody.\n")}
}

// pod is what the kubelet mounts for the injected sidecar: the plugin
// folder, its layout and which ConfigMap each mount shows.
type pod struct {
	root     string            // the sidecar's file system
	pluginAt string            // --plugin-dir
	layout   string            // --plugin-layout
	mounts   map[string]string // ConfigMap -> mount path
}

// injectAndMount runs inject -f over the ConfigMaps and a Deployment naming
// them, and lays the injected pod's ConfigMap volumes out as the kubelet
// would, reading everything from the injected manifests.
func injectAndMount(t *testing.T, cms []byte, names []string) (pod, map[string]*corev1.ConfigMap) {
	t.Helper()
	spec, byName := injectDeployment(t, cms, names)
	p := layOut(t, spec)
	if len(p.mounts) != len(names) {
		t.Fatalf("mounts %v, want one per ConfigMap %v", p.mounts, names)
	}
	for name := range p.mounts {
		p.sync(t, byName[name])
	}
	return p, byName
}

// layOut is the sidecar's file system in an injected pod: the plugin
// folder, its layout and where each ConfigMap volume is mounted.
func layOut(t *testing.T, spec corev1.PodSpec) pod {
	t.Helper()
	p := pod{root: t.TempDir(), mounts: map[string]string{}}
	sidecar := spec.InitContainers[0]
	for _, a := range sidecar.Args {
		if v, ok := strings.CutPrefix(a, "--plugin-dir="); ok {
			p.pluginAt = filepath.Join(p.root, v)
		}
		if v, ok := strings.CutPrefix(a, "--plugin-layout="); ok {
			p.layout = v
		}
	}
	for _, m := range sidecar.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				if v.ConfigMap.Items != nil {
					t.Fatalf("volume %s lists items; want the ConfigMap whole", v.Name)
				}
				p.mounts[v.ConfigMap.Name] = filepath.Join(p.root, m.MountPath)
			}
		}
	}
	return p
}

// injectDeployment runs inject -f over the ConfigMaps and a Deployment
// naming them and returns the injected pod spec and the ConfigMaps by name.
func injectDeployment(t *testing.T, cms []byte, names []string) (corev1.PodSpec, map[string]*corev1.ConfigMap) {
	t.Helper()
	in := append(append([]byte{}, cms...), "---\n"+fmt.Sprintf(kubeletDeployment, strings.Join(names, ","))...)
	out, _, err := InjectManifests(in, Options{Image: "img:1", NativeSidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifestcheck.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*corev1.ConfigMap{}
	var dep *appsv1.Deployment
	for _, o := range objs {
		switch v := o.Value.(type) {
		case *corev1.ConfigMap:
			byName[v.Name] = v
		case *appsv1.Deployment:
			dep = v
		}
	}
	if dep == nil {
		t.Fatal("inject -f returned no Deployment")
	}
	return dep.Spec.Template.Spec, byName
}

// sync is the kubelet's sync of one ConfigMap volume: an atomic "..data"
// swap to the ConfigMap's current keys.
func (p pod) sync(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	keys := map[string][]byte{}
	for k, v := range cm.Data {
		keys[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		keys[k] = v
	}
	if err := kubeletvolume.Write(p.mounts[cm.Name], keys); err != nil {
		t.Fatal(err)
	}
}

// TestKubeletSwapsServed: the mounted layout inject -f produces, updated
// with the kubelet's atomic swaps one ConfigMap at a time (files added,
// removed, and moved from one ConfigMap to another), is served by a
// running watcher after each swap, without a restart. The wait is bounded
// by 20 s; the measured time is logged.
func TestKubeletSwapsServed(t *testing.T) {
	t.Parallel()
	plugin := fstest.MapFS{
		".claude-plugin/plugin.json": {Data: []byte(`{"name":"acme","version":"1"}`)},
		"agents/triage.md":           {Data: []byte("---\nname: triage\ndescription: Triage.\nskills: [refunds]\n---\nGo.\n")},
	}
	for i := range 12 {
		name := fmt.Sprintf("skill%02d", i)
		plugin["skills/"+name+"/SKILL.md"] = kubeletSkill(name, "Skill "+name+".")
		plugin["skills/"+name+"/notes.txt"] = &fstest.MapFile{Data: []byte("notes " + name)}
	}
	build := func() ([]byte, []string) {
		out, names, err := BuildConfigMaps(plugin, ConfigMapOptions{Name: "acme", Count: 3})
		if err != nil {
			t.Fatal(err)
		}
		return out, names
	}
	out, names := build()
	p, cms := injectAndMount(t, out, names)
	if p.layout != catalog.LayoutConfigMaps {
		t.Fatalf("--plugin-layout=%s, want %s", p.layout, catalog.LayoutConfigMaps)
	}
	conflicts := make(chan error, 100)
	w, err := catalog.NewWatcher(p.pluginAt, catalog.Options{Layout: p.layout, PollInterval: time.Second}, func(ev catalog.ReloadEvent) {
		if errors.Is(ev.Err, catalog.ErrConflict) {
			conflicts <- ev.Err
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if n := len(w.Snapshot().Skills()); n != 12 {
		t.Fatalf("initial snapshot has %d skills, want 12", n)
	}

	served := func(what string, cond func(*catalog.Snapshot) bool) {
		t.Helper()
		start := time.Now()
		for !cond(w.Snapshot()) {
			if time.Since(start) > 20*time.Second {
				t.Fatalf("%s: not served 20 s after the last swap", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("%s: served %v after the last swap", what, time.Since(start).Round(time.Millisecond))
	}
	// rebuild regenerates the ConfigMaps as inject configmap would and
	// syncs each mount, one after the other.
	rebuild := func() {
		t.Helper()
		out, again := build()
		if strings.Join(again, ",") != strings.Join(names, ",") {
			t.Fatalf("ConfigMaps %v, want the pinned %v", again, names)
		}
		objs, err := manifestcheck.Decode(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			cm := o.Value.(*corev1.ConfigMap)
			cms[cm.Name] = cm
			p.sync(t, cm)
		}
	}

	plugin["skills/added/SKILL.md"] = kubeletSkill("added", "Added later.")
	plugin["skills/skill03/more/deep.md"] = &fstest.MapFile{Data: []byte("deep")}
	rebuild()
	served("added skill and nested file", func(s *catalog.Snapshot) bool {
		_, a := s.Skill("skill://added/SKILL.md")
		_, f := s.File("skill://skill03/more/deep.md")
		return a && f
	})

	delete(plugin, "skills/skill05/SKILL.md")
	delete(plugin, "skills/skill05/notes.txt")
	delete(plugin, "skills/skill07/notes.txt")
	rebuild()
	served("removed skill and file", func(s *catalog.Snapshot) bool {
		_, sk := s.Skill("skill://skill05/SKILL.md")
		_, f := s.File("skill://skill07/notes.txt")
		return !sk && !f
	})

	// Move a file to another ConfigMap by hand (as another tool might),
	// with new bytes, syncing the receiving ConfigMap first: for a moment
	// both hold it and the last good snapshot stays served.
	key := catalog.EncodeKey("skills/skill01/SKILL.md")
	from, to := "", ""
	for _, n := range names {
		if _, ok := cms[n].Data[key]; ok {
			from = n
		} else if to == "" {
			to = n
		}
	}
	if cms[to].Data == nil {
		cms[to].Data = map[string]string{}
	}
	cms[to].Data[key] = string(kubeletSkill("skill01", "Moved.").Data)
	delete(cms[from].Data, key)
	p.sync(t, cms[to])
	select {
	case err := <-conflicts:
		t.Logf("during the move: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no reload refused the file in two ConfigMaps")
	}
	if sk, ok := w.Snapshot().Skill("skill://skill01/SKILL.md"); !ok || sk.Description != "Skill skill01." {
		t.Errorf("during the move the skill is %+v, %v; want the last good one", sk, ok)
	}
	p.sync(t, cms[from])
	served("file moved between ConfigMaps", func(s *catalog.Snapshot) bool {
		sk, ok := s.Skill("skill://skill01/SKILL.md")
		return ok && sk.Description == "Moved."
	})
	if n := len(w.Snapshot().Skills()); n != 12 {
		t.Errorf("after the updates %d skills, want 12", n)
	}
}
