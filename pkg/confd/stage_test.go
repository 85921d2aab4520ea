package confd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/birdctl/birdtest"
)

// twoFiles renders a main BIRD file including a second one, with the given include body.
func twoFiles(dir, include string) []Rendered {
	main := Template{Src: "m", Dest: "bird.cfg", CheckCmd: DefaultCheckCmd}
	inc := Template{Src: "i", Dest: "inc.cfg"}
	return []Rendered{
		{Template: main, Dest: filepath.Join(dir, "bird.cfg"), Data: []byte("router id 198.18.0.1;\ninclude \"inc.cfg\";\n")},
		{Template: inc, Dest: filepath.Join(dir, "inc.cfg"), Data: []byte(include)},
	}
}

func TestStagerChecksStagedFilesTogether(t *testing.T) {
	requireBIRD(t)
	dir := t.TempDir()
	s := &Stager{Dir: filepath.Join(dir, ".staging"), Run: ExecRunner}
	ctx := context.Background()

	good := twoFiles(dir, "protocol device { scan time 2; }\n")
	changed, err := s.Apply(ctx, good)
	if err != nil || len(changed) != 2 {
		t.Fatalf("first apply: changed %d, err %v", len(changed), err)
	}
	// changed lists the files in the order they were installed: the include before the main
	// file, so that a BIRD starting in between never finds the main file without its include.
	if changed[0].Dest != good[1].Dest {
		t.Errorf("installed %s first, want the include %s", changed[0].Dest, good[1].Dest)
	}
	if st, _ := os.Stat(good[1].Dest); st.Mode().Perm() != 0o640 {
		t.Errorf("installed mode %v", st.Mode())
	}
	if changed, err := s.Apply(ctx, good); err != nil || len(changed) != 0 {
		t.Fatalf("same files again: changed %d, err %v", len(changed), err)
	}

	// Only the included file is bad: the check of the main file must read the staged include,
	// and nothing may be installed.
	bad := twoFiles(dir, "protocol device { scan time 2; }\nthis is not bird;\n")
	_, err = s.Apply(ctx, bad)
	var ce *CheckError
	if !errors.As(err, &ce) || !strings.Contains(ce.Output, "syntax error") {
		t.Fatalf("bad include: err = %v, want a CheckError from bird -p", err)
	}
	if data, _ := os.ReadFile(good[1].Dest); string(data) != string(good[1].Data) {
		t.Errorf("the installed include changed after a failed check: %q", data)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("staging directory left behind: %v", err)
	}

	// A good change installs only what changed.
	next := twoFiles(dir, "protocol device { scan time 5; }\n")
	changed, err = s.Apply(ctx, next)
	if err != nil || len(changed) != 1 || changed[0].Dest != next[1].Dest {
		t.Fatalf("changed %v, err %v; want only inc.cfg", changed, err)
	}
}

func TestExpandCommand(t *testing.T) {
	argv, err := expandCommand("bird -p -c {{.src}}", map[string]string{"src": "/x y"})
	if err != nil || strings.Join(argv, "|") != "bird|-p|-c|/x|y" {
		t.Errorf("argv = %q, %v", argv, err)
	}
	if _, err := expandCommand("bird {{.nope}}", map[string]string{}); err == nil {
		t.Error("unknown placeholder accepted")
	}
	if _, err := expandCommand("   ", nil); err == nil {
		t.Error("empty command accepted")
	}
}

// fakeBIRDSocket answers "configure" on a unix socket with reply and counts the reloads.
type fakeBIRDSocket struct {
	path  string
	mu    sync.Mutex
	reply string
	count int
}

func newFakeBIRDSocket(t *testing.T, path, reply string) *fakeBIRDSocket {
	t.Helper()
	f := &fakeBIRDSocket{path: path, reply: reply}
	birdtest.Serve(t, path, f.answer)
	return f
}

func (f *fakeBIRDSocket) answer(cmd string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cmd != "configure" {
		return birdtest.SyntaxError
	}
	f.count++
	return f.reply
}

func (f *fakeBIRDSocket) reloads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count
}

func (f *fakeBIRDSocket) setReply(r string) {
	f.mu.Lock()
	f.reply = r
	f.mu.Unlock()
}

func TestReloader(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "bird.ctl")
	files := []Rendered{{Template: Template{Dest: "a"}}, {Template: Template{Dest: "b"}}}
	var ran [][]string
	r := &Reloader{Socket: sock, Run: func(_ context.Context, argv []string) ([]byte, error) {
		ran = append(ran, argv)
		return []byte("boom"), errors.New("exit status 1")
	}}
	ctx := context.Background()
	if _, err := r.Reload(ctx, files); !errors.Is(err, ErrBIRDNotRunning) {
		t.Errorf("no socket: err = %v, want ErrBIRDNotRunning", err)
	}
	// An external command that fails while the socket is absent is "not running" too.
	ext := []Rendered{{Template: Template{ReloadCmd: "birdc -s {{.socket}} configure"}}}
	if _, err := r.Reload(ctx, ext); !errors.Is(err, ErrBIRDNotRunning) || strings.Join(ran[0], " ") != "birdc -s "+sock+" configure" {
		t.Errorf("external: err = %v, ran %q", err, ran)
	}
	fake := newFakeBIRDSocket(t, sock, "0002-Reading configuration\n0003 Reconfigured\n")
	msg, err := r.Reload(ctx, files)
	if err != nil || msg != "BIRD: Reconfigured" || fake.reloads() != 1 {
		t.Errorf("built-in reload: %q %v, %d reloads (want one for both files)", msg, err, fake.reloads())
	}
	if _, err := r.Reload(ctx, ext); err == nil || errors.Is(err, ErrBIRDNotRunning) {
		t.Errorf("external command failing with BIRD up: err = %v, want a real error", err)
	}
	fake.setReply("8002 bird.cfg:1:1 syntax error\n")
	if _, err := r.Reload(ctx, files); err == nil || errors.Is(err, ErrBIRDNotRunning) || !strings.Contains(err.Error(), "8002") {
		t.Errorf("rejected configuration: err = %v", err)
	}
}

