package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/flowlog/nflog"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: packetpath load|serve|dial|nflog [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "load":
		err = load(os.Args[2:])
	case "serve":
		err = serve(os.Args[2:])
	case "dial":
		err = dial(os.Args[2:])
	case "nflog":
		err = readNFLOG()
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "packetpath:", err)
		os.Exit(1)
	}
}

// kv is one object of the data file.
type kv struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	endpoints := fs.String("endpoints", "http://127.0.0.1:2379", "etcd endpoints, comma separated")
	data := fs.String("data", "", "JSON array of {key, value} (gzip when it ends in .gz)")
	fs.Parse(args)
	kvs, err := readData(*data)
	if err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(*endpoints, ","), DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const batch = 100
	for i := 0; i < len(kvs); i += batch {
		var ops []clientv3.Op
		for _, o := range kvs[i:min(i+batch, len(kvs))] {
			ops = append(ops, clientv3.OpPut(o.Key, string(o.Value)))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return fmt.Errorf("writing keys %d..: %w", i, err)
		}
	}
	fmt.Printf("loaded %d keys\n", len(kvs))
	return nil
}

func readData(path string) ([]kv, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = gz
	}
	var kvs []kv
	if err := json.NewDecoder(r).Decode(&kvs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return kvs, nil
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "", "address to listen on")
	fs.Parse(args)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Println("serving", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			var b [1]byte
			c.Read(b[:])
			c.Close()
		}()
	}
}

func dial(args []string) error {
	fs := flag.NewFlagSet("dial", flag.ExitOnError)
	addr := fs.String("addr", "", "server address")
	conc := fs.Int("c", 4, "concurrent dialers")
	dur := fs.Duration("d", 5*time.Second, "duration")
	fs.Parse(args)
	var conns, errs atomic.Int64
	deadline := time.Now().Add(*dur)
	var wg sync.WaitGroup
	for range *conc {
		wg.Go(func() {
			d := net.Dialer{Timeout: time.Second}
			for time.Now().Before(deadline) {
				if err := once(&d, *addr); err != nil {
					errs.Add(1)
					continue
				}
				conns.Add(1)
			}
		})
	}
	start := time.Now()
	wg.Wait()
	secs := time.Since(start).Seconds()
	fmt.Printf("conns=%d seconds=%.2f rate=%.0f errors=%d\n", conns.Load(), secs, float64(conns.Load())/secs, errs.Load())
	if conns.Load() == 0 {
		return errors.New("no connection succeeded")
	}
	return nil
}

// once opens one connection, sends a byte and resets it.
func once(d *net.Dialer, addr string) error {
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	tc := c.(*net.TCPConn)
	_, err = tc.Write([]byte{1})
	tc.SetLinger(0)
	tc.Close()
	return err
}

// readNFLOG subscribes to groups 1 and 2 in this namespace, counting what arrives, until SIGTERM.
func readNFLOG() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var packets atomic.Int64
	var subs []*nflog.Subscriber
	for _, g := range []uint16{1, 2} {
		s, err := nflog.Subscribe(ctx, nflog.Config{Group: g, ReadBuffer: 4 << 20}, func(nflog.Packet) { packets.Add(1) })
		if err != nil {
			return err
		}
		subs = append(subs, s)
	}
	<-ctx.Done()
	var overruns uint64
	for _, s := range subs {
		s.Close()
		overruns += s.Stats().Overruns
	}
	fmt.Printf("packets=%d overruns=%d\n", packets.Load(), overruns)
	return nil
}
