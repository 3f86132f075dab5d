package sessionkeys

import (
	"bytes"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/sessionid"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := RunCLI(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// TestRotationCommands: new, then the three steps, each output a keys
// file the sidecar reads, in the order the rotation needs.
func TestRotationCommands(t *testing.T) {
	t.Parallel()
	code, old, _ := runCLI(t, "", "new")
	if _, err := sessionid.ParseKeys([]byte(old)); code != 0 || err != nil || strings.Count(old, "\n") != 1 {
		t.Fatalf("new = %d %q (%v): want one key line", code, old, err)
	}
	oldKey := strings.TrimSpace(old)
	code, step1, _ := runCLI(t, "# the team's keys\n"+old, "add")
	l1 := strings.Fields(step1)
	if code != 0 || len(l1) != 2 || l1[0] != oldKey || l1[1] == oldKey {
		t.Fatalf("add = %d %q: want the old key first, a new one second", code, step1)
	}
	code, step2, _ := runCLI(t, step1, "promote")
	if l2 := strings.Fields(step2); code != 0 || len(l2) != 2 || l2[0] != l1[1] || l2[1] != oldKey {
		t.Fatalf("promote = %d %q: want the new key first, the old one second", code, step2)
	}
	code, step3, _ := runCLI(t, step2, "drop")
	if code != 0 || strings.TrimSpace(step3) != l1[1] {
		t.Fatalf("drop = %d %q: want the new key alone", code, step3)
	}
	for _, out := range []string{step1, step2, step3} {
		if _, err := sessionid.ParseKeys([]byte(out)); err != nil {
			t.Errorf("output %q is not a keys file: %v", out, err)
		}
	}
}

// TestRotationCommandsRefuse: a bad keys file, a step that cannot apply
// and a bad command line are refused, and no key is echoed.
func TestRotationCommandsRefuse(t *testing.T) {
	t.Parallel()
	key := sessionid.EncodeKey(sessionid.NewRandomKey())
	for name, c := range map[string]struct {
		stdin string
		args  []string
		code  int
		err   string
	}{
		"bad file":          {key + "\nshort\n", []string{"add"}, 1, "line 2"},
		"empty file":        {"", []string{"drop"}, 1, "no key"},
		"promote one key":   {key, []string{"promote"}, 1, "add one first"},
		"add past the max":  {strings.Repeat(key+"\n", 1) + manyKeys(sessionid.MaxKeys-1), []string{"add"}, 1, "the most"},
		"unknown step":      {"", []string{"rotate"}, 2, "unknown step"},
		"no step":           {"", nil, 2, "Usage"},
		"two steps at once": {"", []string{"add", "drop"}, 2, "Usage"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runCLI(t, c.stdin, c.args...)
			if code != c.code || out != "" || !strings.Contains(errs, c.err) || strings.Contains(errs, key[:10]) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, an error with %q and no key", code, out, errs, c.code, c.err)
			}
		})
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(sessionid.EncodeKey(sessionid.NewRandomKey()) + "\n")
	}
	return b.String()
}
