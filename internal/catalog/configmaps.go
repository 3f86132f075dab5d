package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// Layouts of Options.Layout: how the folder handed to Load or NewWatcher
// holds the plugin.
const (
	// LayoutTree is the plugin folder itself (skills/, agents/,
	// .claude-plugin/), as a checkout, an image volume or a ConfigMap
	// mounted with items[].path. The default.
	LayoutTree = "tree"
	// LayoutConfigMaps is a folder holding one folder per ConfigMap volume,
	// each mounted whole (no items[]): its files are named by keys that
	// EncodeKey wrote, and together they make up the plugin tree. A
	// folder's kubelet layout (the "..data" link to a timestamped folder)
	// is read through "..data", so an atomic update of one ConfigMap is
	// seen whole or not at all. See configMapFS.
	LayoutConfigMaps = "configmaps"
)

// ErrConflict is wrapped by the error of a load in LayoutConfigMaps when two
// keys decode to the same path (in one ConfigMap, or in two with different
// bytes), or a path is both a file and a folder. Which one to serve would
// be a silent pick, so the load fails: a watcher keeps its last good
// snapshot, and the error names both keys. A file moving between two
// ConfigMaps whose volumes the kubelet updates one after the other is in
// both for a moment; with the same bytes in both it is served once.
var ErrConflict = errors.New("catalog: two ConfigMap keys claim one plugin path")

// kubeletData is the link a ConfigMap volume points at its current
// timestamped folder with; the kubelet swaps it with a rename.
const kubeletData = "..data"

// cmFile is one decoded file of a configMapFS.
type cmFile struct {
	mount string // the ConfigMap's folder under the root
	key   string // the ConfigMap key (the file's name on disk)
	real  string // where its bytes are in the base FS
}

// configMapFS presents the ConfigMap folders of LayoutConfigMaps as one
// read-only plugin tree: an fs.FS (with ReadDir and Stat) whose paths are
// the decoded keys. It is built once per load from a listing of the base FS
// and reads file bytes from the timestamped folder each "..data" named at
// that moment, so a swap during the load cannot mix two versions of one
// ConfigMap (the loader also compares generations before and after, see
// loadRoot). It has no symbolic links.
type configMapFS struct {
	base  fs.FS
	files map[string]cmFile
	dirs  map[string][]fs.DirEntry // decoded folder -> entries in name order
	// mounts are the ConfigMap folders under the root, in name order: the
	// folders a watcher watches.
	mounts []string
	// problems are keys left out: undecodable, or not regular files.
	problems problems
}

// ConfigMapsFS returns the plugin tree that the ConfigMap folders of base
// (LayoutConfigMaps) decode to, as it is now: for tools that want the
// decoded files rather than a snapshot. Errors are newConfigMapFS's; keys
// it leaves out are not reported (Load reports them as Problems).
func ConfigMapsFS(base fs.FS) (fs.FS, error) {
	return newConfigMapFS(base, DefaultMaxEntries)
}

// CheckConfigMapKeys applies the configmaps layout's rules to ConfigMaps
// known only by their keys (name -> keys), reading no files: the error
// wraps ErrConflict when two keys decode to one path or a path is a file
// and a folder at once, as a load of those ConfigMaps mounted whole would.
// Keys that do not decode are not reported here (DecodeKey says why; a
// load skips them). For tools that check ConfigMaps before they are
// mounted (inject -f).
func CheckConfigMapKeys(keys map[string][]string) error {
	c := &configMapFS{files: map[string]cmFile{}, dirs: map[string][]fs.DirEntry{}}
	for _, name := range slices.Sorted(maps.Keys(keys)) {
		for _, k := range slices.Sorted(slices.Values(keys[name])) {
			if err := c.add(name, name, keyEntry(k)); err != nil {
				return err
			}
		}
	}
	return c.buildDirs()
}

// keyEntry is a ConfigMap key as the kubelet would mount it: a regular file.
type keyEntry string

func (k keyEntry) Name() string               { return string(k) }
func (k keyEntry) IsDir() bool                { return false }
func (k keyEntry) Type() fs.FileMode          { return 0 }
func (k keyEntry) Info() (fs.FileInfo, error) { return nil, fs.ErrInvalid }

