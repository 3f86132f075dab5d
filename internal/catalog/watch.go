package catalog

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Triggers of a ReloadEvent.
const (
	TriggerInitial = "initial" // the load in NewWatcher
	TriggerEvent   = "event"   // a file system change event
	TriggerPoll    = "poll"    // the polling fallback saw a different fingerprint
	TriggerManual  = "manual"  // a call to Watcher.Reload
)

// ReloadEvent reports one reload. It is what logs and metrics record.
type ReloadEvent struct {
	// OK is true when a new snapshot was published.
	OK bool
	// Err is why not; it wraps ErrUnreadable when the folder could not be
	// read at all. The last good snapshot stays published.
	Err error
	// Skills and Agents count what the published snapshot serves; zero
	// when OK is false.
	Skills, Agents int
	// Problems are the published snapshot's skipped and warned items.
	Problems []Problem
	// DroppedSkills and DroppedAgents are what the previous snapshot served
	// and the published one does not (see Dropped): skill URIs, agent names.
	DroppedSkills, DroppedAgents []string
	// Changes is what the published snapshot changed for clients against
	// the one before it (see Diff); zero for the initial load and for a
	// reload that failed or changed nothing a client can see.
	Changes Changes
	// Duration is how long the build took.
	Duration time.Duration
	// At is when the build started.
	At time.Time
	// Trigger is one of the Trigger constants.
	Trigger string
}

// Watcher keeps the snapshot of a plugin folder current. Readers call
// Snapshot, which never blocks; Run watches the folder and publishes the next
// snapshot atomically when it changes. A folder that cannot be read keeps
// the last good snapshot.
type Watcher struct {
	root     string
	opts     Options
	onReload func(ReloadEvent)

	snap atomic.Pointer[Snapshot]

	mu sync.Mutex // serializes builds; readers never take it
	fp [sha256.Size]byte

	// again is signalled when a reload withheld something still being
	// written, so that Run loads once more when it has been quiet.
	again chan struct{}
}

// NewWatcher loads the folder at root once and returns a Watcher serving
// that snapshot; the error is the initial load's (see Load). onReload, when
// not nil, is called after every reload, the initial one included, one call
// at a time and before NewWatcher returns for the first; it must not block
// for long.
func NewWatcher(root string, opts Options, onReload func(ReloadEvent)) (*Watcher, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	w := &Watcher{root: root, opts: opts.withDefaults(), onReload: onReload, again: make(chan struct{}, 1)}
	if ev := w.reload(TriggerInitial); !ev.OK {
		return nil, ev.Err
	}
	return w, nil
}

// Snapshot returns the current snapshot. It never blocks and never returns nil.
func (w *Watcher) Snapshot() *Snapshot { return w.snap.Load() }

// Reload builds and publishes a new snapshot now (for example on SIGHUP).
// Unlike a reload on a change, it waits for no quiet period: only a file
// that changes while it is read is withheld.
func (w *Watcher) Reload() ReloadEvent { return w.reload(TriggerManual) }

func (w *Watcher) reload(trigger string) ReloadEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	start := time.Now()
	// The fingerprint comes from the load's own walk, so a change during the
	// load shows up as a difference at the next poll.
	//
	// Every load but the first withholds files still being written in
	// place (see settling): the previous snapshot's version stays until
	// they have been quiet for Debounce. The first has nothing older to
	// serve and the process needs a catalog, so it publishes what it read
	// (a volume is normally written whole before the container starts);
	// what was still changing then shows at the next event or poll. A
	// manual reload (SIGHUP) is the operator saying the edit is done: it
	// waits for no quiet period, but still withholds a file that changed
	// while it was read.
	var settle *settling
	switch trigger {
	case TriggerInitial:
	case TriggerManual:
		settle = &settling{start: start, prev: w.snap.Load()}
	default:
		settle = &settling{start: start, quiet: w.opts.Debounce, prev: w.snap.Load()}
	}
	s, fp, err := loadRoot(w.root, w.opts, false, settle)
	w.fp = fp
	ev := ReloadEvent{At: start, Duration: time.Since(start), Trigger: trigger}
	if err != nil {
		ev.Err = fmt.Errorf("reload %s: %w", w.root, err)
	} else {
		if s.unsettled {
			select {
			case w.again <- struct{}{}:
			default: // one is pending already
			}
		}
		prev := w.snap.Swap(s)
		ev.DroppedSkills, ev.DroppedAgents = Dropped(prev, s)
		if prev != nil {
			ev.Changes = Diff(prev, s)
		}
		ev.OK, ev.Skills, ev.Agents, ev.Problems = true, len(s.skills), len(s.agents), s.problems
	}
	if w.onReload != nil {
		w.onReload(ev)
	}
	return ev
}

