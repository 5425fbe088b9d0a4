package ovsdbserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/internal/testenv"
)

// The Makefile provisions where the package looks: provision-ovn.sh
// --print-dir and Dir agree, with and without XDG_CACHE_HOME.
func TestProvisionScriptAndDirAgree(t *testing.T) {
	for _, cache := range []string{"", t.TempDir()} {
		t.Setenv("XDG_CACHE_HOME", cache)
		cmd := exec.Command("./provision-ovn.sh", "--print-dir")
		cmd.Env = append(os.Environ(), "OVN_VERSION="+OVNVersion, "OVS_VERSION="+OVSVersion)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("provision-ovn.sh --print-dir: %v", err)
		}
		if got := strings.TrimSpace(string(out)); got != Dir() {
			t.Errorf("XDG_CACHE_HOME=%q: provision-ovn.sh provisions %s, the package looks in %s", cache, got, Dir())
		}
	}
}

// An OVN of another release (bookworm's 23.03 on PATH, a stale cache) or none
// at all is refused with the fix, never run.
func TestToolRefusesAnotherOVN(t *testing.T) {
	fake := func(northd, server string) string {
		dir := t.TempDir()
		for name, version := range map[string]string{"ovn-northd": northd, "ovsdb-server": server} {
			script := "#!/bin/sh\necho '" + version + "'\necho 'Open vSwitch Library 3.1.0'\n"
			if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for name, tc := range map[string]struct{ dir, want string }{
		"OVN 23.03": {fake("ovn-northd 23.03.1", "ovsdb-server (Open vSwitch) "+OVSVersion),
			`reports "ovn-northd 23.03.1", want "ovn-northd ` + OVNVersion + `" (run make ovn)`},
		"OVS 3.1": {fake("ovn-northd "+OVNVersion, "ovsdb-server (Open vSwitch) 3.1.0"),
			`reports "ovsdb-server (Open vSwitch) 3.1.0", want "ovsdb-server (Open vSwitch) ` + OVSVersion + `"`},
		"none": {t.TempDir(), "OVN " + OVNVersion + " is not provisioned in"},
	} {
		if err := checkVersions(tc.dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
	if err := checkVersions(fake("ovn-northd "+OVNVersion, "ovsdb-server (Open vSwitch) "+OVSVersion)); err != nil {
		t.Errorf("the provisioned versions are refused: %v", err)
	}

	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cmd := Command("ovn-nbctl", "--version")
	if _, err := cmd.Output(); err == nil || !strings.Contains(err.Error(), "run make ovn") {
		t.Errorf("ovn-nbctl without make ovn: got %v, want the refusal", err)
	}
}

// The tools found are OVNVersion's.
func TestToolsAreTheProvisionedRelease(t *testing.T) {
	testenv.Real(t, "the provisioned OVN tools")
	for tool, want := range map[string]string{"ovn-nbctl": "ovn-nbctl " + OVNVersion, "ovn-trace": "ovn-trace " + OVNVersion,
		"ovsdb-tool": "ovsdb-tool (Open vSwitch) " + OVSVersion} {
		out, err := Command(tool, "--version").Output()
		if err != nil || !strings.HasPrefix(string(out), want+"\n") {
			t.Errorf("%s --version: %v: %q, want %q first", tool, err, out, want)
		}
	}
}
