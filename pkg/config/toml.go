package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/BurntSushi/toml"
)

// LoadTOML decodes the TOML file at path into v, strictly: an unknown key or a value of the wrong
// type is an error naming the file, the line and the key. A missing file is not an error; found
// reports whether the file existed.
func LoadTOML(path string, v any) (found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	return true, DecodeTOML(path, string(data), v)
}

// DecodeTOML decodes TOML text (named path in errors) strictly into v.
func DecodeTOML(path, text string, v any) error {
	md, err := toml.Decode(text, v)
	if err != nil {
		// BurntSushi/toml already says "toml: line N (last key "k"): ..."
		return fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "toml: "))
	}
	if und := md.Undecoded(); len(und) > 0 {
		key := und[0].String()
		return fmt.Errorf("%s: line %d: unknown key %q", path, lineOfKey(text, und[0]), key)
	}
	return nil
}

// lineOfKey finds the line where a dotted key is defined (0 if it cannot be found).
func lineOfKey(text string, key toml.Key) int {
	if len(key) == 0 {
		return 0
	}
	table := strings.Join(key[:len(key)-1], ".")
	leaf := key[len(key)-1]
	current := ""
	for i, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "[") {
			current = strings.Trim(strings.TrimSpace(strings.Trim(l, "[]")), `"`)
			if current == strings.Join(key, ".") {
				return i + 1
			}
			continue
		}
		name, _, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		name = strings.Trim(strings.TrimSpace(name), `"`)
		if (current == table && name == leaf) || (current == "" && name == key.String()) {
			return i + 1
		}
	}
	return 0
}
