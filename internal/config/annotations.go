package config

// Annotations read by the injector rather than by the sidecar at run time.
// They share the prefix, so Load skips them instead of calling them unknown.
const (
	// AnnotationInject opts a pod in to injection: "true" or "false".
	AnnotationInject = AnnotationPrefix + "inject"
	// AnnotationStatus is written by the injector on a pod it has injected.
	AnnotationStatus = AnnotationPrefix + "status"
)

// IsInjectorKey reports whether an annotation name (without the prefix)
// belongs to the injector; the runtime configuration skips those.
func IsInjectorKey(name string) bool {
	switch name {
	case "inject", "status", "image", "resources", "upstream-port", "upstream-path",
		"port", "port-takeover", "plugin-configmaps", "plugin-image":
		return true
	}
	return false
}
