// Command build makes the .deb and .rpm packages described in nfpm.yaml (run by `make packages`):
// every entry of its `packages` list becomes one nfpm configuration, packaged with nfpm's deb and
// rpm packagers into the output directory.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
	"sigs.k8s.io/yaml"
)

func main() {
	config := flag.String("config", "nfpm.yaml", "package list")
	out := flag.String("out", "dist", "output directory")
	version := flag.String("version", "0.0.0", "package version")
	flag.Parse()
	if err := run(*config, *out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "build packages:", err)
		os.Exit(1)
	}
}

func run(configPath, outDir, version string) error {
	pkgs, err := readPackages(configPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	changelog, err := gzipChangelog("packaging/changelog", outDir)
	if err != nil {
		return err
	}
	defer os.Remove(changelog)
	env := map[string]string{"VERSION": version, "ARCH": runtime.GOARCH, "CHANGELOG": changelog}
	for _, p := range pkgs {
		for _, format := range []string{"deb", "rpm"} {
			path, err := buildOne(p, format, outDir, env)
			if err != nil {
				return err
			}
			fmt.Println(path)
		}
	}
	return nil
}

// gzipChangelog writes the Debian changelog gzipped (without a name or time stamp in the gzip
// header, so builds are reproducible) and returns its path.
func gzipChangelog(src, outDir string) (string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	path := filepath.Join(outDir, ".changelog.gz")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write(data); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return path, f.Close()
}

// readPackages expands the YAML (merge keys included) and returns one YAML document per package.
func readPackages(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	var doc struct {
		Packages []json.RawMessage `json:"packages"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	out := make([][]byte, 0, len(doc.Packages))
	for _, p := range doc.Packages {
		y, err := yaml.JSONToYAML(p)
		if err != nil {
			return nil, err
		}
		out = append(out, y)
	}
	return out, nil
}

func buildOne(doc []byte, format, outDir string, env map[string]string) (string, error) {
	cfg, err := nfpm.ParseWithEnvMapping(bytes.NewReader(doc), func(k string) string { return env[k] })
	if err != nil {
		return "", err
	}
	info, err := cfg.Get(format)
	if err != nil {
		return "", err
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", fmt.Errorf("%s %s: %w", info.Name, format, err)
	}
	packager, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	path := filepath.Join(outDir, packager.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := packager.Package(info, f); err != nil {
		return "", fmt.Errorf("packaging %s as %s: %w", info.Name, format, err)
	}
	return path, f.Close()
}
