package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func f(v float64) *float64 { return &v }

func sampleRows() []Row {
	return []Row{
		{Scenario: "tools/call", Variant: "legacy c=1", Target: Direct, Status: "ok", Throughput: 1000, P50Micros: 900, P99Micros: 1500, AllocsPerOp: f(120), CPUMicrosPerOp: f(400), RSSKiB: 20480, Samples: 5000},
		{Scenario: "tools/call", Variant: "legacy c=1", Target: Bare, Status: "ok", Throughput: 800, P50Micros: 1100, P99Micros: 1900, AllocsPerOp: f(60), RSSKiB: 10240, Samples: 4000},
		{Scenario: "tools/call", Variant: "legacy c=1", Target: Nginx, Status: "unavailable: nginx not found"},
		{Scenario: "tools/call", Variant: "legacy c=1", Target: Sidecar, Status: "ok", Throughput: 760, P50Micros: 1150, P99Micros: 2000, Samples: 3800, Errors: 2, Note: "a|b"},
		{Scenario: "startup", Variant: "default", Target: Direct, Status: "ok", P50Micros: 20000},
		{Scenario: "startup", Variant: "default", Target: Sidecar, Status: "ok", P50Micros: 30000, Extra: map[string]float64{"idle_rss_kib": 9000}},
	}
}

func TestRatios(t *testing.T) {
	t.Parallel()
	got := Ratios(sampleRows())
	want := []Ratio{{
		Scenario: "tools/call", Variant: "legacy c=1",
		SidecarOverBare:    f(0.95),
		SidecarOverDirect:  f(0.76),
		AddedP50Micros:     f(250),
		BareAddedP50Micros: f(200),
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ratios mismatch (-want +got):\n%s", diff)
	}
}

// TestRatiosCatchesSwap shows the ratio test above would fail if the
// throughput ratio were inverted (bare/sidecar instead of sidecar/bare).
func TestRatiosCatchesSwap(t *testing.T) {
	t.Parallel()
	rows := sampleRows()
	rows[1].Target, rows[3].Target = Sidecar, Bare
	got := Ratios(rows)
	if len(got) != 1 || got[0].SidecarOverBare == nil || *got[0].SidecarOverBare == 0.95 {
		t.Errorf("Ratios with swapped targets = %+v, want a sidecar/bare other than 0.95", got)
	}
}

func TestWriteTable(t *testing.T) {
	t.Parallel()
	rep := Report{Rows: sampleRows()}
	rep.Ratios = Ratios(rep.Rows)
	var buf bytes.Buffer
	if err := WriteTable(&buf, rep); err != nil {
		t.Fatal(err)
	}
	want := `| scenario | variant | target | throughput/s | p50 µs | p99 µs | allocs/op | CPU µs/op | RSS MiB | errors | note |
|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|
| tools/call | legacy c=1 | direct | 1000 | 900 | 1500 | 120 | 400 | 20.0 | 0 |  |
| tools/call | legacy c=1 | bare | 800 | 1100 | 1900 | 60.0 | – | 10.0 | 0 |  |
| tools/call | legacy c=1 | nginx | – | – | – | – | – | – | – | unavailable: nginx not found |
| tools/call | legacy c=1 | sidecar | 760 | 1150 | 2000 | – | – | – | 2 | a/b |
| startup | default | direct | – | 20000 | 0.00 | – | – | – | 0 |  |
| startup | default | sidecar | – | 30000 | 0.00 | – | – | – | 0 |  |

| scenario | variant | sidecar/bare | sidecar/nginx | sidecar/direct | sidecar +p50 µs | bare +p50 µs |
|---|---|--:|--:|--:|--:|--:|
| tools/call | legacy c=1 | 0.95× | – | 0.76× | 250 | 200 |
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("WriteTable mismatch (-want +got):\n%s", diff)
	}
	// Every line of a Markdown table has the same number of cells.
	for i, block := range strings.Split(strings.TrimSpace(buf.String()), "\n\n") {
		lines := strings.Split(block, "\n")
		n := strings.Count(lines[0], "|")
		for _, l := range lines {
			if c := strings.Count(l, "|"); c != n {
				t.Errorf("table %d line %q has %d pipes, want %d", i, l, c, n)
			}
		}
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	t.Parallel()
	rep := Report{
		Machine:  Machine{CPUs: 2, CPUModel: "test cpu", GoVer: "go1.26"},
		Settings: Settings{Short: true, DurationSec: 1, Repeats: 1, MaxSamples: 100},
		Rows:     sampleRows(),
	}
	rep.Ratios = Ratios(rep.Rows)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("unmarshal written JSON: %v", err)
	}
	if diff := cmp.Diff(rep, got); diff != "" {
		t.Errorf("JSON round trip mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(buf.String(), `"p50_us": 1150`) {
		t.Errorf("WriteJSON output lacks the p50_us key:\n%s", buf.String())
	}
}
