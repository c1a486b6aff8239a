// Command schema writes the JSON Schemas of pinbot's config files into a
// directory (docs/schema): make schemas.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"pinbot.dev/pinbot/internal/schema"
)

func main() {
	dir := "docs/schema"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for name, gen := range schema.Files {
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
