package calicoctl

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// boxTable prints a table framed with +---+ lines, as the ipam commands of Project Calico's
// calicoctl do: headings centred, numbers right-aligned, other cells left-aligned.
func boxTable(out io.Writer, headings []string, rows [][]string) {
	widths := make([]int, len(headings))
	for i, h := range headings {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	rule := func() {
		for _, w := range widths {
			b.WriteString("+" + strings.Repeat("-", w+2))
		}
		b.WriteString("+\n")
	}
	line := func(cells []string, align func(cell string, w int) string) {
		for i, c := range cells {
			b.WriteString("| " + align(c, widths[i]) + " ")
		}
		b.WriteString("|\n")
	}
	rule()
	line(headings, center)
	rule()
	for _, r := range rows {
		line(r, alignCell)
	}
	rule()
	_, _ = io.WriteString(out, b.String())
}

func center(s string, w int) string {
	pad := w - utf8.RuneCountInString(s)
	left := pad / 2
	return strings.Repeat(" ", left) + s + strings.Repeat(" ", pad-left)
}

func alignCell(s string, w int) string {
	pad := strings.Repeat(" ", w-utf8.RuneCountInString(s))
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return pad + s
	}
	return s + pad
}
