// Command clidocs writes pinbot's CLI reference into a directory
// (docs/cli), from the cobra commands: make docs.
package main

import (
	"fmt"
	"os"

	"pinbot.dev/pinbot/cmd/pinbot/cli"
)

func main() {
	dir := "docs/cli"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := cli.WriteReference(dir); err != nil {
		fmt.Fprintf(os.Stderr, "clidocs: %v\n", err)
		os.Exit(1)
	}
}
