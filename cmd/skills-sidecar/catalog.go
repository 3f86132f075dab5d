package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/examples"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
)

// startCatalog loads the plugin folder and keeps it current until ctx is
// done. With no --plugin-dir it serves the embedded example plugin when the
// demo upstream runs, and an empty catalog otherwise. publish gets what each
// successful reload changed for clients (never for a failed reload, never
// an empty change: package notify sends nothing for those).
func startCatalog(ctx context.Context, cfg config.Config, log *zap.Logger, m *metrics.Metrics, publish func(catalog.Changes)) (func() *catalog.Snapshot, error) {
	opts := catalog.Options{LimitMode: cfg.LimitMode, PollInterval: cfg.PollInterval, Layout: cfg.PluginLayout}
	if cfg.PluginDir == "" {
		if cfg.Upstream != "" {
			log.Info("no --plugin-dir: serving no skills or agents (both extensions still answer)")
			return func() *catalog.Snapshot { return nil }, nil
		}
		snap, err := catalog.LoadFS(examples.Plugin(), opts)
		if err != nil {
			return nil, err
		}
		logProblems(log, snap.Problems())
		m.Reload(true, time.Now(), len(snap.Skills()), len(snap.Agents()), problemLabels(snap.Problems()))
		log.Info("serving the embedded example plugin", zap.Int("skills", len(snap.Skills())), zap.Int("agents", len(snap.Agents())))
		return func() *catalog.Snapshot { return snap }, nil
	}
	w, err := catalog.NewWatcher(cfg.PluginDir, opts, func(ev catalog.ReloadEvent) {
		m.Reload(ev.OK, ev.At, ev.Skills, ev.Agents, problemLabels(ev.Problems))
		if !ev.OK {
			log.Error("plugin reload failed: keeping the last good catalog", zap.String("trigger", ev.Trigger), zap.Error(ev.Err))
			return
		}
		logProblems(log, ev.Problems)
		publish(ev.Changes)
		m.Dropped(len(ev.DroppedSkills), len(ev.DroppedAgents))
		if len(ev.DroppedSkills)+len(ev.DroppedAgents) > 0 {
			log.Warn("plugin reload stopped serving items", zap.Strings("skills", ev.DroppedSkills), zap.Strings("agents", ev.DroppedAgents))
		}
		log.Info("plugin loaded", zap.String("trigger", ev.Trigger), zap.Int("skills", ev.Skills), zap.Int("agents", ev.Agents),
			zap.Int("problems", len(ev.Problems)), zap.Duration("took", ev.Duration))
	})
	if err != nil {
		return nil, err
	}
	go func() {
		if err := w.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("plugin watcher stopped", zap.Error(err))
		}
	}()
	go reloadOnHangup(ctx, w)
	return w.Snapshot, nil
}

// reloadOnHangup reloads the plugin folder on each SIGHUP until ctx is done,
// as daemons conventionally do: for a folder whose change no event or poll
// has seen yet (an image volume, a network file system).
func reloadOnHangup(ctx context.Context, w *catalog.Watcher) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			w.Reload()
		}
	}
}

func logProblems(log *zap.Logger, ps []catalog.Problem) {
	for _, p := range ps {
		log.Warn("plugin item "+p.Severity, zap.String("path", p.Path), zap.String("kind", p.Kind), zap.String("reason", p.Reason))
	}
}

func problemLabels(ps []catalog.Problem) []metrics.Problem {
	out := make([]metrics.Problem, len(ps))
	for i, p := range ps {
		out[i] = metrics.Problem{Kind: p.Kind, Severity: p.Severity}
	}
	return out
}
