package app

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
)

// TestCgroupMemoryLimit reads the limit as a container runtime lays it out:
// cgroup v2 (a number or "max"), v1 (a number, or the page-rounded maximum
// that means none; the process's path, or the namespace's root).
func TestCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   int64
		wantOK bool
	}{
		{"v2", map[string]string{"proc/self/cgroup": "0::/kubepods/pod1/c1\n", "sys/fs/cgroup/kubepods/pod1/c1/memory.max": "536870912\n"}, 536870912, true},
		{"v2 no limit", map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"}, 0, false},
		{"v1", map[string]string{"proc/self/cgroup": "5:cpuacct,cpu:/x\n4:memory:/kubepods/pod1/c1\n", "sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": "268435456\n"}, 268435456, true},
		{"v1 namespaced", map[string]string{"proc/self/cgroup": "4:memory:/kubepods/pod1/c1\n", "sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n"}, 268435456, true},
		{"v1 no limit", map[string]string{"proc/self/cgroup": "4:memory:/\n", "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"unreadable", map[string]string{"proc/self/cgroup": "0::/gone\n"}, 0, false},
		{"garbage", map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "lots\n"}, 0, false},
		{"no cgroup file", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cgroupMemoryLimit(cgroupRoot(t, tc.files))
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("limit %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// cgroupRoot lays files out under a new root directory.
func cgroupRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestSetMemoryLimitFromCgroup: the runtime's soft limit becomes 90% of the
// container's, and stays as it was when GOMEMLIMIT is set or there is no
// limit.
func TestSetMemoryLimitFromCgroup(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	limited := cgroupRoot(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1000000000\n"})
	unlimited := cgroupRoot(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"})
	for _, tc := range []struct {
		name, gomemlimit, root string
		want                   int64
	}{
		{"limited", "", limited, 900000000},
		{"GOMEMLIMIT set", "2GiB", limited, math.MaxInt64},
		{"no limit", "", unlimited, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			debug.SetMemoryLimit(math.MaxInt64)
			SetMemoryLimitFromCgroup(tc.root, logr.Discard())
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("soft memory limit %d, want %d", got, tc.want)
			}
		})
	}
}
