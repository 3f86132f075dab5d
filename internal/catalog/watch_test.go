package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

func skillFile(name string) string {
	return "---\nname: " + name + "\ndescription: Skill " + name + ".\n---\nBody of " + name + ".\n"
}

// startWatcher runs a Watcher until the test ends and collects its events.
func startWatcher(t *testing.T, root string, opts catalog.Options) (*catalog.Watcher, *eventLog) {
	t.Helper()
	log := &eventLog{}
	w, err := catalog.NewWatcher(root, opts, log.add)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
	})
	return w, log
}

type eventLog struct {
	mu     sync.Mutex
	events []catalog.ReloadEvent
}

func (l *eventLog) add(ev catalog.ReloadEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) all() []catalog.ReloadEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]catalog.ReloadEvent(nil), l.events...)
}

// waitFor polls cond for up to a minute and reports how long it took. The
// minute is a hang guard, not a measure: a loaded machine may take seconds
// to deliver a file event or run a poll, and five seconds could pass.
func waitFor(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < time.Minute {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
	return 0
}

func hasSkill(w *catalog.Watcher, uri string) func() bool {
	return func() bool { _, ok := w.Snapshot().Skill(uri); return ok }
}

// TestWatcherConfigMapSwap swaps "..data" the way the kubelet does and sees
// the new snapshot, once through change events and once through polling.
func TestWatcherConfigMapSwap(t *testing.T) {
	t.Parallel()
	tests := map[string]catalog.Options{
		"events": {PollInterval: -1, Debounce: 10 * time.Millisecond},
		"poll":   {NoEvents: true, PollInterval: 20 * time.Millisecond},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			makeConfigMap(t, dir, "..2025_01_01_00_00_00.1", map[string]string{"skills/one/SKILL.md": skillFile("one")})
			w, log := startWatcher(t, dir, opts)
			if got := len(w.Snapshot().Skills()); got != 1 {
				t.Fatalf("initial skills = %d, want 1", got)
			}
			swapConfigMap(t, dir, "..2025_01_01_00_01_00.2", map[string]string{
				"skills/one/SKILL.md": skillFile("one"),
				"skills/two/SKILL.md": skillFile("two"),
			})
			took := waitFor(t, "skill two", hasSkill(w, "skill://two/SKILL.md"))
			t.Logf("swap seen after %v", took)
			evs := log.all()
			last := evs[len(evs)-1]
			wantTrigger := catalog.TriggerEvent
			if name == "poll" {
				wantTrigger = catalog.TriggerPoll
			}
			if !last.OK || last.Skills != 2 || last.Trigger != wantTrigger || evs[0].Trigger != catalog.TriggerInitial {
				t.Errorf("events = %+v, want initial then an OK %s reload with 2 skills", evs, wantTrigger)
			}
		})
	}
}

// TestWatcherPlainFolderEdit: without a ConfigMap, an edit deep in a skill
// folder is seen through the watches on every folder read.
func TestWatcherPlainFolderEdit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"skills/acme/tools/lint/SKILL.md": skillFile("lint")})
	w, _ := startWatcher(t, dir, catalog.Options{PollInterval: -1, Debounce: 10 * time.Millisecond})
	writeFiles(t, dir, map[string]string{"skills/acme/tools/lint/rules/style.md": "# Style\n"})
	waitFor(t, "rules/style.md", func() bool {
		_, ok := w.Snapshot().File("skill://acme/tools/lint/rules/style.md")
		return ok
	})
}

// TestWatcherKeepsLastGood swaps in a tree that cannot be read (the "..data"
// link points at nothing) and keeps serving the old snapshot, then recovers.
func TestWatcherKeepsLastGood(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeConfigMap(t, dir, "..2025_01_01_00_00_00.1", map[string]string{"skills/one/SKILL.md": skillFile("one")})
	w, log := startWatcher(t, dir, catalog.Options{PollInterval: 20 * time.Millisecond, Debounce: 10 * time.Millisecond})
	before := w.Snapshot()

	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink("..2025_01_01_00_02_00.gone", tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a failed reload", func() bool {
		for _, ev := range log.all() {
			if !ev.OK {
				return true
			}
		}
		return false
	})
	if w.Snapshot() != before {
		t.Fatal("an unreadable tree replaced the snapshot; want the last good one kept")
	}
	for _, ev := range log.all() {
		if !ev.OK && !errors.Is(ev.Err, catalog.ErrUnreadable) {
			t.Errorf("failed reload error = %v, want ErrUnreadable", ev.Err)
		}
	}

	swapConfigMap(t, dir, "..2025_01_01_00_03_00.3", map[string]string{"skills/three/SKILL.md": skillFile("three")})
	waitFor(t, "recovery", hasSkill(w, "skill://three/SKILL.md"))
}

