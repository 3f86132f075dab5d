package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
)

// Options configures a harness run.
type Options struct {
	// Self is the harness's own executable, re-run with the `upstream` and
	// `bareproxy` subcommands.
	Self string
	// ModuleDir is the module root the sidecar is built from.
	ModuleDir string
	// SidecarBin, when set, is a prebuilt sidecar used instead of building.
	SidecarBin string
	// Duration, Warmup, Repeats and MaxSamples shape each measurement.
	Duration, Warmup time.Duration
	Repeats          int
	MaxSamples       int
	// Short selects smaller counts for the scenarios that have them.
	Short bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Target is one thing the load generator talks to.
type Target struct {
	// Name is one of the report target names.
	Name string
	// URL is the MCP endpoint.
	URL string
	// Proc is the hop process measured for CPU and RSS: the upstream for
	// the direct target.
	Proc *Process
	// MetricsURL serves go_memstats_mallocs_total; "" when there is none.
	MetricsURL string
	// Unavailable says why the target cannot be measured; "" when it can.
	Unavailable string
	// OwnOnly measures Proc alone, without its children: the stdio hops,
	// whose children are the server processes they front.
	OwnOnly bool
}

// usage reads the target's hop process: with its direct children (nginx's
// workers) unless OwnOnly. A target without a process has no usage.
func (t Target) usage() (ProcUsage, error) {
	if t.Proc == nil {
		return ProcUsage{}, errors.New("no hop process")
	}
	if t.OwnOnly {
		rss, cpu, err := readOne(t.Proc.PID())
		return ProcUsage{RSSKiB: rss, CPU: cpu}, err
	}
	return ReadUsage(t.Proc.PID())
}

// Env is the set of running processes a harness run measures.
type Env struct {
	opts     Options
	dir      string
	upAddr   string
	upstream *Process
	procs    []*Process
	// Targets are direct, bare, nginx and sidecar, in that order.
	Targets []Target
	// PluginDir is the generated 1,000-skill plugin.
	PluginDir string
	// SidecarBin is the built sidecar binary, "" when it could not be built.
	SidecarBin string
	// SidecarErr says why there is no sidecar binary.
	SidecarErr string
	// NginxBin is the nginx binary, "" when there is none.
	NginxBin string
}

// PluginSkills is the number of skills in the generated plugin.
const PluginSkills = 1000

// Setup starts the upstream and every hop in front of it. A hop that cannot
// start is recorded as unavailable, not returned as an error; only a failing
// upstream is fatal.
func Setup(ctx context.Context, o Options) (*Env, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	dir, err := os.MkdirTemp("", "skillsbench-")
	if err != nil {
		return nil, fmt.Errorf("make temp dir: %w", err)
	}
	e := &Env{opts: o, dir: dir, PluginDir: filepath.Join(dir, "plugin")}
	if err := WritePlugin(e.PluginDir, PluginSkills); err != nil {
		e.Close()
		return nil, err
	}
	direct, err := e.startGo(ctx, "upstream", nil)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.upstream, e.upAddr = direct.Proc, strings.TrimSuffix(strings.TrimPrefix(direct.URL, "http://"), "/mcp")
	direct.Name = report.Direct
	e.Targets = append(e.Targets, direct)

	bare, err := e.startGo(ctx, "bareproxy", []string{"-upstream", "http://" + e.upAddr})
	if err != nil {
		bare = Target{Unavailable: "unavailable: " + err.Error()}
	}
	bare.Name = report.Bare
	e.Targets = append(e.Targets, bare, e.startNginx(ctx), e.startSidecar(ctx))
	for _, t := range e.Targets {
		status := "ready at " + t.URL
		if t.Unavailable != "" {
			status = t.Unavailable
		}
		fmt.Fprintf(o.Log, "target %-8s %s\n", t.Name, status)
	}
	return e, nil
}

// Close stops every process the harness started, by pid, and removes the
// temp dir.
func (e *Env) Close() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		e.procs[i].Stop(3 * time.Second)
	}
	os.RemoveAll(e.dir)
}

