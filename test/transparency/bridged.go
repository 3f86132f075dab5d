package main

import (
	"sort"
	"strings"
)

// Era-bridge comparison: the same scenario of the same legacy
// upstream, run on the legacy wire and, through the sidecar's era bridge,
// on the 2026-07-28 one. Configurations come in pairs named
// "legacy-SUITE" and "modern-SUITE" (scripts/e2e-transparency.sh --bridged).

// Passes reports whether a scenario passed: at least one check, none of
// them FAILURE (a WARNING or SKIPPED check does not fail a scenario, as in
// the conformance CLI's own tally).
func Passes(checks []Result) bool {
	if len(checks) == 0 {
		return false
	}
	for _, c := range checks {
		if c.Status == "FAILURE" {
			return false
		}
	}
	return true
}

// BridgedRow is one scenario that passed on the legacy wire (directly, or
// through the sidecar for the sidecar's own scenarios) with its outcome on
// the modern wire through the sidecar.
type BridgedRow struct {
	Upstream, Suite, Scenario string
	// LegacyBy says which legacy run passed: "direct", "sidecar" or both.
	LegacyBy string
	// Modern is "pass", "FAIL" or "not on the modern wire" (the suite has no
	// such scenario at 2026-07-28; not a failure).
	Modern string
	// Failed lists the modern run's failing check ids.
	Failed []string
}

// CompareBridged applies the rule: every scenario that passes on the
// legacy wire (direct or sidecar, config "legacy-SUITE") passes through the
// sidecar on the modern one (config "modern-SUITE"). direct and sidecar are
// the two sides' checks as load reads them.
func CompareBridged(direct, sidecar map[Key]Result) (rows []BridgedRow, passed, failed int) {
	return CompareEras(direct, sidecar, "legacy-", "modern-")
}

// CompareEras is CompareBridged from the wire whose configurations are
// named with prefix from to the one named with prefix to: -reverse
// compares "modern-" to "legacy-", the bridge's check for legacy
// clients in front of a modern-only upstream (the row's LegacyBy then
// names who passed on the modern wire, Modern the legacy wire's outcome).
func CompareEras(direct, sidecar map[Key]Result, from, to string) (rows []BridgedRow, passed, failed int) {
	type scen struct{ upstream, config, scenario string }
	group := func(m map[Key]Result) map[scen][]Result {
		g := map[scen][]Result{}
		for k, r := range m {
			s := scen{k.Upstream, k.Config, k.Scenario}
			g[s] = append(g[s], r)
		}
		return g
	}
	d, s := group(direct), group(sidecar)
	byKey := map[scen]*BridgedRow{}
	for _, side := range []struct {
		name string
		g    map[scen][]Result
	}{{"direct", d}, {"sidecar", s}} {
		for k, checks := range side.g {
			suite, ok := strings.CutPrefix(k.config, from)
			if !ok || !Passes(checks) {
				continue
			}
			key := scen{k.upstream, suite, k.scenario}
			if r := byKey[key]; r != nil {
				r.LegacyBy = "direct and sidecar"
				continue
			}
			byKey[key] = &BridgedRow{Upstream: k.upstream, Suite: suite, Scenario: k.scenario, LegacyBy: side.name}
		}
	}
	for key, r := range byKey {
		modern, ok := s[scen{key.upstream, to + key.config, key.scenario}]
		switch {
		case !ok:
			r.Modern = "not on the " + strings.TrimSuffix(to, "-") + " wire"
		case Passes(modern):
			r.Modern = "pass"
			passed++
		default:
			r.Modern = "FAIL"
			failed++
			for k, res := range sidecar {
				if k.Upstream == key.upstream && k.Config == to+key.config && k.Scenario == key.scenario && res.Status == "FAILURE" {
					r.Failed = append(r.Failed, k.Check)
				}
			}
			sort.Strings(r.Failed)
		}
		rows = append(rows, *r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		return a.Upstream+" "+a.Suite+" "+a.Scenario < b.Upstream+" "+b.Suite+" "+b.Scenario
	})
	return rows, passed, failed
}
