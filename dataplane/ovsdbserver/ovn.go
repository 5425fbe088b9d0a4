package ovsdbserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/udnkit/udnkit/ovnk"
)

// OVNVersion is ovnk.OVNVersion, the OVN release udnkit runs; OVSVersion is
// the Open vSwitch release Debian builds it with. `make ovn`
// (provision-ovn.sh) provisions exactly these from Debian's archive; the
// Makefile reads them from their files.
const (
	OVNVersion = ovnk.OVNVersion
	OVSVersion = "4.0.0"
)

// Dir is where `make ovn` provisions OVNVersion:
// ${XDG_CACHE_HOME:-~/.cache}/udnkit/ovn-<OVNVersion>, holding rootfs/ (the
// root filesystem) and bin/ (one wrapper per tool). provision-ovn.sh
// --print-dir prints the same directory.
func Dir() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "udnkit", "ovn-"+OVNVersion)
}

// SchemaFile is db's schema (ovn-nb.ovsschema or ovn-sb.ovsschema) of OVNVersion.
func SchemaFile(db Database) string {
	return filepath.Join(Dir(), "rootfs", "usr", "share", "ovn", "ovn-"+string(db)+".ovsschema")
}

// Tool is the path of one of the OVN and Open vSwitch tools (ovsdb-server,
// ovn-northd, ovn-nbctl, ovn-trace, ovn-controller, ovs-vsctl, ...) of
// OVNVersion, or an error when `make ovn` has not provisioned them or they
// report another version. It never falls back to another OVN on PATH: one of
// another release would program and translate rows differently.
func Tool(name string) (string, error) {
	dir := filepath.Join(Dir(), "bin")
	if err := checkVersions(dir); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s of OVN %s: %w (make ovn provisions it)", name, OVNVersion, err)
	}
	return path, nil
}

// Command is exec.Command for Tool(name); when the tool is missing, the
// command's Err says why and running it fails with that error.
func Command(name string, args ...string) *exec.Cmd {
	return CommandContext(context.Background(), name, args...)
}

// CommandContext is exec.CommandContext for Tool(name), as Command.
func CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	path, err := Tool(name)
	if err != nil {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Err = err
		return cmd
	}
	return exec.CommandContext(ctx, path, args...)
}

// checked remembers the bin directories whose versions were verified.
var checked sync.Map // dir -> error

// checkVersions runs ovn-northd and ovsdb-server from dir once and compares
// their versions with OVNVersion and OVSVersion.
func checkVersions(dir string) error {
	if err, ok := checked.Load(dir); ok {
		if err == nil {
			return nil
		}
		return err.(error)
	}
	err := func() error {
		for tool, want := range map[string]string{
			"ovn-northd":   "ovn-northd " + OVNVersion,
			"ovsdb-server": "ovsdb-server (Open vSwitch) " + OVSVersion,
		} {
			out, err := exec.Command(filepath.Join(dir, tool), "--version").Output()
			if err != nil {
				return fmt.Errorf("OVN %s is not provisioned in %s (run make ovn): %s --version: %w", OVNVersion, dir, tool, err)
			}
			if got, _, _ := strings.Cut(string(out), "\n"); got != want {
				return fmt.Errorf("%s in %s reports %q, want %q (run make ovn)", tool, dir, got, want)
			}
		}
		return nil
	}()
	checked.Store(dir, err)
	return err
}
