package stdio

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
)

// TestEventsAreMetricLabels: every event the Transport counts is one the
// metric records (metrics.StdioEvent ignores any other).
func TestEventsAreMetricLabels(t *testing.T) {
	t.Parallel()
	ours := []string{EventSkippedLine, EventLineTooLong, EventDroppedMessage, EventUnmatchedReply, EventTimeout, EventRefused, EventEvicted, EventStderrDropped}
	if diff := cmp.Diff(metrics.StdioEvents, ours); diff != "" {
		t.Errorf("stdio events and metrics.StdioEvents differ (-metrics +stdio):\n%s", diff)
	}
}