// Run watches the folder until ctx is done, then returns nil. Change events
// (fsnotify: inotify on Linux) on the root and on every folder read are
// debounced by Options.Debounce and then trigger a reload, and a burst of
// events closer together than that reloads no later than Options.MaxWait
// after its first event, as a debounce with a max-wait does; the root's
// events include the "..data" swap of a ConfigMap update. A reload that
// withheld a file still being written loads again Debounce later. Every Options.PollInterval
// a fingerprint of the tree (names, link targets, sizes, modification
// times) is compared as well, for volumes that deliver no events. Run must
// be called at most once.
func (w *Watcher) Run(ctx context.Context) error {
	sync := func() bool { return false }
	var events <-chan fsnotify.Event
	var errs <-chan error
	if !w.opts.NoEvents {
		// Without events (inotify limits, a volume that sends none) polling
		// still sees every change, only later.
		if fw, err := fsnotify.NewWatcher(); err == nil {
			defer fw.Close()
			watched := map[string]bool{}
			sync = func() bool { return w.syncWatches(fw, watched) }
			sync()
			events, errs = fw.Events, fw.Errors
		}
	}
	return w.loop(ctx, events, errs, sync)
}

// loop is Run's select loop; sync re-aims the event watches after a reload
// and reports whether it added any.
func (w *Watcher) loop(ctx context.Context, events <-chan fsnotify.Event, errs <-chan error, sync func() bool) error {
	var tick <-chan time.Time
	if w.opts.PollInterval > 0 {
		t := time.NewTicker(w.opts.PollInterval)
		defer t.Stop()
		tick = t.C
	}
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	// burst is when the first event not yet reloaded came; zero when none.
	var burst time.Time
	arm := func() {
		now := time.Now()
		if burst.IsZero() {
			burst = now
		}
		d := w.opts.Debounce
		if left := burst.Add(w.opts.MaxWait).Sub(now); left < d {
			d = max(left, 0)
		}
		debounce.Reset(d)
	}
	// Changes made between the last load and the first watches are seen by
	// no event: load once more.
	if w.changed() {
		arm()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			arm()
		case _, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// An overflow or watch error may hide a change: reload.
			arm()
		case <-w.again:
			arm()
		case <-debounce.C:
			burst = time.Time{}
			w.reload(TriggerEvent)
			if sync() {
				// Whatever was created in a new folder before its watch
				// existed sent no event: load once more.
				arm()
			}
		case <-tick:
			if w.changed() {
				w.reload(TriggerPoll)
				sync()
			}
		}
	}
}

// changed reports whether the folder's fingerprint differs from the one
// taken at the last reload.
func (w *Watcher) changed() bool {
	fp := fingerprint(w.root, w.opts)
	w.mu.Lock()
	defer w.mu.Unlock()
	return fp != w.fp
}

// syncWatches aims fsnotify at the root and every folder the current
// snapshot was read from (fsnotify is not recursive), and reports whether
// it added a watch.
func (w *Watcher) syncWatches(fw *fsnotify.Watcher, watched map[string]bool) (added bool) {
	want := map[string]bool{w.root: true}
	for _, d := range w.Snapshot().watchDirs {
		want[filepath.Join(w.root, filepath.FromSlash(d))] = true
	}
	for d := range watched {
		if !want[d] {
			_ = fw.Remove(d) // the folder may be gone already
			delete(watched, d)
		}
	}
	for d := range want {
		if !watched[d] && fw.Add(d) == nil {
			watched[d] = true
			added = true
		}
	}
	return added
}

// fingerprint resolves every entry a reload would read, reading no file,
// and hashes names, link targets, sizes, modification times and modes.
func fingerprint(root string, opts Options) [sha256.Size]byte {
	_, fp, _ := loadRoot(root, opts, true, nil)
	return fp
}
