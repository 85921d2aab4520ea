package cni

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/filelock"
	"github.com/calico-host/calico-host/pkg/ipam"
)

// SupportedVersions are the CNI spec versions both plugins speak.
var SupportedVersions = version.All

// Options are the plugins' ties to the outside world (replaced in tests).
type Options struct {
	Stdout io.Writer
	Stderr io.Writer
	Env    config.Env
	// DatastoreFile is the shared datastore configuration (default /etc/calico/datastore.toml),
	// read under the CNI environment and the network configuration's etcd_* fields.
	DatastoreFile string
	MTUFile       string
	// Timeout bounds one command (default 60 s).
	Timeout time.Duration
}

// DefaultOptions are those of the installed binaries.
func DefaultOptions() Options {
	return Options{Stdout: os.Stdout, Stderr: os.Stderr, Env: config.OSEnv, DatastoreFile: config.DefaultDatastoreFile,
		MTUFile: DefaultMTUFile, Timeout: 60 * time.Second}
}

// readyTimeout bounds the first datastore request, so an unreachable etcd fails fast.
const readyTimeout = 5 * time.Second

// cleanupTimeout bounds the undo of a failed ADD.
const cleanupTimeout = 15 * time.Second

// session is one plugin invocation: its configuration, logger, workload and datastore.
type session struct {
	opts    Options
	args    *skel.CmdArgs
	conf    *NetConf
	cniArgs *Args
	log     zerolog.Logger
	node    string
	w       Workload
	ctx     context.Context
	ds      *datastore.Client
	ipam    *ipam.Client
	closers []func()
	// connectErr is why the datastore connection could not be opened (see connect).
	connectErr error
	// attachment is the held lock of this container's attachment (calico plugin; see lockAttachment).
	attachment *filelock.Lock
	// identityErr: the container identity is invalid (see NewWorkload); each command decides.
	identityErr error
}

func newSession(args *skel.CmdArgs, opts Options, plugin string) (*session, error) {
	conf, err := ParseNetConf(args.StdinData)
	if err != nil {
		return nil, err
	}
	if conf.CNIVersion == "" {
		conf.CNIVersion = "0.2.0"
	}
	s := &session{opts: opts, args: args, conf: conf}
	var closeLog func()
	s.log, closeLog = NewLogger(conf, opts.Stderr, plugin)
	s.closers = append(s.closers, closeLog)
	s.log = s.log.With().Str("container", args.ContainerID).Str("netns", args.Netns).Str("ifname", args.IfName).Logger()
	reportUnimplemented(s.log, conf.Name, args.StdinData)
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	s.ctx = ctx
	s.closers = append(s.closers, cancel)
	if s.cniArgs, err = ParseArgs(args.Args); err != nil {
		s.close()
		return nil, err
	}
	if s.node, err = conf.NodeName(); err != nil {
		s.close()
		return nil, err
	}
	testNS, _ := opts.Env("CNI_TEST_NAMESPACE")
	s.w, s.identityErr = NewWorkload(conf.Name, s.node, args.ContainerID, args.IfName, s.cniArgs, testNS)
	return s, nil
}

// reportUnimplemented logs the network configuration's Project Calico settings that calico-host
// does not implement (see compat).
func reportUnimplemented(log zerolog.Logger, network string, stdin []byte) {
	findings, err := compat.CheckJSON(compat.NetConf, "CNI network configuration "+network, stdin)
	if err != nil {
		log.Warn().Err(err).Msg("not checked for settings calico-host does not implement")
		return
	}
	for _, f := range findings {
		f.Log(log)
	}
}

// identityValid is nil when the container identity is valid.
func (s *session) identityValid() error { return s.identityErr }

// connect opens the datastore connection (once: a failure is kept and returned again).
func (s *session) connect() error {
	if s.ds != nil || s.connectErr != nil {
		return s.connectErr
	}
	cfg, err := s.conf.Datastore(s.opts.Env, s.opts.DatastoreFile)
	if err != nil {
		s.connectErr = err
		return err
	}
	ds, err := datastore.New(cfg)
	if err != nil {
		s.connectErr = cniErr(CodeDatastore, "connecting to etcd", err)
		return s.connectErr
	}
	s.ds = ds
	s.ipam = ipam.New(ds, s.log)
	s.closers = append(s.closers, func() { ds.Close() })
	return nil
}

// connectEarly opens the datastore connection when a command starts, so that the client connects
// to etcd (TCP, TLS, HTTP/2) in the background while the command checks its input. An error is
// reported only when the command needs the datastore (connect).
func (s *session) connectEarly() {
	if s.connect() == nil {
		s.ds.Etcd().ActiveConnection().Connect()
	}
}

// ready connects and reads the startState, failing fast (readyTimeout) when etcd is unreachable.
func (s *session) ready() (*startState, error) {
	if err := s.connect(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(s.ctx, readyTimeout)
	defer cancel()
	return readStart(ctx, s.ds, s.w)
}

func (s *session) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// fail logs a command's error and returns it as a CNI error.
func (s *session) fail(op string, err error) error {
	e := cniErr(types.ErrInternal, op+" failed", err)
	s.log.Error().Uint("code", e.Code).Str("msg", e.Msg).Str("details", e.Details).Msg(op + " failed")
	return e
}

// checkNetNS rejects a namespace path that is missing or not a network namespace.
func checkNetNS(path string) error {
	n, err := openNetNS(path)
	if errors.Is(err, errNoNetNS) {
		return cniErr(types.ErrUnknownContainer, fmt.Sprintf("network namespace %q does not exist", path), err)
	}
	if err != nil {
		return cniErr(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("CNI_NETNS %q is not a usable network namespace", path), err)
	}
	n.Close()
	return nil
}
