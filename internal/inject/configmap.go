package inject

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// Bounds of BuildConfigMaps.
const (
	// DefaultConfigMapBytes is ConfigMapOptions.MaxBytes's default: the JSON
	// encoding of one whole ConfigMap object stays under it. `kubectl apply`
	// (client side) copies that JSON into the
	// kubectl.kubernetes.io/last-applied-configuration annotation, and all
	// of an object's annotations together may hold 256 KiB; 16 KiB is left
	// for the annotation's key and the object's other annotations.
	DefaultConfigMapBytes = 240 << 10
	// MaxConfigMapBytes is the largest MaxBytes accepted: the API server
	// refuses an object over 1 MiB (etcd's request limit). Only with
	// `kubectl apply --server-side` (no last-applied copy) or `kubectl
	// create` is a bound above 256 KiB usable.
	MaxConfigMapBytes = 1000 << 10
	// MaxConfigMaps bounds how many ConfigMaps (so volumes) one plugin is
	// split into; a larger plugin belongs in an image
	// (AnnotationPluginImage).
	MaxConfigMaps = 64
	// DefaultConfigMaps is ConfigMapOptions.Count's default: four names in
	// the annotation on every render, so a plugin may grow to about four
	// times a ConfigMap's bound (about 900 KiB of small files by default)
	// with no file moving and no rollout, at the price of four small
	// objects and four volumes for a small plugin.
	DefaultConfigMaps = 4
)

// ConfigMapOptions say how BuildConfigMaps names and sizes its ConfigMaps.
type ConfigMapOptions struct {
	// Name of the first ConfigMap; the next are Name-1, Name-2, ...
	Name string
	// Namespace of the ConfigMaps; empty leaves it out.
	Namespace string
	// MaxBytes bounds the JSON encoding of one ConfigMap object; 0 means
	// DefaultConfigMapBytes.
	MaxBytes int
	// Count is the number of ConfigMaps, all written (an empty one too)
	// and all named in the annotation; 0 means DefaultConfigMaps. Each
	// file's ConfigMap is a hash of its path into Count, so while Count
	// stays the same no file ever moves, whatever the plugin gains or
	// loses; a plugin whose files no longer fit Count is an error that
	// names the count that fits.
	Count int
}

// PluginLabel is the label every ConfigMap of a plugin carries, its value
// the first ConfigMap's name: `kubectl apply --prune -l` with it deletes
// the ConfigMaps a shrinking plugin no longer needs.
const PluginLabel = "skills-sidecar.io/plugin"

// BuildConfigMaps turns a plugin folder into ConfigMap manifests (YAML,
// "---"-separated) whose keys are the files' catalog.EncodeKey paths,
// UTF-8 files under data and others under binaryData. It returns the
// manifests and the ConfigMap names, the value for
// AnnotationPluginConfigMaps. Dot-files and dot-folders other than
// .claude-plugin are left out, as the sidecar never serves them; a symlink
// or special file is an error.
//
// Which ConfigMap holds a file depends on its path and the count alone: a
// jump consistent hash (Lamping and Veach, 2014) of the path's SHA-256 into
// Count buckets. So a file growing, shrinking, appearing or going away
// moves no other file to another ConfigMap (a split by size in path order
// would move every file after it), and as every one of the Count
// ConfigMaps is written on every render, a file that goes away leaves no
// stale copy behind. Raising the count moves files only into the new
// ConfigMaps. A file is never split, so a plugin whose file or bucket does
// not fit MaxBytes is refused with the reason.
func BuildConfigMaps(fsys fs.FS, opts ConfigMapOptions) ([]byte, []string, error) {
	if !isDNSSubdomain(opts.Name) || len(opts.Name) > 240 {
		return nil, nil, fmt.Errorf("configmap name %q is not a valid object name", opts.Name)
	}
	if len(opts.Name) > 63 {
		return nil, nil, fmt.Errorf("configmap name %q is longer than 63 characters, too long for the %s label that lets kubectl apply --prune find the plugin's ConfigMaps", opts.Name, PluginLabel)
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultConfigMapBytes
	}
	if opts.MaxBytes < 1<<10 || opts.MaxBytes > MaxConfigMapBytes {
		return nil, nil, fmt.Errorf("max bytes %d is not between 1 KiB and %d", opts.MaxBytes, MaxConfigMapBytes)
	}
	if opts.Count == 0 {
		opts.Count = DefaultConfigMaps
	}
	if opts.Count < 1 || opts.Count > MaxConfigMaps {
		return nil, nil, fmt.Errorf("count %d is not between 1 and %d", opts.Count, MaxConfigMaps)
	}
	entries, err := readEntries(fsys)
	if err != nil {
		return nil, nil, err
	}
	names := configMapNames(opts.Name, MaxConfigMaps)
	// The budget of a ConfigMap's keys and values: MaxBytes less the
	// longest object around an empty data map, and the two map keys.
	budget := opts.MaxBytes - len(objectJSON(names[len(names)-1], opts.Name, opts.Namespace, nil)) - len(`,"data":{},"binaryData":{}`)
	for _, e := range entries {
		if e.size > budget {
			return nil, nil, fmt.Errorf("%s: %d bytes as JSON do not fit a ConfigMap of %d bytes (a file is never split); ship the plugin as an image (%s)",
				e.path, e.size, opts.MaxBytes, AnnotationPluginImage)
		}
	}
	count := opts.Count
	if over, size := overfull(entries, count, budget); over >= 0 {
		return nil, nil, tooFew(entries, names, count, over, size, budget)
	}
	buckets := make([][]entry, count)
	for _, e := range entries {
		b := jumpHash(e.hash, count)
		buckets[b] = append(buckets[b], e)
	}
	var out []byte
	for i, es := range buckets {
		obj := objectJSON(names[i], opts.Name, opts.Namespace, es)
		if len(obj) > opts.MaxBytes {
			// overfull's arithmetic and this encoding disagree: a bug.
			return nil, nil, fmt.Errorf("ConfigMap %s would be %d bytes as JSON, over %d", names[i], len(obj), opts.MaxBytes)
		}
		y, err := yaml.JSONToYAML(obj)
		if err != nil {
			return nil, nil, fmt.Errorf("encode ConfigMap %s: %w", names[i], err)
		}
		out = append(out, "---\n"...)
		out = append(out, y...)
	}
	return out, names[:count], nil
}

