package trust

import (
	"strings"

	"github.com/sigstore/sigstore-go/pkg/verify"

	"pinbot.dev/pinbot/trust/policy"
)

// provenanceOf reads the build facts of a verified attestation: SLSA
// provenance v1 (runDetails, buildDefinition) or v0.2 (builder,
// invocation, materials). Fields a predicate does not state stay empty.
func provenanceOf(res *verify.VerificationResult) policy.Attested {
	var a policy.Attested
	if res == nil || res.Statement == nil || res.Statement.GetPredicate() == nil {
		return a
	}
	p := res.Statement.GetPredicate().AsMap()
	first := func(vals ...string) string {
		for _, v := range vals {
			if v != "" {
				return v
			}
		}
		return ""
	}
	// SLSA v1: the source is the first resolved dependency
	// (git+https://host/repo@refs/heads/main, digest.gitCommit) unless the
	// external parameters name it (GitHub's workflow.repository/ref).
	dep := at(p, "buildDefinition", "resolvedDependencies", 0)
	depURI, depRef := splitSource(str(dep, "uri"))
	// SLSA v0.2: the config source, or the first material.
	cfg := at(p, "invocation", "configSource")
	cfgURI, cfgRef := splitSource(str(cfg, "uri"))
	mat := at(p, "materials", 0)
	matURI, matRef := splitSource(str(mat, "uri"))

	ext := at(p, "buildDefinition", "externalParameters")
	a.BuilderID = first(str(at(p, "runDetails", "builder"), "id"), str(at(p, "builder"), "id"))
	a.SourceRepository = first(str(at(ext, "workflow"), "repository"), str(at(ext, "source"), "repository"), depURI, cfgURI, matURI)
	a.Ref = first(str(at(ext, "workflow"), "ref"), str(at(ext, "source"), "ref"), depRef, cfgRef, matRef)
	a.Commit = first(str(at(dep, "digest"), "gitCommit"), str(at(dep, "digest"), "sha1"),
		str(at(cfg, "digest"), "sha1"), str(at(cfg, "digest"), "gitCommit"), str(at(mat, "digest"), "sha1"))
	a.Invocation = first(str(at(p, "runDetails", "metadata"), "invocationID"), str(at(p, "runDetails", "metadata"), "invocationId"),
		str(at(p, "metadata"), "buildInvocationId"), str(at(p, "metadata"), "buildInvocationID"))
	return a
}

// splitSource splits "git+https://host/repo@refs/heads/main" into the
// repository URL and the ref.
func splitSource(uri string) (repo, ref string) {
	uri = strings.TrimPrefix(uri, "git+")
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		rest = uri
	}
	// The ref's "@" comes after the path began; an "@" before it is a
	// user in the authority.
	slash := strings.Index(rest, "/")
	at := strings.LastIndex(rest, "@")
	if slash < 0 || at < slash {
		return uri, ""
	}
	cut := len(uri) - len(rest) + at
	return uri[:cut], uri[cut+1:]
}

// at walks a decoded JSON value by keys and indexes; nil where absent.
func at(v any, path ...any) any {
	for _, k := range path {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

func str(v any, key string) string {
	s, _ := at(v, key).(string)
	return s
}
