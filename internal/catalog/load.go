package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Defaults of Options.
const (
	DefaultMaxFiles      = 512      // files per skill (SEP-2640)
	DefaultMaxSkillBytes = 16 << 20 // bytes per skill (SEP-2640)
	DefaultMaxEntries    = 100_000  // entries read from the whole folder
	DefaultPollInterval  = 5 * time.Second
	DefaultDebounce      = 100 * time.Millisecond
	DefaultMaxWaitFactor = 10 // MaxWait, in Debounces
)

// Limit modes of Options.LimitMode.
const (
	LimitSkip = "skip" // a skill over a limit is skipped (default)
	LimitWarn = "warn" // a skill over a limit is served with a warning
)

// ErrUnreadable is wrapped by the error of Load and LoadFS when the plugin
// folder cannot be read at all: the root, or a skills/ or agents/ that exists
// but cannot be opened (for example a ConfigMap link whose target is gone).
// A watcher keeps its last good snapshot on this error.
var ErrUnreadable = errors.New("catalog: plugin folder cannot be read")

// Options tunes loading and watching. The zero value gives the defaults.
type Options struct {
	// LimitMode is LimitSkip ("" means LimitSkip) or LimitWarn: what happens
	// to a skill over MaxFiles or MaxSkillBytes. A single file larger than
	// MaxSkillBytes is never read; in warn mode it is left out of the skill.
	LimitMode string
	// MaxFiles is the file limit per skill; 0 means DefaultMaxFiles.
	MaxFiles int
	// MaxSkillBytes is the byte limit per skill; 0 means DefaultMaxSkillBytes.
	MaxSkillBytes int64
	// MaxEntries bounds the entries read from the whole folder, links
	// followed; 0 means DefaultMaxEntries.
	MaxEntries int
	// PollInterval is how often a Watcher compares a fingerprint of the
	// folder as a fallback to change events; 0 means DefaultPollInterval and
	// a negative value turns polling off.
	PollInterval time.Duration
	// NoEvents turns off file system change events for a Watcher, leaving
	// only polling; for volumes that deliver no events.
	NoEvents bool
	// Debounce is how long a Watcher waits after a change event for more
	// events before it reloads; 0 means DefaultDebounce. It is also how
	// long a file written in place must have been unchanged before a
	// reload publishes it.
	Debounce time.Duration
	// Layout is how the folder holds the plugin: LayoutTree ("" means
	// LayoutTree) or LayoutConfigMaps.
	Layout string
	// MaxWait bounds how long a burst of change events closer together
	// than Debounce can put a reload off, from the burst's first event; 0
	// means DefaultMaxWaitFactor times Debounce.
	MaxWait time.Duration
	// FrontmatterPortability is PortabilitySkip ("" means PortabilitySkip)
	// or PortabilityWarn: what happens to a skill whose SKILL.md
	// frontmatter has a plain scalar YAML 1.1 readers type differently
	// (an [Ambiguity]). Skipped, or served with a warning; either way its
	// Problem has Ambiguous set.
	FrontmatterPortability string
}

