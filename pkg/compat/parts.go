package compat

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The list is parsed a kind at a time, on first use: a command that checks one kind (the CNI
// plugin, run once per container: NetConf) parses only that kind's part of the file, a few
// percent of it, and only when the document it checks sets one of the kind's fields (checkPaths).
// A kind's part is its array ("felix = [" or "<Kind> = [" up to the line "]"), parsed together
// with the [reasons] table that ends the file. TestPartsParseAsTheWhole checks that the parts hold
// every entry of the whole file, parsed alike.

// kindCache holds the kinds parsed so far; it is safe for concurrent use.
type kindCache struct {
	text  string
	mu    sync.Mutex
	kinds map[string][]*Setting
	paths map[string][]string
}

func newKindCache(text string) *kindCache {
	return &kindCache{text: text, kinds: map[string][]*Setting{}, paths: map[string][]string{}}
}

// checkPaths returns the JSON paths CheckJSON looks up for a kind (see checkPaths).
func (c *kindCache) checkPaths(kind string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.paths[kind]; ok {
		return p
	}
	p, err := checkPaths(c.text, kind)
	if err != nil {
		panic("compat: notimplemented.toml: " + err.Error())
	}
	c.paths[kind] = p
	return p
}

// get returns the settings of a kind; it panics on a broken list (its tests load every kind).
func (c *kindCache) get(kind string) []*Setting {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.kinds[kind]; ok {
		return s
	}
	s, err := parseKind(c.text, kind)
	if err != nil {
		panic("compat: notimplemented.toml: " + err.Error())
	}
	c.kinds[kind] = s
	return s
}

// parseKind parses the part of the list's text that holds kind (none for a kind not in Kinds).
func parseKind(text, kind string) ([]*Setting, error) {
	part, err := kindPart(text, kind)
	if part == "" || err != nil {
		return nil, err
	}
	reasons := strings.Index(text, "\n[reasons]\n")
	if reasons < 0 {
		return nil, fmt.Errorf("no [reasons] table")
	}
	l, err := parseList(part + text[reasons:])
	if err != nil {
		return nil, err
	}
	return l[kind], nil
}

// kindPart is the array of kind in the list's text ("" for a kind not in Kinds).
func kindPart(text, kind string) (string, error) {
	if !slices.Contains(Kinds, kind) {
		return "", nil
	}
	key := kind
	if kind == Felix {
		key = "felix"
	}
	start := strings.Index(text, "\n"+key+" = [\n")
	if start < 0 {
		return "", fmt.Errorf("no list %q", key)
	}
	end := strings.Index(text[start:], "\n]\n")
	if end < 0 {
		return "", fmt.Errorf("list %q: no closing line \"]\"", key)
	}
	return text[start : start+end+3], nil
}

// checkPaths lists the JSON paths CheckJSON looks up for a kind (objectSettings' paths), read from
// the list's text without parsing it: each entry's `field = "..."` ("spec." and the field for a
// felix parameter that is a FelixConfiguration field). A document that sets none of them is checked
// without parsing the list; the CNI plugin's network configuration, checked on every call, sets
// none in the common case. TestCheckPathsMatchTheList checks them against the parsed list.
func checkPaths(text, kind string) ([]string, error) {
	kinds := []string{kind}
	if kind == FelixConfiguration {
		kinds = []string{Felix, FelixConfiguration}
	}
	var out []string
	for _, k := range kinds {
		part, err := kindPart(text, k)
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(part) {
			_, rest, ok := strings.Cut(line, `field = "`)
			field, _, closed := strings.Cut(rest, `"`)
			switch {
			case !ok || !closed || field == "":
			case k == Felix:
				out = append(out, "spec."+field)
			default:
				out = append(out, field)
			}
		}
	}
	return out, nil
}
