package wireguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/calico-host/calico-host/internal/atomicfile"
)

// Default key files (one per IP version, as each version has its own device).
const (
	DefaultKeyFile   = "/var/lib/calico/wireguard-private-key"
	DefaultKeyFileV6 = "/var/lib/calico/wireguard-private-key-v6"
)

// LoadOrCreateKey returns the private key stored at path, creating a new one (mode 0600) when the
// file is missing or does not hold a key. It reports whether it created the key.
func LoadOrCreateKey(path string) (wgtypes.Key, bool, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if k, perr := wgtypes.ParseKey(strings.TrimSpace(string(b))); perr == nil && k != (wgtypes.Key{}) {
			return k, false, fixMode(path)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return wgtypes.Key{}, false, fmt.Errorf("reading WireGuard key %s: %w", path, err)
	}
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return wgtypes.Key{}, false, fmt.Errorf("generating a WireGuard key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return wgtypes.Key{}, false, fmt.Errorf("creating the directory of %s: %w", path, err)
	}
	if err := atomicfile.Write(path, []byte(k.String()+"\n"), 0o600); err != nil {
		return wgtypes.Key{}, false, fmt.Errorf("writing WireGuard key %s: %w", path, err)
	}
	return k, true, nil
}

// fixMode makes sure an existing key file is readable by its owner only.
func fixMode(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("checking WireGuard key %s: %w", path, err)
	}
	if st.Mode().Perm() != 0o600 {
		if err := os.Chmod(path, 0o600); err != nil {
			return fmt.Errorf("restricting WireGuard key %s: %w", path, err)
		}
	}
	return nil
}

// RemoveKey deletes the key file (absent is fine).
func RemoveKey(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing WireGuard key %s: %w", path, err)
	}
	return nil
}
