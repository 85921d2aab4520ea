package config

import (
	"fmt"
	"net"
	"strconv"
)

// ListenAddress is a validated host:port to listen on (a port from 1 to 65535); "" means none.
type ListenAddress string

// ParseListenAddress accepts "" (no listener) or host:port with a port in 1..65535.
func ParseListenAddress(s string) (ListenAddress, error) {
	if s == "" {
		return "", nil
	}
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return ListenAddress(s), nil
}
