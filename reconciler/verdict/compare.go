package verdict

import (
	"fmt"
	"slices"
	"strings"

	"pinbot.dev/pinbot/internal/imageref"
)

// Comparing: one container's reported imageID against the digest Git
// pins, with the registry's answers about indexes and their children.

// comparison is one running container judged against its pin.
type comparison struct {
	repo, gitDigest, imageID string
	platform                 imageref.Platform
	platformErr              error
	mirrors                  []Mirror
	lookups                  Lookups
	need                     func(Lookup)
}

// judgement is a comparison's outcome: the verdict, why, the other
// repository name the runtime used (if any), and the evidence it rests on.
type judgement struct {
	verdict   Verdict
	reason    string
	otherRepo string
	evidence  []string
}

// compare judges one reported imageID against the digest Git pins. Only
// digests are compared: a repository name in the imageID is reported, never
// trusted or held against the Pod. A relation between an index and one of
// its children counts only once the registry proves it for the Node's
// platform; when it cannot, the verdict is Inconclusive.
func compare(c comparison) judgement {
	running, form := parseImageID(c.imageID)
	j := judgement{evidence: []string{fmt.Sprintf("imageID %q", c.imageID)}}
	if form == formInvalid {
		j.verdict, j.reason = Unknown, fmt.Sprintf("unrecognised imageID %q", c.imageID)
		return j
	}
	if form == formManifest {
		j.otherRepo, j.reason = otherRepository(c.repo, c.imageID, c.mirrors)
	}
	if form == formManifest && running == c.gitDigest {
		j.verdict = Verified
		return j
	}
	if c.platformErr != nil {
		j.verdict, j.reason = Unknown, c.platformErr.Error()
		return j
	}
	j.evidence = append(j.evidence, "node platform "+c.platform.String())
	pinned := c.repo + "@" + c.gitDigest
	if form == formConfig {
		l := Lookup{Kind: LookupConfigs, Ref: pinned, Platform: c.platform}
		c.need(l)
		a, ok := c.lookups[l]
		if !ok || a.Err != "" {
			j.verdict, j.reason = Inconclusive, unanswered(l, a, ok)
			return j
		}
		j.evidence = append(j.evidence, fmt.Sprintf("registry: %s has config %s for %s", pinned, strings.Join(a.Digests, ", "), c.platform))
		switch {
		case slices.Contains(a.Digests, running) && len(a.Digests) == 1:
			j.verdict, j.reason = Verified, fmt.Sprintf("config digest of the pinned image for %s", c.platform)
		case slices.Contains(a.Digests, running):
			j.verdict, j.reason = Inconclusive, fmt.Sprintf("config %s is one of %d children of the pinned index for %s; the Node reports no variant to tell which it runs", running, len(a.Digests), c.platform)
		default:
			j.verdict, j.reason = Mismatch, fmt.Sprintf("running config %s, Git %s has config %s for %s", running, c.gitDigest, strings.Join(a.Digests, ", "), c.platform)
		}
		return j
	}
	// The runtime reports another manifest: a child of the pinned index,
	// the index of a pinned child, or another image. Ask about both.
	down := Lookup{Kind: LookupChildren, Ref: pinned, Platform: c.platform}
	up := Lookup{Kind: LookupChildren, Ref: c.repo + "@" + running, Platform: c.platform}
	c.need(down)
	c.need(up)
	a, ok := c.lookups[down]
	if !ok || a.Err != "" {
		j.verdict, j.reason = Inconclusive, unanswered(down, a, ok)
		return j
	}
	if a.Index {
		j.evidence = append(j.evidence, fmt.Sprintf("registry: index %s lists %s for %s", imageref.Abbrev(c.gitDigest), list(a.Digests), c.platform))
		if slices.Contains(a.Digests, running) {
			j.verdict, j.reason = Verified, fmt.Sprintf("the %s child of the pinned index", c.platform)
			return j
		}
		j.verdict, j.reason = Mismatch, fmt.Sprintf("running %s, Git %s", running, c.gitDigest)
		return j
	}
	b, ok := c.lookups[up]
	switch {
	case ok && b.Missing:
		j.evidence = append(j.evidence, fmt.Sprintf("registry: %s does not exist in %s", imageref.Abbrev(running), c.repo))
	case !ok || b.Err != "":
		j.verdict, j.reason = Inconclusive, unanswered(up, b, ok)
		return j
	case b.Index:
		j.evidence = append(j.evidence, fmt.Sprintf("registry: running index %s lists %s for %s", imageref.Abbrev(running), list(b.Digests), c.platform))
		switch {
		case slices.Contains(b.Digests, c.gitDigest) && len(b.Digests) == 1:
			j.verdict, j.reason = Verified, fmt.Sprintf("the runtime reports the index %s, whose only %s child Git pins", imageref.Abbrev(running), c.platform)
			return j
		case slices.Contains(b.Digests, c.gitDigest):
			j.verdict, j.reason = Inconclusive, fmt.Sprintf("the runtime reports the index %s, which has %d children for %s; the Node reports no variant to tell whether it runs the pinned one", imageref.Abbrev(running), len(b.Digests), c.platform)
			return j
		}
	}
	j.verdict, j.reason = Mismatch, fmt.Sprintf("running %s, Git %s", running, c.gitDigest)
	return j
}

// unanswered says why a lookup gives no proof.
func unanswered(l Lookup, a Answer, asked bool) string {
	if !asked {
		return fmt.Sprintf("registry lookup of %s of %s for %s not made", l.Kind, l.Ref, l.Platform)
	}
	return fmt.Sprintf("registry unreachable for %s, so its relation to the running image is unproven: %s", l.Ref, a.Err)
}

func list(digests []string) string {
	if len(digests) == 0 {
		return "no child"
	}
	out := make([]string, len(digests))
	for i, d := range digests {
		out[i] = imageref.Abbrev(d)
	}
	return strings.Join(out, ", ")
}

// otherRepository names the repository an imageID reports when it is not
// the pinned one (a mirror, or another repository holding the same
// content, as CRI-O may report), and says whether a mirror rule maps the
// two names.
func otherRepository(pinned, imageID string, mirrors []Mirror) (string, string) {
	name, _, _ := strings.Cut(trimRuntimeScheme(imageID), "@")
	want, err1 := imageref.ParseRepository(pinned)
	got, err2 := imageref.ParseRepository(name)
	if err1 != nil || err2 != nil || want == got {
		return "", ""
	}
	for _, m := range mirrors {
		if rest, ok := strings.CutPrefix(want, m.From); ok && got == m.To+rest {
			return got, fmt.Sprintf("the runtime names the mirror %s (mirror rule %s → %s); digests compared", got, m.From, m.To)
		}
	}
	return got, fmt.Sprintf("the runtime names another repository, %s, for the same digest; digests compared", got)
}
