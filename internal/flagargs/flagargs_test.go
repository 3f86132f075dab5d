package flagargs

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		args       []string
		wantPos    []string
		wantFormat string
		wantErr    bool
	}{
		{"flags first", []string{"--format", "json", "dir"}, []string{"dir"}, "json", false},
		{"flags after", []string{"dir", "--format", "json"}, []string{"dir"}, "json", false},
		{"interleaved", []string{"a", "--format=json", "b"}, []string{"a", "b"}, "json", false},
		{"none", nil, nil, "text", false},
		{"dash dash ends flags", []string{"a", "--", "--format", "--other"}, []string{"a", "--format", "--other"}, "text", false},
		{"a lone dash is positional", []string{"-", "--format", "json"}, []string{"-"}, "json", false},
		{"unknown flag after", []string{"dir", "--frmat", "json"}, nil, "text", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fset := flag.NewFlagSet("test", flag.ContinueOnError)
			fset.SetOutput(io.Discard)
			format := fset.String("format", "text", "")
			pos, err := Parse(fset, tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q) error = %v, want error %v", tc.args, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantPos, pos); diff != "" {
				t.Errorf("Parse(%q) positional (-want +got):\n%s", tc.args, diff)
			}
			if *format != tc.wantFormat {
				t.Errorf("Parse(%q): --format = %q, want %q", tc.args, *format, tc.wantFormat)
			}
		})
	}
}
