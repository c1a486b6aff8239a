package validate

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/release/clusters"
	"pinbot.dev/pinbot/serve"
)

// knownClusters are the clusters serve configs name: pinbot's own
// ("in-cluster") and each kubeconfig Secret an app of theirs is applied
// through. Open is set when one of them also has apps whose clusters
// only the cluster knows (Argo CD's or Flux's, or discovered ones).
type knownClusters struct {
	names []string
	open  bool
}

func clustersOf(serves []*serve.Config) knownClusters {
	k := knownClusters{names: []string{"in-cluster"}}
	for _, s := range serves {
		if s == nil {
			continue
		}
		k.open = k.open || len(s.Discover) > 0
		for _, a := range s.Apps {
			switch {
			case a.VerifyOnly():
				k.open = true
			case a.Cluster != nil:
				k.names = append(k.names, "kubeConfig "+s.StateNamespace+"/"+a.Cluster.KubeConfig.SecretRef.Name)
			}
		}
	}
	return k
}

// crossClusters checks that the clusters r's waves name are clusters
// the serve configs know, naming the line of each that is not. Where a
// serve config has apps on clusters it cannot name (verify-only or
// discovered apps), an unknown one is a note.
func crossClusters(v *output.Validated, r *promote.Config, k knownClusters, serves []string) {
	for _, e := range r.Environments {
		for _, c := range e.Placement.Clusters {
			if slices.ContainsFunc(k.names, func(n string) bool { return clusters.Names(c, n) }) {
				continue
			}
			msg := fmt.Sprintf("%s: wave %s of %s names cluster %q, which no app of %s runs on (clusters: %s)",
				clusterLine(v.File, e.Of, e.Wave, c), e.Wave, e.Of, c, strings.Join(serves, ", "), strings.Join(k.names, ", "))
			if k.open {
				v.Notes = append(v.Notes, msg+"; it may be an Argo CD or Flux cluster, found when serve runs")
				continue
			}
			if v.Valid {
				v.Valid, v.Error = false, msg+": the wave would count it unproven, and nothing would move on from it"
			}
		}
	}
}

// clusterLine is "FILE:LINE" of cluster in wave of env's clusters:, or
// FILE when the file cannot be read again.
func clusterLine(file, env, wave, cluster string) string {
	data, err := os.ReadFile(file)
	var doc yaml.Node
	if err != nil || yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return file
	}
	for _, e := range seq(get(doc.Content[0], "environments")) {
		if scalar(get(e, "name")) != env {
			continue
		}
		for _, w := range seq(get(e, "waves")) {
			if scalar(get(w, "name")) != wave {
				continue
			}
			for _, c := range seq(get(w, "clusters")) {
				if c.Value == cluster {
					return fmt.Sprintf("%s:%d", file, c.Line)
				}
			}
		}
	}
	return file
}

func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func seq(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

func scalar(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}
