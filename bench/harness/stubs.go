package harness

import (
	"context"

	"github.com/skills-sidecar/skills-sidecar/bench/report"
)

func sseProgress(context.Context, *Env) []report.Row   { return nil }
func blobRead(context.Context, *Env) []report.Row      { return nil }
func skillsMethods(context.Context, *Env) []report.Row { return nil }
func idleStreams(context.Context, *Env) []report.Row   { return nil }
func startup(context.Context, *Env) []report.Row       { return nil }