// TestEngineKeepsLastGoodConfig: a template error or a configuration bird -p rejects changes
// nothing on disk and does not reload; the next good render installs and reloads.
func TestEngineKeepsLastGoodConfig(t *testing.T) {
	requireBIRD(t)
	dir := t.TempDir()
	tmplDir := filepath.Join(dir, "templates")
	os.MkdirAll(tmplDir, 0o755)
	cfg := &Config{TemplatesDir: tmplDir, OutputDir: filepath.Join(dir, "out"), BIRDSocket: filepath.Join(dir, "bird.ctl"),
		Templates: []Template{{Src: "bird.cfg.template", Dest: "bird.cfg", CheckCmd: DefaultCheckCmd}}}
	fake := newFakeBIRDSocket(t, cfg.BIRDSocket, "0003 Reconfigured\n")
	e := NewEngine(cfg, "host-a", ExecRunner, zerolog.Nop())
	in := testInputs(testNode("host-a", "198.18.0.1/24", "", nil))
	ctx := context.Background()
	installed := filepath.Join(cfg.OutputDir, "bird.cfg")
	good := "router id {{.RouterID}};\nprotocol device {}\n"

	steps := []struct {
		name, template string
		wantErr        string
		wantReloads    int
		wantFile       string
	}{
		{"good", good, "", 1, "router id 198.18.0.1;\nprotocol device {}\n"},
		{"unchanged: no reload", good, "", 1, "router id 198.18.0.1;\nprotocol device {}\n"},
		{"template error", "router id {{.NoSuchField}};\n", "executing template", 1, "router id 198.18.0.1;\nprotocol device {}\n"},
		{"template syntax error", "router id {{.RouterID};\n", "parsing template", 1, "router id 198.18.0.1;\nprotocol device {}\n"},
		{"bird -p rejects it", good + "protocol nonsense {}\n", "checking", 1, "router id 198.18.0.1;\nprotocol device {}\n"},
		{"recovers", good + "protocol direct {}\n", "", 2, "router id 198.18.0.1;\nprotocol device {}\nprotocol direct {}\n"},
	}
	for _, st := range steps {
		writeFile(t, filepath.Join(tmplDir, "bird.cfg.template"), st.template)
		_, err := e.Sync(ctx, in)
		if (st.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), st.wantErr)) {
			t.Fatalf("%s: err = %v, want %q", st.name, err, st.wantErr)
		}
		data, _ := os.ReadFile(installed)
		if string(data) != st.wantFile || fake.reloads() != st.wantReloads {
			t.Fatalf("%s: file %q, %d reloads; want %q, %d", st.name, data, fake.reloads(), st.wantFile, st.wantReloads)
		}
	}
	// BIRD refusing the reload keeps it pending: the next sync reloads even without a change.
	fake.setReply("8001 Reconfiguration rejected\n")
	writeFile(t, filepath.Join(tmplDir, "bird.cfg.template"), good)
	if _, err := e.Sync(ctx, in); err == nil {
		t.Fatal("a rejected reload is not an error")
	}
	fake.setReply("0003 Reconfigured\n")
	res, err := e.Sync(ctx, in)
	if err != nil || !res.Reloaded || len(res.Changed) != 0 || fake.reloads() != 4 {
		t.Fatalf("retry: %+v %v, %d reloads", res, err, fake.reloads())
	}
}

// TestStagerAcrossFileSystems: with the staging directory on another file system (rename fails
// with EXDEV), files are installed through a uniquely named temporary file next to the
// destination: a symlink planted at the old fixed name <dest>.tmp is not written through.
func TestStagerAcrossFileSystems(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("needs /dev/shm")
	}
	shm, err := os.MkdirTemp("/dev/shm", "confd-stage-")
	if err != nil {
		t.Skip("cannot use /dev/shm:", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "inc.cfg")
	if err := os.Symlink(victim, dest+".tmp"); err != nil {
		t.Fatal(err)
	}
	s := &Stager{Dir: filepath.Join(shm, "staging"), Run: ExecRunner}
	f := Rendered{Template: Template{Src: "i", Dest: "inc.cfg"}, Dest: dest, Data: []byte("protocol device {}\n")}
	if changed, err := s.Apply(context.Background(), []Rendered{f}); err != nil || len(changed) != 1 {
		t.Fatalf("changed %d, err %v", len(changed), err)
	}
	if got, _ := os.ReadFile(dest); string(got) != string(f.Data) {
		t.Errorf("destination holds %q", got)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the file behind %s.tmp was overwritten: %q", dest, got)
	}
	if st, err := os.Lstat(dest); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o640 {
		t.Errorf("destination: %v %v", st, err)
	}
}