func (o Options) withDefaults() Options {
	if o.LimitMode == "" {
		o.LimitMode = LimitSkip
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxSkillBytes <= 0 {
		o.MaxSkillBytes = DefaultMaxSkillBytes
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Layout == "" {
		o.Layout = LayoutTree
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWaitFactor * o.Debounce
	}
	if o.FrontmatterPortability == "" {
		o.FrontmatterPortability = PortabilitySkip
	}
	return o
}

// Validate reports option values that make no sense.
func (o Options) Validate() error {
	if o.LimitMode != "" && o.LimitMode != LimitSkip && o.LimitMode != LimitWarn {
		return fmt.Errorf("catalog: limit mode %q is neither %q nor %q", o.LimitMode, LimitSkip, LimitWarn)
	}
	if o.Layout != "" && o.Layout != LayoutTree && o.Layout != LayoutConfigMaps {
		return fmt.Errorf("catalog: layout %q is neither %q nor %q", o.Layout, LayoutTree, LayoutConfigMaps)
	}
	if p := o.FrontmatterPortability; p != "" && p != PortabilitySkip && p != PortabilityWarn {
		return fmt.Errorf("catalog: frontmatter portability %q is neither %q nor %q", p, PortabilitySkip, PortabilityWarn)
	}
	return nil
}

// Load reads the plugin folder at root. Symlinks resolving inside root are
// followed (Kubernetes ConfigMap volumes are symlink farms); anything else
// that is wrong costs only itself and is reported in Problems. The error,
// wrapping ErrUnreadable, is only for a folder that cannot be read at all.
func Load(root string, opts Options) (*Snapshot, error) {
	s, _, err := loadRoot(root, opts, false, nil)
	return s, err
}

// loadRoot is Load, also returning the fingerprint of what it saw. With
// scanOnly it resolves every entry but reads no file and builds no
// snapshot: the cheap half a watcher polls with. Both halves resolve the
// same entries in the same order, so their fingerprints agree. settle,
// when not nil, withholds what is still being written.
func loadRoot(root string, opts Options, scanOnly bool, settle *settling) (*Snapshot, [sha256.Size]byte, error) {
	// A ConfigMap update renames "..data" to a new timestamped folder and
	// then deletes the old one. A load that began before the swap would find
	// the old folder's files vanishing mid-read and publish part of the
	// plugin; so when the root's links changed during a load, load again.
	// In LayoutConfigMaps the swaps happen one level down, in each
	// ConfigMap's folder.
	generation := rootLinks
	if opts.Layout == LayoutConfigMaps {
		generation = func(root string) string { return configMapsGeneration(os.DirFS(root)) }
	}
	for attempt := 1; ; attempt++ {
		before := generation(root)
		s, fp, t, err := loadRootOnce(root, opts, scanOnly, settle)
		if err != nil || generation(root) == before && !swappedDuring(root, t) {
			return s, fp, err
		}
		if attempt == maxLoadAttempts {
			// Still changing: publish nothing; the watcher keeps the last
			// good snapshot and the next change event or poll tries again.
			return nil, fp, fmt.Errorf("%w: %s changed during %d loads in a row", ErrUnreadable, root, attempt)
		}
	}
}

// swappedDuring reports whether an atomic-writer volume anywhere in the
// folder (a ConfigMap, Secret or projected volume, which may be mounted at
// any folder of the plugin) was swapped while t read it: it was gone
// through by two data folders, or its "..data" no longer points at the
// one t went through. A data folder with no "..data" beside it is no
// volume the kubelet swaps, and never counts.
func swappedDuring(root string, t *tree) bool {
	if t == nil {
		return false
	}
	for vol, data := range t.volumes {
		target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(vol), "..data"))
		if err == nil && (data == "" || filepath.Base(target) != data) {
			return true
		}
	}
	return false
}

// maxLoadAttempts bounds the loads of one reload while the root's links keep
// changing.
const maxLoadAttempts = 5

// rootLinks describes the symbolic links directly under root (name and
// target), which is where a ConfigMap volume's atomic swap happens.
func rootLinks(root string) string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	var b strings.Builder
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		target, err := os.Readlink(filepath.Join(root, e.Name()))
		if err != nil {
			target = "?" + err.Error()
		}
		b.WriteString(e.Name() + "\x00" + target + "\x00")
	}
	return b.String()
}

// loadRootOnce is one load of loadRoot; the tree it read is returned for
// swappedDuring (nil when it read none).
func loadRootOnce(root string, opts Options, scanOnly bool, settle *settling) (*Snapshot, [sha256.Size]byte, *tree, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		err = fmt.Errorf("%w: open %s: %w", ErrUnreadable, root, unwrapPathError(err))
		return nil, sha256.Sum256([]byte(err.Error())), nil, err
	}
	defer r.Close()
	if err := opts.Validate(); err != nil {
		return nil, [sha256.Size]byte{}, nil, err
	}
	opts = opts.withDefaults()
	l, err := newLoader(r.FS(), opts)
	if err != nil {
		return nil, sha256.Sum256([]byte(err.Error())), nil, err
	}
	l.scanOnly, l.settle = scanOnly, settle
	s, err := l.load()
	if err != nil {
		fmt.Fprintf(l.tree.seen, "failed %v\n", err)
	}
	return s, l.tree.fingerprint(), l.tree, err
}

