package pg

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort finds a free loopback TCP port.
func FreePort() (int, error) {
	// A port the kernel hands out for ":0" comes from the ephemeral range,
	// which every outgoing connection on the machine also draws from: in
	// the window between closing this probe and the server's own bind,
	// a busy machine's connections (parallel test processes) can take it.
	// Ports below the ephemeral range are never given to outgoing
	// connections, so a random free one there is only contended by other
	// callers of this function.
	lo, hi := 10000, ephemeralStart()
	for range 100 {
		if hi <= lo {
			break
		}
		port := lo + rand.IntN(hi-lo)
		if CheckPortFree(port) == nil {
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("no free TCP port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range
// (Linux's ip_local_port_range; 32768 where it cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 10000 {
		return 32768
	}
	return n
}

// CheckPortFree reports an error when the loopback port is taken.
func CheckPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}
