package goldmane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/flowlog"
	pb "github.com/calico-host/calico-host/pkg/flowlog/goldmane/goldmanepb"
)

// Defaults, Project Calico's (goldmane/pkg/client).
const (
	DefaultQueue   = 5000            // flows waiting to be sent
	DefaultReplay  = 5 * time.Minute // how long a sent flow is kept to send again after a reconnection
	maxReplayFlows = 100_000
	reconnectMin   = time.Second
	reconnectMax   = 10 * time.Second
	receiptTimeout = 30 * time.Second
)

// LocalSocket is where felix's local reporter (FlowLogsLocalReporter
// Enabled) sends flows, without TLS, while the socket exists
// (felix/collector/local).
const LocalSocket = "unix:///var/run/calico/flows/flows.sock"

// Config says where to send flows and how to authenticate.
type Config struct {
	// Server is host:port (FlowLogsGoldmaneServer), or unix:///path for
	// FlowLogsLocalReporter's socket (LocalSocket).
	Server string
	// CertFile, KeyFile and CAFile authenticate both ends (mutual TLS):
	// felix uses its TyphaCertFile, TyphaKeyFile and TyphaCAFile. All empty:
	// no TLS, as Project Calico's client allows (logged as a warning).
	CertFile, KeyFile, CAFile string
	// ServerName is the name the server's certificate must carry; empty:
	// the host part of Server (what Project Calico's client checks).
	ServerName string
	Queue      int           // DefaultQueue when 0
	Replay     time.Duration // DefaultReplay when 0
	Log        zerolog.Logger
}

// Client streams flows to a Goldmane server over FlowCollector.Connect.
type Client struct {
	cfg     Config
	conn    *grpc.ClientConn
	queue   chan *pb.Flow
	replay  []sentFlow
	dropped atomic.Int64
	sent    atomic.Int64
}

type sentFlow struct {
	at   time.Time
	flow *pb.Flow
}

// New checks cfg and loads its certificates; it does not connect (Run
// does). An error here does not go away by retrying.
func New(cfg Config) (*Client, error) {
	if !strings.HasPrefix(cfg.Server, "unix://") {
		if _, _, err := net.SplitHostPort(cfg.Server); err != nil {
			return nil, fmt.Errorf("goldmane server %q: %w", cfg.Server, err)
		}
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Replay <= 0 {
		cfg.Replay = DefaultReplay
	}
	creds, err := credentialsFor(cfg)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(cfg.Server, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("goldmane server %q: %w", cfg.Server, err)
	}
	return &Client{cfg: cfg, conn: conn, queue: make(chan *pb.Flow, cfg.Queue)}, nil
}

func credentialsFor(cfg Config) (credentials.TransportCredentials, error) {
	if cfg.CertFile == "" && cfg.KeyFile == "" && cfg.CAFile == "" {
		cfg.Log.Warn().Str("server", cfg.Server).Msg("sending flows to Goldmane without TLS: no certificate, key or CA file is set")
		return insecure.NewCredentials(), nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("goldmane client certificate: %w", err)
	}
	pem, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("goldmane CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("goldmane CA %s: no certificate in it", cfg.CAFile)
	}
	return credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ServerName:   cfg.ServerName,
		MinVersion:   tls.VersionTLS12, // Project Calico's default (TLS_MIN_VERSION)
	}), nil
}

// Push queues flows for sending without blocking; what does not fit is
// dropped and counted (Stats).
func (c *Client) Push(flows ...flowlog.Flow) {
	for _, f := range flows {
		select {
		case c.queue <- ToProto(f):
		default:
			if c.dropped.Add(1) == 1 {
				c.cfg.Log.Warn().Str("server", c.cfg.Server).Msg("Goldmane client queue full: dropping flows")
			}
		}
	}
}

// Stats returns how many flows were sent (with a receipt) and dropped.
func (c *Client) Stats() (sent, dropped int64) { return c.sent.Load(), c.dropped.Load() }

// Run connects and sends queued flows until ctx ends, reconnecting with
// backoff (1 s to 10 s) after any failure; on every (re)connection it first
// sends again the flows sent in the last Replay, so a restarted server
// rebuilds its state. It closes the connection when it returns.
func (c *Client) Run(ctx context.Context) {
	defer c.conn.Close()
	delay := backoff.Backoff{Min: reconnectMin, Max: reconnectMax, Jitter: 0.2}
	for ctx.Err() == nil {
		err := c.session(ctx, &delay)
		if ctx.Err() != nil {
			return
		}
		c.cfg.Log.Warn().Err(err).Str("server", c.cfg.Server).Msg("Goldmane stream failed; reconnecting")
		_ = delay.Wait(ctx)
	}
}

// session is one stream: replay, then the queue, each flow answered by a
// receipt before the next is sent (as Project Calico's client does).
func (c *Client) session(ctx context.Context, delay *backoff.Backoff) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := pb.NewFlowCollectorClient(c.conn).Connect(sctx)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	c.trimReplay(time.Now())
	for _, s := range c.replay {
		if err := c.send(stream, s.flow); err != nil {
			return err
		}
	}
	c.cfg.Log.Info().Str("server", c.cfg.Server).Int("replayed", len(c.replay)).Msg("streaming flows to Goldmane")
	delay.Reset()
	for {
		select {
		case <-ctx.Done():
			_ = stream.CloseSend()
			return ctx.Err()
		case f := <-c.queue:
			c.remember(f)
			if err := c.send(stream, f); err != nil {
				return err
			}
			c.sent.Add(1)
		}
	}
}

func (c *Client) send(stream grpc.BidiStreamingClient[pb.FlowUpdate, pb.FlowReceipt], f *pb.Flow) error {
	if err := stream.Send(&pb.FlowUpdate{Flow: f}); err != nil {
		return fmt.Errorf("sending flow: %w", err)
	}
	got := make(chan error, 1)
	go func() { _, err := stream.Recv(); got <- err }()
	select {
	case err := <-got:
		if err != nil {
			return fmt.Errorf("waiting for receipt: %w", err)
		}
		return nil
	case <-time.After(receiptTimeout):
		return errors.New("no receipt from the server")
	}
}

func (c *Client) remember(f *pb.Flow) {
	c.replay = append(c.replay, sentFlow{at: time.Now(), flow: f})
	if len(c.replay) > maxReplayFlows {
		c.replay = c.replay[len(c.replay)-maxReplayFlows:]
	}
}

func (c *Client) trimReplay(now time.Time) {
	i := 0
	for i < len(c.replay) && now.Sub(c.replay[i].at) > c.cfg.Replay {
		i++
	}
	c.replay = append(c.replay[:0], c.replay[i:]...)
}
