package output

import (
	"encoding/json"
	"fmt"
	"io"
)

// Validated is one file `pinbot config validate` checked.
type Validated struct {
	File  string `json:"file"`
	Kind  string `json:"kind"`
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"`
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
	}
	return nil
}
