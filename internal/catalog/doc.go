// Package catalog turns a plugin folder (Claude Code plugin layout: skills/,
// agents/, .claude-plugin/plugin.json) into an immutable [Snapshot] that the
// extension handlers serve, and watches the folder to publish the next
// snapshot when it changes.
//
// The package owns: walking the folder safely (symlinks that resolve inside
// the root are followed, anything escaping it, devices, sockets and FIFOs are
// refused, dot-files are never served, not even through a symlink); parsing
// SKILL.md and agent frontmatter into JSON that equals what a strict YAML 1.2
// client reads from the same bytes, and finding the plain scalars a YAML 1.1
// reader (PyYAML) types differently ([Ambiguity]; a SKILL.md with one is
// skipped or warned, [Options].FrontmatterPortability); the Agent Skills and SEP-2640 rules for
// names, descriptions and limits; the skill:// URI scheme and its path
// validation; hot reload; and the layouts a plugin folder comes in: the tree
// itself, or several ConfigMaps mounted whole whose keys encode the paths
// ([LayoutConfigMaps], [EncodeKey], [DecodeKey]).
//
// It must not: log, touch metrics or the network, or take the process down.
// A bad file costs only itself: it is left out of the snapshot with a one-line
// [Problem] that logs, metrics and the lint subcommand all share. Everything
// reachable from a published [Snapshot] is immutable; readers never lock and
// never wait for the builder. The parsing half ([ParseFrontmatter],
// [ParseFrontmatterAmbiguities], [ValidatePath], [PathFromURI]) is pure:
// bytes and values in, values out.
package catalog
