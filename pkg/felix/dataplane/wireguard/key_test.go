package wireguard

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKeyFileCreatedReusedAndReplacedWhenCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "wireguard-private-key")
	k1, created, err := LoadOrCreateKey(path)
	if err != nil || !created {
		t.Fatalf("first load: created=%v err=%v", created, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v, want 0600", st.Mode(), err)
	}
	k2, created, err := LoadOrCreateKey(path)
	if err != nil || created || k2 != k1 {
		t.Fatalf("restart: created=%v same=%v err=%v; want the same key", created, k2 == k1, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(path); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("a widened key file was not restricted again: %v", st.Mode())
	}
	if err := os.WriteFile(path, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k3, created, err := LoadOrCreateKey(path)
	if err != nil || !created || k3 == k1 {
		t.Fatalf("corrupt file: created=%v err=%v; want a new key", created, err)
	}
	if err := RemoveKey(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("key file still there after RemoveKey: %v", err)
	}
	if err := RemoveKey(path); err != nil {
		t.Errorf("removing an absent key: %v", err)
	}
}
