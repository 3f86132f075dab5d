package config

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sources are the inputs Load reads, in rising precedence after the
// defaults: Annotations, Environ, Args.
type Sources struct {
	// Annotations is the content of the downward API annotations file; nil
	// means none.
	Annotations []byte
	// Environ is the process environment as "KEY=value" strings; only
	// SKILLS_SIDECAR_* entries are read.
	Environ []string
	// Args are the command-line arguments after the subcommand.
	Args []string
	// Usage, when non-nil, receives the flag set's usage text on -h.
	Usage io.Writer
}

// ErrHelp is returned by Load when the arguments asked for help.
var ErrHelp = flag.ErrHelp

// field is one key of Config, found by reflection on its tags.
type field struct {
	key, def, help string
	index          int
}

// Key describes one configuration key as its struct tags declare it: the
// one table every rendering of the keys reads (docs/configuration.md's
// table, the injector's annotation table).
type Key struct {
	// Name is the key as flags and annotations spell it, e.g. "upstream".
	Name string
	// Default is the default value as text; "" when empty.
	Default string
	// Help says what the key means.
	Help string
}

// Keys returns every key of Config in declaration order.
func Keys() []Key {
	fs := fields()
	out := make([]Key, len(fs))
	for i, f := range fs {
		out[i] = Key{Name: f.key, Default: f.def, Help: f.help}
	}
	return out
}

func fields() []field {
	t := reflect.TypeFor[Config]()
	out := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		out = append(out, field{key: f.Tag.Get("key"), def: f.Tag.Get("default"), help: f.Tag.Get("help"), index: i})
	}
	return out
}

// EnvName is the environment variable of a key: SKILLS_SIDECAR_ and the key
// upper-cased with dashes as underscores.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// Defaults returns the configuration with every key at its default.
func Defaults() Config {
	var c Config
	for _, f := range fields() {
		if err := set(&c, f, f.def); err != nil {
			panic(fmt.Sprintf("config: default of %s: %v", f.key, err)) // a programming error, caught by tests
		}
	}
	return c
}

// Load fills a Config from the defaults and then each source in rising
// precedence. It returns the positional arguments left after the flags. Every
// unknown key and unparsable value is reported, joined, naming the key as the
// user wrote it; Validate is then applied.
func Load(src Sources) (Config, []string, error) {
	c := Defaults()
	byKey := map[string]field{}
	var keys []string
	for _, f := range fields() {
		byKey[f.key] = f
		keys = append(keys, f.key)
	}
	var errs []error

	ann, err := ParseAnnotations(src.Annotations)
	if err != nil {
		errs = append(errs, err)
	}
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		name, ok := strings.CutPrefix(k, AnnotationPrefix)
		if !ok || IsInjectorKey(name) {
			continue
		}
		f, ok := byKey[name]
		if !ok {
			errs = append(errs, fmt.Errorf("annotation %s: unknown key%s", k,
				didYouMean(name, append(slices.Clone(keys), injectorKeys...), func(s string) string { return AnnotationPrefix + s })))
			continue
		}
		if err := set(&c, f, ann[k]); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", k, err))
		}
	}

	envKeys := map[string]field{}
	for _, f := range byKey {
		envKeys[EnvName(f.key)] = f
	}
	for _, kv := range src.Environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		f, ok := envKeys[k]
		if !ok {
			errs = append(errs, fmt.Errorf("environment %s: unknown key%s", k,
				didYouMean(strings.TrimPrefix(k, EnvPrefix), keys, EnvName)))
			continue
		}
		if err := set(&c, f, v); err != nil {
			errs = append(errs, fmt.Errorf("environment %s: %w", k, err))
		}
	}

	// The flag package's own output (its error and a dump of every flag)
	// is discarded: an unknown flag is reported here with a suggestion, and
	// the flags are printed only when asked for with -h.
	fsFlags := flag.NewFlagSet("skills-sidecar", flag.ContinueOnError)
	fsFlags.SetOutput(io.Discard)
	for _, f := range fields() {
		fsFlags.Var(flagValue{c: &c, f: f}, f.key, f.help)
	}
	if unknown := unknownFlags(src.Args, byKey); len(unknown) > 0 {
		for _, name := range unknown {
			errs = append(errs, fmt.Errorf("flag --%s: unknown flag%s", name,
				didYouMean(name, keys, func(s string) string { return "--" + s })))
		}
	} else if err := fsFlags.Parse(src.Args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if src.Usage != nil {
				fsFlags.SetOutput(src.Usage)
				fsFlags.PrintDefaults()
			}
			return c, nil, ErrHelp
		}
		errs = append(errs, fmt.Errorf("flags: %w", err))
	}
	if len(errs) > 0 {
		return c, nil, errors.Join(errs...)
	}
	return c, fsFlags.Args(), c.Validate()
}

// unknownFlags returns the names of the flags in args that are not keys,
// read the way the flag package reads them: every key takes a value
// (-k v or -k=v), and parsing stops at "--", "-" or the first argument that
// is not a flag. -h and -help are the flag package's own.
func unknownFlags(args []string, byKey map[string]field) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name == "h" || name == "help" {
			continue
		}
		if _, ok := byKey[name]; !ok {
			out = append(out, name)
		}
		if !hasValue {
			i++ // the next argument is this flag's value
		}
	}
	return out
}

// flagValue adapts one Config field to flag.Value.
type flagValue struct {
	c *Config
	f field
}

func (v flagValue) String() string {
	if v.c == nil {
		return ""
	}
	return fmt.Sprint(reflect.ValueOf(v.c).Elem().Field(v.f.index).Interface())
}

func (v flagValue) Set(s string) error { return set(v.c, v.f, s) }

func set(c *Config, f field, s string) error {
	fv := reflect.ValueOf(c).Elem().Field(f.index)
	switch fv.Interface().(type) {
	case string:
		fv.SetString(s)
	case time.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration (like 30s or 2m)", s)
		}
		fv.SetInt(int64(d))
	case int, int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", s)
		}
		fv.SetInt(n)
	case bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not a boolean", s)
		}
		fv.SetBool(b)
	default:
		return fmt.Errorf("unsupported type %s", fv.Type())
	}
	return nil
}

// ParseAnnotations parses the downward API annotations file: one
// `key="value"` per line, the value quoted as Go quotes strings (which is how
// the kubelet writes it). Blank lines are ignored; a duplicate key or a line
// of another shape is an error naming its line number.
func ParseAnnotations(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		k, q, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("annotations line %d: want key=\"value\"", n)
		}
		v, err := strconv.Unquote(q)
		if err != nil {
			return nil, fmt.Errorf("annotations line %d (%s): value is not a quoted string", n, k)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("annotations line %d: duplicate key %s", n, k)
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("annotations: %w", err)
	}
	return out, nil
}

// ReadAnnotations reads the annotations file at path from fsys-like readFile;
// a missing file yields nil and no error.
func ReadAnnotations(readFile func(string) ([]byte, error), path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read annotations file: %w", err)
	}
	return b, nil
}

// Table renders the configuration reference as a Markdown table: one row a
// key with its flag, environment variable, annotation, default and meaning.
func Table() string {
	var b strings.Builder
	b.WriteString("| Flag | Environment | Annotation | Default | Meaning |\n|---|---|---|---|---|\n")
	for _, f := range fields() {
		def := "`" + f.def + "`"
		if f.def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | `%s%s` | %s | %s |\n", f.key, EnvName(f.key), AnnotationPrefix, f.key, def, f.help)
	}
	return b.String()
}
