package sessionkeys

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/internal/sessionid"
)

const cliUsage = `Usage:
  skills-sidecar session-keys new       print a new key: one line, the base64 of 32 random bytes
  skills-sidecar session-keys add       read a keys file on stdin, print it with a new key second (rotation step 1)
  skills-sidecar session-keys promote   read a keys file on stdin, print it with its second key first (step 2)
  skills-sidecar session-keys drop      read a keys file on stdin, print its first key alone (step 3)

A keys file holds one key per line; the first seals the session ids the era
bridge mints, every key opens them. Between two steps, wait until every
replica has read the file (the kubelet's sync of a Secret volume, about a
minute, plus a few seconds), and before drop until the sessions the old key
sealed have expired (24 hours). See docs/replicas.md.
`

// RunCLI is the session-keys command: it prints a new key, or the next
// step of a rotation of the keys file read on stdin. It returns the exit
// code (0, 1 on a bad keys file, 2 on a bad command line).
func RunCLI(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprint(stderr, cliUsage)
		return 2
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(stdout, cliUsage)
		return 0
	}
	if args[0] == "new" {
		fmt.Fprintln(stdout, sessionid.EncodeKey(sessionid.NewRandomKey()))
		return 0
	}
	step, ok := steps[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "session-keys: unknown step %q\n\n%s", args[0], cliUsage)
		return 2
	}
	b, err := io.ReadAll(io.LimitReader(stdin, sessionid.MaxKeysFile+1))
	if err == nil {
		_, err = sessionid.ParseKeys(b)
	}
	if err != nil {
		fmt.Fprintf(stderr, "session-keys %s: stdin: %v\n", args[0], err)
		return 1
	}
	out, err := step(keyLines(b))
	if err != nil {
		fmt.Fprintf(stderr, "session-keys %s: %v\n", args[0], err)
		return 1
	}
	fmt.Fprint(stdout, strings.Join(out, "\n")+"\n")
	return 0
}

// steps are the rotation's steps over a keys file's key lines.
var steps = map[string]func([]string) ([]string, error){
	"add": func(k []string) ([]string, error) {
		if len(k) >= sessionid.MaxKeys {
			return nil, fmt.Errorf("the file already holds %d keys, the most a file may", len(k))
		}
		return append([]string{k[0], sessionid.EncodeKey(sessionid.NewRandomKey())}, k[1:]...), nil
	},
	"promote": func(k []string) ([]string, error) {
		if len(k) < 2 {
			return nil, fmt.Errorf("the file holds one key: add one first")
		}
		return append([]string{k[1], k[0]}, k[2:]...), nil
	},
	"drop": func(k []string) ([]string, error) { return k[:1], nil },
}

// keyLines are the lines of a keys file that hold keys (ParseKeys has
// accepted the file), comments and blank lines left out.
func keyLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && l[0] != '#' {
			out = append(out, l)
		}
	}
	return out
}
