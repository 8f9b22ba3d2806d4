package config

import "fmt"

// EnclavesLimits bound what enclaves take of the host (docs/enclaves.md,
// "Limits"; docs/security.md, "Quotas and abuse"). Zero means the default.
type EnclavesLimits struct {
	// LayerBytes, ImageBytes: uncompressed bytes of one layer and of a
	// whole image; Files and PathDepth: entries of an unpacked image and
	// components of one path. A github build's checkout and its image are
	// held to the same, its source to SourceBytes.
	LayerBytes  int64 `mapstructure:"layer_bytes"`
	ImageBytes  int64 `mapstructure:"image_bytes"`
	Files       int   `mapstructure:"files"`
	PathDepth   int   `mapstructure:"path_depth"`
	SourceBytes int64 `mapstructure:"source_bytes"`
	// AccountBytes bounds one account's unpacked images on a host.
	AccountBytes int64 `mapstructure:"account_bytes"`
	// TmpBytes is the size of an instance's /tmp (a tmpfs: host memory);
	// Processes bounds its tasks; MemoryMiB and CPUs apply when its
	// providerConfig names none.
	TmpBytes  int64 `mapstructure:"tmp_bytes"`
	Processes int   `mapstructure:"processes"`
	MemoryMiB int   `mapstructure:"memory_mib"`
	CPUs      int   `mapstructure:"cpus"`
	// Cgroup: "auto", "off" or a cgroup v2 directory delegated to the
	// worker; without one the rlimit fallback applies.
	Cgroup string `mapstructure:"cgroup"`
	// SandboxUIDBase and SandboxUIDs are the host uids instances run as
	// when the worker is root (one per enclave; unused by anything else).
	SandboxUIDBase int `mapstructure:"sandbox_uid_base"`
	SandboxUIDs    int `mapstructure:"sandbox_uids"`
}

var enclavesLimitsDefaults = map[string]any{
	"enclaves.limits.layer_bytes":      1 << 30,
	"enclaves.limits.image_bytes":      2 << 30,
	"enclaves.limits.files":            100_000,
	"enclaves.limits.path_depth":       64,
	"enclaves.limits.source_bytes":     256 << 20,
	"enclaves.limits.account_bytes":    4 << 30,
	"enclaves.limits.tmp_bytes":        64 << 20,
	"enclaves.limits.processes":        256,
	"enclaves.limits.memory_mib":       256,
	"enclaves.limits.cpus":             1,
	"enclaves.limits.cgroup":           "auto",
	"enclaves.limits.sandbox_uid_base": 1_500_000_000,
	"enclaves.limits.sandbox_uids":     1 << 20,
}

func (l EnclavesLimits) validate() []error {
	var errs []error
	for k, v := range map[string]int64{
		"layer_bytes": l.LayerBytes, "image_bytes": l.ImageBytes, "files": int64(l.Files), "path_depth": int64(l.PathDepth),
		"source_bytes": l.SourceBytes, "account_bytes": l.AccountBytes, "tmp_bytes": l.TmpBytes, "processes": int64(l.Processes),
		"memory_mib": int64(l.MemoryMiB), "cpus": int64(l.CPUs), "sandbox_uid_base": int64(l.SandboxUIDBase), "sandbox_uids": int64(l.SandboxUIDs),
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("enclaves.limits.%s must not be negative", k))
		}
	}
	if l.SandboxUIDBase > 0 && int64(l.SandboxUIDBase)+int64(l.SandboxUIDs) > 4294967294 {
		errs = append(errs, fmt.Errorf("enclaves.limits.sandbox_uid_base + sandbox_uids must stay below 4294967294"))
	}
	return errs
}
