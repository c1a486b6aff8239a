package pins

import (
	"bytes"
	"strings"
)

// dockerToken is one whitespace-separated word of an instruction and the
// offset of its first byte in the file.
type dockerToken struct {
	text string
	off  int
}

// dockerfileSites lists the FROM references of a Dockerfile. It follows
// the Dockerfile grammar as far as FROM needs: parser directives (escape),
// line continuations, comment lines, heredocs and stage names.
func dockerfileSites(src []byte, lt *lineTable, sites []site, repos repoCache) []site {
	nlines := len(lt.starts)
	line := func(i int) []byte { return src[lt.starts[i]:lt.lineEnd(i+1)] }
	escape := byte('\\')

	i := 0
	// Parser directives: "# key=value" lines at the very top.
	for ; i < nlines; i++ {
		l := bytes.TrimSpace(line(i))
		if len(l) == 0 || l[0] != '#' {
			break
		}
		k, v, ok := strings.Cut(string(bytes.TrimSpace(l[1:])), "=")
		if !ok || strings.ContainsAny(strings.TrimSpace(k), " \t") {
			break
		}
		if strings.EqualFold(strings.TrimSpace(k), "escape") && strings.TrimSpace(v) == "`" {
			escape = '`'
		}
	}

	stages := map[string]bool{}
	// Build arguments with a default, which a FROM may name: "ARG
	// BASE=golang:1.26@sha256:..." then "FROM ${BASE}".
	type buildArg struct {
		tok     dockerToken // the value, quotes stripped
		ignored bool
		used    bool
	}
	buildArgs := map[string]*buildArg{}
	ignoreAbove := false // the comment lines just above the next instruction hold an ignore comment
	for i < nlines {
		l := bytes.TrimLeft(line(i), " \t")
		if len(l) == 0 {
			ignoreAbove = false
			i++
			continue
		}
		if l[0] == '#' {
			ignoreAbove = ignoreAbove || hasIgnore(l)
			i++
			continue
		}
		ignored := ignoreAbove
		ignoreAbove = false

		var toks []dockerToken
		for {
			body := line(i)
			start := lt.starts[i]
			i++
			trimmed := bytes.TrimRight(body, " \t")
			cont := len(trimmed) > 0 && trimmed[len(trimmed)-1] == escape
			if cont {
				body = trimmed[:len(trimmed)-1]
			}
			toks = appendTokens(toks, body, start)
			if !cont {
				break
			}
			for i < nlines {
				t := bytes.TrimLeft(line(i), " \t")
				if len(t) != 0 && t[0] != '#' {
					break
				}
				i++
			}
			if i >= nlines {
				break
			}
		}
		i = skipHeredocs(toks, line, i, nlines)
		if len(toks) >= 2 && strings.EqualFold(toks[0].text, "ARG") {
			for _, t := range toks[1:] {
				name, value, ok := strings.Cut(t.text, "=")
				if !ok || name == "" {
					continue
				}
				off := t.off + len(name) + 1
				if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
					value, off = value[1:len(value)-1], off+1
				}
				buildArgs[name] = &buildArg{tok: dockerToken{text: value, off: off}, ignored: ignored}
			}
			continue
		}
		if len(toks) < 2 || !strings.EqualFold(toks[0].text, "FROM") {
			continue
		}
		args := toks[1:]
		j := 0
		for j < len(args) && strings.HasPrefix(args[j].text, "--") {
			j++
		}
		if j >= len(args) {
			continue
		}
		img := args[j]
		stage := ""
		if j+2 < len(args) && strings.EqualFold(args[j+1].text, "AS") {
			stage = strings.ToLower(args[j+2].text)
		}
		lower := strings.ToLower(img.text)
		isStage := stages[lower]
		if stage != "" {
			stages[stage] = true
		}
		if isStage || lower == "scratch" {
			continue
		}
		if strings.Contains(img.text, "$") {
			// FROM $NAME or ${NAME}: the pin is the argument's default,
			// once however many stages start from it.
			a := buildArgs[argName(img.text)]
			if a == nil || a.used {
				continue
			}
			a.used = true
			img, ignored = a.tok, a.ignored
		}
		r, ok := parseRef(img.text, repos)
		if !ok || r.digOff < 0 && r.tagOff < 0 {
			continue
		}
		s := newSite(KindDockerfile, r.repo)
		s.tag, s.digest, s.ignored = r.tag, r.digest, ignored
		if r.digOff >= 0 {
			s.digOff = img.off + r.digOff
			s.line, s.col = lt.position(s.digOff)
		} else {
			s.pinOff, s.pinPrefix = img.off+r.end, "@"
			s.line, s.col = lt.position(s.pinOff)
		}
		if r.tagOff >= 0 {
			s.tagOff, s.tagLen = img.off+r.tagOff, len(r.tag)
		}
		sites = append(sites, s)
	}
	return sites
}

// appendTokens splits a physical line's text into words.
func appendTokens(toks []dockerToken, body []byte, start int) []dockerToken {
	for k := 0; k < len(body); {
		if body[k] == ' ' || body[k] == '\t' {
			k++
			continue
		}
		e := k
		for e < len(body) && body[e] != ' ' && body[e] != '\t' {
			e++
		}
		toks = append(toks, dockerToken{text: string(body[k:e]), off: start + k})
		k = e
	}
	return toks
}

// skipHeredocs skips the bodies of the heredocs ("<<EOF", "<<-EOF",
// "<<'EOF'") an instruction opens, returning the next line to read.
func skipHeredocs(toks []dockerToken, line func(int) []byte, i, nlines int) int {
	for _, t := range toks {
		word, ok := strings.CutPrefix(t.text, "<<")
		if !ok {
			continue
		}
		dash := strings.HasPrefix(word, "-")
		word = strings.Trim(strings.TrimPrefix(word, "-"), `"'`)
		if !isHeredocWord(word) {
			continue
		}
		for i < nlines {
			l := line(i)
			i++
			if dash {
				l = bytes.TrimLeft(l, "\t")
			}
			if string(l) == word {
				break
			}
		}
	}
	return i
}

// isHeredocWord reports a heredoc delimiter: a shell identifier.
func isHeredocWord(w string) bool {
	if w == "" || '0' <= w[0] && w[0] <= '9' {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !isWordByte(w[i]) || w[i] == '-' {
			return false
		}
	}
	return true
}

// argName returns NAME for a reference that is exactly "$NAME" or
// "${NAME}", and "" otherwise.
func argName(ref string) string {
	name, ok := strings.CutPrefix(ref, "$")
	if !ok {
		return ""
	}
	if inner, ok := strings.CutPrefix(name, "{"); ok {
		if name, ok = strings.CutSuffix(inner, "}"); !ok {
			return ""
		}
	}
	for i := 0; i < len(name); i++ {
		if !isWordByte(name[i]) || name[i] == '-' {
			return ""
		}
	}
	return name
}
