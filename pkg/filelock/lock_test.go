package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestWaitEndsWithTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "c.lock")
	held, err := Acquire(context.Background(), path, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	waited := 0
	_, err = Acquire(context.Background(), path, 50*time.Millisecond, func() { waited++ })
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Acquire: %v, want a TimeoutError", err)
	}
	if !slices.Contains(te.Holders, os.Getpid()) || te.Path != path {
		t.Errorf("timeout names holders %v of %s, want this process (%d)", te.Holders, te.Path, os.Getpid())
	}
	if waited != 1 {
		t.Errorf("waiting called %d times, want once", waited)
	}
	held.Release()
	again, err := Acquire(context.Background(), path, time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	again.Release()
}

func TestCancelledWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.lock")
	held, err := Acquire(context.Background(), path, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Acquire(ctx, path, time.Minute, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled context: %v", err)
	}
}

// TestRemovedWhileWaited: the holder removes the file while another waits; the waiter must then
// hold the lock of the file at the path, so a third process cannot take it.
func TestRemovedWhileWaited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.lock")
	first, err := Acquire(context.Background(), path, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	got := make(chan *Lock)
	go func() {
		l, err := Acquire(context.Background(), path, 10*time.Second, func() { close(waiting) })
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	<-waiting
	if err := first.Remove(); err != nil {
		t.Fatal(err)
	}
	second := <-got
	if second == nil {
		t.FailNow()
	}
	defer second.Release()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the waiter holds no file at the path: %v", err)
	}
	if third, err := Acquire(context.Background(), path, 30*time.Millisecond, nil); err == nil {
		third.Release()
		t.Fatal("a third Acquire got the lock the waiter holds: the waiter locked the removed file")
	}
}

// TestOpenedBeforeRemoval: a file opened just before its holder removed it is not locked: the
// lock would be on a file no other process can find.
func TestOpenedBeforeRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.lock")
	first, err := Acquire(context.Background(), path, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Remove(); err != nil {
		t.Fatal(err)
	}
	if l, err := lockOpened(f, path); l != nil || err != nil {
		t.Fatalf("locked the removed file: %v %v", l, err)
	}
}

func TestContentAndRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.lock")
	l, err := Acquire(context.Background(), path, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/var/run/netns/a-long-name", "/x"} {
		if err := l.SetContent([]byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := l.Content()
		if err != nil || string(got) != want {
			t.Errorf("content %q %v, want %q", got, err, want)
		}
	}
	if err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file still there after Remove: %v", err)
	}
}

func TestFlockHolderLine(t *testing.T) {
	for _, c := range []struct {
		line string
		pid  int
		ok   bool
	}{
		{"2: FLOCK  ADVISORY  WRITE 32015 fe:00:10019777 0 EOF", 32015, true},
		{"2: FLOCK  ADVISORY  WRITE 32015 fe:00:10019778 0 EOF", 0, false},
		{"2: -> FLOCK  ADVISORY  WRITE 411 fe:00:10019777 0 EOF", 0, false},
		{"1: OFDLCK ADVISORY  WRITE -1 fe:00:10019777 0 EOF", 0, false},
		{"1: POSIX  ADVISORY  WRITE 77 fe:00:10019777 0 EOF", 0, false},
		{"", 0, false},
	} {
		pid, ok := flockHolder(c.line, "fe:00:10019777")
		if pid != c.pid || ok != c.ok {
			t.Errorf("%q: %d %v, want %d %v", c.line, pid, ok, c.pid, c.ok)
		}
	}
}
