package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/goldmane"
	pb "github.com/calico-host/calico-host/pkg/flowlog/goldmane/goldmanepb"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// want maps a flow (reporter source>dest proto/port, by friendly name) to its action and
// deciding enforced hit, then " | pending " and the deciding pending hit when the staged
// policy changes it; "<flow> (types)" to its ends' types and namespaces, "<flow> (dest labels)"
// to the destination's labels.
func (r *run) want() map[string]string {
	gnp := func(name string, rule int, action string) string {
		return fmt.Sprintf("GlobalNetworkPolicy default:%s rule %d %s", name, rule, action)
	}
	np := func(rule int) string {
		return fmt.Sprintf("CalicoNetworkPolicy default:default/web-ping rule %d Allow", rule)
	}
	// The enforced end of tier names the tier's last policy (felix's TierDefaultActionRuleID),
	// the pending one its first that did not match (Project Calico's app-policy checker).
	eot := "EndOfTier default:(web-ingress) rule -1 Deny | pending EndOfTier default:(web-ping) rule -1 Deny"
	egress := "Allow " + gnp("client-egress", 1, "Allow")
	weps := "WorkloadEndpoint default > WorkloadEndpoint default"
	return map[string]string{
		"Dst client>web tcp/80":               "Allow " + gnp("web-ingress", 1, "Allow"),
		"Dst client>web udp/80":               "Allow " + gnp("web-ingress", 2, "Allow") + " | pending StagedGlobalNetworkPolicy default:staged-deny-udp rule 0 Deny",
		"Dst client>web icmp/2048":            "Allow " + np(0),
		"Dst client>web icmp6/32768":          "Allow " + np(1),
		"Dst other>web tcp/80":                "Deny " + gnp("web-ingress", 0, "Deny"),
		"Dst other>web udp/80":                "Deny " + eot,
		"Dst other>web icmp/2048":             "Deny " + eot,
		"Dst other>web icmp6/32768":           "Deny " + eot,
		"Dst pub>host-1 tcp/8080":             "Allow " + gnp("host-1", 1, "Allow"),
		"Dst pub>host-1 tcp/8081":             "Deny " + gnp("host-1", 0, "Deny"),
		"Src client>web tcp/80":               egress,
		"Src client>web udp/80":               egress,
		"Src client>web icmp/2048":            egress,
		"Src client>web icmp6/32768":          egress,
		"Src client>other tcp/80":             "Deny " + gnp("client-egress", 0, "Deny"),
		"Src other>web tcp/80":                "Allow Profile :calico-net rule 0 Allow",
		"Src client>pub tcp/80":               egress,
		"Src client>host-1 tcp/8080":          egress,
		"Src client>host-1 tcp/8081":          egress,
		"Dst client>web tcp/80 (types)":       weps,
		"Src client>pub tcp/80 (types)":       "WorkloadEndpoint default > Network -",
		"Dst pub>host-1 tcp/8081 (types)":     "Network - > HostEndpoint -",
		"Src client>host-1 tcp/8081 (types)":  "WorkloadEndpoint default > HostEndpoint -",
		"Dst client>web tcp/80 (dest labels)": "projectcalico.org/namespace=default,projectcalico.org/orchestrator=cni,role=web",
	}
}

// startStream runs Goldmane's stream client in the fabric namespace: it dials goldmane:7443
// (the namespace's /etc/netns hosts file names the fabric's address) with ./tls.crt, ./tls.key
// and ./ca.crt, and prints each flow as indented JSON into its log.
func (r *run) startStream() (*topo.Proc, error) {
	hosts := filepath.Join("/etc/netns", r.f.NS.Name)
	if err := os.MkdirAll(hosts, 0o755); err != nil {
		return nil, err
	}
	r.cleanup = append(r.cleanup, func() { os.RemoveAll(hosts) })
	line := fmt.Sprintf("127.0.0.1 localhost\n%s goldmane\n", topo.FabricAddr)
	if err := os.WriteFile(filepath.Join(hosts, "hosts"), []byte(line), 0o644); err != nil {
		return nil, err
	}
	dir := filepath.Join(r.f.Dir, "stream")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for from, to := range map[string]string{"client.crt": "tls.crt", "client.key": "tls.key", "ca.crt": "ca.crt"} {
		b, err := os.ReadFile(filepath.Join(r.o.pki, from))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o600); err != nil {
			return nil, err
		}
	}
	p := r.f.NewProc("stream", "sh", "-c", fmt.Sprintf("cd %q && exec %q -start=-600", dir, r.o.stream))
	return p, p.Start()
}

