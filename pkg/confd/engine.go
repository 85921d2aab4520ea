package confd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/compat/report"
)

// Engine turns datastore inputs into applied BIRD configuration: Build, Render, stage and check,
// swap, reload. It keeps no model between runs; it only remembers whether BIRD still needs a
// reload.
type Engine struct {
	cfg      *Config
	nodeName string
	stager   *Stager
	reloader *Reloader
	log      zerolog.Logger
	// unimplemented logs the Project Calico settings calico-host does not implement, once each.
	unimplemented *report.Reporter
	// reloadPending: BIRD has not confirmed the files on disk (first run, or a failed reload).
	reloadPending bool
}

// Result describes one successful Sync.
type Result struct {
	Changed        []string // destinations that changed
	Reloaded       bool     // a reload ran and succeeded
	ReloadMessage  string   // BIRD's answer to the built-in reload
	BIRDNotRunning bool     // the reload found no BIRD (it will read the files when it starts)
	Sessions       [2]int   // BGP sessions by family (IPv4, IPv6)
	Warnings       []string // datastore problems (see Model.Warnings)
}

// NewEngine returns an engine for node nodeName. run executes check and external reload
// commands (ExecRunner in production).
func NewEngine(cfg *Config, nodeName string, run Runner, log zerolog.Logger) *Engine {
	return &Engine{
		cfg:           cfg,
		nodeName:      nodeName,
		stager:        &Stager{Dir: filepath.Join(cfg.OutputDir, ".staging"), Run: run},
		reloader:      &Reloader{Socket: cfg.BIRDSocket, Run: run},
		log:           log,
		unimplemented: report.New("confd", log),
		reloadPending: true,
	}
}

// Model builds the model of the inputs with this engine's options.
func (e *Engine) Model(in *Inputs) *Model {
	return Build(in, BuildOptions{
		NodeName: e.nodeName,
		RouterID: e.cfg.RouterID,
		Password: e.readPassword,
		Vars:     e.cfg.Vars,
	})
}

// Sync renders the inputs and applies the result. On a render or check error nothing on disk
// changes; on a reload error the new files stay in place and the next Sync reloads again.
func (e *Engine) Sync(ctx context.Context, in *Inputs) (Result, error) {
	e.unimplemented.Replace(Unimplemented(in, e.nodeName))
	m := e.Model(in)
	res := Result{}
	for _, w := range m.Warnings {
		res.Warnings = append(res.Warnings, w.String())
	}
	for i, f := range m.Families {
		res.Sessions[i] = len(f.Peers)
	}
	files, err := Render(e.cfg, m)
	if err != nil {
		return res, err
	}
	changed, err := e.stager.Apply(ctx, files)
	for _, f := range changed {
		res.Changed = append(res.Changed, f.Dest)
	}
	if err != nil {
		e.reloadPending = e.reloadPending || len(changed) > 0
		return res, err
	}
	if len(changed) == 0 && !e.reloadPending {
		return res, nil
	}
	if len(changed) == 0 {
		changed = files // reload for every resource
	}
	return e.reload(ctx, changed, res)
}

func (e *Engine) reload(ctx context.Context, changed []Rendered, res Result) (Result, error) {
	msg, err := e.reloader.Reload(ctx, changed)
	res.ReloadMessage = msg
	switch {
	case errors.Is(err, ErrBIRDNotRunning):
		res.BIRDNotRunning = true
		e.reloadPending = false // BIRD reads the files when it starts
		return res, nil
	case err != nil:
		e.reloadPending = true
		return res, err
	}
	res.Reloaded = true
	e.reloadPending = false
	return res, nil
}

// Unimplemented lists the settings of this node's BGPConfigurations (default and
// node.<nodeName>) and of every BGPPeer that calico-host does not implement (see compat).
func Unimplemented(in *Inputs, nodeName string) []compat.Finding {
	var out []compat.Finding
	for _, name := range []string{"default", "node." + nodeName} {
		if c := in.BGPConfigs[name]; c != nil {
			out = append(out, check(compat.BGPConfiguration, "BGPConfiguration "+name, c)...)
		}
	}
	strict := in.BGPConfigs["default"] != nil && in.BGPConfigs["default"].Spec.BindMode == "NodeIP"
	for _, name := range sortedKeys(in.Peers) {
		out = append(out, check(compat.BGPPeer, "BGPPeer "+name, in.Peers[name])...)
		if strict && in.Peers[name].Spec.SourceAddress == "None" {
			out = append(out, compat.Finding{Object: "BGPPeer " + name, Field: "spec.sourceAddress", Value: "None", Setting: sourceUnderStrictBind})
		}
	}
	return out
}

// sourceUnderStrictBind explains why sourceAddress None has no effect under bindMode NodeIP.
var sourceUnderStrictBind = &compat.Setting{Kind: compat.BGPPeer, Name: "spec.sourceAddress", Type: compat.TypeEnum,
	Why: "with BGPConfiguration bindMode NodeIP the session's source address is the node's: BIRD 2 binds a session's " +
		"listening socket to its source address, where Project Calico's BIRD binds only the listening socket"}

// check is compat.Check of an object that marshals (every datastore object does).
func check(kind, object string, v any) []compat.Finding {
	f, _ := compat.Check(kind, object, v)
	return f
}

// readPassword reads a BGP password from SecretsDir/<name>/<key>, without its trailing newline.
func (e *Engine) readPassword(ref *api.SecretKeyRef) (string, error) {
	for _, part := range []string{ref.Name, ref.Key} {
		if part == "" || part == "." || part == ".." || strings.ContainsRune(part, '/') {
			return "", fmt.Errorf("bad secret reference %q/%q", ref.Name, ref.Key)
		}
	}
	path := filepath.Join(e.cfg.SecretsDir, ref.Name, ref.Key)
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading BGP password: %w", err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

// summary is a one-line description of a successful result, for logs and STATUS.
func (r Result) summary(now time.Time) string {
	s := fmt.Sprintf("BGP sessions: %d IPv4, %d IPv6; config applied at %s", r.Sessions[0], r.Sessions[1], now.Format("15:04:05"))
	switch {
	case r.BIRDNotRunning:
		s += "; BIRD not running yet"
	case r.Reloaded:
		s += "; BIRD reloaded"
	}
	if len(r.Warnings) > 0 {
		s += fmt.Sprintf("; %d datastore warnings", len(r.Warnings))
	}
	return s
}
