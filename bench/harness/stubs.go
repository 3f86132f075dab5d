package harness

import (
	"context"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
)

func idleStreams(context.Context, *Env) []report.Row { return nil }
func startup(context.Context, *Env) []report.Row     { return nil }
