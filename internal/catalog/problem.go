package catalog

// Severities of a [Problem].
const (
	// SeveritySkip means the item is left out of the snapshot.
	SeveritySkip = "skip"
	// SeverityWarn means the item is served but something about it is wrong.
	SeverityWarn = "warn"
)

// Kinds of a [Problem]: a short, bounded set fit for a metric label.
const (
	KindFrontmatter   = "frontmatter"   // missing, unterminated, not YAML, not JSON-representable, not a mapping, read differently by YAML 1.1 hosts
	KindName          = "name"          // skill or agent name missing or invalid
	KindDescription   = "description"   // description missing or invalid
	KindCompatibility = "compatibility" // compatibility not a string of at most 500 characters
	KindMetadata      = "metadata"      // metadata not a string map, or a reserved key
	KindLimits        = "limits"        // over the per-skill file count or byte size
	KindEncoding      = "encoding"      // a file that must be UTF-8 is not
	KindSymlink       = "symlink"       // a link escaping the root, dangling or looping
	KindSpecial       = "special"       // a device, socket, FIFO or other irregular file
	KindRead          = "read"          // an I/O error reading a file or directory
	KindPath          = "path"          // a file or directory name that cannot appear in a skill:// URI
	KindDuplicate     = "duplicate"     // a second agent with a name already taken
	KindReference     = "reference"     // an agent names a skill that is not served
	KindPlugin        = "plugin"        // .claude-plugin/plugin.json unreadable or invalid
	KindLayout        = "layout"        // the folder is not a plugin folder: none of skills/, agents/, .claude-plugin/
)

// Problem is one item the loader skipped or warned about. The same value
// feeds logs, metrics and the lint subcommand.
type Problem struct {
	// Path is the file or directory concerned, slash-separated and relative
	// to the plugin root, e.g. "skills/acme/billing/refunds/SKILL.md".
	Path string `json:"path"`
	// Reason is one sentence saying what is wrong, without a final period.
	Reason string `json:"reason"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Severity is SeveritySkip or SeverityWarn.
	Severity string `json:"severity"`
	// Ambiguous marks a KindFrontmatter problem whose only fault is a
	// plain scalar YAML 1.1 readers type differently ([Ambiguity]);
	// Options.FrontmatterPortability chooses its severity.
	Ambiguous bool `json:"ambiguous,omitempty"`
}

// problems collects Problems while a snapshot is built.
type problems []Problem

func (ps *problems) skip(path, kind, reason string) {
	*ps = append(*ps, Problem{Path: path, Reason: reason, Kind: kind, Severity: SeveritySkip})
}

func (ps *problems) warn(path, kind, reason string) {
	*ps = append(*ps, Problem{Path: path, Reason: reason, Kind: kind, Severity: SeverityWarn})
}
