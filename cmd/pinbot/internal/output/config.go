package output

import (
	"encoding/json"
	"fmt"
	"io"

	"pinbot.dev/pinbot/internal/buildinfo"
)

// Validated is one file `pinbot config validate` checked.
type Validated struct {
	File  string `json:"file"`
	Kind  string `json:"kind"`
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"`
	// Notes are what may be wrong but need not be: a cross-check the
	// files alone cannot settle.
	Notes []string `json:"notes,omitempty"`
}

// ConfigsValidated prints what `pinbot config validate` found of each
// file.
func ConfigsValidated(w io.Writer, asJSON bool, out []Validated) error {
	if asJSON {
		return json.NewEncoder(w).Encode(out)
	}
	for _, v := range out {
		var err error
		if v.Valid {
			_, err = fmt.Fprintf(w, "%s: valid %s config\n", v.File, v.Kind)
		} else {
			_, err = fmt.Fprintf(w, "%s: invalid %s config:\n  %s\n", v.File, v.Kind, v.Error)
		}
		if err != nil {
			return err
		}
		for _, n := range v.Notes {
			if _, err := fmt.Fprintf(w, "  note: %s\n", n); err != nil {
				return err
			}
		}
	}
	return nil
}

// Version prints which pinbot this is, as JSON under asJSON.
func Version(w io.Writer, asJSON bool, b buildinfo.Info) error {
	if asJSON {
		return json.NewEncoder(w).Encode(b)
	}
	_, err := fmt.Fprintf(w, "pinbot %s\n  commit:   %s\n  built:    %s\n  go:       %s\n  platform: %s\n",
		b.Version, b.Commit, b.BuildDate, b.GoVersion, b.Platform)
	return err
}

// Refreshed says that serve was asked to pass app.
func Refreshed(w io.Writer, asJSON bool, app string) error {
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			App       string `json:"app"`
			Requested bool   `json:"requested"`
		}{app, true})
	}
	_, err := fmt.Fprintf(w, "asked pinbot serve to pass %s\n", app)
	return err
}