// TestWatcherUnreadableRootKeepsLastGood: the root itself gone.
func TestWatcherUnreadableRootKeepsLastGood(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir := filepath.Join(parent, "plugin")
	writeFiles(t, dir, map[string]string{"skills/one/SKILL.md": skillFile("one")})
	w, err := catalog.NewWatcher(dir, catalog.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := w.Snapshot()
	if err := os.Rename(dir, filepath.Join(parent, "moved")); err != nil {
		t.Fatal(err)
	}
	ev := w.Reload()
	if ev.OK || !errors.Is(ev.Err, catalog.ErrUnreadable) || w.Snapshot() != before {
		t.Errorf("Reload of a vanished root = %+v, snapshot kept %v; want ErrUnreadable and the old snapshot", ev, w.Snapshot() == before)
	}
	if _, err := catalog.NewWatcher(dir, catalog.Options{}, nil); !errors.Is(err, catalog.ErrUnreadable) {
		t.Errorf("NewWatcher(vanished root) error = %v, want ErrUnreadable", err)
	}
}

// TestWatcherReadersDuringReloads runs readers through many reloads; under
// -race it shows that readers never share mutable state with the builder,
// and every snapshot a reader sees is whole.
func TestWatcherReadersDuringReloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeConfigMap(t, dir, "..2026_01_01_00_00_00.100", map[string]string{"skills/s0/SKILL.md": skillFile("s0")})
	w, _ := startWatcher(t, dir, catalog.Options{PollInterval: 5 * time.Millisecond, Debounce: time.Millisecond})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				s := w.Snapshot()
				for _, sk := range s.Skills() {
					for _, f := range sk.Files {
						got, ok := s.File(f.URI)
						if !ok || got.Digest != f.Digest || int64(len(got.Data)) != got.Size {
							errc <- errors.New("snapshot not whole: " + f.URI)
							return
						}
					}
					if _, ok := s.Dir(sk.Root); !ok {
						errc <- errors.New("skill root has no directory: " + sk.Root)
						return
					}
				}
			}
		})
	}
	const swaps = 20
	for i := 1; i <= swaps; i++ {
		stamp := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", i, 100+i) // the kubelet's shape: others are dot-folders
		files := map[string]string{}
		for j := 0; j <= i%5; j++ {
			name := "s" + string(rune('0'+j))
			files["skills/"+name+"/SKILL.md"] = skillFile(name)
		}
		swapConfigMap(t, dir, stamp, files)
		if i%2 == 0 {
			w.Reload() // a manual reload racing the watcher's own
		}
		time.Sleep(3 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	waitFor(t, "the last swap", func() bool { return len(w.Snapshot().Skills()) == swaps%5+1 })
}

// TestWatcherNoSpuriousReloads: polling an unchanged tree reloads nothing.
func TestWatcherNoSpuriousReloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeConfigMap(t, dir, "..2026_01_01_00_00_00.1", map[string]string{
		"skills/one/SKILL.md": skillFile("one"),
		"agents/a.md":         "---\nname: a\ndescription: A.\nskills: [one]\n---\n",
	})
	_, log := startWatcher(t, dir, catalog.Options{NoEvents: true, PollInterval: 5 * time.Millisecond})
	time.Sleep(150 * time.Millisecond)
	if evs := log.all(); len(evs) != 1 {
		t.Errorf("got %d reloads of an unchanged tree, want only the initial one: %+v", len(evs), evs)
	}
}

// TestWatcherReportsDropped: an update that breaks one SKILL.md still loads
// (the reload succeeds), and its event names the skill that went away, so
// an alert can fire; a later fix brings it back and drops nothing.
func TestWatcherReportsDropped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agent := "---\nname: helper\ndescription: Helps.\n---\nDo things.\n"
	writeFiles(t, dir, map[string]string{
		"skills/a/SKILL.md": skillFile("a"),
		"skills/b/SKILL.md": skillFile("b"),
		"agents/helper.md":  agent,
	})
	w, log := startWatcher(t, dir, catalog.Options{PollInterval: -1, Debounce: 10 * time.Millisecond})
	writeFiles(t, dir, map[string]string{"skills/b/SKILL.md": "no frontmatter\n"})
	if err := os.Remove(filepath.Join(dir, "agents", "helper.md")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to be skipped", func() bool { return !hasSkill(w, "skill://b/SKILL.md")() })
	var got catalog.ReloadEvent
	waitFor(t, "the event dropping b", func() bool {
		for _, ev := range log.all() {
			if ev.OK && len(ev.DroppedSkills) > 0 {
				got = ev
				return true
			}
		}
		return false
	})
	if len(got.DroppedSkills) != 1 || got.DroppedSkills[0] != "skill://b/SKILL.md" {
		t.Errorf("DroppedSkills = %q, want [skill://b/SKILL.md]", got.DroppedSkills)
	}
	waitFor(t, "the agent to go", func() bool { _, ok := w.Snapshot().Agent("helper"); return !ok })
	var agents []string
	for _, ev := range log.all() {
		agents = append(agents, ev.DroppedAgents...)
	}
	if len(agents) != 1 || agents[0] != "helper" {
		t.Errorf("dropped agents over all events = %q, want [helper]", agents)
	}
	if first := log.all()[0]; first.DroppedSkills != nil || first.DroppedAgents != nil {
		t.Errorf("the initial load dropped %q, %q; want nothing", first.DroppedSkills, first.DroppedAgents)
	}
	n := len(log.all())
	writeFiles(t, dir, map[string]string{"skills/b/SKILL.md": skillFile("b")})
	waitFor(t, "b to come back", hasSkill(w, "skill://b/SKILL.md"))
	for _, ev := range log.all()[n:] {
		if len(ev.DroppedSkills)+len(ev.DroppedAgents) > 0 {
			t.Errorf("a reload adding b back dropped %q, %q", ev.DroppedSkills, ev.DroppedAgents)
		}
	}
}
