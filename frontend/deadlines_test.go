package frontend

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// A client that stops reading is cut off: once the connection's buffers
// are full, a write fails after write_timeout instead of blocking the
// handler (and the connection) for good.
func TestWriteDeadlineCutsOffAClientThatStopsReading(t *testing.T) {
	type result struct {
		written int
		err     error
	}
	done := make(chan result, 1)
	r := gin.New()
	r.Use(requestContext(slog.New(slog.DiscardHandler)), connDeadlines(time.Second, 300*time.Millisecond))
	r.GET("/big", func(c *gin.Context) {
		chunk := make([]byte, 1<<20)
		n := 0
		for n < 256<<20 {
			if _, err := c.Writer.Write(chunk); err != nil {
				done <- result{n, err}
				return
			}
			c.Writer.Flush()
			n += len(chunk)
		}
		done <- result{n, nil}
	})
	srv := httptest.NewServer(r)
	defer srv.Close()

	// A client with a small receive buffer that reads the status line and
	// then nothing more.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "HTTP/1.1 200 OK\r\n" {
		t.Fatalf("status line %q %v", line, err)
	}
	select {
	case res := <-done:
		if res.err == nil || res.written >= 256<<20 {
			t.Fatalf("wrote %d bytes to a client that does not read: %v", res.written, res.err)
		}
		t.Logf("cut off after %d MiB: %v", res.written>>20, res.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the handler is still blocked writing to a client that stopped reading")
	}
}

// A write after a pause longer than write_timeout still goes through: the
// deadline is per write, not per answer.
func TestWriteDeadlineIsPerWrite(t *testing.T) {
	r := gin.New()
	r.Use(connDeadlines(time.Second, 200*time.Millisecond))
	r.GET("/slow", func(c *gin.Context) {
		for i := range 3 {
			if i > 0 {
				time.Sleep(500 * time.Millisecond)
			}
			_, _ = c.Writer.WriteString("tick\n")
			c.Writer.Flush()
		}
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "tick\ntick\ntick\n" {
		t.Fatalf("%q %v", b, err)
	}
}
