package node

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/udnkit/udnkit/envtest/datapath/netns"
)

// startOVS starts, in namespace ns, an Open_vSwitch database of its own
// (dir/conf.db, served on dir/db.sock) and ovs-vswitchd on it without the
// kernel datapath; env points the programs at dir. It returns what it
// started, also on error.
func startOVS(ctx context.Context, dir, ns string, env []string) ([]*netns.Proc, error) {
	tools, err := SetupTools()
	if err != nil {
		return nil, err
	}
	conf, db := filepath.Join(dir, "conf.db"), "unix:"+filepath.Join(dir, "db.sock")
	if _, err := netns.Run("", nil, "ovsdb-tool", "create", conf, tools.VSwitchSchema); err != nil {
		return nil, err
	}
	var procs []*netns.Proc
	p, err := netns.Spawn(dir, ns, "ovsdb-server", env, "ovsdb-server", conf,
		"--remote=p"+db, "--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"),
		"--log-file="+filepath.Join(dir, "ovsdb-server.log"), "--no-chdir", "-vconsole:off")
	if err != nil {
		return procs, err
	}
	procs = append(procs, p)
	if err := waitFor(ctx, 20*time.Second, "the Open_vSwitch database", p, func() error {
		_, err := netns.Run("", nil, "ovs-vsctl", "--db="+db, "--no-wait", "init")
		return err
	}); err != nil {
		return procs, err
	}
	p, err = netns.Spawn(dir, ns, "ovs-vswitchd", env, "ovs-vswitchd", db, "--disable-system",
		"--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"),
		"--log-file="+filepath.Join(dir, "ovs-vswitchd.log"), "--no-chdir", "-vconsole:off")
	if err == nil {
		procs = append(procs, p)
	}
	return procs, err
}

// Switch is a physical switch outside the nodes: an Open vSwitch of its
// own in a namespace with one bridge on the userspace datapath, whose
// ports are VLAN trunks or access ports as a top-of-rack switch's are.
type Switch struct {
	// Netns is the namespace the switch's ports are in.
	Netns string
	// Bridge is the switch's bridge.
	Bridge string
	dir    string
	procs  []*netns.Proc
}

// StartSwitch starts a switch with bridge bridge in namespace ns, its
// sockets and logs in dir (which it creates).
func StartSwitch(ctx context.Context, dir, ns, bridge string) (*Switch, error) {
	s := &Switch{Netns: ns, Bridge: bridge, dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	procs, err := startOVS(ctx, dir, ns, s.env())
	s.procs = procs
	if err == nil {
		_, err = s.Vsctl("--may-exist", "add-br", bridge, "--", "set", "Bridge", bridge, "datapath_type=netdev")
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Switch) env() []string {
	return []string{"OVS_RUNDIR=" + s.dir, "OVS_LOGDIR=" + s.dir, "OVS_DBDIR=" + s.dir}
}

// Vsctl runs ovs-vsctl on the switch's database.
func (s *Switch) Vsctl(args ...string) (string, error) {
	return netns.Run("", s.env(), append([]string{"ovs-vsctl", "--timeout=30", "--db=unix:" + filepath.Join(s.dir, "db.sock")}, args...)...)
}

// Stop stops the switch's daemons.
func (s *Switch) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop()
	}
	s.procs = nil
}
