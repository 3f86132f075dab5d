package inject

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// AnnotationTable renders every pod annotation as a Markdown table: the
// injector's (from InjectorAnnotations) and then every runtime key of
// config.Config (from its tags), which the sidecar reads from the downward
// API file. docs/kubernetes.md holds a copy a test keeps equal.
func AnnotationTable() string {
	var b strings.Builder
	b.WriteString("| Annotation | Read by | Default | Meaning |\n|---|---|---|---|\n")
	for _, d := range InjectorAnnotations() {
		fmt.Fprintf(&b, "| `%s` | injector | %s | %s |\n", d.Name, d.Default, d.Meaning)
	}
	t := reflect.TypeFor[config.Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("key")
		def := "`" + f.Tag.Get("default") + "`"
		if f.Tag.Get("default") == "" {
			def = "(empty)"
		}
		by := "sidecar"
		if use, owned := injectorOwnedRuntimeKeys[key]; owned {
			by = "sidecar; set by the injector on injected pods (use " + strings.ReplaceAll(use, "skills-sidecar.io/", "") + ")"
		}
		fmt.Fprintf(&b, "| `%s%s` | %s | %s | %s |\n", config.AnnotationPrefix, key, by, def, f.Tag.Get("help"))
	}
	return b.String()
}
