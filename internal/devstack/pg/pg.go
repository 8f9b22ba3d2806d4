// Package pg runs a throwaway-but-persistent PostgreSQL cluster from the
// OS's binaries, as a child process on loopback. The dev command and the
// tests use it; production points at a real server.
package pg

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/devstack/apt"
)

// Options describes a throwaway-but-persistent cluster.
type Options struct {
	// Dir holds the cluster (created by initdb on first start).
	Dir string
	// Port is the loopback TCP port; 0 picks a free one.
	Port int
	// Database is created on first start if missing.
	Database string
	// Install allows apt-get install of the server when its binaries are
	// missing (only as root on a system with apt-get).
	Install bool
	Log     *slog.Logger
}

// Cluster is a running cluster owned by this process.
type Cluster struct {
	URL  string
	Port int
	cmd  *exec.Cmd
	// done is closed when the postmaster has exited, with exitErr set.
	done    chan struct{}
	exitErr error
	log     *slog.Logger
}

const pgSuperuser = "conduit"

// Start initialises the cluster on first use, starts the postmaster
// as a child process bound to 127.0.0.1 and waits until it accepts
// connections. The child dies with this process (Pdeathsig), so a crash never
// leaves a stray server behind.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	bin, err := postgresBinDir(o.Install, o.Log)
	if err != nil {
		return nil, err
	}
	cred, owner, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the PostgreSQL folder %s: %w", dir, err)
	}
	if owner != nil {
		if err := os.Chown(dir, owner.uid, owner.gid); err != nil {
			return nil, fmt.Errorf("cannot hand %s to the %s user: %w", dir, owner.name, err)
		}
		if err := makeTraversable(filepath.Dir(dir)); err != nil {
			return nil, err
		}
	}
	pwFile := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".password")
	password, err := readOrCreateSecret(pwFile)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		o.Log.Info("initialising PostgreSQL cluster", "dir", dir)
		if err := initdb(ctx, bin, dir, password, cred); err != nil {
			return nil, err
		}
	}
	if err := clearStalePid(dir); err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	} else if err := CheckPortFree(port); err != nil {
		return nil, fmt.Errorf("PostgreSQL port %d is already in use; stop what holds it or set CONDUIT_DEV_POSTGRES_PORT", port)
	}

	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port="+strconv.Itoa(port),
		"-c", "unix_socket_directories=",
		"-c", "max_connections=200",
		"-c", "fsync=on",
	)
	var logBuf bytes.Buffer
	cmd.Stdout = &logBuf
	cmd.Stderr = &logBuf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT, Credential: cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("PostgreSQL could not be started: %w", err)
	}
	p := &Cluster{Port: port, cmd: cmd, done: make(chan struct{}), log: o.Log}
	go func() { p.exitErr = cmd.Wait(); close(p.done) }()

	admin := pgURL(password, port, "postgres")
	if err := waitReady(ctx, admin, p, &logBuf); err != nil {
		_ = p.Stop()
		return nil, err
	}
	if err := ensureDatabase(ctx, admin, o.Database); err != nil {
		_ = p.Stop()
		return nil, err
	}
	p.URL = pgURL(password, port, o.Database)
	return p, nil
}

// Stop asks the postmaster for a fast shutdown and waits for it; stopping a
// stopped cluster returns at once.
func (p *Cluster) Stop() error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return errors.New("PostgreSQL did not stop within 30s and was killed")
	}
}

func pgURL(password string, port int, db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(pgSuperuser, password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

func initdb(ctx context.Context, bin, dir, password string, cred *syscall.Credential) error {
	pw, err := os.CreateTemp("", "conduit-pw-*")
	if err != nil {
		return err
	}
	defer os.Remove(pw.Name())
	if _, err := pw.WriteString(password + "\n"); err != nil {
		return err
	}
	pw.Close()
	if cred != nil {
		if err := os.Chown(pw.Name(), int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", dir, "-U", pgSuperuser, "--pwfile", pw.Name(),
		"--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb failed: %s", apt.LastLine(out, err))
	}
	return nil
}

func waitReady(ctx context.Context, url string, p *Cluster, logBuf *bytes.Buffer) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("PostgreSQL exited at start-up (%v): %s", p.exitErr, apt.LastLine(logBuf.Bytes(), nil))
		default:
		}
		c, err := pgx.Connect(ctx, url)
		if err == nil {
			c.Close(ctx)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL did not accept connections within 60s: %v", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func ensureDatabase(ctx context.Context, adminURL, name string) error {
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var exists bool
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// postgresBinDir finds initdb and postgres: pg_config --bindir, then the
// Debian layout /usr/lib/postgresql/<major>/bin (newest first), then PATH.
func postgresBinDir(install bool, log *slog.Logger) (string, error) {
	if dir := findPostgresBinDir(); dir != "" {
		return dir, nil
	}
	if install {
		err := apt.Install(log, "postgresql")
		if err != nil && !errors.Is(err, apt.ErrCannot) {
			return "", fmt.Errorf("installing PostgreSQL: %w", err)
		}
		if dir := findPostgresBinDir(); dir != "" {
			return dir, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) were not found: install them (Debian/Ubuntu: sudo apt-get install postgresql) or point CONDUIT_DATABASE_URL at an existing server")
}

func findPostgresBinDir() string {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); has(dir) {
			return dir
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real)
		}
	}
	return ""
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

type osUser struct {
	name     string
	uid, gid int
}

// postgresCredential: the postmaster refuses to run as root, so a root
// process runs it as the unprivileged "postgres" user the distribution
// package creates.
func postgresCredential() (*syscall.Credential, *osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, nil, errors.New("running as root, PostgreSQL needs an unprivileged user named postgres (created by the postgresql package), or run as a normal user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, &osUser{name: u.Username, uid: uid, gid: gid}, nil
}

// makeTraversable lets the postgres user reach the cluster folder through
// parents that root created private (temporary folders are 0700).
func makeTraversable(dir string) error {
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("cannot let the postgres user reach %s: %w", d, err)
			}
		}
	}
	return nil
}

// clearStalePid removes postmaster.pid left by a killed run whose process is
// gone; a live one means another server uses the folder.
func clearStalePid(dir string) error {
	pidFile := filepath.Join(dir, "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err == nil && pid > 0 && syscall.Kill(pid, 0) == nil {
		return fmt.Errorf("another PostgreSQL (pid %d) is already running on %s; stop it or the other dev command first", pid, dir)
	}
	return os.Remove(pidFile)
}

func readOrCreateSecret(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	s := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("cannot write %s: %w", path, err)
	}
	return s, nil
}

// EnsureDatabase creates the database name on the server serverURL points
// at (any database of it) when it does not exist yet.
func EnsureDatabase(ctx context.Context, serverURL, name string) error {
	return ensureDatabase(ctx, serverURL, name)
}

// DropDatabase removes the database name (ending its sessions) from the
// server serverURL points at, when it exists.
func DropDatabase(ctx context.Context, serverURL, name string) error {
	c, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}
