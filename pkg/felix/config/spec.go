package config

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// SpecLayer is the datastore's layer: for every parameter with a FelixConfiguration field, the
// typed value of node (FelixConfiguration node.<host>) when it sets the field, else global's
// (FelixConfiguration default). Either may be nil. A field is set when its pointer is non-nil
// or, for plain strings, when it is not empty, as in Project Calico's config update processor.
// The parameters calico-host does not implement (compat's list) come as text, in Values.
func SpecLayer(global, node *api.FelixConfigurationSpec, hostname string) Layer {
	return ScopedSpecLayer(global, nil, node, hostname, "")
}

// ScopedSpecLayer is SpecLayer with the selector-scoped FelixConfiguration (scopedName) that
// applies to this host, whose set fields rank between node's and global's, as Project Calico's
// DatastorePerSelector source ranks between DatastorePerHost and DatastoreGlobal.
func ScopedSpecLayer(global, scoped, node *api.FelixConfigurationSpec, hostname, scopedName string) Layer {
	l := Layer{Source: SourceDatastore, Origin: "FelixConfiguration", Typed: map[string]any{},
		Values: map[string]string{}, Keys: map[string]string{}, Origins: map[string]string{}}
	srcs := []namedSpec{{node, "node." + hostname}, {scoped, scopedName}, {global, "default"}}
	for i := range Params {
		p := &Params[i]
		field := p.V3Field()
		if field == "" {
			continue
		}
		for _, src := range srcs {
			if v, ok := specValue(src.spec, field); ok {
				l.Typed[p.Name], l.Keys[p.Name], l.Origins[p.Name] = v, field, "FelixConfiguration "+src.name
				break
			}
		}
	}
	compatValues(&l, srcs)
	return l
}

// namedSpec is a FelixConfiguration's spec (nil when absent) and its name.
type namedSpec struct {
	spec *api.FelixConfigurationSpec
	name string
}

// specValue returns the value of a spec field, dereferenced, and whether it is set.
func specValue(spec *api.FelixConfigurationSpec, field string) (any, bool) {
	i, ok := specFields[field]
	if spec == nil || !ok {
		return nil, false
	}
	v := reflect.ValueOf(spec).Elem().Field(i)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.String && strings.TrimSpace(v.String()) == "" {
		return nil, false
	}
	return v.Interface(), true
}

// Convert turns a typed value of the parameter's FelixConfiguration field into the Go type of
// its Config field, checking it as Parse checks text. Strings (lists, addresses, enums) are the
// API's text and are parsed; other values are converted.
func (p *Param) Convert(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return p.Parse(x)
	case bool:
		return p.convertBool(x)
	case int:
		return p.convertInt(x)
	case uint32:
		if p.Kind != KindUint32 {
			break
		}
		return p.parseUint32(fmt.Sprint(x))
	case api.Duration:
		if p.Kind != KindSeconds {
			break
		}
		if x.Duration < 0 {
			return nil, fmt.Errorf("%s is negative", x.Duration)
		}
		return x.Duration, nil
	case api.Port:
		if p.Kind != KindPortRange {
			break
		}
		return portRange(x)
	case []api.ProtoPort:
		if p.Kind != KindPorts {
			break
		}
		return protoPorts(x)
	case api.RouteTableRange, api.RouteTableRanges:
		if p.Kind != KindTableRanges {
			break
		}
		return p.convertTableRanges(x)
	}
	return nil, fmt.Errorf("%w: a %T for a %s parameter", errWrongType, v, p.Kind)
}

// errWrongType: a FelixConfiguration field's type does not fit its parameter's kind (a mistake
// in the parameter table, caught by its tests).
var errWrongType = errors.New("wrong type")

func (p *Param) convertBool(b bool) (any, error) {
	switch p.Kind {
	case KindBool:
		return b, nil
	case KindOptBool:
		return &b, nil
	}
	return nil, fmt.Errorf("%w: a bool for a %s parameter", errWrongType, p.Kind)
}

func (p *Param) convertInt(n int) (any, error) {
	if p.Kind != KindInt {
		return nil, fmt.Errorf("%w: an int for a %s parameter", errWrongType, p.Kind)
	}
	if n < p.Min || n > p.Max {
		return nil, fmt.Errorf("%d is outside %d..%d", n, p.Min, p.Max)
	}
	return n, nil
}

// portRange checks a NATPortRange: numbers only, 1 <= min <= max.
func portRange(p api.Port) (nft.PortRange, error) {
	if p.PortName != "" || p.MinPort == 0 || p.MinPort > p.MaxPort {
		return nft.PortRange{}, fmt.Errorf("%q is not a port range (min:max, 1-65535)", p.String())
	}
	return nft.Ports(p.MinPort, p.MaxPort), nil
}

// protoPorts converts failsafe ports. An empty list is no failsafe ports, as Project Calico
// renders it ("none").
func protoPorts(in []api.ProtoPort) ([]rules.ProtoPort, error) {
	out := make([]rules.ProtoPort, 0, len(in))
	for _, pp := range in {
		c, err := protoPort(pp)
		if err != nil {
			return nil, fmt.Errorf("failsafe port %s:%s:%d: %w", pp.Protocol, pp.Net, pp.Port, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func protoPort(pp api.ProtoPort) (rules.ProtoPort, error) {
	proto, err := parseProtocol(pp.Protocol)
	if err != nil {
		return rules.ProtoPort{}, err
	}
	c := rules.ProtoPort{Protocol: proto, Port: pp.Port}
	if pp.Port == 0 {
		return c, errors.New("port 0")
	}
	if pp.Net != "" {
		n, err := parseNet(pp.Net)
		if err != nil {
			return c, err
		}
		c.Net = n
	}
	return c, nil
}

// render shows a typed value in problems and logs.
func render(v any) string {
	switch x := v.(type) {
	case api.Duration:
		return x.Duration.String()
	case time.Duration, netip.Addr:
		return fmt.Sprint(x)
	case []api.ProtoPort:
		parts := make([]string, len(x))
		for i, pp := range x {
			parts[i] = fmt.Sprintf("%s:%s:%d", pp.Protocol, pp.Net, pp.Port)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}
