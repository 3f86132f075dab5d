package config

import "slices"

// IsInjectorKey reports whether an annotation name (without the prefix)
// belongs to the injector (internal/inject names them); they share the
// prefix, so Load skips them instead of calling them unknown.
func IsInjectorKey(name string) bool { return slices.Contains(injectorKeys, name) }

// injectorKeys are the annotation names (without the prefix) the injector
// reads.
var injectorKeys = []string{"inject", "status", "image", "resources", "upstream-port", "upstream-path",
	"port", "port-takeover", "plugin-configmaps", "plugin-image", "upstream-stdio"}
