package wgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/ipc"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

const envDevice = "CALICO_HOST_WGTEST_DEVICE"

// MaybeServe must be called first in TestMain: in the re-executed child it runs the device until
// it is killed and exits; in the test process it returns at once.
func MaybeServe() {
	name := os.Getenv(envDevice)
	if name == "" {
		return
	}
	if err := serve(name); err != nil {
		fmt.Fprintln(os.Stderr, "wgtest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serve(name string) error {
	tdev, err := tun.CreateTUN(name, device.DefaultMTU)
	if err != nil {
		return fmt.Errorf("creating TUN %s: %w", name, err)
	}
	uapiFile, err := ipc.UAPIOpen(name)
	if err != nil {
		return fmt.Errorf("opening the UAPI socket: %w", err)
	}
	dev := device.NewDevice(tdev, conn.NewDefaultBind(), device.NewLogger(device.LogLevelError, "wgtest "+name+": "))
	uapi, err := ipc.UAPIListen(name, uapiFile)
	if err != nil {
		return fmt.Errorf("listening on the UAPI socket: %w", err)
	}
	go func() {
		for {
			c, err := uapi.Accept()
			if err != nil {
				return
			}
			go dev.IpcHandle(c)
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case <-dev.Wait():
	}
	_ = uapi.Close()
	dev.Close()
	return nil
}

// SocketPath is where wgctrl finds a userspace device.
func SocketPath(name string) string { return filepath.Join("/var/run/wireguard", name+".sock") }

// Start runs a userspace device called name in the namespace nsName until the test ends.
func Start(t testing.TB, nsName, name string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", nsName, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), envDevice+"="+name)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the userspace WireGuard device: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = os.Remove(SocketPath(name))
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(SocketPath(name)); err == nil {
			return
		}
		select {
		case <-exited:
			t.Fatalf("the userspace WireGuard device exited: %s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the userspace WireGuard device %s did not come up: %s", name, stderr.String())
		}
	}
}

// KernelDriver reports whether the kernel can create WireGuard devices, probing in a
// throwaway namespace.
func KernelDriver(t testing.TB) bool {
	t.Helper()
	_, err := netnstest.New(t, "wgprobe").Try("ip", "link", "add", "wgprobe", "type", "wireguard")
	return err == nil
}
