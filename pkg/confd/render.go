package confd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// templateFuncs are available to every template, in addition to text/template's builtins.
var templateFuncs = template.FuncMap{
	"join":      strings.Join,
	"split":     strings.Split,
	"replace":   strings.ReplaceAll,
	"contains":  strings.Contains,
	"hasPrefix": strings.HasPrefix,
	"hasSuffix": strings.HasSuffix,
	"toLower":   strings.ToLower,
	"toUpper":   strings.ToUpper,
	"base":      filepath.Base,
}

// Rendered is the output of one template resource.
type Rendered struct {
	Template Template
	Dest     string // absolute path of the destination file
	Data     []byte
}

// Render executes every template resource of cfg on the model. Template files are read afresh
// each time, so edits take effect on the next render. The first error stops the render.
func Render(cfg *Config, m *Model) ([]Rendered, error) {
	out := make([]Rendered, 0, len(cfg.Templates))
	for _, t := range cfg.Templates {
		data, err := renderFile(cfg.SrcPath(t), m)
		if err != nil {
			return nil, err
		}
		out = append(out, Rendered{Template: t, Dest: cfg.DestPath(t), Data: data})
	}
	return out, nil
}

// renderFile parses and executes one template file.
func renderFile(path string, data any) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading template: %w", err)
	}
	return renderText(path, string(text), data)
}

// renderText parses and executes template text (named path in errors).
func renderText(path, text string, data any) ([]byte, error) {
	tmpl, err := template.New(filepath.Base(path)).Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing template %s: %w", path, err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("executing template %s: %w", path, err)
	}
	return buf.Bytes(), nil
}
