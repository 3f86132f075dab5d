// Package staticbin tells whether an ELF executable is statically linked
// (no PT_INTERP program header and no dynamic section), which the image's
// empty final stage needs. It owns that one check and must not run the
// binary it inspects.
package staticbin

import (
	"debug/elf"
	"errors"
	"fmt"
)

// ErrDynamic is wrapped when a binary needs a dynamic loader.
var ErrDynamic = errors.New("staticbin: dynamically linked")

// Check opens the ELF file at path and returns nil when it is static.
func Check(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			return fmt.Errorf("%s: %w (PT_INTERP present)", path, ErrDynamic)
		case elf.PT_DYNAMIC:
			return fmt.Errorf("%s: %w (PT_DYNAMIC present)", path, ErrDynamic)
		}
	}
	return nil
}
