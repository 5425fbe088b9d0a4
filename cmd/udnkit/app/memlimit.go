package app

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// memoryLimitShare is the part of the container's memory limit the Go
// runtime's soft limit is set to: the rest is for what the runtime does not
// count (thread stacks, the binary, the kernel's page cache of it).
const memoryLimitShare = 0.9

// SetMemoryLimitFromCgroup sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit) to 90% of this process's cgroup memory limit,
// unless GOMEMLIMIT is set or there is no limit. With thousands of networks
// the manager's and the dataplane's heaps are hundreds of MiB and grow in
// bursts (a restart's rebuild); by default the runtime lets the heap double
// before collecting, past a container limit the chart sets, where the
// kernel kills the process instead. root is the file system root ("/").
func SetMemoryLimitFromCgroup(root string, log logr.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit, ok := cgroupMemoryLimit(root)
	if !ok {
		return
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	log.Info("Go soft memory limit set from the container's", "containerLimitBytes", limit, "softLimitBytes", soft)
}

// cgroupMemoryLimit reads this process's memory limit from cgroup v2
// (memory.max) or v1 (memory.limit_in_bytes) under root; ok is false when
// there is none ("max", or v1's page-rounded maximum) or it cannot be read.
func cgroupMemoryLimit(root string) (int64, bool) {
	f, err := os.Open(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path; v2 is "0::path".
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			file = filepath.Join(root, "sys/fs/cgroup", parts[2], "memory.max")
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			file = filepath.Join(root, "sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
			if _, err := os.Stat(file); err != nil {
				// Inside a cgroup namespace the path is the container's root.
				file = filepath.Join(root, "sys/fs/cgroup/memory/memory.limit_in_bytes")
			}
		default:
			continue
		}
		if n, ok := readLimit(file); ok {
			return n, true
		}
	}
	return 0, false
}

func readLimit(file string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	v := strings.TrimSpace(string(b))
	n, err := strconv.ParseInt(v, 10, 64)
	// cgroup v1 says "no limit" with the largest page-aligned int64.
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}
