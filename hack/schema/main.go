// Command schema writes the JSON Schemas of pinbot's config files into a
// directory (docs/schema): make schemas. The schemas are generated from
// the config files' Go types (schema.go): for editors
// (`# yaml-language-server: $schema=`) and for docs/schema. Unknown keys
// are not allowed, as the loaders refuse them.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	dir := "docs/schema"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for name, gen := range Files {
		b, err := gen()
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "schema %s: %v\n", name, err)
			os.Exit(1)
		}
	}
}
