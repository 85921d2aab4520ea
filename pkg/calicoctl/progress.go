package calicoctl

import (
	"fmt"
	"io"
)

// progress draws a one-line progress indicator on stderr, only when stderr is a terminal (a
// redirected stderr gets nothing: logs and pipes stay clean). It redraws only when the
// percentage or the label changes, so a long run writes at most a few hundred short lines.
type progress struct {
	w       io.Writer
	on      bool
	label   string
	lastPct int
	lastMsg string
	drawn   bool
}

// newProgress returns the progress of one task, drawn when stderr is a terminal.
func (c *cli) newProgress(label string) *progress {
	return &progress{w: c.stderr, on: c.stderrTTY, label: label, lastPct: -1}
}

// update shows done out of total, with what is being done.
func (p *progress) update(done, total int, what string) {
	if !p.on || total <= 0 {
		return
	}
	pct := done * 100 / total
	if pct == p.lastPct && what == p.lastMsg {
		return
	}
	p.lastPct, p.lastMsg = pct, what
	line := fmt.Sprintf("%s: %d/%d (%d%%)", p.label, done, total, pct)
	if what != "" {
		line += " " + what
	}
	// \r returns to the line start; \x1b[K clears what a longer previous line left.
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	p.drawn = true
}

// finish clears the progress line, so what follows starts on a clean line.
func (p *progress) finish() {
	if p.on && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}
