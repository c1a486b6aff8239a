// Package ciinput reads what a CI build hands pinbot promote: a Kaniko
// --digest-file or --image-name-with-digest-file, a buildx
// --metadata-file, or --image and --digest, into the promotion's Inputs.
// It reads files, bounded; it checks nothing against a registry.
package ciinput

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/promote/pr"
)

// parseDigestFile reads a Kaniko --digest-file: one "sha256:..." with
// optional surrounding white space. file names the file in errors.
func parseDigestFile(file string, data []byte) (string, error) {
	d := strings.TrimSpace(string(data))
	if d == "" {
		return "", fmt.Errorf("%s: empty digest file", file)
	}
	first, rest, more := strings.Cut(d, "\n")
	first = strings.TrimSpace(first)
	if !imageref.ValidDigest(first) {
		return "", fmt.Errorf("%s:1: %s: %w", file, clip.Quote(first), imageref.ErrInvalidDigest)
	}
	if more {
		return "", fmt.Errorf("%s:2: a digest file holds one digest, but a second line follows: %s", file, clip.Quote(firstLine(rest)))
	}
	return first, nil
}

// ParseImageNameWithDigest reads a Kaniko --image-name-with-digest-file:
// "repo@sha256:..." or "repo:tag@sha256:...". Kaniko writes one line per
// destination; every line must name the same digest, and each repository
// becomes one promote.Input.
func ParseImageNameWithDigest(file string, data []byte) ([]promote.Input, error) {
	var ins []promote.Input
	byRepo := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := checkRefLen(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
		}
		ref, err := imageref.Parse(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
		}
		repo, tag, digest := ref.Repository, ref.Tag, ref.Digest
		if digest == "" {
			return nil, fmt.Errorf("%s:%d: %s has no @sha256:... digest", file, i+1, clip.Quote(line))
		}
		if len(ins) > 0 && ins[0].Digest != digest {
			return nil, fmt.Errorf("%s:%d: digest %s differs from %s on an earlier line", file, i+1, digest, ins[0].Digest)
		}
		ins = addInput(ins, byRepo, promote.Input{Image: repo, Digest: digest, Source: pr.SourceImageNameFile, File: file}, tag)
	}
	if len(ins) == 0 {
		return nil, fmt.Errorf("%s: empty image-name-with-digest file", file)
	}
	return ins, nil
}

// addInput appends in, or adds tag to the promote.Input of the same repository.
func addInput(ins []promote.Input, byRepo map[string]int, in promote.Input, tag string) []promote.Input {
	i, ok := byRepo[in.Image]
	if !ok {
		i = len(ins)
		byRepo[in.Image] = i
		ins = append(ins, in)
	}
	if tag != "" && !slices.Contains(ins[i].Tags, tag) {
		ins[i].Tags = append(ins[i].Tags, tag)
	}
	return ins
}

// Keys of buildx's --metadata-file JSON.
const (
	metaDigestKey = "containerimage.digest"
	metaNameKey   = "image.name"
)

// ParseMetadata reads buildx's --metadata-file JSON. It takes
// "containerimage.digest" and "image.name", which may list several
// comma-separated names: each distinct repository becomes one promote.Input whose
// Tags are the tags named for it. A bake metadata file (one such object per
// target) gives the Inputs of every target.
func ParseMetadata(file string, data []byte) ([]promote.Input, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonError(file, data, "parsing buildx metadata JSON", err)
	}
	_, hasDigest := top[metaDigestKey]
	if _, hasName := top[metaNameKey]; hasDigest || hasName {
		return parseMetadataObject(file, "", top)
	}
	// bake: {"target": {...}, ...}
	targets := make([]string, 0, len(top))
	for k := range top {
		targets = append(targets, k)
	}
	sort.Strings(targets)
	var ins []promote.Input
	for _, t := range targets {
		if strings.HasPrefix(t, "buildx.") {
			continue // buildx's own keys, such as buildx.build.warnings
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(top[t], &obj); err != nil {
			return nil, fmt.Errorf("%s: bake target %s: want an object with %s and %s: %w", file, clip.Quote(t), clip.Quote(metaDigestKey), clip.Quote(metaNameKey), err)
		}
		_, hasDigest := obj[metaDigestKey]
		if _, hasName := obj[metaNameKey]; !hasDigest && !hasName {
			continue // a target that pushed no image, such as a test stage
		}
		got, err := parseMetadataObject(file, t+".", obj)
		if err != nil {
			return nil, err
		}
		ins = append(ins, got...)
	}
	if len(ins) == 0 {
		return nil, fmt.Errorf("%s: no %s key: is this a buildx --metadata-file?", file, clip.Quote(metaDigestKey))
	}
	return ins, nil
}