// streamed reads the flows the stream client printed so far.
func streamed(logPath string) ([]*pb.Flow, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*pb.Flow
	var obj strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if obj.Len() == 0 && line != "{" {
			continue // the log's start marker, the client's own log lines
		}
		obj.WriteString(line)
		if line != "}" {
			continue
		}
		var res struct {
			Flow *pb.Flow `json:"flow"`
		}
		if err := json.Unmarshal([]byte(obj.String()), &res); err != nil || res.Flow == nil || res.Flow.Key == nil {
			return nil, fmt.Errorf("stream output %q: %v", obj.String(), err)
		}
		out = append(out, res.Flow)
		obj.Reset()
	}
	return out, sc.Err()
}

// name is a flow end's friendly name: the workload whose container it names, else itself.
func (r *run) name(n string) string {
	for friendly, w := range r.wls {
		if w.ContainerID == n || w.WEPName == n {
			return friendly
		}
	}
	return n
}

// describe is what want compares: the flow's id, and its action and deciding hits (under ""),
// its ends' types and namespaces (" (types)") and its destination's labels (" (dest labels)").
func (r *run) describe(f *pb.Flow) (string, map[string]string) {
	k := f.Key
	id := fmt.Sprintf("%v %s>%s %s/%d", k.Reporter, r.name(k.SourceName), r.name(k.DestName), k.Proto, k.DestPort)
	enforced, pending := k.GetPolicies().GetEnforcedPolicies(), k.GetPolicies().GetPendingPolicies()
	verdict := k.Action.String() + " (no policy)"
	if len(enforced) > 0 {
		verdict = k.Action.String() + " " + hit(enforced[len(enforced)-1])
	}
	if len(pending) > 0 && (len(enforced) == 0 || hit(pending[len(pending)-1]) != hit(enforced[len(enforced)-1])) {
		verdict += " | pending " + hit(pending[len(pending)-1])
	}
	return id, map[string]string{
		"":               verdict,
		" (types)":       fmt.Sprintf("%v %s > %v %s", k.SourceType, k.SourceNamespace, k.DestType, k.DestNamespace),
		" (dest labels)": strings.Join(f.DestLabels, ","),
	}
}

// hit prints a policy hit as "<kind> <tier>:[<namespace>/]<name> rule <n> <action>", an end
// of tier naming its trigger in parentheses.
func hit(h *pb.PolicyHit) string {
	name := h.Name
	if h.Namespace != "" {
		name = h.Namespace + "/" + name
	}
	if h.Kind == pb.PolicyKind_EndOfTier && h.Trigger != nil {
		name = "(" + h.Trigger.Name + ")"
	}
	return fmt.Sprintf("%v %s:%s rule %d %v", h.Kind, h.Tier, name, h.RuleIndex, h.Action)
}

// check waits until Goldmane's stream shows every wanted flow and every flow of felix's files,
// then prints what it saw.
func (r *run) check(ctx context.Context) error {
	stream, err := r.startStream()
	if err != nil {
		return err
	}
	fmt.Printf("stream client reading from goldmane:7443, output in %s\n", stream.LogPath)
	want := r.want()
	var flows []*pb.Flow
	var files []flowlog.Flow
	err = topo.Eventually(ctx, r.o.wait, time.Second, func() error {
		files = r.fileFlows()
		if flows, err = streamed(stream.LogPath); err != nil {
			return err
		}
		if err := r.match(flows, want); err != nil {
			return err
		}
		return reached(files, flows)
	})
	r.print(flows, files)
	if err != nil {
		return err
	}
	return goldmaneComplaints(r.gm.LogPath)
}

