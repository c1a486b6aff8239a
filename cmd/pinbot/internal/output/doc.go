// Package output is how each pinbot command's result reads: text for
// people, and the JSON documents of -o json (and, through Writer, YAML),
// whose keys are camelCase as Kubernetes spells them. The commands in
// cmd/pinbot/cli bind flags, call the packages that do the work, and hand
// the result here.
package output