func parseMetadataObject(file, prefix string, obj map[string]json.RawMessage) ([]promote.Input, error) {
	var digest, names string
	if _, ok := obj[metaDigestKey]; !ok {
		return nil, fmt.Errorf("%s: no %s key: is this a buildx --metadata-file?", file, clip.Quote(prefix+metaDigestKey))
	}
	if err := json.Unmarshal(obj[metaDigestKey], &digest); err != nil {
		return nil, fmt.Errorf("%s: key %s: want a string: %w", file, clip.Quote(prefix+metaDigestKey), err)
	}
	if !imageref.ValidDigest(digest) {
		return nil, fmt.Errorf("%s: key %s: %s: %w", file, clip.Quote(prefix+metaDigestKey), clip.Quote(digest), imageref.ErrInvalidDigest)
	}
	raw, ok := obj[metaNameKey]
	if !ok {
		return nil, fmt.Errorf("%s: no key %s: build with --tag and --push so buildx records the image name", file, clip.Quote(prefix+metaNameKey))
	}
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, fmt.Errorf("%s: key %s: want a string: %w", file, clip.Quote(prefix+metaNameKey), err)
	}
	var ins []promote.Input
	byRepo := map[string]int{}
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if err := checkRefLen(n); err != nil {
			return nil, fmt.Errorf("%s: key %s: %w", file, clip.Quote(prefix+metaNameKey), err)
		}
		ref, err := imageref.Parse(n)
		if err != nil {
			return nil, fmt.Errorf("%s: key %s: %w", file, clip.Quote(prefix+metaNameKey), err)
		}
		repo, tag, d := ref.Repository, ref.Tag, ref.Digest
		if d != "" && d != digest {
			return nil, fmt.Errorf("%s: key %s: %s names digest %s, but %s is %s", file, clip.Quote(prefix+metaNameKey), clip.Quote(n), d, clip.Quote(prefix+metaDigestKey), digest)
		}
		ins = addInput(ins, byRepo, promote.Input{Image: repo, Digest: digest, Source: pr.SourceBuildxMetadata, File: file}, tag)
	}
	if len(ins) == 0 {
		return nil, fmt.Errorf("%s: key %s is empty", file, clip.Quote(prefix+metaNameKey))
	}
	return ins, nil
}

// Spec holds the input flags of `pinbot promote`. Exactly one input is
// allowed:
//
//	--image REF:TAG                    resolve the tag now
//	--image REF --digest sha256:...    (or --image REF@sha256:...)
//	--digest-file F --image REF        Kaniko --digest-file
//	--image-name-with-digest-file F    Kaniko; --image REF selects one repository
//	--metadata-file F                  buildx; --image REF selects one repository
//
// A tag in --image next to a digest is the tag the build pushed: the
// promotion refuses when the registry's tag points elsewhere now.
type Spec struct {
	Image         string // --image
	Digest        string // --digest
	DigestFile    string // --digest-file
	ImageNameFile string // --image-name-with-digest-file
	MetadataFile  string // --metadata-file
}

// inputFlags is the phrase usage errors end with.
const inputFlags = "give exactly one of --image REF:TAG, --image REF --digest sha256:..., --digest-file F --image REF, --image-name-with-digest-file F, --metadata-file F"

