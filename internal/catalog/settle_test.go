package catalog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// sampler reads one file of a watcher's snapshot over and over until
// stopped, and keeps every distinct content it saw.
type sampler struct {
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	seen map[string]bool
}

func sample(w *catalog.Watcher, uri string) *sampler {
	s := &sampler{seen: map[string]bool{}}
	s.wg.Go(func() {
		for !s.stop.Load() {
			if f, ok := w.Snapshot().File(uri); ok {
				s.mu.Lock()
				s.seen[string(f.Data)] = true
				s.mu.Unlock()
			}
			time.Sleep(200 * time.Microsecond)
		}
	})
	return s
}

func (s *sampler) done() map[string]bool {
	s.stop.Store(true)
	s.wg.Wait()
	return s.seen
}

// writer writes a file a piece at a time and knows, for each length the
// file had, how long it may have stayed that long: from the start of the
// write that made it so to the end of the next one, which bounds the gap
// between their modification times from above. A length that stayed
// unchanged for the debounce has "stopped changing" and may be published;
// the test's own pace, not the clock, decides which lengths those are.
type writer struct {
	f      *os.File
	text   strings.Builder
	start  time.Time
	stayed map[int]time.Duration
}

func (w *writer) write(t *testing.T, s string) {
	t.Helper()
	start := time.Now()
	if _, err := w.f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if w.stayed == nil {
		w.stayed = map[int]time.Duration{}
	} else {
		w.stayed[w.text.Len()] = time.Since(w.start)
	}
	w.start = start
	w.text.WriteString(s)
}

// mayPublish reports whether content, a prefix of what was written, may
// have been published: it is the whole, or it stayed for quiet.
func (w *writer) mayPublish(prefix, content string, quiet time.Duration) bool {
	n := len(content) - len(prefix)
	whole := prefix + w.text.String()
	if content == whole || content == prefix && w.stayed == nil {
		return true
	}
	d, ok := w.stayed[n]
	return strings.HasPrefix(whole, content) && ok && d >= quiet
}

// TestWatcherWithholdsFileBeingWritten: a file rewritten in place, a chunk
// at a time, is never published half-written: while it
// keeps changing the previous version stays, though reloads run all along
// (polls see the changes); once it has stopped changing its whole new
// content is published.
func TestWatcherWithholdsFileBeingWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const before = "version 1, complete\n"
	writeFiles(t, dir, map[string]string{"skills/grow/SKILL.md": skillFile("grow"), "skills/grow/data.md": before})
	old := time.Now().Add(-time.Hour) // written long ago: settled
	for _, f := range []string{"skills/grow/SKILL.md", "skills/grow/data.md"} {
		if err := os.Chtimes(filepath.Join(dir, f), old, old); err != nil {
			t.Fatal(err)
		}
	}
	w, log := startWatcher(t, dir, catalog.Options{PollInterval: 10 * time.Millisecond, Debounce: 40 * time.Millisecond, MaxWait: 60 * time.Millisecond})
	s := sample(w, "skill://grow/data.md")

	// The watcher judges a file by its modification time, which the
	// kernel takes from a coarse clock (up to a tick, 4-10 ms, behind the
	// moment of the write), and the writer here measures with time.Now: a
	// chunk that stayed a little under the debounce can look settled to
	// the watcher. quiet allows that much; a chunk at the writer's usual
	// 10 ms pace is still far from it.
	const quiet = 40*time.Millisecond - 15*time.Millisecond
	f, err := os.OpenFile(filepath.Join(dir, "skills", "grow", "data.md"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	wr := &writer{f: f}
	wr.write(t, "")
	for i := range 30 {
		time.Sleep(10 * time.Millisecond)
		wr.write(t, fmt.Sprintf("chunk %02d of version 2\n", i))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	after := wr.text.String()
	reloadsDuring := len(log.all())
	waitFor(t, "version 2", func() bool {
		got, ok := w.Snapshot().File("skill://grow/data.md")
		return ok && string(got.Data) == after
	})
	for content := range s.done() {
		if content != before && !wr.mayPublish("", content, quiet) {
			t.Errorf("published a half-written data.md (%d of %d bytes, unchanged for less than %v): %q", len(content), len(after), quiet, content)
		}
	}
	if reloadsDuring < 2 {
		t.Errorf("only %d reloads while the file was written; the test wants reloads during the writes to mean anything", reloadsDuring)
	}
}

// TestWatcherBurstReloadsWithinMaxWait: events closer together than the
// debounce (a file appended to every 10 ms, debounce 50 ms) still reload
// within the max-wait, not only when the burst ends (polling is off): a
// skill added at the start of the burst is published while the burst goes
// on; the file still being appended to is not, until it stops.
func TestWatcherBurstReloadsWithinMaxWait(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const quiet = "quiet\n" // log.md before the burst
	writeFiles(t, dir, map[string]string{"skills/busy/SKILL.md": skillFile("busy"), "skills/busy/log.md": quiet})
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{"skills/busy/SKILL.md", "skills/busy/log.md"} {
		if err := os.Chtimes(filepath.Join(dir, f), old, old); err != nil {
			t.Fatal(err)
		}
	}
	w, _ := startWatcher(t, dir, catalog.Options{PollInterval: -1, Debounce: 50 * time.Millisecond, MaxWait: 150 * time.Millisecond})
	s := sample(w, "skill://busy/log.md")

	writeFiles(t, dir, map[string]string{"skills/fresh/SKILL.md": skillFile("fresh")})
	f, err := os.OpenFile(filepath.Join(dir, "skills", "busy", "log.md"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	wr := &writer{f: f}
	wr.write(t, "")
	start := time.Now()
	seen := false
	for time.Since(start) < 5*time.Second { // a bound on the test, not the assertion
		if _, seen = w.Snapshot().Skill("skill://fresh/SKILL.md"); seen {
			break
		}
		wr.write(t, "line\n")
		time.Sleep(10 * time.Millisecond)
	}
	want := quiet + wr.text.String()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if !seen {
		t.Fatal("a skill added during a burst of events was not published while the burst went on")
	}
	t.Logf("skill published %v into the burst", time.Since(start))
	waitFor(t, "the appended log.md once quiet", func() bool {
		got, ok := w.Snapshot().File("skill://busy/log.md")
		return ok && string(got.Data) == want
	})
	for content := range s.done() {
		if content != quiet && !wr.mayPublish(quiet, content, 50*time.Millisecond) {
			t.Errorf("published log.md while it was being appended to (%d of %d bytes)", len(content), len(want))
		}
	}
}