// newLoader prepares one load of fsys in opts.Layout (opts has its
// defaults).
func newLoader(fsys fs.FS, opts Options) (*loader, error) {
	if opts.Layout != LayoutConfigMaps {
		return &loader{opts: opts, tree: newTree(fsys, opts.MaxEntries)}, nil
	}
	cm, err := newConfigMapFS(fsys, opts.MaxEntries)
	if err != nil {
		return nil, err
	}
	l := &loader{opts: opts, tree: newTree(cm, opts.MaxEntries), probs: cm.problems, watch: append([]string{}, cm.mounts...)}
	// The decoded paths stay the same across a swap; the fingerprint must
	// not.
	fmt.Fprintf(l.tree.seen, "configmaps %q\n", configMapsGeneration(fsys))
	return l, nil
}

// LoadFS reads a plugin folder from fsys (for example the embedded example
// plugin). It is Load's code path: when fsys can read links (fs.ReadLinkFS)
// they are resolved and escapes refused the same way.
func LoadFS(fsys fs.FS, opts Options) (*Snapshot, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	l, err := newLoader(fsys, opts)
	if err != nil {
		return nil, err
	}
	return l.load()
}

// loader builds one snapshot.
type loader struct {
	opts     Options
	tree     *tree
	scanOnly bool // resolve entries only; see loadRoot
	probs    problems
	data     map[string]*File // read files by path under skills/, shared between manifests
	watch    []string         // folders to watch instead of those read (LayoutConfigMaps)

	// settle, when set, withholds what is still being written (see
	// settling); prev is the snapshot whose skills and agents stand in for
	// those meanwhile. unsettled is set when anything was withheld.
	settle    *settling
	unsettled bool
}

// settling is how a watcher's reload tells a file written in place (not
// through an atomic rename) that is still being written: its size or
// modification time changed while it was read, or it was modified less
// than quiet before the load began. Such a skill or agent is not
// published: the previous snapshot's version stays (or, for a new one,
// nothing), and the watcher loads again once it has been quiet.
//
// A file inside a kubelet atomic-writer folder (a ConfigMap, Secret or
// projected volume: see atomicWriterName) is whole by construction, its
// folder published by one rename of "..data", however recent its
// modification time: only a change during the read holds it back. That
// keeps a ConfigMap update one snapshot, never old skills mixed with new.
type settling struct {
	start time.Time     // when the load began
	quiet time.Duration // Options.Debounce; 0 for a manual reload
	prev  *Snapshot     // nil: nothing stands in
}

// changing reports whether a file listed with mtime, and found with after
// once n bytes were read, is still being written. A modification time
// further in the future than quiet (a skewed clock, a copied tree) cannot
// be judged and does not hold the file back forever.
func (st *settling) changing(real string, listed time.Time, after fs.FileInfo, n int) bool {
	if st == nil || after == nil {
		return false
	}
	m := after.ModTime()
	if !m.Equal(listed) || after.Size() != int64(n) {
		return true
	}
	if inAtomicWriter(real) {
		return false
	}
	return m.After(st.start.Add(-st.quiet)) && !m.After(st.start.Add(st.quiet))
}

// errChanging marks a file that is still being written.
var errChanging = errors.New("catalog: file is still being written")

// candidate is a regular file found under skills/.
type candidate struct {
	rel   string // path under skills/
	real  string
	size  int64
	mtime time.Time

	// Set by prefetch: the file as read, or why it could not be.
	fetched bool
	file    *File
	err     error
}

