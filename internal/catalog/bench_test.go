package catalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/kubeletvolume"
)

const (
	benchSkills        = 1000
	benchFilesPerSkill = 10 // SKILL.md and nine more
)

// writeBenchTree writes 1,000 skills of 10 files (about 1 KiB each, in two
// subfolders) under dir/skills and returns the number of files.
func writeBenchTree(tb testing.TB, dir string) int {
	tb.Helper()
	body := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 18)
	n := 0
	for i := range benchSkills {
		name := fmt.Sprintf("skill-%04d", i)
		root := filepath.Join(dir, "skills", "team-"+fmt.Sprint(i%10), name)
		for _, sub := range []string{"examples", "scripts"} {
			if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: Benchmark skill %d.\nmetadata:\n  owner: team-%d\n---\n# %s\n\n%s\n", name, i, i%10, name, body)
		if err := os.WriteFile(filepath.Join(root, "SKILL.md"), []byte(md), 0o644); err != nil {
			tb.Fatal(err)
		}
		n++
		for j := 1; j < benchFilesPerSkill; j++ {
			sub := "examples"
			ext := ".md"
			if j%2 == 0 {
				sub, ext = "scripts", ".py"
			}
			p := filepath.Join(root, sub, fmt.Sprintf("file-%d%s", j, ext))
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				tb.Fatal(err)
			}
			n++
		}
	}
	return n
}

// BenchmarkLoad1000x10 loads 1,000 skills × 10 files and reports the heap
// the snapshot keeps (the served bytes are most of it).
func BenchmarkLoad1000x10(b *testing.B) {
	dir := b.TempDir()
	files := writeBenchTree(b, dir)
	var keep *catalog.Snapshot
	var before, after runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s, err := catalog.Load(dir, catalog.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Skills()) != benchSkills || s.FileCount() != files {
			b.Fatalf("loaded %d skills, %d files; want %d, %d (%v)", len(s.Skills()), s.FileCount(), benchSkills, files, s.Problems())
		}
		keep = s
	}
	b.StopTimer()
	keep = nil
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep, _ = catalog.Load(dir, catalog.Options{})
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-retained")
	runtime.KeepAlive(keep)
}

// BenchmarkReload1000x10 is the latency of one Watcher reload (fingerprint,
// load and publish) of the same tree.
func BenchmarkReload1000x10(b *testing.B) {
	dir := b.TempDir()
	writeBenchTree(b, dir)
	w, err := catalog.NewWatcher(dir, catalog.Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if ev := w.Reload(); !ev.OK {
			b.Fatal(ev.Err)
		}
	}
}

// BenchmarkConfigMapSwap1000x10 is the time from a kubelet-style "..data"
// swap to the new snapshot being served, through change events.
func BenchmarkConfigMapSwap1000x10(b *testing.B) {
	dir := b.TempDir()
	stamps := []string{"..2026_01_01_00_00_00.1", "..2026_01_01_00_00_01.2"} // the kubelet's shape
	for _, st := range stamps {
		writeBenchTree(b, filepath.Join(dir, st))
		if err := os.MkdirAll(filepath.Join(dir, st, "agents"), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.Symlink(stamps[0], filepath.Join(dir, "..data")); err != nil {
		b.Fatal(err)
	}
	for _, top := range []string{"skills", "agents"} {
		if err := os.Symlink(filepath.Join("..data", top), filepath.Join(dir, top)); err != nil {
			b.Fatal(err)
		}
	}
	w, err := catalog.NewWatcher(dir, catalog.Options{PollInterval: -1, Debounce: 10 * time.Millisecond}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Run(ctx) }()
	time.Sleep(100 * time.Millisecond) // let Run place its watches
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		old := w.Snapshot()
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(stamps[i%2], tmp); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for w.Snapshot() == old {
			if time.Now().After(deadline) {
				b.Fatal("swap not seen in 10s")
			}
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		time.Sleep(300 * time.Millisecond) // let the follow-up reload settle
		b.StartTimer()
	}
}

// BenchmarkLoadConfigMaps1000x10 loads the same plugin as
// BenchmarkLoad1000x10 from 48 ConfigMap folders in the kubelet's layout
// (LayoutConfigMaps), the way an injected sidecar reads it.
func BenchmarkLoadConfigMaps1000x10(b *testing.B) {
	tree := b.TempDir()
	files := writeBenchTree(b, tree)
	root := b.TempDir()
	mounts := make([]map[string][]byte, 48)
	i := 0
	err := filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tree, p)
		data, err := os.ReadFile(p)
		if mounts[i%len(mounts)] == nil {
			mounts[i%len(mounts)] = map[string][]byte{}
		}
		mounts[i%len(mounts)][catalog.EncodeKey(filepath.ToSlash(rel))] = data
		i++
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	for n, keys := range mounts {
		if err := kubeletvolume.Write(filepath.Join(root, fmt.Sprintf("plugin-%d", n)), keys); err != nil {
			b.Fatal(err)
		}
	}
	opts := catalog.Options{Layout: catalog.LayoutConfigMaps}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s, err := catalog.Load(root, opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Skills()) != benchSkills || s.FileCount() != files {
			b.Fatalf("loaded %d skills, %d files; want %d, %d", len(s.Skills()), s.FileCount(), benchSkills, files)
		}
	}
}