// UpstreamURL is the direct endpoint.
func (e *Env) UpstreamURL() string { return "http://" + e.upAddr + "/mcp" }

// startGo runs one of the harness's own servers as a subprocess.
func (e *Env) startGo(ctx context.Context, sub string, extra []string) (Target, error) {
	addr, err := FreeAddr()
	if err != nil {
		return Target{}, err
	}
	stats, err := FreeAddr()
	if err != nil {
		return Target{}, err
	}
	args := append([]string{sub, "-listen", addr, "-stats-listen", stats}, extra...)
	p, err := StartProcess(sub, e.opts.Self, args, nil)
	if err != nil {
		return Target{}, err
	}
	e.procs = append(e.procs, p)
	if err := WaitReady(ctx, p, TCPProbe(addr), 5*time.Millisecond, 10*time.Second); err != nil {
		return Target{}, fmt.Errorf("start %s: %w", sub, err)
	}
	return Target{URL: "http://" + addr + "/mcp", Proc: p, MetricsURL: "http://" + stats + "/metrics"}, nil
}

func (e *Env) startNginx(ctx context.Context) Target {
	t := Target{Name: report.Nginx}
	e.NginxBin = FindNginx()
	if e.NginxBin == "" {
		t.Unavailable = "nginx unavailable: no nginx binary (apt-get install -y nginx-light)"
		return t
	}
	p, addr, err := e.launchNginx(ctx)
	if err != nil {
		t.Unavailable = "nginx unavailable: " + err.Error()
		return t
	}
	t.URL, t.Proc = "http://"+addr+"/mcp", p
	return t
}

// launchNginx starts an nginx in a fresh prefix under the temp dir.
func (e *Env) launchNginx(ctx context.Context) (*Process, string, error) {
	prefix, err := os.MkdirTemp(e.dir, "nginx-")
	if err != nil {
		return nil, "", fmt.Errorf("make nginx prefix: %w", err)
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, "", err
	}
	conf := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(conf, []byte(NginxConfig(prefix, addr, e.upAddr)), 0o644); err != nil {
		return nil, "", fmt.Errorf("write nginx config: %w", err)
	}
	p, err := StartProcess("nginx", e.NginxBin, []string{"-p", prefix, "-c", conf, "-e", filepath.Join(prefix, "error.log")}, nil)
	if err != nil {
		return nil, "", err
	}
	e.procs = append(e.procs, p)
	if err := WaitReady(ctx, p, TCPProbe(addr), 5*time.Millisecond, 10*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
		return nil, "", fmt.Errorf("%w: %s", err, firstLines(string(log), 2))
	}
	return p, addr, nil
}

func (e *Env) startSidecar(ctx context.Context) Target {
	t := Target{Name: report.Sidecar}
	e.SidecarBin, e.SidecarErr = e.buildSidecar(ctx)
	if e.SidecarBin == "" {
		t.Unavailable = "sidecar unavailable: " + e.SidecarErr
		return t
	}
	p, addr, metrics, err := e.launchSidecar(ctx, []string{"--upstream", e.UpstreamURL(), "--plugin-dir", e.PluginDir}, true)
	if err != nil {
		t.Unavailable = "sidecar unavailable: " + err.Error()
		return t
	}
	t.URL, t.Proc, t.MetricsURL = "http://"+addr+"/mcp", p, metrics
	return t
}

// buildSidecar returns the sidecar binary, building it into the temp dir
// unless a prebuilt one was given.
func (e *Env) buildSidecar(ctx context.Context) (bin, why string) {
	if e.opts.SidecarBin != "" {
		return e.opts.SidecarBin, ""
	}
	bin = filepath.Join(e.dir, "skills-sidecar")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/skills-sidecar")
	cmd.Dir = e.opts.ModuleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "build failed: " + firstLines(strings.TrimSpace(string(out)), 2)
	}
	return bin, ""
}

