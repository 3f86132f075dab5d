package sidecar

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
)

// startCatalog loads the catalog and keeps it current until ctx is done:
// the plugin folder the Config names, watched, or else o.Plugin (the
// embedded example the demo serves), or else an empty catalog. s.Notify
// gets what each successful reload changed for clients (never for a failed
// reload, never an empty change: package notify sends nothing for those).
func (s *Sidecar) startCatalog(ctx context.Context, cfg config.Config, o Options) error {
	log, m := o.Logger, s.Metrics
	opts := catalog.Options{LimitMode: cfg.LimitMode, PollInterval: cfg.PollInterval, Layout: cfg.PluginLayout,
		FrontmatterPortability: cfg.FrontmatterPortability}
	switch {
	case o.Snapshot != nil:
		s.Snapshot = o.Snapshot
		return nil
	case cfg.PluginDir == "" && o.Plugin == nil:
		log.Info("no --plugin-dir: serving no skills or agents (both extensions still answer)")
		s.Snapshot = func() *catalog.Snapshot { return nil }
		return nil
	case cfg.PluginDir == "":
		snap, err := catalog.LoadFS(o.Plugin, opts)
		if err != nil {
			return err
		}
		logProblems(log, snap.Problems())
		m.CatalogReload(true, time.Now(), len(snap.Skills()), len(snap.Agents()), problemLabels(snap.Problems()))
		log.Info("serving the embedded example plugin", zap.Int("skills", len(snap.Skills())), zap.Int("agents", len(snap.Agents())))
		s.Snapshot = func() *catalog.Snapshot { return snap }
		return nil
	}
	w, err := catalog.NewWatcher(cfg.PluginDir, opts, func(ev catalog.ReloadEvent) {
		m.CatalogReload(ev.OK, ev.At, ev.Skills, ev.Agents, problemLabels(ev.Problems))
		if !ev.OK {
			log.Error("plugin reload failed: keeping the last good catalog", zap.String("trigger", ev.Trigger), zap.Error(ev.Err))
			return
		}
		logProblems(log, ev.Problems)
		s.Notify.Publish(ev.Changes)
		m.CatalogDropped(len(ev.DroppedSkills), len(ev.DroppedAgents))
		if len(ev.DroppedSkills)+len(ev.DroppedAgents) > 0 {
			log.Warn("plugin reload stopped serving items", zap.Strings("skills", ev.DroppedSkills), zap.Strings("agents", ev.DroppedAgents))
		}
		log.Info("plugin loaded", zap.String("trigger", ev.Trigger), zap.Int("skills", ev.Skills), zap.Int("agents", ev.Agents),
			zap.Int("problems", len(ev.Problems)), zap.Duration("took", ev.Duration))
	})
	if err != nil {
		return err
	}
	go func() {
		if err := w.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("plugin watcher stopped", zap.Error(err))
		}
	}()
	s.Watcher, s.Snapshot = w, w.Snapshot
	return nil
}

func logProblems(log *zap.Logger, ps []catalog.Problem) {
	for _, p := range ps {
		log.Warn("plugin item "+p.Severity, zap.String("path", p.Path), zap.String("kind", p.Kind), zap.String("reason", p.Reason))
	}
}

func problemLabels(ps []catalog.Problem) []metrics.Problem {
	out := make([]metrics.Problem, len(ps))
	for i, p := range ps {
		out[i] = metrics.Problem{Kind: p.Kind, Severity: p.Severity, Ambiguous: p.Ambiguous}
	}
	return out
}
