package sessionkeys

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/kubeletvolume"
	"github.com/skills-sidecar/skills-sidecar/internal/sessionid"
	"github.com/skills-sidecar/skills-sidecar/internal/testwait"
)

var (
	keyA = bytes.Repeat([]byte{0xa}, sessionid.KeySize)
	keyB = bytes.Repeat([]byte{0xb}, sessionid.KeySize)
)

func lines(keys ...[]byte) []byte {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(sessionid.EncodeKey(k) + "\n")
	}
	return []byte(b.String())
}

// sealsWith reports whether s seals with k (an id it seals opens with k
// alone).
func sealsWith(s *Source, k []byte) bool {
	id, err := s.Keys().Seal(sessionid.State{Version: "v", Expires: time.Unix(2e9, 0)}, nil)
	if err != nil {
		return false
	}
	only, _ := sessionid.NewKeys(k)
	_, err = only.Open(id, nil, time.Unix(1e9, 0))
	return err == nil
}

// waitFor polls cond (at most ten seconds, a hang guard).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, time.Minute, cond, what)
}

// TestSecretVolumeUpdates: a keys file in a Secret volume, updated as the
// kubelet updates it (a symlink swap), is taken without a restart; an
// update that does not parse keeps the keys last read.
func TestSecretVolumeUpdates(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "session-keys")
	if err := kubeletvolume.Write(dir, map[string][]byte{"keys": lines(keyA)}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "keys"), Options{Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !s.FromFile() || !sealsWith(s, keyA) {
		t.Fatal("the file's first key does not seal")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := s.Changed()
	go s.Run(ctx)
	// Rotation step 1: the new key after the old one (the old one seals).
	if err := kubeletvolume.Write(dir, map[string][]byte{"keys": lines(keyA, keyB)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two keys", func() bool { return s.Keys().Len() == 2 })
	waitFor(t, "step 1: Changed closed", func() bool { return isClosed(changed) })
	if !sealsWith(s, keyA) {
		t.Error("step 1: the old key no longer seals")
	}
	// Step 2: the new key first.
	if err := kubeletvolume.Write(dir, map[string][]byte{"keys": lines(keyB, keyA)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new key sealing", func() bool { return sealsWith(s, keyB) })
	// A broken update is refused; the keys stay, and nothing changed.
	changed = s.Changed()
	if err := kubeletvolume.Write(dir, map[string][]byte{"keys": []byte("not a key\n"), "canary": []byte("x")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the broken file read", func() bool { return bytes.Equal(s.lastRead(), []byte("not a key\n")) })
	if s.Keys().Len() != 2 || !sealsWith(s, keyB) {
		t.Error("a broken keys file replaced the keys")
	}
	if isClosed(changed) {
		t.Error("Changed closed by a keys file that was refused")
	}
	// Step 3: the old key dropped.
	if err := kubeletvolume.Write(dir, map[string][]byte{"keys": lines(keyB)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "one key", func() bool { return s.Keys().Len() == 1 })
	waitFor(t, "step 3: Changed closed", func() bool { return isClosed(changed) })
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestMissingFile: with no file (an optional Secret not created yet) the
// process seals with a key of its own, and takes the file once it appears.
func TestMissingFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "session-keys")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "keys"), Options{Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s.FromFile() || s.Keys().Len() != 1 || sealsWith(s, keyA) {
		t.Fatal("without a file: want one key of the process")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	if err := kubeletvolume.Write(dir, map[string][]byte{"keys": lines(keyA)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the file's key", func() bool { return s.FromFile() && sealsWith(s, keyA) })

	if s, err := Open("", Options{}); err != nil || s.FromFile() || s.Keys().Len() != 1 {
		t.Errorf("Open(\"\") = %v, from file %v: want a key of the process", err, s.FromFile())
	}
}

// TestBadFileAtStart: a file that holds no valid key stops the start,
// naming the line and not its content.
func TestBadFileAtStart(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "keys")
	secret := "c2VjcmV0LWJ1dC10b28tc2hvcnQ="
	if err := os.WriteFile(p, []byte(sessionid.EncodeKey(keyA)+"\n"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p, Options{})
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), secret[:8]) {
		t.Fatalf("Open of a bad file = %v; want an error naming line 2 without its content", err)
	}
}
