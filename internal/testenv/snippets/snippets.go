// Package snippets reads the command blocks of pinbot's Markdown docs, so
// that tests run them as a reader pastes them: a fenced block is run
// unless the line before its fence says why not, as
// "<!-- not run: the reason -->".
package snippets

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	File string
	Line int // the opening fence's, from 1
	Lang string
	Text string
	// NotRun is the reason a "<!-- not run: … -->" line before the fence
	// gives, "" for a block that is run.
	NotRun string
}

func (b Block) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

var notRun = regexp.MustCompile(`^<!--\s*not run:\s*(.*?)\s*-->$`)

// Read returns the fenced blocks of the Markdown file path, in order.
func Read(path string) ([]Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var (
		blocks []Block
		cur    *Block
		prev   string
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &Block{File: path, Line: n, Lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
			if m := notRun.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.NotRun = m[1]
				if cur.NotRun == "" {
					return nil, fmt.Errorf("%s:%d: a block not run must say why", path, n-1)
				}
			}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.Text += line + "\n"
		}
		prev = line
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a fence is never closed", path, cur.Line)
	}
	return blocks, sc.Err()
}

// Lang is the blocks of blocks in language lang.
func Lang(blocks []Block, lang string) []Block {
	var out []Block
	for _, b := range blocks {
		if b.Lang == lang {
			out = append(out, b)
		}
	}
	return out
}

var groovySh = regexp.MustCompile(`(?s)\bsh\s+'''\n(.*?)'''`)

// GroovySh is the scripts of the sh steps (triple-quoted) of a
// Jenkinsfile block, as the Jenkins agent writes them to a file and runs
// them.
func GroovySh(b Block) []string {
	var out []string
	for _, m := range groovySh.FindAllStringSubmatch(b.Text, -1) {
		out = append(out, m[1])
	}
	return out
}

// WorkflowRun is the run: of the step named step in a Gitea (or GitHub)
// Actions workflow block.
func WorkflowRun(b Block, step string) (string, error) {
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string `yaml:"name"`
				Run  string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(b.Text), &wf); err != nil {
		return "", fmt.Errorf("%s: %w", b, err)
	}
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			if s.Name == step && s.Run != "" {
				return s.Run, nil
			}
		}
	}
	return "", fmt.Errorf("%s: no step %q with a run:", b, step)
}

// Shell runs script with bash -euo pipefail in dir, with env as the whole
// environment, and returns its standard output; an error carries the
// script's output.
func Shell(ctx context.Context, dir string, env []string, script string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w\n--- script\n%s--- stdout\n%s--- stderr\n%s", err, script, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}
