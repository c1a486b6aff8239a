package imagebuild

import "path"

// BusyboxPath is where the debug variant holds its shell: Debian's static
// busybox, as Kaniko's debug image carries one, so that a Jenkins
// container() step can run sh in it.
const BusyboxPath = "/bin/busybox"

// applets are the commands the debug variant links to busybox: a shell
// and what CI steps and the Kubernetes plugin of Jenkins call (cat keeps
// an agent's container alive).
var applets = []string{
	"[", "awk", "basename", "cat", "cp", "cut", "date", "dirname", "echo", "env", "false", "find",
	"grep", "head", "id", "ls", "mkdir", "mv", "nohup", "printf", "ps", "pwd", "rm", "sed", "sh",
	"sleep", "sort", "tail", "tee", "test", "tr", "true", "uniq", "wc", "which", "xargs",
}

// BusyboxFiles are the entries of the debug variant's shell layer: the
// busybox binary copied from busybox, and a link per applet.
func BusyboxFiles(busybox string) []File {
	files := []File{{Path: BusyboxPath, Mode: 0o755, Source: busybox}}
	for _, a := range applets {
		files = append(files, File{Path: path.Join("/bin", a), Link: path.Base(BusyboxPath)})
	}
	return files
}
