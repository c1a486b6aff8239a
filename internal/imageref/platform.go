package imageref

import (
	"fmt"
	"strconv"
	"strings"

	"pinbot.dev/pinbot/internal/clip"
)

// Platform is an OS, architecture and optional variant. It reads and writes
// as text in the form of String, also in JSON.
type Platform struct{ OS, Architecture, Variant string }

// String returns "os/arch" or "os/arch/variant", e.g. "linux/arm64/v8".
func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// MarshalText implements encoding.TextMarshaler. The zero Platform (an
// index entry that names none) is empty text.
func (p Platform) MarshalText() ([]byte, error) {
	if p == (Platform{}) {
		return []byte{}, nil
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Platform) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*p = Platform{}
		return nil
	}
	q, err := ParsePlatform(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// ParsePlatform parses "os/arch" or "os/arch/variant".
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return Platform{}, fmt.Errorf("platform %s: want os/arch or os/arch/variant", clip.Quote(s))
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// Normalized returns p in canonical spelling: lower case, architecture
// aliases resolved (x86_64 is amd64, aarch64 is arm64), and the default
// variant filled in (arm64 is v8, arm is v7, amd64 is v1), as containerd
// normalises platforms.
func (p Platform) Normalized() Platform {
	p.OS = strings.ToLower(p.OS)
	p.Architecture = strings.ToLower(p.Architecture)
	p.Variant = strings.ToLower(p.Variant)
	switch p.Architecture {
	case "x86_64", "x86-64":
		p.Architecture = "amd64"
	case "aarch64":
		p.Architecture = "arm64"
	case "armhf":
		p.Architecture, p.Variant = "arm", "v7"
	case "armel":
		p.Architecture, p.Variant = "arm", "v6"
	case "i386", "i686":
		p.Architecture = "386"
	}
	if p.Variant != "" && p.Variant[0] != 'v' {
		if _, err := strconv.Atoi(p.Variant); err == nil {
			p.Variant = "v" + p.Variant
		}
	}
	if p.Variant == "" {
		switch p.Architecture {
		case "arm64":
			p.Variant = "v8"
		case "arm":
			p.Variant = "v7"
		case "amd64":
			p.Variant = "v1"
		}
	}
	return p
}
