package routes

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Fake is an in-memory Handle that behaves like the kernel where the Reconciler can tell: one
// route per table, destination and metric; IPv6 metric 0 becomes 1024; a route needs an existing
// device (ENODEV otherwise); deleting a link deletes its routes; deleting a missing route (or one of
// another protocol) fails with ESRCH; a route through a down device fails with ENETDOWN.
type Fake struct {
	mu        sync.Mutex
	links     map[string]int
	down      map[int]bool
	nextIndex int
	routes    map[key]KernelRoute
	// Writes counts ReplaceRoute and DeleteRoute calls; Lists counts ListRoutes calls.
	Writes, Lists int
	// FailReplace, when set, is consulted before each ReplaceRoute; a non-nil error is returned.
	FailReplace func(KernelRoute) error
}

// NewFake returns a Fake with only "lo" (index 1).
func NewFake() *Fake {
	return &Fake{links: map[string]int{"lo": 1}, down: map[int]bool{}, nextIndex: 2, routes: map[key]KernelRoute{}}
}

// AddLink creates an interface and returns its index.
func (f *Fake) AddLink(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.links[name] = f.nextIndex
	f.nextIndex++
	return f.links[name]
}

// SetLinkUp sets an interface up or down (a down interface keeps its routes, as IPv4 does for
// routes added while it was up).
func (f *Fake) SetLinkUp(name string, up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[f.links[name]] = !up
}

// DelLink deletes an interface and, like the kernel, every route through it.
func (f *Fake) DelLink(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	idx := f.links[name]
	delete(f.links, name)
	for k, r := range f.routes {
		if r.LinkIndex == idx {
			delete(f.routes, k)
		}
	}
}

// AddRoute installs a route as another program would (any protocol), bypassing the Reconciler.
func (f *Fake) AddRoute(r Route, protocol int) error {
	c, err := canonical(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	idx, ok := f.links[r.Dev]
	f.mu.Unlock()
	if r.Dev != "" && !ok {
		return unix.ENODEV
	}
	c.Protocol = protocol
	return f.ReplaceRoute(KernelRoute{Route: c, LinkIndex: idx})
}

// RemoveRoute deletes a route behind the Reconciler's back, whatever its protocol.
func (f *Fake) RemoveRoute(r Route) {
	c, _ := canonical(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.routes, key{table: c.Table, dst: c.Dst, metric: c.Metric})
}

// Dump lists every route, sorted, as "<route> proto <n>".
func (f *Fake) Dump() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := map[int]string{}
	for n, i := range f.links {
		names[i] = n
	}
	var out []string
	for _, r := range f.routes {
		r.Dev = names[r.LinkIndex]
		line := fmt.Sprintf("%s proto %d", r.Route, r.Protocol)
		if r.Metric != defaultMetric(r.Dst) {
			line += fmt.Sprintf(" metric %d", r.Metric)
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

// ListRoutes implements Handle.
func (f *Fake) ListRoutes(context.Context) ([]KernelRoute, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Lists++
	out := make([]KernelRoute, 0, len(f.routes))
	for _, r := range f.routes {
		out = append(out, r)
	}
	return out, nil
}

// ReplaceRoute implements Handle.
func (f *Fake) ReplaceRoute(r KernelRoute) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Writes++
	if f.FailReplace != nil {
		if err := f.FailReplace(r); err != nil {
			return err
		}
	}
	if !r.Blackhole && !r.Throw && !f.hasIndex(r.LinkIndex) {
		return unix.ENODEV
	}
	if !r.Blackhole && !r.Throw && f.down[r.LinkIndex] {
		return unix.ENETDOWN
	}
	if r.Metric == 0 {
		r.Metric = defaultMetric(r.Dst)
	}
	r.Dev = ""
	f.routes[r.key()] = r
	return nil
}

// DeleteRoute implements Handle.
func (f *Fake) DeleteRoute(r KernelRoute) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Writes++
	have, ok := f.routes[r.key()]
	if !ok || (r.Protocol != 0 && have.Protocol != r.Protocol) {
		return unix.ESRCH
	}
	delete(f.routes, r.key())
	return nil
}

// LinkIndexes implements Handle.
func (f *Fake) LinkIndexes(context.Context) (map[string]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]int, len(f.links))
	for n, i := range f.links {
		m[n] = i
	}
	return m, nil
}

func (f *Fake) hasIndex(idx int) bool {
	for _, i := range f.links {
		if i == idx {
			return true
		}
	}
	return false
}