func (l *loader) load() (*Snapshot, error) {
	if _, err := fs.ReadDir(l.tree.fsys, "."); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, unwrapPathError(err))
	}
	l.tree.dirs = append(l.tree.dirs, ".")
	files, roots, err := l.scanSkills()
	if err != nil {
		return nil, err
	}
	if l.scanOnly {
		if _, err := l.loadAgents(skillIndex{}); err != nil {
			return nil, err
		}
		l.loadPlugin()
		return nil, nil
	}
	l.checkLayout()
	if h := afterScan.Load(); h != nil {
		(*h)()
	}
	l.prefetch(files, roots)
	skills := l.buildSkills(files, roots)
	agents, err := l.loadAgents(newSkillIndex(skills))
	if err != nil {
		return nil, err
	}
	s := &Snapshot{
		skills:      skills,
		skillByURI:  make(map[string]*Skill, len(skills)),
		files:       map[string]*File{},
		dirs:        buildDirs(skills),
		agents:      agents,
		agentByName: make(map[string]*Agent, len(agents)),
		plugin:      l.loadPlugin(),
	}
	for _, sk := range skills {
		s.skillByURI[sk.URI] = sk
		for _, f := range sk.Files {
			s.files[f.URI] = f
		}
	}
	for _, a := range agents {
		s.agentByName[a.Name] = a
	}
	slices.SortStableFunc(l.probs, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	s.problems = slices.Clip([]Problem(l.probs))
	s.watchDirs = l.tree.dirs
	if l.watch != nil {
		s.watchDirs = l.watch
	}
	s.unsettled = l.unsettled
	return s, nil
}

// afterScan, when set, runs between a load's walk of skills/ and its reads
// of the files found: a test's way to change the folder there.
var afterScan atomic.Pointer[func()]

// pluginEntries are the top-level names that make a folder a plugin folder.
var pluginEntries = []string{"skills", "agents", ".claude-plugin"}

// checkLayout reports a folder that has none of pluginEntries: it serves
// nothing, and the usual cause is a mount or a lint run one level too deep
// (plugin/skills instead of plugin), which it names when a child folder
// holds a SKILL.md. It is a skip, not a warning, so that lint fails and the
// sidecar's skipped-items metric moves: an empty catalog is never what an
// operator meant.
func (l *loader) checkLayout() {
	for _, name := range pluginEntries {
		if _, err := fs.Stat(l.tree.fsys, name); err == nil {
			return
		}
	}
	reason := "none of skills/, agents/ or .claude-plugin/ is here, so nothing is served"
	entries, _ := fs.ReadDir(l.tree.fsys, ".")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, err := fs.Stat(l.tree.fsys, e.Name()+"/SKILL.md"); err == nil {
			reason += fmt.Sprintf("; %s/SKILL.md makes this look like a skills/ folder: point at its parent, the plugin folder", e.Name())
			break
		}
	}
	l.probs.skip(".", KindLayout, reason)
}

// top resolves a top-level folder (skills, agents). A missing one is fine; one
// that exists but cannot be opened means the folder is unreadable.
func (l *loader) top(name string) (node, bool, error) {
	n, absent, err := l.tree.lookup(name)
	switch {
	case absent:
		return node{}, false, nil
	case err != nil:
		return node{}, false, fmt.Errorf("%w: %s: %v", ErrUnreadable, name, entryErrorReason(err))
	case !n.info.IsDir():
		l.probs.skip(name, KindRead, fmt.Sprintf("%s is not a folder", name))
		return node{}, false, nil
	case privatePath(n.real) != "":
		l.probs.skip(name, KindSymlink, fmt.Sprintf("symbolic link target is inside %q, a dot-file or dot-folder; those are never served", privatePath(n.real)))
		return node{}, false, nil
	}
	return n, true, nil
}

