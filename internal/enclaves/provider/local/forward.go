package local

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The sandbox has a network namespace of its own (bubblewrap's --unshare-net): only a loopback
// interface, no route anywhere. The application's one port is forwarded from a loopback port on
// the host by the provider, which opens each connection from inside the sandbox's namespace: a
// thread enters the namespace (setns), creates and connects the socket, and goes back. A socket
// stays in the namespace it was created in, so the host side only ever sees the forwarder.
// Entering the namespace takes CAP_SYS_ADMIN, so this works when the provider runs as root;
// otherwise the provider falls back to the host's network (docs/enclaves.md).

// sandboxNetns waits for bubblewrap's child (the sandbox's init, created in the new namespaces)
// and opens its network namespace. Holding the descriptor keeps the namespace reachable.
func sandboxNetns(outerPid int, timeout time.Duration) (*os.File, error) {
	self, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", outerPid, outerPid))
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
			if err != nil {
				continue
			}
			info, err := ns.Stat()
			// The child is born in its namespaces (one clone call), but check rather than trust.
			if err == nil && !os.SameFile(info, self) {
				return ns, nil
			}
			ns.Close()
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the sandbox's network namespace did not appear")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hostNetns is this process's own network namespace, to return threads to.
var hostNetns = sync.OnceValues(func() (*os.File, error) { return os.Open("/proc/self/ns/net") })

// dialIn connects to addr from inside the network namespace ns. The thread that enters ns goes
// back to the host's namespace before it is unlocked. It must not simply be left to exit: the
// sandbox is started with Pdeathsig, which the kernel ties to the thread that forked it, and a Go
// thread that ends could be that thread — the instance would be killed.
func dialIn(ns *os.File, addr string, timeout time.Duration) (net.Conn, error) {
	host, err := hostNetns()
	if err != nil {
		return nil, err
	}
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // setns failed: the thread is still in the host's namespace
			ch <- result{nil, fmt.Errorf("entering the sandbox's network: %w", err)}
			return
		}
		c, err := net.DialTimeout("tcp", addr, timeout)
		if rerr := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); rerr == nil {
			runtime.UnlockOSThread()
		} // else the thread stays locked and ends with this goroutine: better than a stray namespace
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// canEnterNetns reports whether this process may enter other network namespaces.
func canEnterNetns() bool {
	return os.Geteuid() == 0
}

// forwarder accepts on a host loopback port and relays each connection to target inside ns.
type forwarder struct {
	ln     net.Listener
	ns     *os.File
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func newForwarder(ns *os.File, target string) (*forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &forwarder{ln: ln, ns: ns, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.relay(c)
		}()
	}
}

func (f *forwarder) track(c net.Conn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if add {
		if f.closed {
			return false
		}
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
	return true
}

func (f *forwarder) relay(c net.Conn) {
	defer c.Close()
	in, err := dialIn(f.ns, f.target, 5*time.Second)
	if err != nil {
		return // the application is not listening (yet): the client sees the connection close
	}
	defer in.Close()
	if !f.track(c, true) || !f.track(in, true) {
		return
	}
	defer f.track(c, false)
	defer f.track(in, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(in, c)
	go pipe(c, in)
	<-done
	<-done
}

// close stops accepting, cuts every relayed connection and waits for the relays.
func (f *forwarder) close() {
	f.ln.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	f.ns.Close()
}
