package imagebuild

import "path"

// ShellPath is where the debug variant holds its shell: hack/debugshell,
// a static binary that make release builds from Go modules (a POSIX
// shell and u-root's core commands), so that a Jenkins container() step
// or kubectl debug can run sh in it.
const ShellPath = "/bin/debugshell"

// ShellApplets are the names hack/debugshell answers to (its Applets):
// the debug variant links each in /bin.
var ShellApplets = []string{
	"sh", "cat", "chmod", "cp", "find", "ls", "mkdir", "mv", "rm", "touch", "xargs",
	"base64", "gzip", "gunzip", "mktemp", "shasum", "tar", "sleep", "nohup", "id", "jq", "grep", "ps",
}

// ShellFiles are the entries of the debug variant's shell layer: the
// shell binary copied from shell, and a link per applet.
func ShellFiles(shell string) []File {
	files := []File{{Path: ShellPath, Mode: 0o755, Source: shell}}
	for _, a := range ShellApplets {
		files = append(files, File{Path: path.Join("/bin", a), Link: path.Base(ShellPath)})
	}
	return files
}
