package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/cmd/pinbot/internal/flags"
	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/gctune"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/promote/ciinput"
)

// promoteOptions are the flags of `pinbot promote`.
type promoteOptions struct {
	flags.Publish
	input      ciinput.Spec
	tagMovedOK bool
	olderOK    bool
	env        string
	force      bool
	reason     string
}

// Validate checks the flags; its errors are usage errors.
func (o *promoteOptions) Validate() error {
	if err := o.input.Validate(); err != nil {
		return usageErrorf("%w", err)
	}
	if o.force && strings.TrimSpace(o.reason) == "" {
		return usageErrorf("flag --force: needs --reason, which goes into the pull request body")
	}
	return o.Forge.Validate()
}

func newPromoteCommand(g *globals) *cobra.Command {
	o := &promoteOptions{}
	cmd := &cobra.Command{
		Use:   "promote",
		Short: "Open (or update) the pull request that pins a pushed digest in the manifest repository",
		Long: `Promote the digest CI pushed into every pin of that image in the manifest
repository, through one pull request per (target, image) on the branch
<branchPrefix><target>/<image-slug>.

Input, exactly one of:
  --image REF:TAG                        resolve the tag now
  --image REF --digest sha256:...        (or --image REF@sha256:...)
  --digest-file F --image REF[:TAG]      Kaniko --digest-file
  --image-name-with-digest-file F        Kaniko --image-name-with-digest-file
  --metadata-file F                      buildx --metadata-file (every image it names;
                                         --image REF picks one)

The digest must exist in the registry, and a tag the build named must still
point at it (else "the tag moved since the build", unless --allow-tag-moved).
Each pin keeps its kind: a pinned platform manifest gets the platform child
of a promoted index. Promoting what the base already pins changes nothing
and closes the branch's now obsolete pull request.

A build older than the one the base pins, or the open pull request
proposes, changes nothing: status "superseded", exit 0 (--allow-older
promotes it anyway). Builds are ordered by their tags where both are
versions (v1.2.3, 1.4, 42), else by the image's created time, else by
revision labels that are build numbers.

Prints the pull request URL (one line per target), or with -o json one
object, {"prNumber","prURL","branch","changes","digest","image",...}, or an
array of them when there are several targets.
The token comes from --token-file or $PINBOT_GITEA_TOKEN; registry
credentials from the docker config.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return redact.Error(o.run(cmd, g))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.input.Image, "image", "", "image REF:TAG to resolve now, or the repository the other inputs name")
	fl.StringVar(&o.input.Digest, "digest", "", "digest sha256:... to promote (with --image)")
	fl.StringVar(&o.input.DigestFile, "digest-file", "", "Kaniko --digest-file output (with --image)")
	fl.StringVar(&o.input.ImageNameFile, "image-name-with-digest-file", "", "Kaniko --image-name-with-digest-file output")
	fl.StringVar(&o.input.MetadataFile, "metadata-file", "", "buildx --metadata-file output")
	fl.BoolVar(&o.tagMovedOK, "allow-tag-moved", false, "promote the digest even if the tag the build named points elsewhere now")
	fl.BoolVar(&o.olderOK, "allow-older", false, "promote the digest even if the base pins, or the open pull request proposes, a newer build")
	fl.StringVar(&o.env, "env", "", "promote into this environment (or target) alone (default: the first environments of .pinbot.yaml's chain, or every target)")
	fl.BoolVar(&o.force, "force", false, "promote into an environment even though the digest is not proven upstream (needs --reason; a hold still refuses)")
	fl.StringVar(&o.reason, "reason", "", "why --force: written into the pull request body")
	o.Publish.Bind(cmd)
	return cmd
}

func (o *promoteOptions) run(cmd *cobra.Command, g *globals) error {
	defer gctune.Lean()()
	ctx := cmd.Context()
	ins, err := o.input.Read(nil)
	if err != nil {
		// Bad input, as a bad --digest is: the same exit code.
		return usageErrorf("%w", err)
	}
	env, gate, floor, err := o.Open(ctx)
	if err != nil {
		return err
	}
	env.OnPhase = func(p promote.Phase) { pauseAt(ctx, cmd.ErrOrStderr(), string(p)) }
	results, runErr := promote.Run(ctx, env, promote.Request{
		Policy:        floor,
		Inputs:        ins,
		AllowTagMoved: o.tagMovedOK,
		AllowOlder:    o.olderOK,
		Choose:        o.Forge.Choose(),
		DryRun:        o.Forge.DryRun(),
		Target:        o.env,
		Admitter:      gate,
		Force:         o.force,
		Reason:        o.reason,
	})
	log := logctx.From(ctx)
	for _, r := range results {
		log.Info("promotion", "target", r.Target, "branch", r.Branch, "status", string(r.Status), "pins", len(r.Meta.Changes))
		for _, n := range r.Notes {
			log.Warn(n, "branch", r.Branch)
		}
	}
	var werr error
	switch {
	case g.json() && len(results) == 0 && runErr != nil:
		// The error's object is the one document.
	case g.json():
		werr = output.PromoteJSON(cmd.OutOrStdout(), results, o.Forge.DryRun())
	default:
		werr = output.PromoteText(cmd.OutOrStdout(), results)
	}
	if runErr != nil {
		return runErr
	}
	return werr
}
