// Package report owns the shape of the harness's results and their two
// renderings: a Markdown table for people and JSON for machines.
//
// It is pure: it takes values and writes bytes to the writer it is given. It
// must not measure anything or decide which targets exist; it only knows the
// target names it compares (Direct, Bare, Nginx, Sidecar).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Target names used in rows and ratios.
const (
	Direct  = "direct"
	Bare    = "bare"
	Nginx   = "nginx"
	Sidecar = "sidecar"
)

// Row is the result of one scenario variant against one target, the median
// over repeats of each metric separately.
type Row struct {
	// Scenario is the scenario's name, e.g. "tools/call".
	Scenario string `json:"scenario"`
	// Variant distinguishes runs of a scenario, e.g. "legacy c=32".
	Variant string `json:"variant"`
	// Target is one of Direct, Bare, Nginx, Sidecar.
	Target string `json:"target"`
	// Status is "ok", or why there is no measurement ("unavailable: …").
	Status string `json:"status"`
	// Throughput is samples per second (requests, or events for streams).
	Throughput float64 `json:"throughput_per_s"`
	// P50Micros and P99Micros are latency percentiles in microseconds.
	P50Micros float64 `json:"p50_us"`
	P99Micros float64 `json:"p99_us"`
	// AllocsPerOp is heap allocations per request in the hop process (the
	// upstream for Direct); nil when the process does not expose them.
	AllocsPerOp *float64 `json:"allocs_per_op,omitempty"`
	// CPUMicrosPerOp is CPU time per request of the hop process; nil when
	// not measured.
	CPUMicrosPerOp *float64 `json:"cpu_us_per_op,omitempty"`
	// RSSKiB is the hop process's resident set at the end of the
	// measurement (summed over its children for nginx); 0 when unknown.
	RSSKiB int64 `json:"rss_kib,omitempty"`
	// Samples is the total sample count over all repeats; Errors the failed
	// requests.
	Samples int64 `json:"samples"`
	Errors  int64 `json:"errors"`
	// Note explains anything unusual about the row, e.g. a stand-in method.
	Note string `json:"note,omitempty"`
	// Extra holds scenario-specific figures, e.g. "kib_per_stream"; the
	// table shows them through Note.
	Extra map[string]float64 `json:"extra,omitempty"`
}

// OK reports whether the row holds a measurement.
func (r Row) OK() bool { return r.Status == "ok" }

// Ratio compares the sidecar with the other targets for one scenario variant.
// A field is nil when either side has no measurement.
type Ratio struct {
	Scenario string `json:"scenario"`
	Variant  string `json:"variant"`
	// SidecarOverBare, SidecarOverNginx and SidecarOverDirect are throughput
	// ratios (higher is better for the sidecar).
	SidecarOverBare   *float64 `json:"sidecar_over_bare,omitempty"`
	SidecarOverNginx  *float64 `json:"sidecar_over_nginx,omitempty"`
	SidecarOverDirect *float64 `json:"sidecar_over_direct,omitempty"`
	// AddedP50Micros is the sidecar's p50 minus the direct p50.
	AddedP50Micros *float64 `json:"added_p50_us,omitempty"`
	// BareAddedP50Micros is the bare proxy's p50 minus the direct p50, the
	// floor the sidecar's figure should be read against.
	BareAddedP50Micros *float64 `json:"bare_added_p50_us,omitempty"`
}

// Machine describes where the numbers were taken. It must not carry host
// names or paths.
type Machine struct {
	CPUs     int    `json:"nproc"`
	CPUModel string `json:"cpu_model"`
	GoVer    string `json:"go_version"`
	Kernel   string `json:"kernel,omitempty"`
}

// Settings records how the run was configured.
type Settings struct {
	Short       bool    `json:"short"`
	DurationSec float64 `json:"duration_s"`
	WarmupSec   float64 `json:"warmup_s"`
	Repeats     int     `json:"repeats"`
	MaxSamples  int     `json:"max_samples"`
}

