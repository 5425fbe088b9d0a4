package ovsdbserver

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// AddChassis registers a chassis in a Southbound database with one geneve
// Encap per IP, as ovn-controller does for its own chassis and OVN-Kubernetes'
// interconnect does for the chassis of other zones (remote: marked
// other_config:is-remote=true): its name is the chassis' system-id (the
// node's k8s.ovn.org/node-chassis-id), its hostname the node's name.
// Interconnect remote ports' Port_Binding.encap point at these Encap rows.
func AddChassis(sb *Server, name, hostname string, remote bool, encapIPs ...string) error {
	if len(encapIPs) == 0 {
		return fmt.Errorf("chassis %s: at least one encap IP is needed", name)
	}
	args := []string{"chassis-add", name, "geneve", encapIPs[0]}
	for i, ip := range encapIPs[1:] {
		id := "@e" + strconv.Itoa(i)
		args = append(args, "--", "--id="+id, "create", "Encap", "type=geneve", `ip="`+ip+`"`, "chassis_name="+name,
			"options:csum=true", "--", "add", "Chassis", name, "encaps", id)
	}
	args = append(args, "--", "set", "Chassis", name, "hostname="+hostname)
	if remote {
		args = append(args, "--", "set", "Chassis", name, "other_config:is-remote=true")
	}
	args = append([]string{"--db=" + sb.Address()}, args...)
	out, err := Command("ovn-sbctl", args...).CombinedOutput()
	if killedBySignal(err) {
		// ovn-sbctl 26.03.1 has been seen to abort (SIGABRT, no output) on a
		// heavily loaded machine, sometimes after its transaction committed.
		// The command is one transaction: run again; if it now finds the
		// chassis, the aborted run committed all of it.
		out, err = Command("ovn-sbctl", args...).CombinedOutput()
		if err != nil && strings.Contains(string(out), "a chassis named "+name+" already exists") {
			if _, getErr := Command("ovn-sbctl", "--db="+sb.Address(), "get", "Chassis", name, "hostname").Output(); getErr == nil {
				return nil
			}
		}
	}
	if err != nil {
		return fmt.Errorf("ovn-sbctl chassis-add %s: %w: %s", name, err, out)
	}
	return nil
}

// killedBySignal reports whether err is a command's exit by a signal.
func killedBySignal(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	status, ok := exit.Sys().(syscall.WaitStatus)
	return ok && status.Signaled()
}
