// A tiny HTTP application that the local provider's tests put into an image and run in a sandbox.
// It reports what it sees from inside, so that the tests can check the isolation.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

var kept [][]byte

func main() {
	if len(os.Args) > 1 && os.Args[1] == "idle" {
		// A child of /limits?fork=…: it only has to exist.
		time.Sleep(time.Minute)
		return
	}
	port := os.Getenv("PORT")
	fmt.Printf("listening on %s\n", port)
	fmt.Fprintln(os.Stderr, "a line on stderr")
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("request %s\n", r.URL.Path)
		fmt.Fprintf(w, "%s", os.Getenv("GREETING"))
	})
	http.HandleFunc("/whoami", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("request %s\n", r.URL.Path)
		host, _ := os.Hostname()
		wd, _ := os.Getwd()
		err := os.WriteFile("/app/written", []byte("x"), 0o644)
		tmpErr := os.WriteFile("/tmp/written", []byte("x"), 0o644)
		_, hostFile := os.Stat("/etc/hostname") // the host has one; the image does not
		hostNet := false
		if c, err := net.DialTimeout("tcp", os.Getenv("PROBE_ADDR"), 500*time.Millisecond); err == nil {
			hostNet = true
			c.Close()
		}
		fmt.Fprintf(w, "uid=%d pid=%d host=%s wd=%s rootWrite=%v tmpWrite=%v hostEtc=%v hostNet=%v env=%s",
			os.Getuid(), os.Getpid(), host, wd, err != nil, tmpErr == nil, hostFile == nil, hostNet, strings.Join(os.Environ(), ","))
	})
	// /status/<code> answers that status (the scheduled-task tests tell
	// the application to fail this way); ?sleep=<ms> waits first.
	http.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("request %s\n", r.URL.Path)
		if ms, _ := strconv.Atoi(r.URL.Query().Get("sleep")); ms > 0 {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		if err != nil || code < 200 || code > 599 {
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d for run %s", code, r.Header.Get("X-Conduit-Run-Id"))
	})
	http.HandleFunc("/cpus", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d", runtime.NumCPU()) // the CPUs this process may run on
	})
	http.HandleFunc("/alloc", func(w http.ResponseWriter, r *http.Request) {
		mib, _ := strconv.Atoi(r.URL.Query().Get("mib"))
		fmt.Printf("allocating %d MiB\n", mib)
		for i := 0; i < mib; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(j)
			}
			kept = append(kept, b)
		}
		fmt.Fprintf(w, "allocated %d MiB", mib)
	})
	// /limits reports the limits as seen from inside: /proc/self/limits' process and data
	// lines, how much of tmpBytes it could write to /tmp, and how many of fork idle children it
	// could start before the kernel refused one (they are killed before the answer).
	http.HandleFunc("/limits", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("request %s\n", r.URL.Path)
		var out []string
		if data, err := os.ReadFile("/proc/self/limits"); err == nil {
			for _, l := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(l, "Max processes") || strings.HasPrefix(l, "Max data size") {
					out = append(out, strings.Join(strings.Fields(l), " "))
				}
			}
		}
		if n, _ := strconv.ParseInt(r.URL.Query().Get("tmpBytes"), 10, 64); n > 0 {
			written, err := fill("/tmp/fill", n)
			os.Remove("/tmp/fill")
			out = append(out, fmt.Sprintf("tmpWritten=%d tmpErr=%v", written, err))
		}
		if n, _ := strconv.Atoi(r.URL.Query().Get("fork")); n > 0 {
			var kids []*os.Process
			var ferr error
			for len(kids) < n {
				p, err := os.StartProcess("/proc/self/exe", []string{"app", "idle"}, &os.ProcAttr{})
				if err != nil {
					ferr = err
					break
				}
				kids = append(kids, p)
			}
			for _, p := range kids {
				p.Kill()
				p.Wait()
			}
			out = append(out, fmt.Sprintf("forked=%d forkErr=%v", len(kids), ferr))
		}
		fmt.Fprint(w, strings.Join(out, "\n"))
	})
	if err := http.ListenAndServe("127.0.0.1:"+port, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// fill writes up to n bytes to path, answering how many it could.
func fill(path string, n int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var written int64
	for written < n {
		k, err := f.Write(buf[:min(int64(len(buf)), n-written)])
		written += int64(k)
		if err != nil {
			return written, err
		}
	}
	return written, f.Sync()
}
