package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	t.Parallel()
	o, err := parseOptions(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Duration != time.Minute || o.Workers != 12 || o.StreamWorkers != 4 || o.Skills != 50 || o.Reloads != 5 ||
		o.Tolerance != (Tolerance{Goroutines: 10, FDs: 5}) {
		t.Errorf("defaults = %+v, want 60s, 12+4 workers, 50 skills, 5 reloads, tolerance +10/+5", o)
	}
	bad := map[string][]string{
		"zero duration":  {"-duration", "0s"},
		"too long":       {"-duration", "2h"},
		"one worker":     {"-workers", "1"},
		"many workers":   {"-workers", "1000"},
		"negative swaps": {"-reloads", "-1"},
		"no skills":      {"-skills", "0"},
		"stray argument": {"extra"},
		"unknown flag":   {"-nope"},
	}
	for name, args := range bad {
		if _, err := parseOptions(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: parseOptions(%q) = nil error, want one", name, args)
		}
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-workers", "1"}, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "-workers") {
		t.Errorf("run(-workers 1) = %d, %q; want 2 and a message naming the flag", code, stderr.String())
	}
}
