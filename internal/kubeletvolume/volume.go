// Package kubeletvolume writes a folder the way the kubelet's atomic writer
// updates a ConfigMap volume (pkg/volume/util/atomic_writer.go in
// Kubernetes), so tests can swap a mounted plugin under a running watcher
// without a cluster: the keys go into a fresh "..<timestamp>" folder, a
// "..data_tmp" link to it is renamed over "..data" (the atomic step), a
// "KEY -> ..data/KEY" link is added for each new key, links of keys no
// longer present are removed, then the previous timestamped folder.
//
// It is test tooling: it owns nothing the sidecar runs, and nothing but
// tests may import it.
package kubeletvolume

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

const dataLink = "..data"

var serial atomic.Int64

// Write makes dir hold exactly keys (name -> bytes), creating dir when it is
// missing, with the kubelet's layout and swap order. A name must be a
// valid ConfigMap key (no "/", not starting with "..").
func Write(dir string, keys map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	ts := fmt.Sprintf("..%s.%09d", time.Now().UTC().Format("2006_01_02_15_04_05"), serial.Add(1))
	if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
		return err
	}
	for k, b := range keys {
		if strings.Contains(k, "/") || strings.HasPrefix(k, "..") || k == "" {
			return fmt.Errorf("kubeletvolume: %q is not a ConfigMap key", k)
		}
		if err := os.WriteFile(filepath.Join(dir, ts, k), b, 0o644); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(ts, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return err
	}
	for k := range keys {
		link := filepath.Join(dir, k)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataLink, k), link); err != nil {
			return err
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		if _, keep := keys[e.Name()]; !keep {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}
