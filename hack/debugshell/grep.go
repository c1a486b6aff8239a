package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// grep is grep [-ivcqnlhHEFwxor] [-e PATTERN]... [PATTERN] [FILE...]:
// the options pipelines use. Patterns are Go's regular expressions (RE2,
// as -E's extended syntax reads, without backreferences); -F takes them
// as fixed strings. It exits 0 when a line matched, 1 when none did, 2
// on an error.
func grep(args []string) error {
	fs := flag.NewFlagSet("grep", flag.ContinueOnError)
	var pats multi
	ignore := fs.Bool("i", false, "ignore case")
	invert := fs.Bool("v", false, "select lines that do not match")
	count := fs.Bool("c", false, "print only a count of selected lines")
	quiet := fs.Bool("q", false, "print nothing; exit 0 on the first match")
	number := fs.Bool("n", false, "prefix each line with its line number")
	names := fs.Bool("l", false, "print only the names of files with a match")
	noName := fs.Bool("h", false, "never prefix lines with the file name")
	withName := fs.Bool("H", false, "always prefix lines with the file name")
	fs.Bool("E", false, "extended regular expressions (always)")
	fixed := fs.Bool("F", false, "patterns are fixed strings")
	word := fs.Bool("w", false, "match whole words")
	line := fs.Bool("x", false, "match whole lines")
	only := fs.Bool("o", false, "print only the matching parts")
	recursive := fs.Bool("r", false, "read directories recursively")
	fs.Var(&pats, "e", "a pattern (repeatable)")
	if err := fs.Parse(bundled(args)); err != nil {
		return exit(2)
	}
	rest := fs.Args()
	if len(pats) == 0 {
		if len(rest) == 0 {
			fmt.Fprintln(os.Stderr, "usage: grep [-ivcqnlhHEFwxor] [-e PATTERN]... [PATTERN] [FILE...]")
			return exit(2)
		}
		pats, rest = multi{rest[0]}, rest[1:]
	}
	var alts []string
	for _, p := range pats {
		if *fixed {
			p = regexp.QuoteMeta(p)
		}
		alts = append(alts, "(?:"+p+")")
	}
	expr := strings.Join(alts, "|")
	switch {
	case *line:
		expr = "^(?:" + expr + ")$"
	case *word:
		expr = `\b(?:` + expr + `)\b`
	}
	if *ignore {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "grep: %s\n", err)
		return exit(2)
	}
	files, failed := inputs(rest, *recursive)
	prefix := *withName || len(files) > 1 && !*noName
	matched := false
	for _, f := range files {
		n, err := grepFile(f, re, *invert, func(ln int, text string) bool {
			switch {
			case *quiet || *count || *names:
				return !*quiet && !*names
			}
			var b strings.Builder
			if prefix {
				b.WriteString(f + ":")
			}
			if *number {
				fmt.Fprintf(&b, "%d:", ln)
			}
			if *only && !*invert {
				for _, m := range re.FindAllString(text, -1) {
					fmt.Println(b.String() + m)
				}
				return true
			}
			fmt.Println(b.String() + text)
			return true
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "grep: %s\n", err)
			failed = true
			continue
		}
		matched = matched || n > 0
		switch {
		case *quiet && matched:
			return nil
		case *names && n > 0:
			fmt.Println(f)
		case *count && prefix:
			fmt.Printf("%s:%d\n", f, n)
		case *count:
			fmt.Println(n)
		}
	}
	switch {
	case failed && !(*quiet && matched):
		return exit(2)
	case !matched:
		return exit(1)
	}
	return nil
}

// bundled splits the options grep -in gives together into -i -n, and
// -ePATTERN into -e PATTERN, up to the first operand or "--".
func bundled(args []string) []string {
	var out []string
	for i, a := range args {
		switch {
		case a == "--" || !strings.HasPrefix(a, "-") || a == "-":
			return append(out, args[i:]...)
		case strings.HasPrefix(a, "-e") && len(a) > 2:
			out = append(out, "-e", a[2:])
		case len(a) > 2 && a[1] != '-' && strings.Trim(a[1:], "ivcqnlhHEFwxor") == "":
			for _, c := range a[1:] {
				out = append(out, "-"+string(c))
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// multi is a repeatable flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// exit is an exit status for main.
type exit int

func (e exit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// inputs are the files to read: args ("-" or none for stdin), with the
// files under each directory when recursive; failed says one was a
// directory without it.
func inputs(args []string, recursive bool) (files []string, failed bool) {
	if len(args) == 0 {
		return []string{"-"}, false
	}
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			files = append(files, a)
			continue
		}
		if !recursive {
			fmt.Fprintf(os.Stderr, "grep: %s: is a directory\n", a)
			failed = true
			continue
		}
		_ = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
	}
	return files, failed
}

// grepFile calls emit for each selected line of name until it returns
// false, and returns how many lines it selected.
func grepFile(name string, re *regexp.Regexp, invert bool, emit func(int, string) bool) (int, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for ln := 1; sc.Scan(); ln++ {
		if re.MatchString(sc.Text()) != invert {
			n++
			if !emit(ln, sc.Text()) {
				return n, nil
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return n, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}
