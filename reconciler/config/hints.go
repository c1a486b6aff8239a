package config

import (
	"gopkg.in/yaml.v3"
)

// argoHints say, for a key written as Argo CD writes it, what pinbot's
// config says instead. They follow the YAML error at that key's line.
var argoHints = map[string]string{
	"automated":      "syncPolicy.automated is true or false here; Argo CD's automated: {prune, selfHeal} are syncPolicy.prune and syncPolicy.selfHeal",
	"syncOptions":    "pinbot has no syncOptions: it always applies with server-side apply, Namespaces and CRDs first",
	"source":         "an app names repo, branch and path itself; to prove what an Argo CD Application deploys, write argocd: {application: NAME}",
	"destination":    "an app names its namespace itself; to prove what an Argo CD Application deploys, write argocd: {application: NAME}",
	"repoURL":        "the repository is repo:",
	"targetRevision": "the branch pinbot follows is branch:",
}

// hintAt is the Argo CD hint for the key at line of data, whose value
// starts there or which stands there itself; "" for none.
func hintAt(data []byte, line int) string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return ""
	}
	var find func(n *yaml.Node) string
	find = func(n *yaml.Node) string {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if hint, ok := argoHints[k.Value]; ok && (k.Line == line || v.Line == line) {
					return hint
				}
			}
		}
		for _, c := range n.Content {
			if h := find(c); h != "" {
				return h
			}
		}
		return ""
	}
	return find(&root)
}
