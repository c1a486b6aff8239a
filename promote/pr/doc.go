// Package pr is what a promotion's pull request says, as pure values:
// its branch and title, the commit message and its trailers, the body a
// reviewer reads (one diff line per pin, the image's facts, the upstream
// proof, the signer) and the hidden block later runs read back, which
// build of an image is newer, and what a branch needs (Plan). It reads no
// file and speaks to no forge or registry; package promote does the I/O.
package pr