// Validate checks the flag combination; its errors are usage errors.
func (s Spec) Validate() error {
	n := 0
	for _, v := range []string{s.Digest, s.DigestFile, s.ImageNameFile, s.MetadataFile} {
		if v != "" {
			n++
		}
	}
	var img imageref.Ref
	if s.Image != "" {
		var err error
		if img, err = imageref.Parse(strings.TrimSpace(s.Image)); err != nil {
			return fmt.Errorf("flag --image: %w", err)
		}
	}
	imgTag, imgDigest := img.Tag, img.Digest
	switch {
	case n > 1:
		return errors.New(inputFlags)
	case n == 0 && s.Image == "":
		return errors.New("no input: " + inputFlags)
	case n == 0 && imgTag == "" && imgDigest == "":
		return fmt.Errorf("flag --image %s: name a tag to resolve (REF:TAG), or add --digest", s.Image)
	case s.Digest != "" && s.Image == "":
		return errors.New("flag --digest needs --image REF")
	case s.Digest != "" && !imageref.ValidDigest(s.Digest):
		return fmt.Errorf("flag --digest %s: %w", clip.Quote(s.Digest), imageref.ErrInvalidDigest)
	case s.DigestFile != "" && s.Image == "":
		return errors.New("flag --digest-file needs --image REF: a Kaniko digest file holds no image name")
	case imgDigest != "" && (s.Digest != "" || s.DigestFile != ""):
		return errors.New("flag --image carries a digest: drop --digest/--digest-file, or the digest from --image")
	}
	return nil
}

// Read turns the flags into Inputs, reading the file the spec names with
// read (os.ReadFile when nil). Call Validate first.
//
// Each file is refused above its size limit (maxDigestFile,
// maxImageNameFile, maxMetadataFile); read from disk, no more than the
// limit is ever read.
func (s Spec) Read(read func(string) ([]byte, error)) ([]promote.Input, error) {
	var img imageref.Ref
	if s.Image != "" {
		var err error
		if img, err = imageref.Parse(strings.TrimSpace(s.Image)); err != nil {
			return nil, fmt.Errorf("flag --image: %w", err)
		}
	}
	repo, tag, digest := img.Repository, img.Tag, img.Digest
	withTag := func(in promote.Input) promote.Input {
		if tag != "" {
			in.Tags = []string{tag}
		}
		return in
	}
	switch {
	case s.Digest != "":
		return []promote.Input{withTag(promote.Input{Image: repo, Digest: s.Digest, Source: pr.SourceFlag})}, nil
	case s.DigestFile != "":
		data, err := readInput(read, s.DigestFile, "digest file", maxDigestFile)
		if err != nil {
			return nil, err
		}
		d, err := parseDigestFile(s.DigestFile, data)
		if err != nil {
			return nil, err
		}
		return []promote.Input{withTag(promote.Input{Image: repo, Digest: d, Source: pr.SourceDigestFile, File: s.DigestFile})}, nil
	case s.ImageNameFile != "", s.MetadataFile != "":
		file, parse, what, limit := s.ImageNameFile, ParseImageNameWithDigest, "image-name-with-digest file", maxImageNameFile
		if s.MetadataFile != "" {
			file, parse, what, limit = s.MetadataFile, ParseMetadata, "buildx metadata file", maxMetadataFile
		}
		data, err := readInput(read, file, what, limit)
		if err != nil {
			return nil, err
		}
		ins, err := parse(file, data)
		if err != nil {
			return nil, err
		}
		if repo == "" {
			return ins, nil
		}
		return selectInput(file, ins, repo, tag, digest)
	case digest != "":
		return []promote.Input{withTag(promote.Input{Image: repo, Digest: digest, Source: pr.SourceFlag})}, nil
	}
	return []promote.Input{{Image: repo, Tags: []string{tag}, Source: pr.SourceRegistry}}, nil
}

// selectInput keeps the promote.Input of repo, checking what --image adds.
func selectInput(file string, ins []promote.Input, repo, tag, digest string) ([]promote.Input, error) {
	var names []string
	for _, in := range ins {
		if in.Image != repo {
			names = append(names, in.Image)
			continue
		}
		if digest != "" && digest != in.Digest {
			return nil, fmt.Errorf("%s names digest %s for %s, but --image says %s", file, in.Digest, repo, digest)
		}
		if tag != "" && !slices.Contains(in.Tags, tag) {
			in.Tags = append([]string{tag}, in.Tags...)
		}
		return []promote.Input{in}, nil
	}
	return nil, fmt.Errorf("%s names no image %s (it names %s)", file, repo, strings.Join(names, ", "))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}