// scanSkills walks skills/ and returns every regular file under it, sorted
// by path, and the paths of the folders that hold a SKILL.md.
func (l *loader) scanSkills() ([]candidate, []string, error) {
	top, ok, err := l.top("skills")
	if err != nil || !ok {
		return nil, nil, err
	}
	if _, err := fs.ReadDir(l.tree.fsys, top.real); err != nil {
		return nil, nil, fmt.Errorf("%w: skills: %w", ErrUnreadable, unwrapPathError(err))
	}
	var files []candidate
	var roots []string
	l.tree.walk(top, nil, &l.probs, func(n node, isDir bool) bool {
		rel := strings.TrimPrefix(n.rel, "skills/")
		if n.rel == "skills" {
			return true
		}
		if reason := segmentProblem(path.Base(rel)); reason != "" {
			what := "file"
			if isDir {
				what = "folder"
			}
			l.probs.skip(n.rel, KindPath, fmt.Sprintf("%s name %s", what, reason))
			return false
		}
		if !isDir {
			files = append(files, candidate{rel: rel, real: n.real, size: n.info.Size(), mtime: n.info.ModTime()})
			if path.Base(rel) == "SKILL.md" {
				roots = append(roots, path.Dir(rel))
			}
		}
		return true
	})
	slices.SortFunc(files, func(a, b candidate) int { return strings.Compare(a.rel, b.rel) })
	slices.Sort(roots)
	return files, roots, nil
}

// buildSkills turns each folder holding a SKILL.md into a skill, or a Problem.
func (l *loader) buildSkills(files []candidate, roots []string) []*Skill {
	l.data = map[string]*File{}
	isRoot := make(map[string]bool, len(roots))
	for _, root := range roots {
		isRoot[root] = true
	}
	var skills []*Skill
	for _, root := range roots {
		if root == "." {
			l.probs.skip("skills/SKILL.md", KindPath, "SKILL.md directly under skills/ has no skill path; put it in a folder named after the skill")
			continue
		}
		// A skill nested in another stands in whenever the outermost one
		// does (a file of either still being written): the outer's
		// previous manifest lists the nested files as they were, and a
		// snapshot states one digest per URI.
		outer := root
		for d := path.Dir(root); d != "."; d = path.Dir(d) {
			if isRoot[d] {
				outer = d
			}
		}
		if rel := l.changing(filesUnder(files, outer)); rel != "" {
			if sk := l.standInSkill(root, rel); sk != nil {
				skills = append(skills, sk)
			}
			continue
		}
		if sk := l.buildSkill(root, filesUnder(files, root)); sk != nil {
			skills = append(skills, sk)
		}
	}
	slices.SortFunc(skills, func(a, b *Skill) int { return strings.Compare(a.URI, b.URI) })
	return skills
}

// filesUnder returns the files whose path starts with root+"/"; files is
// sorted, so they are one contiguous run.
func filesUnder(files []candidate, root string) []candidate {
	i, j := spanUnder(files, root)
	return files[i:j]
}

// spanUnder returns where filesUnder's run starts and ends in files.
func spanUnder(files []candidate, root string) (i, j int) {
	prefix := root + "/"
	i, _ = slices.BinarySearchFunc(files, prefix, func(c candidate, p string) int { return strings.Compare(c.rel, p) })
	j = i
	for j < len(files) && strings.HasPrefix(files[j].rel, prefix) {
		j++
	}
	return i, j
}

// changing returns the first of files still being written (settling), or
// "".
func (l *loader) changing(files []candidate) string {
	for _, c := range files {
		if _, err := l.read(c.rel, files); errors.Is(err, errChanging) {
			return c.rel
		}
	}
	return ""
}