// entry is one plugin file bound for a ConfigMap.
type entry struct {
	path, key string
	data      []byte
	binary    bool
	size      int    // of `"key":"value",` in the object's JSON
	hash      uint64 // of the path, for jumpHash
}

// readEntries reads every file of the plugin and sizes its ConfigMap entry.
func readEntries(fsys fs.FS) ([]entry, error) {
	files, err := pluginFiles(fsys)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("the plugin folder has no files")
	}
	entries := make([]entry, 0, len(files))
	for _, p := range files {
		k := catalog.EncodeKey(p)
		if len(k) > catalog.MaxKeyLen {
			return nil, fmt.Errorf("%s: encoded key is %d bytes, over the %d a ConfigMap allows", p, len(k), catalog.MaxKeyLen)
		}
		if back, err := catalog.DecodeKey(k); err != nil || back != p {
			return nil, fmt.Errorf("%q: the sidecar could not decode this name (%v); rename it to UTF-8", p, err)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		e := entry{path: p, key: k, data: b, binary: !utf8.Valid(b)}
		sum := sha256.Sum256([]byte(p))
		e.hash = binary.BigEndian.Uint64(sum[:8])
		kj, _ := json.Marshal(k)
		e.size = len(kj) + 2 + len(valueJSON(e))
		entries = append(entries, e)
	}
	return entries, nil
}

// valueJSON is an entry's value as the object's JSON holds it: a JSON string
// (encoding/json escapes <, > and & too, which makes it an upper bound of
// other encoders), base64 for binaryData.
func valueJSON(e entry) []byte {
	if e.binary {
		return []byte(`"` + base64.StdEncoding.EncodeToString(e.data) + `"`)
	}
	v, _ := json.Marshal(string(e.data))
	return v
}

// tooFew is the error for a plugin that does not fit count ConfigMaps
// (ConfigMap over holds size bytes): it names the fewest that fit and
// the order that keeps running pods whole.
func tooFew(entries []entry, names []string, count, over, size, budget int) error {
	need := 0
	for n := count + 1; n <= MaxConfigMaps && need == 0; n++ {
		if o, _ := overfull(entries, n, budget); o < 0 {
			need = n
		}
	}
	if need == 0 {
		return fmt.Errorf("the plugin does not fit %d ConfigMaps; ship it as an image (%s)", MaxConfigMaps, AnnotationPluginImage)
	}
	return fmt.Errorf("ConfigMap %s would hold %d bytes, over %d: the plugin needs %d ConfigMaps, more than the %d it is rendered into (--mounted, default %d). "+
		"Workloads that mount the current names: first set %s to %q and roll them out (the ConfigMaps not written yet are mounted optional), "+
		"then apply the plugin rendered with --mounted %d: files move only into the new ConfigMaps. No workload yet: render it with --mounted %d",
		names[over], size, budget, need, count, DefaultConfigMaps, AnnotationPluginConfigMaps, strings.Join(names[:need], ","), need, need)
}

// overfull returns the first bucket over budget with n buckets and its
// size, or -1.
func overfull(entries []entry, n, budget int) (int, int) {
	sizes := make([]int, n)
	for _, e := range entries {
		sizes[jumpHash(e.hash, n)] += e.size
	}
	for i, s := range sizes {
		if s > budget {
			return i, s
		}
	}
	return -1, 0
}

// jumpHash is the jump consistent hash of Lamping and Veach ("A Fast,
// Minimal Memory, Consistent Hash Algorithm", 2014): a bucket in [0, n)
// such that going from n to n+1 buckets moves a key only into bucket n.
func jumpHash(key uint64, n int) int {
	b, j := int64(-1), int64(0)
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

func configMapNames(name string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = name
		if i > 0 {
			names[i] = fmt.Sprintf("%s-%d", name, i)
		}
	}
	return names
}

// objectJSON is the ConfigMap's JSON, keys in order as encoding/json and
// kubectl write them.
func objectJSON(name, plugin, namespace string, es []entry) []byte {
	data, bin := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for _, e := range es {
		if e.binary {
			bin[e.key] = valueJSON(e)
		} else {
			data[e.key] = valueJSON(e)
		}
	}
	meta := map[string]any{"name": name, "labels": map[string]string{"app.kubernetes.io/component": "skills-plugin", PluginLabel: plugin}}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
	if len(data) > 0 {
		obj["data"] = data
	}
	if len(bin) > 0 {
		obj["binaryData"] = bin
	}
	j, _ := json.Marshal(obj) // maps of strings and raw JSON strings always encode
	return j
}

// pluginFiles lists the regular files of a plugin folder, sorted.
func pluginFiles(fsys fs.FS) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && !(d.IsDir() && p == ".claude-plugin") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return nil
		case d.Type().IsRegular():
			files = append(files, p)
			return nil
		}
		return fmt.Errorf("%s: not a regular file (%s); ConfigMaps hold files only", p, d.Type())
	})
	if err != nil {
		return nil, fmt.Errorf("walk plugin folder: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return path.Clean(files[i]) < path.Clean(files[j]) })
	return files, nil
}
