package output

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"pinbot.dev/pinbot/registry"
)

// Image prints img as aligned key/value lines; lists continue on lines
// with an empty key.
func Image(w io.Writer, asJSON bool, img registry.Image) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(img)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(key string, values ...string) {
		fmt.Fprintf(tw, "%s\t%s\n", key, strings.Join(values, "\t"))
	}
	line("digest", img.Digest)
	line("reference", img.Reference)
	line("media type", img.MediaType)
	if img.Index {
		if len(img.Children) == 0 {
			line("platforms", "(none)")
		}
		for i, c := range img.Children {
			key := ""
			if i == 0 {
				key = "platforms"
			}
			line(key, c.Platform.String(), c.Digest)
		}
	} else if img.Platform != nil {
		line("platform", img.Platform.String())
	}
	if !img.Created.IsZero() {
		line("created", img.Created.UTC().Format(time.RFC3339))
	}
	for _, kv := range [][2]string{{"revision", img.Revision}, {"source", img.Source}, {"version", img.Version}} {
		if kv[1] != "" {
			line(kv[0], kv[1])
		}
	}
	line("size", fmt.Sprintf("%d bytes", img.Size))
	listMap(line, "labels", img.Labels)
	listMap(line, "annotations", img.Annotations)
	return tw.Flush()
}

func listMap(line func(string, ...string), key string, m map[string]string) {
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == 1 {
			key = ""
		}
		line(key, k+"="+m[k])
	}
}