// buildSkill checks and reads one skill whose files are settled; nil means
// it is skipped.
func (l *loader) buildSkill(root string, files []candidate) *Skill {
	skillMD := "skills/" + root + "/SKILL.md"
	md, err := l.read(root+"/SKILL.md", files)
	if err != nil {
		l.probs.skip(skillMD, KindRead, fmt.Sprintf("cannot be read: %v", unwrapPathError(err)))
		return nil
	}
	if !utf8.Valid(md.Data) {
		l.probs.skip(skillMD, KindEncoding, "SKILL.md is not valid UTF-8")
		return nil
	}
	fm, _, amb, err := ParseFrontmatterAmbiguities(md.Data)
	if err != nil {
		bad := frontmatterIssue(err)
		l.probs.skip(skillMD, bad.kind, bad.reason)
		return nil
	}
	if len(amb) > 0 {
		p := Problem{Path: skillMD, Kind: KindFrontmatter, Reason: AmbiguityReason(amb), Severity: SeveritySkip, Ambiguous: true}
		if l.opts.FrontmatterPortability == PortabilityWarn {
			p.Severity = SeverityWarn
		}
		l.probs = append(l.probs, p)
		if p.Severity == SeveritySkip {
			return nil
		}
	}
	meta, bad := checkSkill(fm, root)
	if bad != nil {
		l.probs.skip(skillMD, bad.kind, bad.reason)
		return nil
	}
	for _, w := range meta.warnings {
		l.probs.warn(skillMD, w.kind, w.reason)
	}
	manifest, ok := l.manifest(root, files)
	if !ok {
		return nil
	}
	sk := &Skill{
		Path: root, URI: URIFromPath(root + "/SKILL.md"), Root: URIFromPath(root),
		Name: meta.name, Description: meta.description, Frontmatter: fm, Files: manifest,
	}
	for _, f := range manifest {
		sk.Size += f.Size
	}
	return sk
}

// manifest reads a skill's files and applies the limits. ok is false when
// the skill is skipped.
func (l *loader) manifest(root string, files []candidate) (manifest []*File, ok bool) {
	skillDir := "skills/" + root
	if over := l.listedOverLimits(files); over != "" {
		if l.opts.LimitMode == LimitSkip {
			l.probs.skip(skillDir, KindLimits, over)
			return nil, false
		}
		l.probs.warn(skillDir, KindLimits, over)
	}
	var total int64
	for _, c := range files {
		if c.size > l.opts.MaxSkillBytes {
			l.probs.skip("skills/"+c.rel, KindLimits, fmt.Sprintf("file is %d bytes, over the %d-byte skill limit", c.size, l.opts.MaxSkillBytes))
			continue
		}
		f, err := l.read(c.rel, files)
		if errors.Is(err, errChanging) {
			return nil, false // buildSkills saw it first; a file that changed since is the next load's
		}
		if err != nil {
			l.probs.skip("skills/"+c.rel, KindRead, fmt.Sprintf("cannot be read: %v", unwrapPathError(err)))
			continue
		}
		total += f.Size
		manifest = append(manifest, f)
	}
	// Sizes can change between listing and reading; the limit is on what
	// is served.
	if over := l.overLimits(len(manifest), total); over != "" && l.opts.LimitMode == LimitSkip {
		l.probs.skip(skillDir, KindLimits, over)
		return nil, false
	}
	slices.SortFunc(manifest, func(a, b *File) int { return cmp.Compare(a.URI, b.URI) })
	return manifest, true
}

// listedOverLimits is overLimits for a skill's files as listed, before any
// is read.
func (l *loader) listedOverLimits(files []candidate) string {
	var listed int64
	for _, c := range files {
		listed += c.size
	}
	return l.overLimits(len(files), listed)
}

func (l *loader) overLimits(n int, size int64) string {
	switch {
	case n > l.opts.MaxFiles:
		return fmt.Sprintf("skill has %d files, over the limit of %d", n, l.opts.MaxFiles)
	case size > l.opts.MaxSkillBytes:
		return fmt.Sprintf("skill has %d bytes, over the limit of %d", size, l.opts.MaxSkillBytes)
	}
	return ""
}

// read returns the File for a path under skills/, reading it once however
// many skills include it.
func (l *loader) read(rel string, files []candidate) (*File, error) {
	if f, ok := l.data[rel]; ok {
		return f, nil
	}
	i, found := slices.BinarySearchFunc(files, rel, func(c candidate, p string) int { return strings.Compare(c.rel, p) })
	if !found {
		return nil, fs.ErrNotExist
	}
	c := &files[i]
	f, err := c.file, c.err
	if !c.fetched {
		f, err = l.readFile(c)
	}
	if err != nil {
		return nil, err
	}
	l.data[rel] = f
	return f, nil
}

