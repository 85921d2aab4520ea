package wireguard

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// Project Calico's WireGuard metric names and labels.
const (
	metaName      = "wireguard_meta"
	handshakeName = "wireguard_latest_handshake_seconds"
	sentName      = "wireguard_bytes_sent"
	rcvdName      = "wireguard_bytes_rcvd"
	// peerUpWindow: a peer whose last handshake is older than this has no usable session
	// (WireGuard's REJECT_AFTER_TIME).
	peerUpWindow = 180 * time.Second
)

// devices reads the enabled devices (those that cannot be read are skipped). Only the list of
// names is taken under the lock; the reads happen outside it.
func (m *Manager) devices() []*wgtypes.Device {
	m.mu.Lock()
	names := m.on
	m.mu.Unlock()
	var out []*wgtypes.Device
	for _, name := range names {
		if d, err := m.wg.Device(name); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// PeersUp counts the peers of the enabled devices and those with a handshake in the last
// three minutes.
func (m *Manager) PeersUp(now time.Time) (up, total int) {
	for _, d := range m.devices() {
		for _, p := range d.Peers {
			total++
			if !p.LastHandshakeTime.IsZero() && now.Sub(p.LastHandshakeTime) < peerUpWindow {
				up++
			}
		}
	}
	return up, total
}

// Collector exports Project Calico's wireguard_* metrics for the enabled devices.
func (m *Manager) Collector(hostname string) prometheus.Collector {
	return &collector{m: m, hostname: hostname}
}

type collector struct {
	m        *Manager
	hostname string
}

// Describe sends nothing: the metrics carry per-device and per-peer constant labels, so the
// collector is unchecked.
func (c *collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads the devices and their peers.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, d := range c.m.devices() {
		base := prometheus.Labels{"hostname": c.hostname, "public_key": d.PublicKey.String()}
		meta := with(base, prometheus.Labels{"iface": d.Name, "listen_port": fmt.Sprint(d.ListenPort)})
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(metaName, "wireguard interface and runtime metadata", nil, meta), prometheus.GaugeValue, 1)
		for _, p := range d.Peers {
			ep := ""
			if p.Endpoint != nil {
				ep = p.Endpoint.String()
			}
			l := with(base, prometheus.Labels{"peer_key": p.PublicKey.String(), "peer_endpoint": ep})
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(rcvdName, "wireguard interface incoming bytes count from peer", nil, l),
				prometheus.CounterValue, float64(p.ReceiveBytes))
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(sentName, "wireguard interface outgoing bytes count to peer", nil, l),
				prometheus.CounterValue, float64(p.TransmitBytes))
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(handshakeName, "wireguard interface latest handshake unix timestamp in seconds to a peer", nil, l),
				prometheus.GaugeValue, float64(p.LastHandshakeTime.Unix()))
		}
	}
}

func with(a, b prometheus.Labels) prometheus.Labels {
	out := prometheus.Labels{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
