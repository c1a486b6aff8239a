// Package promote decides and publishes promotions: it takes a digest that CI
// pushed (or a tag that moved) and turns it into one reviewable pull request
// on the manifest repository.
//
// The package is a pure core with an I/O shell around it. The core parses
// CI's files (Kaniko's digest files, buildx metadata), reads .pinbot.yaml
// and chooses the digest each pin gets; package promote/pr names branches,
// renders the pull request text and plans what a branch needs. Both are
// tested from literals. The shell (Run and Drift)
// clones the base branch, rewrites pins with package pins, commits, pushes
// and creates or edits the pull request through the small Forge and
// Registry interfaces declared here.
//
// # Branches and pull requests
//
// Every (target, image) pair has one deterministic branch,
// "<branchPrefix><target>/<image-slug>" (see pr.Branch and pr.Slug). A promotion
// force-pushes a fresh commit on top of the current base to that branch,
// replacing the previous promotion, and creates or edits the one open pull
// request whose head is that branch. A merged or closed pull request leads
// to a new one on the next promotion. Promoting a digest that the base
// already pins changes nothing and closes the branch's open pull request,
// whose proposal is then obsolete.
//
// # Races
//
// The branch is the serialisation point: the last push wins. After pushing,
// a promotion writes the pull request text only while the pull request's
// head is still its own commit, and checks again after writing; a
// promotion whose commit was replaced by a later push leaves the text to
// the later one. Two promotions of the same image at once therefore end
// with one open pull request that holds the digest pushed last, described
// by its own text. Creating the pull request races too: the loser finds the
// winner's pull request and edits it. A push the server rejects is retried
// from a fresh clone of the base a bounded number of times, and so is a
// promotion whose base branch moved while it ran. Nothing is ever pushed to
// the base branch.
//
// # Clones
//
// A run clones the base branch shallowly into a temporary directory, or,
// with Env.CacheDir, reuses a cached clone: it fetches and hard-resets it,
// holding a file lock so concurrent runs on one machine take turns. One
// clone serves every branch of a run; after each branch it is reset to the
// base head again.
//
// # Drift
//
// In this package "drift" means a tracked tag that moved to a new digest:
// a pin that follows a tag (repo:tag@digest, a Helm tag or kustomize newTag
// beside the digest, or a track entry of .pinbot.yaml) whose tag now
// resolves to another digest in the registry (see Drift). It never means a
// difference between Git and a cluster's objects, which is what the word
// means in package reconciler.
//
// # Stabilisation window
//
// Drift holds back a digest younger than the minimum age. Age is measured
// from when drift first saw the digest behind its tag, kept in a State
// (a JSON file between runs, or memory in a long-running schedule). Without
// a State the image's created time stands in; builds set that time, and
// reproducible builds set it to the epoch or the commit time, in which case
// the age is unknown and the digest is not held (drift logs a warning).
//
// # Hidden block
//
// Each pull request body ends with an HTML comment holding JSON
// ("<!-- pinbot:{...} -->", see pr.Meta and pr.ParseBody): the target, the images
// with their digests, tags and sources, the head commit and the changed
// pins. Later runs read it to recognise their own pull requests.
package promote
