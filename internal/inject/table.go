package inject

import (
	"fmt"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// AnnotationTable renders every pod annotation as a Markdown table: the
// injector's (from InjectorAnnotations) and then every runtime key of
// config.Keys, which the sidecar reads from the downward
// API file. docs/kubernetes.md holds a copy a test keeps equal.
func AnnotationTable() string {
	var b strings.Builder
	b.WriteString("| Annotation | Read by | Default | Meaning |\n|---|---|---|---|\n")
	for _, d := range InjectorAnnotations() {
		fmt.Fprintf(&b, "| `%s` | injector | %s | %s |\n", d.Name, d.Default, d.Meaning)
	}
	for _, k := range config.Keys() {
		def := "`" + k.Default + "`"
		if k.Default == "" {
			def = "(empty)"
		}
		by := "sidecar"
		if use, owned := injectorOwnedRuntimeKeys[k.Name]; owned {
			by = "sidecar; set by the injector on injected pods (use " + strings.ReplaceAll(use, "skills-sidecar.io/", "") + ")"
		}
		fmt.Fprintf(&b, "| `%s%s` | %s | %s | %s |\n", config.AnnotationPrefix, k.Name, by, def, k.Help)
	}
	return b.String()
}