// newConfigMapFS lists every ConfigMap folder of base and decodes its keys.
// A folder or "..data" that cannot be read wraps ErrUnreadable; a path
// claimed twice wraps ErrConflict. maxEntries bounds the keys read.
func newConfigMapFS(base fs.FS, maxEntries int) (*configMapFS, error) {
	ents, err := fs.ReadDir(base, ".")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, unwrapPathError(err))
	}
	c := &configMapFS{base: base, files: map[string]cmFile{}, dirs: map[string][]fs.DirEntry{}}
	seen := 0
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if !e.IsDir() {
			c.problems.skip(name, KindPath, "not a folder; in the configmaps layout every entry of the plugin folder is one mounted ConfigMap")
			continue
		}
		c.mounts = append(c.mounts, name)
		data, err := mountData(base, name)
		if err != nil {
			return nil, err
		}
		keys, err := fs.ReadDir(base, data)
		if err != nil {
			return nil, fmt.Errorf("%w: ConfigMap folder %s: %w", ErrUnreadable, name, unwrapPathError(err))
		}
		for _, k := range keys {
			if strings.HasPrefix(k.Name(), ".") {
				continue // the kubelet's own entries; EncodeKey never writes a leading "."
			}
			if seen++; seen > maxEntries {
				c.problems.skip(name+"/"+k.Name(), KindLimits, fmt.Sprintf("the ConfigMaps have more than %d keys; the rest is not read", maxEntries))
				break
			}
			if err := c.add(name, data, k); err != nil {
				return nil, err
			}
		}
	}
	if err := c.buildDirs(); err != nil {
		return nil, err
	}
	return c, nil
}

