package node

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
)

// Tools says where the cluster's programs and schemas are: the OVN and
// Open vSwitch release `make ovn` provisions (ovsdbserver.Dir).
type Tools struct {
	// Bin holds one wrapper per OVN and Open vSwitch program.
	Bin string
	// VSwitchSchema is Open vSwitch's database schema (vswitch.ovsschema).
	VSwitchSchema string
}

var (
	toolsOnce sync.Once
	tools     Tools
	toolsErr  error
)

// SetupTools makes the provisioned OVN and Open vSwitch the ones this
// process runs by name: their wrappers first on PATH (the nodes' daemons
// start through ip netns exec; the zones' databases and northd come from
// ovsdbserver, which finds the same release itself). It checks the versions
// and that ip(8) is installed; errors say what is missing.
func SetupTools() (Tools, error) {
	toolsOnce.Do(func() { tools, toolsErr = setupTools() })
	return tools, toolsErr
}

func setupTools() (Tools, error) {
	dir := ovsdbserver.Dir()
	t := Tools{Bin: filepath.Join(dir, "bin"),
		VSwitchSchema: filepath.Join(dir, "rootfs", "usr", "share", "openvswitch", "vswitch.ovsschema")}
	for _, name := range []string{"ovn-controller", "ovs-vswitchd", "ovs-vsctl"} {
		if _, err := ovsdbserver.Tool(name); err != nil {
			return t, err
		}
	}
	if _, err := os.Stat(t.VSwitchSchema); err != nil {
		return t, fmt.Errorf("Open vSwitch's schema of OVN %s: %w (make ovn provisions it)", ovsdbserver.OVNVersion, err)
	}
	if err := os.Setenv("PATH", t.Bin+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return t, err
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return t, errors.New("ip(8) from iproute2 is needed to create the cluster's namespaces and links")
	}
	return t, nil
}
