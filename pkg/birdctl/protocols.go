package birdctl

import (
	"context"
	"regexp"
	"strings"
)

// Protocol is one row of "show protocols", plus for BGP the details of "show protocols all".
type Protocol struct {
	Name  string
	Proto string // "BGP", "Kernel", "Device", ...
	Table string
	State string // "up", "start", "down", ...
	Since string
	Info  string // for BGP the session state, e.g. "Established" or "Active  Socket: ..."

	// BGP details (from "show protocols all"); empty otherwise.
	NeighborAddress string
	NeighborAS      string
	BGPState        string
	LastError       string
}

// Protocols runs "show protocols all" and returns every protocol in BIRD's order.
func (c *Client) Protocols(ctx context.Context) ([]Protocol, error) {
	lines, err := c.Command(ctx, "show protocols all")
	if err != nil {
		return nil, err
	}
	return ParseProtocols(lines), nil
}

// ParseProtocols parses the reply to "show protocols" or "show protocols all".
func ParseProtocols(lines []Line) []Protocol {
	var out []Protocol
	for _, l := range lines {
		switch l.Code {
		case CodeProtocolList:
			if p, ok := parseProtocolRow(l.Text); ok {
				out = append(out, p)
			}
		case CodeProtocolDetails:
			if len(out) > 0 {
				parseDetail(&out[len(out)-1], l.Text)
			}
		}
	}
	return out
}

// timeLike matches the second half of a two-word "since" column ("2024-01-02 10:11:12").
var timeLike = regexp.MustCompile(`^\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?$`)

// parseProtocolRow splits "Name Proto Table State Since Info...". Columns are padded but a long
// name pushes the rest to the right, so the row is split on blanks; Since may be one word (a
// time) or two (a date and a time).
func parseProtocolRow(s string) (Protocol, bool) {
	f := strings.Fields(s)
	if len(f) < 5 {
		return Protocol{}, false
	}
	p := Protocol{Name: f[0], Proto: f[1], Table: f[2], State: f[3], Since: f[4]}
	rest := f[5:]
	if len(rest) > 0 && timeLike.MatchString(rest[0]) {
		p.Since += " " + rest[0]
		rest = rest[1:]
	}
	p.Info = strings.Join(rest, " ")
	return p, true
}

// parseDetail records the BGP details we report.
func parseDetail(p *Protocol, text string) {
	key, val, ok := strings.Cut(strings.TrimSpace(text), ":")
	if !ok {
		return
	}
	val = strings.TrimSpace(val)
	switch key {
	case "Neighbor address":
		p.NeighborAddress = val
	case "Neighbor AS":
		p.NeighborAS = val
	case "BGP state":
		p.BGPState = val
	case "Last error":
		p.LastError = val
	}
}