// mountData returns the folder holding a ConfigMap folder's keys: the target
// of its "..data" link, or the folder itself when it has none (a ConfigMap
// copied out by hand, a test).
func mountData(base fs.FS, mount string) (string, error) {
	target, err := fs.ReadLink(base, path.Join(mount, kubeletData))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return mount, nil
	case errors.Is(err, fs.ErrInvalid) || errors.Is(err, errors.ErrUnsupported):
		return "", fmt.Errorf("%w: ConfigMap folder %s: %s is not a symbolic link", ErrUnreadable, mount, kubeletData)
	case err != nil:
		return "", fmt.Errorf("%w: ConfigMap folder %s: %w", ErrUnreadable, mount, unwrapPathError(err))
	case target == "" || target == "." || target == ".." || strings.ContainsAny(target, `/\`):
		// The kubelet points it at a sibling folder; anything else could
		// lead out of the mount.
		return "", fmt.Errorf("%w: ConfigMap folder %s: %s points at %q, not a folder beside it", ErrUnreadable, mount, kubeletData, target)
	}
	return path.Join(mount, target), nil
}

// add decodes one key of a ConfigMap folder.
func (c *configMapFS) add(mount, data string, k fs.DirEntry) error {
	where := mount + "/" + k.Name()
	if !k.Type().IsRegular() {
		kind := KindSpecial
		if k.Type()&fs.ModeSymlink != 0 {
			kind = KindSymlink
		}
		c.problems.skip(where, kind, fmt.Sprintf("ConfigMap key is %s, not a regular file", describeType(k.Type())))
		return nil
	}
	p, err := DecodeKey(k.Name())
	if err != nil {
		c.problems.skip(where, KindPath, fmt.Sprintf("not a key written by skills-sidecar inject configmap: %v", err))
		return nil
	}
	if prev, dup := c.files[p]; dup {
		// A file moving between two ConfigMaps is in both for as long as
		// the kubelet takes to update the second volume after the first:
		// with the same bytes in both nothing is picked, so it is served
		// once (from the first ConfigMap in name order). Different bytes,
		// or two keys of one ConfigMap, are refused.
		if prev.mount != mount && c.base != nil && sameBytes(c.base, prev.real, path.Join(data, k.Name())) {
			return nil
		}
		return fmt.Errorf("%w: %q is ConfigMap %s key %s and ConfigMap %s key %s", ErrConflict, p, prev.mount, prev.key, mount, k.Name())
	}
	c.files[p] = cmFile{mount: mount, key: k.Name(), real: path.Join(data, k.Name())}
	return nil
}

// maxCompareBytes bounds what sameBytes reads of each file: a ConfigMap
// holds at most 1 MiB, so a longer file is not one a kubelet wrote.
const maxCompareBytes = 1 << 20

// sameBytes reports whether two files of base hold the same bytes, reading
// at most maxCompareBytes of each; an unreadable or longer file is never
// the same.
func sameBytes(base fs.FS, a, b string) bool {
	read := func(name string) ([]byte, bool) {
		f, err := base.Open(name)
		if err != nil {
			return nil, false
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxCompareBytes+1))
		return data, err == nil && len(data) <= maxCompareBytes
	}
	x, okx := read(a)
	y, oky := read(b)
	return okx && oky && bytes.Equal(x, y)
}

// buildDirs derives every folder from the file paths, refusing a path that
// is a file and a folder at once.
func (c *configMapFS) buildDirs() error {
	children := map[string]map[string]bool{".": {}} // folder -> child -> isDir
	for p := range c.files {
		child, isDir := p, false
		for dir := path.Dir(p); ; dir = path.Dir(dir) {
			if f, clash := c.files[dir]; clash && dir != "." {
				return fmt.Errorf("%w: %q is ConfigMap %s key %s and also a folder of %q", ErrConflict, dir, f.mount, f.key, p)
			}
			if children[dir] == nil {
				children[dir] = map[string]bool{}
			}
			children[dir][path.Base(child)] = isDir
			if dir == "." {
				break
			}
			child, isDir = dir, true
		}
	}
	for dir, kids := range children {
		ents := make([]fs.DirEntry, 0, len(kids))
		for name, isDir := range kids {
			ents = append(ents, cmEntry{fsys: c, name: name, full: path.Join(dir, name), dir: isDir})
		}
		slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		c.dirs[dir] = ents
	}
	return nil
}

// Open opens a decoded path.
func (c *configMapFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if ents, ok := c.dirs[name]; ok {
		return &cmDir{info: dirInfo(path.Base(name)), ents: ents}, nil
	}
	f, ok := c.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	file, err := c.base.Open(f.real)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPathError(err)}
	}
	return cmOpenFile{File: file, name: path.Base(name)}, nil
}

// Stat describes a decoded path; a file's size and modification time are
// those of its key's file.
func (c *configMapFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if _, ok := c.dirs[name]; ok {
		return dirInfo(path.Base(name)), nil
	}
	f, ok := c.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	info, err := fs.Stat(c.base, f.real)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: unwrapPathError(err)}
	}
	return renamed{FileInfo: info, name: path.Base(name)}, nil
}

// ReadDir lists a decoded folder in name order.
func (c *configMapFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	ents, ok := c.dirs[name]
	if !ok {
		err := fs.ErrNotExist
		if _, isFile := c.files[name]; isFile {
			err = errors.New("not a directory")
		}
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return slices.Clone(ents), nil
}

// generation describes what every ConfigMap folder's "..data" names; it
// changes with each atomic update the kubelet makes.
func configMapsGeneration(base fs.FS) string {
	ents, err := fs.ReadDir(base, ".")
	if err != nil {
		return "unreadable: " + err.Error()
	}
	var b strings.Builder
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		target, err := fs.ReadLink(base, path.Join(e.Name(), kubeletData))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			target = "?" + err.Error()
		}
		b.WriteString(e.Name() + "\x00" + target + "\x00")
	}
	return b.String()
}

// cmEntry is a DirEntry of a configMapFS.
type cmEntry struct {
	fsys *configMapFS
	name string
	full string
	dir  bool
}

func (e cmEntry) Name() string { return e.name }
func (e cmEntry) IsDir() bool  { return e.dir }
func (e cmEntry) Type() fs.FileMode {
	if e.dir {
		return fs.ModeDir
	}
	return 0
}
func (e cmEntry) Info() (fs.FileInfo, error) { return e.fsys.Stat(e.full) }

// cmDir is an open decoded folder.
type cmDir struct {
	info fs.FileInfo
	ents []fs.DirEntry
	off  int
}

func (d *cmDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *cmDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}
func (d *cmDir) Close() error { return nil }

// ReadDir is fs.ReadDirFile's.
func (d *cmDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.off:]
	if n <= 0 {
		d.off = len(d.ents)
		return slices.Clone(rest), nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return slices.Clone(rest[:n]), nil
}

// cmOpenFile is an open decoded file: the key's file under its decoded name.
type cmOpenFile struct {
	fs.File
	name string
}

func (f cmOpenFile) Stat() (fs.FileInfo, error) {
	info, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return renamed{FileInfo: info, name: f.name}, nil
}

// renamed is a key file's FileInfo under its decoded name.
type renamed struct {
	fs.FileInfo
	name string
}

func (r renamed) Name() string { return r.name }

// dirInfo describes a decoded folder: read-only, no time of its own (the
// fingerprint notes the generation instead).
type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

func describeType(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a folder"
	}
	return describeMode(m)
}
