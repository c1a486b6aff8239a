// Command bench measures pinbot against the targets in its issues and
// prints each figure next to a baseline measured in the same run, as a
// ratio. Timings never gate unit tests; they are reported here.
//
// Each section lives in its own file and registers itself in sections.
// Run one with: go run ./hack/bench -run pins
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
)

// section is one group of measurements.
type section struct {
	name string
	run  func(ctx context.Context, r *report) error
	// byName sections run only when -run names them: runs too long for
	// every make bench, such as the fleet's record attempt.
	byName bool
}

// sections run in this order; files add themselves in init.
var sections []section

func register(name string, run func(ctx context.Context, r *report) error) {
	sections = append(sections, section{name: name, run: run})
}

// registerByName adds a section that runs only when -run names it.
func registerByName(name string, run func(ctx context.Context, r *report) error) {
	sections = append(sections, section{name: name, run: run, byName: true})
}

func main() {
	only := flag.String("run", "", "comma-separated section names to run (default: all)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	r := &report{}
	failed := false
	for _, s := range sections {
		if (len(want) > 0 || s.byName) && !want[s.name] {
			continue
		}
		fmt.Printf("== %s\n", s.name)
		if err := s.run(ctx, r); err != nil {
			fmt.Printf("   FAILED: %s\n", err)
			failed = true
		}
	}
	r.summary(os.Stdout)
	if failed {
		os.Exit(1)
	}
}