// readFile reads one candidate and describes it. It touches nothing in l
// but its options and file system, so prefetch runs it concurrently.
func (l *loader) readFile(c *candidate) (*File, error) {
	data, after, err := l.tree.readFile(c.real, c.size, l.opts.MaxSkillBytes)
	if err != nil {
		return nil, err
	}
	if l.settle.changing(c.real, c.mtime, after, len(data)) {
		return nil, errChanging
	}
	if int64(len(data)) > l.opts.MaxSkillBytes {
		return nil, fmt.Errorf("file grew past %d bytes while it was read", l.opts.MaxSkillBytes)
	}
	sum := sha256.Sum256(data)
	mt, text := classify(path.Base(c.rel), data)
	return &File{
		URI: URIFromPath(c.rel), Size: int64(len(data)), Digest: "sha256:" + hex.EncodeToString(sum[:]),
		MIMEType: mt, Text: text, Data: data,
	}, nil
}

// prefetchWorkers is how many files a load reads at once. A load is mostly
// waiting on system calls (os.Root opens every path component on its own),
// and those overlap well even on one core.
const prefetchWorkers = 8

// prefetch reads, prefetchWorkers at a time, every file that buildSkills
// will ask for: those of each skill root within the size limits, and not
// of a skill the limits skip whole. Results stay on the candidates; read
// then only looks them up, so problems and order are as if read in turn.
func (l *loader) prefetch(files []candidate, roots []string) {
	want := make([]bool, len(files))
	for _, root := range roots {
		if root == "." {
			continue
		}
		i, j := spanUnder(files, root)
		if l.opts.LimitMode == LimitSkip && l.listedOverLimits(files[i:j]) != "" {
			continue
		}
		for k := i; k < j; k++ {
			if files[k].size <= l.opts.MaxSkillBytes {
				want[k] = true
			}
		}
	}
	var todo []int
	for k, w := range want {
		if w {
			todo = append(todo, k)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(prefetchWorkers, len(todo)) {
		wg.Go(func() {
			for n := next.Add(1) - 1; n < int64(len(todo)); n = next.Add(1) - 1 {
				c := &files[todo[n]]
				c.file, c.err = l.readFile(c)
				c.fetched = true
			}
		})
	}
	wg.Wait()
}

// loadAgents reads agents/*.md (top level only) in file-name order; the
// first file with a name wins.
func (l *loader) loadAgents(ix skillIndex) ([]*Agent, error) {
	top, ok, err := l.top("agents")
	if err != nil || !ok {
		return []*Agent{}, err
	}
	ents, err := fs.ReadDir(l.tree.fsys, top.real)
	if err != nil {
		return nil, fmt.Errorf("%w: agents: %w", ErrUnreadable, unwrapPathError(err))
	}
	l.tree.dirs = append(l.tree.dirs, top.real)
	agents := []*Agent{}
	byName := map[string]string{}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if !l.tree.count("agents", &l.probs) {
			break
		}
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		file := "agents/" + name
		a := l.loadAgent(file, path.Join(top.real, name), e, ix)
		if a == nil {
			continue
		}
		if first, dup := byName[a.Name]; dup {
			l.probs.skip(file, KindDuplicate, fmt.Sprintf("agent name %q is already taken by %s, which comes first in file-name order", a.Name, first))
			continue
		}
		byName[a.Name] = file
		agents = append(agents, a)
	}
	slices.SortFunc(agents, func(a, b *Agent) int { return strings.Compare(a.Name, b.Name) })
	return agents, nil
}

// loadAgent resolves, reads and parses one agent file; nil means skipped.
func (l *loader) loadAgent(file, real string, e fs.DirEntry, ix skillIndex) *Agent {
	n, err := l.tree.resolve(file, real, e)
	if err != nil {
		l.probs.skip(file, entryErrorKind(err), entryErrorReason(err))
		return nil
	}
	if l.scanOnly {
		return nil
	}
	if n.info.IsDir() {
		return nil // a folder named *.md is not an agent file
	}
	if !n.info.Mode().IsRegular() {
		l.probs.skip(file, KindSpecial, fmt.Sprintf("%s, not a regular file", describeMode(n.info.Mode())))
		return nil
	}
	data, after, err := l.tree.readFile(n.real, n.info.Size(), l.opts.MaxSkillBytes)
	if err != nil {
		l.probs.skip(file, KindRead, fmt.Sprintf("cannot be read: %v", unwrapPathError(err)))
		return nil
	}
	if l.settle.changing(n.real, n.info.ModTime(), after, len(data)) {
		return l.standInAgent(file)
	}
	if int64(len(data)) > l.opts.MaxSkillBytes {
		l.probs.skip(file, KindLimits, fmt.Sprintf("agent file is over %d bytes", l.opts.MaxSkillBytes))
		return nil
	}
	a, warnings, bad := parseAgent(file, data, ix)
	if bad != nil {
		l.probs.skip(file, bad.kind, bad.reason)
		return nil
	}
	for _, w := range warnings {
		l.probs.warn(file, w.kind, w.reason)
	}
	return a
}

// loadPlugin reads .claude-plugin/plugin.json when present.
func (l *loader) loadPlugin() PluginInfo {
	const file = ".claude-plugin/plugin.json"
	n, absent, err := l.tree.lookup(file)
	if absent {
		return PluginInfo{}
	}
	if err != nil {
		l.probs.skip(file, entryErrorKind(err), entryErrorReason(err))
		return PluginInfo{}
	}
	l.tree.dirs = append(l.tree.dirs, path.Dir(n.real))
	if l.scanOnly {
		return PluginInfo{}
	}
	data, _, err := l.tree.readFile(n.real, n.info.Size(), 1<<20)
	if err != nil {
		l.probs.skip(file, KindRead, fmt.Sprintf("cannot be read: %v", unwrapPathError(err)))
		return PluginInfo{}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		l.probs.skip(file, KindPlugin, fmt.Sprintf("not a JSON object: %v", err))
		return PluginInfo{}
	}
	info := PluginInfo{Present: true}
	fields := []struct {
		key string
		dst *string
	}{{"name", &info.Name}, {"description", &info.Description}, {"version", &info.Version}}
	for _, f := range fields {
		if v, ok := raw[f.key]; ok && json.Unmarshal(v, f.dst) != nil {
			l.probs.warn(file, KindPlugin, fmt.Sprintf("%s is %s, not a string", f.key, jsonKind(v)))
		}
	}
	return info
}

// standInSkill is what a reload publishes for the skill at root while its
// file rel is still being written: the previous snapshot's version, or
// nothing when it had none.
func (l *loader) standInSkill(root, rel string) *Skill {
	l.unsettled = true
	reason := fmt.Sprintf("skills/%s is still being written; published once it has not changed for %v", rel, l.settle.quiet)
	if l.settle.prev == nil {
		l.probs.skip("skills/"+root, KindRead, reason)
		return nil
	}
	if prev, ok := l.settle.prev.Skill(URIFromPath(root + "/SKILL.md")); ok {
		l.probs.warn("skills/"+root, KindRead, reason+"; the previous version is served")
		return prev
	}
	l.probs.skip("skills/"+root, KindRead, reason)
	return nil
}

// standInAgent is standInSkill for an agent file.
func (l *loader) standInAgent(file string) *Agent {
	l.unsettled = true
	reason := fmt.Sprintf("%s is still being written; published once it has not changed for %v", file, l.settle.quiet)
	if l.settle.prev == nil {
		l.probs.skip(file, KindRead, reason)
		return nil
	}
	for _, a := range l.settle.prev.Agents() {
		if a.File == file {
			l.probs.warn(file, KindRead, reason+"; the previous version is served")
			return a
		}
	}
	l.probs.skip(file, KindRead, reason)
	return nil
}
