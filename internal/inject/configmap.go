package inject

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// ErrBadKey is returned by DecodeKey for a key that EncodeKey cannot have
// written.
var ErrBadKey = errors.New("inject: not an encoded plugin path")

// maxKeyLen is the longest ConfigMap key the API server accepts.
const maxKeyLen = 253

// EncodeKey turns a slash-separated path inside the plugin folder into a
// ConfigMap key, which may only hold [-._a-zA-Z0-9]: "/" becomes "__", and
// "_" and every other byte become "_" and two upper-case hex digits; a
// leading "." is escaped too, so no key starts with "..". For example
// skills/refunds/SKILL.md becomes skills__refunds__SKILL.md and
// scripts/run_me.py becomes scripts__run_5Fme.py.
func EncodeKey(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			b.WriteString("__")
		case c == '.' && i == 0:
			b.WriteString("_2E")
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	return b.String()
}

// DecodeKey reverses EncodeKey and checks that the result is a relative
// path with no empty, "." or ".." segment, as items[].path must be. Errors
// wrap ErrBadKey.
func DecodeKey(k string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_' && i+1 < len(k) && k[i+1] == '_':
			b.WriteByte('/')
			i++
		case c == '_' && i+2 < len(k) && isUpperHex(k[i+1]) && isUpperHex(k[i+2]):
			b.WriteByte(unhex(k[i+1])<<4 | unhex(k[i+2]))
			i += 2
		case c == '_':
			return "", fmt.Errorf("%w: %q has a lone _ at %d", ErrBadKey, k, i)
		default:
			b.WriteByte(c)
		}
	}
	p := b.String()
	if p == "" {
		return "", fmt.Errorf("%w: empty key", ErrBadKey)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("%w: %q decodes to %q, not a clean relative path", ErrBadKey, k, p)
		}
	}
	return p, nil
}

func isUpperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}

// ConfigMapOptions say how BuildConfigMaps names and sizes its ConfigMaps.
type ConfigMapOptions struct {
	// Name of the first ConfigMap; the next are Name-1, Name-2, ...
	Name string
	// Namespace of the ConfigMaps; empty leaves it out.
	Namespace string
	// MaxBytes bounds the keys and values (binary ones base64-encoded) of
	// one ConfigMap; 0 means 900 KiB, leaving room under the API server's
	// 1 MiB object limit.
	MaxBytes int
}

// BuildConfigMaps turns a plugin folder into ConfigMap manifests (YAML,
// "---"-separated) whose keys are the files' EncodeKey paths, UTF-8 files
// under data and others under binaryData, split across as many ConfigMaps
// as the size bound needs. It returns the manifests and the ConfigMap
// names, the value for AnnotationPluginConfigMaps. Dot-files and
// dot-folders other than .claude-plugin are left out, as the sidecar never
// serves them; a symlink or special file is an error.
func BuildConfigMaps(fsys fs.FS, opts ConfigMapOptions) ([]byte, []string, error) {
	if !isDNSSubdomain(opts.Name) || len(opts.Name) > 240 {
		return nil, nil, fmt.Errorf("configmap name %q is not a valid object name", opts.Name)
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 900 << 10
	}
	files, err := pluginFiles(fsys)
	if err != nil {
		return nil, nil, err
	}
	type cmap struct {
		data   map[string]string
		binary map[string][]byte
		size   int
	}
	var maps []*cmap
	for _, p := range files {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", p, err)
		}
		k := EncodeKey(p)
		if len(k) > maxKeyLen {
			return nil, nil, fmt.Errorf("%s: encoded key is %d bytes, over the %d a ConfigMap allows", p, len(k), maxKeyLen)
		}
		size := len(k) + len(b)
		if !utf8.Valid(b) {
			size = len(k) + (len(b)+2)/3*4
		}
		if size > opts.MaxBytes {
			return nil, nil, fmt.Errorf("%s: %d bytes do not fit a ConfigMap (limit %d); ship the plugin as an image (%s)", p, size, opts.MaxBytes, AnnotationPluginImage)
		}
		if len(maps) == 0 || maps[len(maps)-1].size+size > opts.MaxBytes {
			maps = append(maps, &cmap{data: map[string]string{}, binary: map[string][]byte{}})
		}
		m := maps[len(maps)-1]
		m.size += size
		if utf8.Valid(b) {
			m.data[k] = string(b)
		} else {
			m.binary[k] = b
		}
	}
	if len(maps) == 0 {
		return nil, nil, errors.New("the plugin folder has no files")
	}
	var out []byte
	var names []string
	for i, m := range maps {
		name := opts.Name
		if i > 0 {
			name = fmt.Sprintf("%s-%d", opts.Name, i)
		}
		names = append(names, name)
		meta := map[string]any{"name": name, "labels": map[string]string{"app.kubernetes.io/component": "skills-plugin"}}
		if opts.Namespace != "" {
			meta["namespace"] = opts.Namespace
		}
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
		if len(m.data) > 0 {
			obj["data"] = m.data
		}
		if len(m.binary) > 0 {
			obj["binaryData"] = m.binary
		}
		y, err := yaml.Marshal(obj)
		if err != nil {
			return nil, nil, fmt.Errorf("encode ConfigMap %s: %w", name, err)
		}
		out = append(out, "---\n"...)
		out = append(out, y...)
	}
	return out, names, nil
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