// launchSidecar starts the sidecar on a free port with args and waits until
// an initialize through it succeeds. With metrics it first tries to add
// --metrics-listen, and falls back to starting without it.
func (e *Env) launchSidecar(ctx context.Context, args []string, metrics bool) (p *Process, addr, metricsURL string, err error) {
	for attempt := range 2 {
		addr, err = FreeAddr()
		if err != nil {
			return nil, "", "", err
		}
		full := append([]string{"serve", "--listen", addr}, args...)
		metricsURL = ""
		if metrics && attempt == 0 {
			m, err := FreeAddr()
			if err != nil {
				return nil, "", "", err
			}
			// Flags go before a `--` that starts a stdio upstream's command.
			at := len(full)
			if i := slices.Index(full, "--"); i >= 0 {
				at = i
			}
			full = slices.Insert(full, at, "--metrics-listen", m)
			metricsURL = "http://" + m + "/metrics"
		}
		p, err = StartProcess("sidecar", e.SidecarBin, full, nil)
		if err != nil {
			return nil, "", "", err
		}
		e.procs = append(e.procs, p)
		err = WaitReady(ctx, p, InitializeProbe("http://"+addr+"/mcp"), 5*time.Millisecond, 10*time.Second)
		if err == nil {
			return p, addr, metricsURL, nil
		}
		p.Stop(time.Second)
		if !metrics {
			break
		}
	}
	return nil, "", "", err
}

// InitializeProbe returns a probe that succeeds once a legacy initialize
// through url gets a result. It sends StatelessHeader so a go-sdk upstream
// keeps no session for it.
func InitializeProbe(url string) func(context.Context) error {
	call := InitializeCall()
	hdr := call.Header(Legacy, "")
	hdr.Set(StatelessHeader, "1")
	return postProbe(url, hdr, call.Body(Legacy))
}

// postProbe returns a probe that succeeds once body, posted to url with
// hdr on a fresh connection each time, gets a result.
func postProbe(url string, hdr http.Header, body []byte) func(context.Context) error {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
	return func(ctx context.Context) error {
		var buf bytes.Buffer
		_, err := post(ctx, c, url, hdr, body, &buf)
		return err
	}
}

// DiscoverProbe returns a probe that succeeds once a 2026-07-28
// server/discover through url gets a result: in front of a legacy-only
// upstream, once the sidecar's era bridge carries modern requests (until
// its era probe has answered, they pass through and the upstream refuses
// them).
func DiscoverProbe(url string) func(context.Context) error {
	call := Call{Method: "server/discover"}
	return postProbe(url, call.Header(Modern, ""), call.Body(Modern))
}

// Mallocs reads go_memstats_mallocs_total from a Prometheus text endpoint.
func Mallocs(ctx context.Context, url string) (float64, error) {
	return scrapeValue(ctx, url, "go_memstats_mallocs_total")
}

// scrapeValue reads the value of an unlabelled series name from a
// Prometheus text endpoint.
func scrapeValue(ctx context.Context, url, name string) (float64, error) {
	vs, err := scrapeValues(ctx, url, name)
	if err != nil {
		return 0, err
	}
	return vs[0], nil
}

// scrapeValues reads the values of unlabelled series names from one scrape
// of a Prometheus text endpoint, uncompressed and read to its end (a
// scrape's own cost in the scraped process is then the same each time).
func scrapeValues(ctx context.Context, url string, names ...string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build metrics request: %w", err)
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	out, found := make([]float64, len(names)), make([]bool, len(names))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for i, name := range names {
			if v, ok := strings.CutPrefix(line, name+" "); ok && !found[i] {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return nil, fmt.Errorf("parse %s: %w", name, err)
				}
				out[i], found[i] = f, true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	for i, ok := range found {
		if !ok {
			return nil, fmt.Errorf("scrape %s: %w: no %s", url, errReply, names[i])
		}
	}
	return out, nil
}
