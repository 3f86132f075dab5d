package catalog

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// maxLinkHops bounds symlink chains, as Linux's own limit does.
const maxLinkHops = 40

// tree reads a plugin folder through an fs.FS. When the FS can read links
// (the FS of an os.Root, os.DirFS) the tree resolves symlinks itself, so that
// a link escaping the root is refused with a reason and a looping one is
// caught; reads then go to the link-free canonical path. On disk the FS is an
// os.Root's, which refuses escapes a second time even if the folder changes
// between resolving and reading. An embed.FS has no links at all.
type tree struct {
	fsys  fs.FS
	links fs.ReadLinkFS // nil when fsys cannot read links

	maxEntries int
	entries    int
	truncated  bool
	dirs       []string  // canonical directories read, for the watcher
	seen       hash.Hash // fingerprint of everything resolved, in order

	// volumes maps each folder holding a kubelet atomic-writer volume
	// that a path was resolved through (canonical, "." for the root) to
	// the data folder it went through, "" when it went through two (a
	// swap during the load). See swappedDuring.
	volumes map[string]string
}

// throughVolume notes that a path was resolved through the data folder
// data of the atomic-writer volume held by the folder vol.
func (t *tree) throughVolume(vol, data string) {
	if t.volumes == nil {
		t.volumes = map[string]string{}
	}
	if old, ok := t.volumes[vol]; ok && old != data {
		data = ""
	}
	t.volumes[vol] = data
}

func newTree(fsys fs.FS, maxEntries int) *tree {
	t := &tree{fsys: fsys, maxEntries: maxEntries, seen: sha256.New()}
	t.links, _ = fsys.(fs.ReadLinkFS)
	return t
}

// note adds one resolved entry (or why it failed) to the fingerprint: the
// logical path, the canonical path (a ConfigMap swap changes it), size,
// modification time and mode.
func (t *tree) note(rel string, n node, err error) {
	if err != nil {
		fmt.Fprintf(t.seen, "%q error %v\n", rel, err)
		return
	}
	fmt.Fprintf(t.seen, "%q %q %d %d %v\n", rel, n.real, n.info.Size(), n.info.ModTime().UnixNano(), n.info.Mode())
}

// fingerprint returns the hash of everything the tree resolved so far.
func (t *tree) fingerprint() [sha256.Size]byte {
	return [sha256.Size]byte(t.seen.Sum(nil))
}

// node is one resolved entry of the folder.
type node struct {
	rel  string      // logical path from the root, as the author sees it
	real string      // canonical path inside fsys, free of symlinks
	info fs.FileInfo // of the resolved target
}

// linkError is a refused symlink; its text is a Problem reason.
type linkError struct{ reason string }

func (e *linkError) Error() string { return e.reason }

