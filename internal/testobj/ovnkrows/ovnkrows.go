// Package ovnkrows writes the rows OVN-Kubernetes owns in a zone's
// Northbound database, named and filled as upstream does, so that the suites
// that run udnkit's dataplane next to them (the ovn-trace suite of
// dataplane/trace and the packet suites of envtest/datapath, `make run
// ZONES=n` too) build on one picture of them. It writes nothing udnkit is
// meant to write. Ctl is the one way the suites run ovn-nbctl and ovn-sbctl.
//
// The suites and envtest/datapath (so `make run`) import it; no stage may, as
// it depends on the dataplane's ovsdbserver (to find the tools), besides
// ovnk.
package ovnkrows

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/ovnk"
)

// Ctl runs one of OVN's ctl tools against one database.
type Ctl struct {
	tool string
	args []string
}

// NB is ovn-nbctl on the Northbound database at addr (unix:/path or tcp:…).
func NB(addr string) Ctl { return Ctl{tool: "ovn-nbctl", args: []string{"--db=" + addr}} }

// SB is ovn-sbctl on the Southbound database at addr; it reads from any
// member of a cluster (--no-leader-only).
func SB(addr string) Ctl {
	return Ctl{tool: "ovn-sbctl", args: []string{"--db=" + addr, "--no-leader-only"}}
}

// Run runs the tool with args and returns its output, trimmed; the error
// holds the command and its output.
func (c Ctl) Run(args ...string) (string, error) {
	all := append(c.args[:len(c.args):len(c.args)], args...)
	out, err := ovsdbserver.Command(c.tool, all...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", c.tool, strings.Join(all, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// Must is Run that fails tb on an error.
func (c Ctl) Must(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := c.Run(args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// runAll runs each command in order and stops at the first error.
func (c Ctl) runAll(cmds [][]string) error {
	for _, args := range cmds {
		if _, err := c.Run(args...); err != nil {
			return err
		}
	}
	return nil
}

// Network is what OVN-Kubernetes puts on every row of a user-defined
// network.
type Network struct {
	// Name is the OVN network name (external_ids:k8s.ovn.org/network).
	Name string
	// Topology is "layer2" or "layer3" (external_ids:k8s.ovn.org/topology).
	Topology string
}

// IDs are the network's external IDs (util.GenerateExternalIDsForSwitchOrRouter)
// as ovn-nbctl arguments.
func (n Network) IDs() []string {
	return []string{`external_ids:"k8s.ovn.org/network"="` + n.Name + `"`, `external_ids:"k8s.ovn.org/topology"=` + n.Topology}
}

// Addresses is "MAC IP..." as OVN-Kubernetes writes a port's addresses: the
// MAC derived from the first IP (util.IPAddrToHWAddr).
func Addresses(ips ...netip.Addr) string {
	parts := []string{ovnk.MACFromIP(ips[0]).String()}
	for _, ip := range ips {
		parts = append(parts, ip.String())
	}
	return strings.Join(parts, " ")
}
