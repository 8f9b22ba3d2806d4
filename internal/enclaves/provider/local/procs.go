package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// treeOwner is the host uid enclave id's instance runs as: the one recorded when its image was
// unpacked; for a tree unpacked before uids were recorded, a new one, given the tree now.
func (p *Provider) treeOwner(id string) (int, error) {
	dir := p.enclaveDir(id)
	if o, err := readOwner(dir); err == nil {
		if o.UID < 0 && os.Geteuid() == 0 {
			return p.adopt(id, o.Account)
		}
		return o.UID, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	return p.adopt(id, "")
}

// adopt gives an unrecorded tree a sandbox uid and records it, with its size.
func (p *Provider) adopt(id, account string) (int, error) {
	uid, err := p.sandboxUID(id)
	if err != nil {
		return 0, err
	}
	dir := p.enclaveDir(id)
	var size int64
	err = filepath.WalkDir(filepath.Join(dir, "rootfs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return chown(path, uid)
	})
	if err != nil {
		return 0, err
	}
	return uid, writeJSON(filepath.Join(dir, ownerFile), owner{Account: account, Bytes: size, UID: uid})
}

// members are the processes still alive (not zombies) of the instance: its process group, and
// when it has a uid of its own, every process of that uid (one that left the group with setsid
// inside the sandbox included).
func (in *instance) members() []int {
	pgid := in.cmd.Process.Pid
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			out = append(out, pid)
			continue
		}
		if in.uid >= 0 && realUID(pid) == in.uid {
			out = append(out, pid)
		}
	}
	return out
}

// waitGone kills what is left of the instance until nothing is, within limit.
func (in *instance) waitGone(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		left := in.members()
		if len(left) == 0 {
			return nil
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of the instance were still running %s after SIGKILL", left, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// uidTasks counts the tasks (threads included) of uid now: RLIMIT_NPROC counts them all, so an
// instance that shares the provider's uid gets its limit on top of them.
func uidTasks(uid int) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || realUID(pid) != uid {
			continue
		}
		data, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "Threads:"); ok {
				k, _ := strconv.Atoi(strings.TrimSpace(v))
				n += k
			}
		}
	}
	return n
}

// realUID is pid's real uid from /proc (the owner of /proc/<pid> is root for a process that is
// not dumpable, so that will not do); -1 when it cannot be read.
func realUID(pid int) int {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "Uid:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				if u, err := strconv.Atoi(f[0]); err == nil {
					return u
				}
			}
		}
	}
	return -1
}