// canonical resolves every symlink in name (a valid fs path) and returns the
// link-free path it names, refusing targets outside the root.
func (t *tree) canonical(name string) (string, error) {
	todo := strings.Split(name, "/")
	cur := "."
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur == "." {
				return "", &linkError{"symbolic link points outside the plugin root"}
			}
			cur = path.Dir(cur)
			continue
		}
		if atomicWriterName(c) {
			t.throughVolume(cur, c)
		}
		next := path.Join(cur, c)
		if t.links == nil {
			cur = next
			continue
		}
		fi, err := t.links.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", &linkError{"too many levels of symbolic links (a loop)"}
		}
		target, err := t.links.ReadLink(next)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) || strings.HasPrefix(target, `\`) {
			return "", &linkError{fmt.Sprintf("symbolic link target %q is absolute; only links inside the plugin root are followed", target)}
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}

// resolve turns a directory entry into a node, following a symlink.
func (t *tree) resolve(rel, real string, e fs.DirEntry) (n node, err error) {
	defer func() { t.note(rel, n, err) }()
	if e.Type()&fs.ModeSymlink == 0 {
		info, err := e.Info()
		return node{rel: rel, real: real, info: info}, err
	}
	if t.links == nil {
		return node{}, &linkError{"symbolic link cannot be followed on this file system"}
	}
	canon, err := t.canonical(real)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return node{}, &linkError{"symbolic link target does not exist"}
		}
		return node{}, err
	}
	if private := privatePath(canon); private != "" {
		return node{}, &linkError{fmt.Sprintf("symbolic link target is inside %q, a dot-file or dot-folder; those are never served", private)}
	}
	info, err := fs.Stat(t.fsys, canon)
	return node{rel: rel, real: canon, info: info}, err
}

// privatePath returns the first component of the canonical path canon that
// is a dot-file or dot-folder, or "" when there is none. Dot entries are
// never served, and a symlink must not serve one under another name
// (skills/x/notes.md -> ../../.env, a link into .git).
//
// The kubelet's atomic writer is the exception: the files of a ConfigMap,
// Secret or projected volume live in a folder "..2006_01_02_15_04_05.N"
// that "..data" links to, so every canonical path into such a volume
// passes through one ("..data" itself never appears: it is a link, and
// resolved). Only that shape passes, so "..secret" stays private; it
// passes at any depth, since such a volume may be mounted at any folder of
// the plugin.
func privatePath(canon string) string {
	for c := range strings.SplitSeq(canon, "/") {
		if strings.HasPrefix(c, ".") && c != "." && !atomicWriterName(c) {
			return c
		}
	}
	return ""
}

// inAtomicWriter reports whether the canonical path canon lies inside a
// kubelet atomic-writer data folder.
func inAtomicWriter(canon string) bool {
	for c := range strings.SplitSeq(canon, "/") {
		if atomicWriterName(c) {
			return true
		}
	}
	return false
}

// atomicWriterName reports whether name is a timestamped data folder of
// the kubelet's atomic writer ("..2026_12_01_09_00_00.12345": os.MkdirTemp
// of "..2006_01_02_15_04_05.", a random decimal suffix).
func atomicWriterName(name string) bool {
	const layout = "..dddd_dd_dd_dd_dd_dd."
	if len(name) <= len(layout) {
		return false
	}
	for i := range len(name) {
		want := byte('d')
		if i < len(layout) {
			want = layout[i]
		}
		c := name[i]
		if want == 'd' && (c < '0' || c > '9') || want != 'd' && c != want {
			return false
		}
	}
	return true
}

// lookup resolves a logical path from the root. absent is true when nothing
// exists at that path (a dangling link there is not absent: it is an error).
func (t *tree) lookup(rel string) (n node, absent bool, err error) {
	defer func() { t.note(rel, n, err) }()
	if t.links != nil {
		if _, err := t.links.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
			return node{}, true, err
		}
	}
	canon, err := t.canonical(rel)
	if err != nil {
		return node{}, errors.Is(err, fs.ErrNotExist) && t.links == nil, err
	}
	info, err := fs.Stat(t.fsys, canon)
	if err != nil {
		return node{}, errors.Is(err, fs.ErrNotExist) && t.links == nil, err
	}
	return node{rel: rel, real: canon, info: info}, false, nil
}

// visitFunc sees each directory (before its entries, when it returns true the
// walk descends) and each regular file. Dot entries are never visited.
type visitFunc func(n node, isDir bool) bool

// walk visits the directory n depth first in name order. Entries that cannot
// be followed, irregular files and unreadable directories become problems.
// stack holds the canonical directories above n, to catch loops.
func (t *tree) walk(n node, stack []string, ps *problems, visit visitFunc) {
	if !visit(n, true) {
		return
	}
	t.dirs = append(t.dirs, n.real)
	ents, err := fs.ReadDir(t.fsys, n.real)
	if err != nil {
		t.note(n.rel, n, err)
		ps.skip(n.rel, KindRead, fmt.Sprintf("directory cannot be read: %v", unwrapPathError(err)))
		return
	}
	stack = append(stack, n.real)
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // dot-files and dot-folders are not part of any skill
		}
		if !t.count(n.rel, ps) {
			return
		}
		rel := path.Join(n.rel, name)
		child, err := t.resolve(rel, path.Join(n.real, name), e)
		switch {
		case err != nil:
			ps.skip(rel, entryErrorKind(err), entryErrorReason(err))
		case child.info.IsDir():
			if slices.Contains(stack, child.real) {
				ps.skip(rel, KindSymlink, "symbolic link loops back to a folder that contains it")
				continue
			}
			t.walk(child, stack, ps, visit)
		case child.info.Mode().IsRegular():
			visit(child, false)
		default:
			ps.skip(rel, KindSpecial, fmt.Sprintf("%s, not a regular file", describeMode(child.info.Mode())))
		}
	}
}

// count counts one more entry of the folder, read in the folder rel; false
// when it is past maxEntries and is not to be read (the first such entry
// is a problem).
func (t *tree) count(rel string, ps *problems) bool {
	if t.entries++; t.entries <= t.maxEntries {
		return true
	}
	if !t.truncated {
		t.truncated = true
		ps.skip(rel, KindLimits, fmt.Sprintf("the plugin folder has more than %d entries; the rest is not read", t.maxEntries))
	}
	return false
}

func entryErrorKind(err error) string {
	var le *linkError
	if errors.As(err, &le) {
		return KindSymlink
	}
	return KindRead
}

func entryErrorReason(err error) string {
	var le *linkError
	if errors.As(err, &le) {
		return le.reason
	}
	return fmt.Sprintf("cannot be read: %v", unwrapPathError(err))
}

// unwrapPathError drops the fs.PathError's path (the canonical path, which
// means nothing to the author; the Problem names the logical one).
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return fmt.Sprintf("an irregular file (mode %v)", m.Type())
}

// readFile reads at most limit+1 bytes of the canonical path, so a file that
// grew past the limit after it was listed cannot exhaust memory. It also
// returns the file's size and modification time as they were after the
// read (one fstat of the open file), so a caller can tell a file that
// changed while it was read.
func (t *tree) readFile(real string, size, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := t.fsys.Open(real)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// Sized from the listing, plus one byte to see the end (or growth)
	// without another allocation; io.ReadAll would start at 512 and grow.
	r := io.LimitReader(f, limit+1)
	buf := make([]byte, 0, max(0, min(size, limit))+1)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, len(buf))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			info, err := f.Stat()
			return buf, info, err
		case err != nil:
			return nil, nil, err
		}
	}
}