// match checks that every wanted flow is among the streamed ones.
func (r *run) match(flows []*pb.Flow, want map[string]string) error {
	seen := map[string]bool{}
	got := map[string][]string{}
	for _, f := range flows {
		id, attrs := r.describe(f)
		for suffix, v := range attrs {
			seen[id+suffix+" = "+v] = true
			got[id+suffix] = append(got[id+suffix], v)
		}
	}
	var missing []string
	for id, v := range want {
		if !seen[id+" = "+v] {
			missing = append(missing, fmt.Sprintf("%s: want %q, have %q", id, v, got[id]))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%d flows not (yet) at Goldmane as wanted:\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
	return nil
}

// fileFlows reads both hosts' flow log files.
func (r *run) fileFlows() []flowlog.Flow {
	var out []flowlog.Flow
	for _, h := range r.f.Hosts {
		b, _ := os.ReadFile(filepath.Join(h.Dir, "flowlogs", "flows.log"))
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var f flowlog.Flow
			if line != "" && json.Unmarshal([]byte(line), &f) == nil {
				out = append(out, f)
			}
		}
	}
	return out
}

// reached checks that the key of every flow felix wrote reached Goldmane unchanged, and that
// Goldmane's counters for each key are at least what the files say (it may hold flows flushed
// after the files were read).
func reached(files []flowlog.Flow, flows []*pb.Flow) error {
	type sums struct{ packets, bytes, started int64 }
	at := map[string]sums{}
	for _, f := range flows {
		k, _ := proto.Marshal(f.Key)
		s := at[string(k)]
		at[string(k)] = sums{s.packets + f.PacketsIn + f.PacketsOut, s.bytes + f.BytesIn + f.BytesOut, s.started + f.NumConnectionsStarted}
	}
	inFiles := map[string]sums{}
	for _, f := range files {
		p := goldmane.ToProto(f)
		k, _ := proto.Marshal(p.Key)
		if _, ok := at[string(k)]; !ok {
			return fmt.Errorf("felix wrote %v, Goldmane does not have that key", p.Key)
		}
		s := inFiles[string(k)]
		inFiles[string(k)] = sums{s.packets + p.PacketsIn + p.PacketsOut, s.bytes + p.BytesIn + p.BytesOut, s.started + p.NumConnectionsStarted}
	}
	for k, s := range inFiles {
		if g := at[k]; g.packets < s.packets || g.bytes < s.bytes || g.started < s.started {
			return fmt.Errorf("counters at Goldmane %+v are below the files' %+v", g, s)
		}
	}
	return nil
}

// print shows every flow Goldmane streamed, one line each, and two in full.
func (r *run) print(flows []*pb.Flow, files []flowlog.Flow) {
	fmt.Printf("\nGoldmane streamed %d flow records (felix's files hold %d):\n", len(flows), len(files))
	lines := map[string]bool{}
	for _, f := range flows {
		id, attrs := r.describe(f)
		lines[fmt.Sprintf("  %-28s %-90s %s", id, attrs[""], attrs[" (types)"])] = true
	}
	sorted := make([]string, 0, len(lines))
	for l := range lines {
		sorted = append(sorted, l)
	}
	sort.Strings(sorted)
	fmt.Println(strings.Join(sorted, "\n"))
	for _, f := range flows {
		if id, _ := r.describe(f); id == "Dst client>web udp/80" || id == "Dst pub>host-1 tcp/8081" {
			b, _ := json.MarshalIndent(f, "  ", "  ")
			fmt.Printf("\n  %s, as the stream client printed it:\n  %s\n", id, b)
		}
	}
}

// goldmaneComplaints prints the collector's connections from Goldmane's log and fails on any
// warning or error in it other than about the Kubernetes client it cannot build without
// Kubernetes (its own line and client-go's klog lines from client_config.go).
func goldmaneComplaints(logPath string) error {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return err
	}
	var bad []string
	fmt.Println("\nGoldmane's log:")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "Connection from client") {
			fmt.Println("  " + l)
		}
		upper := strings.ToUpper(l)
		if (strings.Contains(upper, "WARN") || strings.Contains(upper, "ERROR") || strings.Contains(upper, "FATAL")) &&
			!strings.Contains(l, "Kubernetes client") && !strings.Contains(l, "client_config.go") {
			bad = append(bad, l)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("complaints in Goldmane's log:\n%s", strings.Join(bad, "\n"))
	}
	fmt.Println("  no warning or error other than about its Kubernetes client")
	return nil
}
