package catalog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// TestReloadDuringKubeletSwapIsWhole races reloads against ConfigMap updates
// done the kubelet's way (new folder, "..data" renamed onto it, the old
// folder deleted at once). A reload that overlapped a swap must load again
// rather than publish the part of the plugin it managed to read: every
// published snapshot has every skill and no problem.
func TestReloadDuringKubeletSwapIsWhole(t *testing.T) {
	t.Parallel()
	const skills = 20
	files := func(rev int) map[string]string {
		m := map[string]string{}
		for i := range skills {
			name := fmt.Sprintf("s%02d", i)
			m["skills/"+name+"/SKILL.md"] = fmt.Sprintf("---\nname: %s\ndescription: revision %d\n---\nbody\n", name, rev)
			m["skills/"+name+"/notes.md"] = "notes\n"
		}
		return m
	}
	dir := t.TempDir()
	makeConfigMap(t, dir, stamp(0), files(0))
	var mu sync.Mutex
	var bad []string
	w, err := catalog.NewWatcher(dir, catalog.Options{PollInterval: -1, NoEvents: true}, func(ev catalog.ReloadEvent) {
		if ev.OK && (ev.Skills != skills || len(ev.Problems) > 0) {
			mu.Lock()
			bad = append(bad, fmt.Sprintf("%d skills, problems %v", ev.Skills, ev.Problems))
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for rev := 1; rev <= 15; rev++ {
			old := stamp(rev - 1)
			swapConfigMap(t, dir, stamp(rev), files(rev))
			if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
				t.Error(err)
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		w.Reload()
	}
	if len(bad) > 0 {
		t.Errorf("%d reloads published part of the plugin, e.g. %s", len(bad), bad[0])
	}
}

// stamp is the kubelet atomic writer's data folder of revision rev.
func stamp(rev int) string { return fmt.Sprintf("..2026_01_01_00_00_%02d.%d", rev, 1000+rev) }
