package config

import "gopkg.in/yaml.v3"

// ListNodes returns the items of the top-level sequence called key, for
// line numbers.
func ListNodes(root *yaml.Node, key string) []*yaml.Node {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.SequenceNode {
			return m.Content[i+1].Content
		}
	}
	return nil
}

// KeyLine is the line of the value at the path below the document root,
// of mapping keys (string) and sequence indexes (int), or 0 when it is not
// there.
func KeyLine(root *yaml.Node, path ...any) int {
	if root == nil || root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return 0
	}
	n := root.Content[0]
	for _, k := range path {
		var next *yaml.Node
		switch k := k.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return 0
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					next = n.Content[i+1]
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k < len(n.Content) {
				next = n.Content[k]
			}
		}
		if next == nil {
			return 0
		}
		n = next
	}
	return n.Line
}
