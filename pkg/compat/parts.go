package compat

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The list is parsed a kind at a time, on first use: a command that checks one kind (the CNI
// plugin, run once per container: NetConf) parses only that kind's part of the file, a few
// percent of it. A kind's part is its array ("felix = [" or "<Kind> = [" up to the line "]"),
// parsed together with the [reasons] table that ends the file. TestPartsParseAsTheWhole checks
// that the parts hold every entry of the whole file, parsed alike.

// kindCache holds the kinds parsed so far; it is safe for concurrent use.
type kindCache struct {
	text  string
	mu    sync.Mutex
	kinds map[string][]*Setting
}

func newKindCache(text string) *kindCache {
	return &kindCache{text: text, kinds: map[string][]*Setting{}}
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
	if !slices.Contains(Kinds, kind) {
		return nil, nil
	}
	key := kind
	if kind == Felix {
		key = "felix"
	}
	start := strings.Index(text, "\n"+key+" = [\n")
	if start < 0 {
		return nil, fmt.Errorf("no list %q", key)
	}
	end := strings.Index(text[start:], "\n]\n")
	reasons := strings.Index(text, "\n[reasons]\n")
	if end < 0 || reasons < 0 {
		return nil, fmt.Errorf("list %q: no closing line \"]\" or no [reasons] table", key)
	}
	l, err := parseList(text[start:start+end+3] + text[reasons:])
	if err != nil {
		return nil, err
	}
	return l[kind], nil
}
