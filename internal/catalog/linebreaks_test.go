package catalog

import (
	"errors"
	"testing"
)

// TestFrontmatterRawYAML11LineBreaks: YAML 1.1 counts NEL (U+0085), LS
// (U+2028) and PS (U+2029) as line breaks; YAML 1.2 does not ("YAML version
// 1.1 did support the above non-ASCII line break characters; however, JSON
// does not. Hence, to ensure JSON compatibility, YAML treats them as
// non-break characters as of version 1.2", YAML 1.2.2 §5.4). Written raw in
// the frontmatter, each can make a YAML 1.1 host (PyYAML) and a YAML 1.2
// client read different values, so there is no JSON both read: the
// frontmatter is refused. Escaped in a double-quoted string (\N, \L, \P) it
// is the same character to both, and is served.
func TestFrontmatterRawYAML11LineBreaks(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		// 1.1 folds the NEL to a space: "p q"; 1.2 keeps it: "p\u0085q".
		"NEL in a double-quoted string": "---\nname: a\ndescription: \"p\u0085q\"\n---\n",
		"NEL in a single-quoted string": "---\nname: a\ndescription: 'p\u0085q'\n---\n",
		// 1.1 ends the comment at the LS, so description is a key of the
		// mapping; to 1.2 the whole line is a comment and there is no
		// description.
		"LS ends a comment": "---\nname: a\n# note\u2028description: hidden\n---\n",
		// 1.1 trims the spaces after the break: "p\u2028q"; 1.2 keeps
		// them: "p\u2028  q".
		"LS then spaces in a quoted string": "---\nname: a\ndescription: \"p\u2028  q\"\n---\n",
		"PS then spaces in a quoted string": "---\nname: a\ndescription: \"p\u2029  q\"\n---\n",
	} {
		fm, _, _, err := ParseFrontmatterAmbiguities([]byte(in))
		if !errors.Is(err, ErrFrontmatterSyntax) {
			t.Errorf("%s: %q reads as %s, %v; want ErrFrontmatterSyntax (YAML 1.1 and 1.2 readers read it differently)", name, in, fm, err)
		}
	}
	in := "---\nname: a\ndescription: \"p\\Nq\\Lr\\Ps\"\n---\n"
	fm, _, _, err := ParseFrontmatterAmbiguities([]byte(in))
	if err != nil || string(fm) != `{"name":"a","description":"p\u0085q\u2028r\u2029s"}` {
		t.Errorf("%q = %s, %v; want the escapes served", in, fm, err)
	}
}
