package birdctl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrNotRunning means nothing listens on the control socket (it is absent, or stale).
var ErrNotRunning = errors.New("BIRD is not running")

// Reply codes used by this package (BIRD's doc/reply_codes).
const (
	CodeOK                 = 0
	CodeWelcome            = 1
	CodeReadingConfig      = 2
	CodeReconfigured       = 3
	CodeReconfigInProgress = 4
	CodeReconfigQueued     = 5
	CodeReconfigIgnored    = 6
	CodeShutdownInProgress = 7
	CodeNothingToDo        = 19
	CodeProtocolList       = 1002
	CodeProtocolDetails    = 1006
	CodeProtocolHeader     = 2002
)

// Line is one reply line: its numeric code (inherited by continuation lines) and text.
type Line struct {
	Code int
	Text string
}

// ReplyError is a reply whose final code is an error (8xxx runtime, 9xxx syntax).
type ReplyError struct {
	Command string
	Code    int
	Text    string
}

func (e *ReplyError) Error() string {
	return fmt.Sprintf("BIRD rejected %q: %04d %s", e.Command, e.Code, e.Text)
}

// Client is one connection to BIRD's control socket. It is not safe for concurrent use.
type Client struct {
	conn    net.Conn
	r       *bufio.Reader
	Version string // from the greeting, e.g. "BIRD 2.0.12"
}

// DefaultTimeout bounds a command when the context has no deadline.
const DefaultTimeout = 30 * time.Second

// Dial connects to the control socket at path and reads BIRD's greeting. It returns an error
// wrapping ErrNotRunning when the socket does not exist or nobody listens on it.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("connecting to %s: %w (%v)", path, ErrNotRunning, err)
		}
		return nil, fmt.Errorf("connecting to %s: %w", path, err)
	}
	c := &Client{conn: conn, r: bufio.NewReader(conn)}
	lines, err := c.readReply(ctx)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("reading BIRD greeting on %s: %w", path, err)
	}
	if last := lines[len(lines)-1]; last.Code == CodeWelcome {
		c.Version = strings.TrimSuffix(strings.TrimSuffix(last.Text, "."), " ready")
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Command sends one command line and returns every line of the reply. A final code of 8000 or
// more is returned as a *ReplyError (with the lines read so far).
func (c *Client) Command(ctx context.Context, cmd string) ([]Line, error) {
	if strings.ContainsAny(cmd, "\r\n") {
		return nil, fmt.Errorf("command %q contains a line break", cmd)
	}
	c.setDeadline(ctx)
	if _, err := c.conn.Write([]byte(cmd + "\n")); err != nil {
		return nil, fmt.Errorf("sending %q: %w", cmd, err)
	}
	lines, err := c.readReply(ctx)
	if err != nil {
		return lines, fmt.Errorf("reading reply to %q: %w", cmd, err)
	}
	if last := lines[len(lines)-1]; last.Code >= 8000 {
		return lines, &ReplyError{Command: cmd, Code: last.Code, Text: last.Text}
	}
	return lines, nil
}

func (c *Client) setDeadline(ctx context.Context) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(DefaultTimeout)
	}
	_ = c.conn.SetDeadline(dl)
}

// readReply reads lines until the final one ("DDDD text"). Asynchronous lines ("+...") are
// skipped; continuation lines (" text") inherit the previous code.
func (c *Client) readReply(ctx context.Context) ([]Line, error) {
	c.setDeadline(ctx)
	var lines []Line
	code := 0
	for {
		raw, err := c.r.ReadString('\n')
		if err != nil {
			return lines, err
		}
		raw = strings.TrimRight(raw, "\r\n")
		l, final, ok := parseLine(escapeControls(raw), code)
		if !ok {
			continue
		}
		code = l.Code
		lines = append(lines, l)
		if final {
			return lines, nil
		}
	}
}

// parseLine parses one raw line given the code of the previous line.
func parseLine(raw string, prev int) (l Line, final, ok bool) {
	if strings.HasPrefix(raw, "+") {
		return Line{}, false, false
	}
	if len(raw) >= 5 && isDigits(raw[:4]) && (raw[4] == ' ' || raw[4] == '-') {
		n, _ := strconv.Atoi(raw[:4])
		return Line{Code: n, Text: raw[5:]}, raw[4] == ' ', true
	}
	if len(raw) == 4 && isDigits(raw) {
		n, _ := strconv.Atoi(raw)
		return Line{Code: n}, true, true
	}
	return Line{Code: prev, Text: strings.TrimPrefix(raw, " ")}, false, true
}

// escapeControls writes control characters and invalid UTF-8 of a reply line as Go escapes
// (\x1b): replies carry text BIRD got from peers (a BGP shutdown message, for example), and
// they end up on terminals, in logs and in systemd's STATUS.
func escapeControls(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		i += max(n, 1)
	}
	return b.String()
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Configure asks BIRD to re-read its configuration file. It returns BIRD's final message
// ("Reconfigured", "Reconfiguration in progress", ...). A configuration BIRD rejects is a
// *ReplyError.
func (c *Client) Configure(ctx context.Context) (string, error) {
	lines, err := c.Command(ctx, "configure")
	if err != nil {
		return "", err
	}
	last := lines[len(lines)-1]
	switch last.Code {
	case CodeReconfigured, CodeReconfigInProgress, CodeReconfigQueued, CodeNothingToDo, CodeOK:
		return last.Text, nil
	}
	return "", &ReplyError{Command: "configure", Code: last.Code, Text: last.Text}
}

// Configure dials path, runs "configure" and closes the connection.
func Configure(ctx context.Context, path string) (string, error) {
	c, err := Dial(ctx, path)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.Configure(ctx)
}
