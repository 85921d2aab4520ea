package ipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// Errors callers can test with errors.Is.
var (
	// ErrBlockLimit: the host needs another block but owns the maximum already (and may not borrow).
	ErrBlockLimit = errors.New("host has reached its limit of IPAM blocks")
	// ErrNoPool: no enabled pool of the family selects this host for the intended use.
	ErrNoPool = errors.New("no usable IP pool")
	// ErrExhausted: the selected pools have no free address left for this host.
	ErrExhausted = errors.New("no free addresses left in the IP pools")
	// ErrAlreadyAssigned: the requested address is taken.
	ErrAlreadyAssigned = errors.New("address is already assigned")
	// ErrNotInPool: the requested address is in no enabled pool.
	ErrNotInPool = errors.New("address is not in an enabled IP pool")
	// ErrTooManyRetries: compare-and-swap conflicts went on past the retry bound.
	ErrTooManyRetries = errors.New("too many concurrent IPAM updates (compare-and-swap retries exhausted)")
)

// DefaultMaxBlocksPerHost applies when neither the request nor the IPAM config sets a limit.
const DefaultMaxBlocksPerHost = 20

// maxRetries bounds compare-and-swap retries of one step, as Project Calico's datastoreRetries.
const maxRetries = 100

// Client allocates and releases addresses.
type Client struct {
	ds  *datastore.Client
	log zerolog.Logger
	now func() time.Time
}

// New returns an IPAM client on a datastore connection.
func New(ds *datastore.Client, log zerolog.Logger) *Client {
	return &Client{ds: ds, log: log, now: time.Now}
}

// GetIPAMConfig reads /calico/ipam/v2/config, returning Project Calico's defaults (no strict
// affinity, automatic block allocation, default block limit) when the key is absent.
func (c *Client) GetIPAMConfig(ctx context.Context) (api.IPAMConfig, error) {
	cfg, _, err := c.getConfig(ctx)
	return cfg, err
}

func (c *Client) getConfig(ctx context.Context) (api.IPAMConfig, int64, error) {
	kv, err := c.ds.GetKV(ctx, datastore.IPAMConfigKey)
	if datastore.IsNotFound(err) {
		return c.decodeConfig(nil), 0, nil
	}
	if err != nil {
		return api.IPAMConfig{}, 0, fmt.Errorf("reading IPAM config: %w", err)
	}
	return c.decodeConfig(kv), kv.ModRevision, nil
}

// decodeConfig is the stored IPAM config (kv nil: absent); Project Calico's defaults when it is
// absent or cannot be decoded.
func (c *Client) decodeConfig(kv *datastore.KV) api.IPAMConfig {
	defaults := api.IPAMConfig{AutoAllocateBlocks: true}
	if kv == nil {
		return defaults
	}
	var cfg api.IPAMConfig
	if err := json.Unmarshal(kv.Value, &cfg); err != nil {
		c.log.Warn().Err(err).Str("key", kv.Key).Msg("undecodable IPAM config, using defaults")
		return defaults
	}
	return cfg
}

// SetIPAMConfig writes /calico/ipam/v2/config (compare-and-swap against what it read).
func (c *Client) SetIPAMConfig(ctx context.Context, cfg api.IPAMConfig) error {
	if cfg.MaxBlocksPerHost < 0 {
		return fmt.Errorf("maxBlocksPerHost must not be negative (got %d)", cfg.MaxBlocksPerHost)
	}
	v, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encoding IPAM config: %w", err)
	}
	return c.retry(ctx, "writing IPAM config", func() error {
		kv, err := c.ds.GetKV(ctx, datastore.IPAMConfigKey)
		var rev int64
		value := v
		switch {
		case err == nil:
			rev, value = kv.ModRevision, datastore.KeepUnknownFields(kv.Value, v, cfg)
		case !datastore.IsNotFound(err):
			return fmt.Errorf("reading IPAM config: %w", err)
		}
		_, err = c.commit(ctx, write{key: datastore.IPAMConfigKey, value: value, rev: rev})
		return err
	})
}

// retry runs step until it returns something other than errConflict, at most maxRetries times,
// with a short jittered backoff between attempts so that contenders spread out.
func (c *Client) retry(ctx context.Context, what string, step func() error) error {
	for attempt := 0; attempt < maxRetries; attempt++ {
		err := step()
		if !errors.Is(err, errConflict) {
			return err
		}
		c.log.Debug().Str("op", what).Int("attempt", attempt).Msg("compare-and-swap conflict, retrying")
		if err := backoff.Sleep(ctx, conflictDelays.Delay(attempt)+100*time.Microsecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: %w", what, ErrTooManyRetries)
}

// conflictDelays spread contenders out: a random wait that grows with the attempt number
// (up to 20 ms).
var conflictDelays = backoff.Backoff{Min: time.Millisecond, Max: 20 * time.Millisecond, Jitter: 1}