// Report is everything one run produced.
type Report struct {
	Machine  Machine  `json:"machine"`
	Settings Settings `json:"settings"`
	Rows     []Row    `json:"rows"`
	Ratios   []Ratio  `json:"ratios"`
}

// Ratios computes one Ratio per scenario variant that has a sidecar row with
// a throughput (or a failed one), in the order the variants first appear in
// rows.
func Ratios(rows []Row) []Ratio {
	type key struct{ s, v string }
	byKey := map[key]map[string]Row{}
	var order []key
	for _, r := range rows {
		k := key{r.Scenario, r.Variant}
		if byKey[k] == nil {
			byKey[k] = map[string]Row{}
			order = append(order, k)
		}
		byKey[k][r.Target] = r
	}
	var out []Ratio
	for _, k := range order {
		m := byKey[k]
		sc, ok := m[Sidecar]
		if !ok || (sc.OK() && sc.Throughput == 0) {
			// No sidecar, or a measurement that is not a load run
			// (start-up, idle streams): nothing to take a ratio of.
			continue
		}
		rt := Ratio{Scenario: k.s, Variant: k.v}
		rt.SidecarOverBare = throughputRatio(sc, m[Bare])
		rt.SidecarOverNginx = throughputRatio(sc, m[Nginx])
		rt.SidecarOverDirect = throughputRatio(sc, m[Direct])
		rt.AddedP50Micros = p50Diff(sc, m[Direct])
		rt.BareAddedP50Micros = p50Diff(m[Bare], m[Direct])
		out = append(out, rt)
	}
	return out
}

func throughputRatio(a, b Row) *float64 {
	if !a.OK() || !b.OK() || b.Throughput == 0 {
		return nil
	}
	v := a.Throughput / b.Throughput
	return &v
}

func p50Diff(a, b Row) *float64 {
	if !a.OK() || !b.OK() {
		return nil
	}
	v := a.P50Micros - b.P50Micros
	return &v
}

// WriteJSON writes rep as indented JSON.
func WriteJSON(w io.Writer, rep Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}

// WriteTable writes rep's rows and ratios as two Markdown tables.
func WriteTable(w io.Writer, rep Report) error {
	var b strings.Builder
	b.WriteString("| scenario | variant | target | throughput/s | p50 µs | p99 µs | allocs/op | CPU µs/op | RSS MiB | errors | note |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range rep.Rows {
		if !r.OK() {
			fmt.Fprintf(&b, "| %s | %s | %s | – | – | – | – | – | – | – | %s |\n",
				r.Scenario, r.Variant, r.Target, cell(joinNote(r.Status, r.Note)))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n",
			r.Scenario, r.Variant, r.Target, optNum(positive(r.Throughput)), num(r.P50Micros), num(r.P99Micros),
			optNum(r.AllocsPerOp), optNum(r.CPUMicrosPerOp), mib(r.RSSKiB), r.Errors, cell(r.Note))
	}
	if len(rep.Ratios) > 0 {
		b.WriteString("\n| scenario | variant | sidecar/bare | sidecar/nginx | sidecar/direct | sidecar +p50 µs | bare +p50 µs |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|--:|\n")
		for _, r := range rep.Ratios {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Scenario, r.Variant,
				ratio(r.SidecarOverBare), ratio(r.SidecarOverNginx), ratio(r.SidecarOverDirect),
				optNum(r.AddedP50Micros), optNum(r.BareAddedP50Micros))
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

func joinNote(status, note string) string {
	if note == "" {
		return status
	}
	return status + "; " + note
}

// cell keeps a free-text value from breaking the Markdown table.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "/")
	return strings.ReplaceAll(s, "\n", " ")
}

// num prints with three significant figures or as an integer when large.
func num(v float64) string {
	switch {
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// positive returns &v, or nil for a zero throughput (not a load run).
func positive(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return &v
}

func optNum(v *float64) string {
	if v == nil {
		return "–"
	}
	return num(*v)
}

func ratio(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f×", *v)
}

func mib(kib int64) string {
	if kib <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(kib)/1024)
}
