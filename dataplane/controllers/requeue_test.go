package controllers

import (
	"testing"
	"time"

	"github.com/udnkit/udnkit/internal/testobj"
	"github.com/udnkit/udnkit/ovnk"
)

// Secondary networks' rows heal from another client's edit as Primary
// ones do: a Secondary Layer2 network's switch and a Localnet network's
// switch, deleted with ovn-nbctl together with their pod ports, come back
// with those ports within seconds, with no API event in between (the
// Requeuer maps each network's name back to its NAD).
func TestSecondaryNetworksRowsHealFromAForeignDelete(t *testing.T) {
	s := podStack(t)
	s.start()
	s.create(namespace("tenant-red"), testobj.MakeNode("node-a").Obj(), testobj.MakeNode("node-b").Obj())
	s.createNAD(labeledNAD("tenant-red", "back", redL2Conf, map[string]string{ovnk.AnnotationNetworkID: "3"}),
		labeledNAD("tenant-red", "phys", redLocalnetConf, nil))
	s.create(testobj.MakePod("tenant-red", "pod4").Node("node-a").Running().PodNetworks(
		`{"tenant-red/back":{"ip_addresses":["10.50.0.4/16"],"mac_address":"0a:58:0a:32:00:04","tunnel_id":10,"role":"secondary"},` +
			`"tenant-red/phys":{"ip_addresses":["192.168.100.5/24"],"mac_address":"0a:58:c0:a8:64:05","role":"secondary"}}`).Obj())
	const (
		backSwitch, backPort = "tenant.red_back_ovn_layer2_switch", "tenant.red.back_tenant-red_pod4"
		lnSwitch, lnPort     = "tenant.red_phys_ovn_localnet_switch", "tenant.red.phys_tenant-red_pod4"
	)
	// A port is a child of its switch: ls-del takes it, and it is back only
	// once its switch is.
	programmed := func() bool { return s.hasPort(backPort) && s.hasPort(lnPort) }
	s.eventually("the Secondary Layer2 and Localnet switches with the pod's ports", programmed)
	wantBack, wantLn := s.nbctl("lsp-list", backSwitch), s.nbctl("lsp-list", lnSwitch)
	// Settled: nothing left in flight that would rewrite the rows anyway.
	time.Sleep(2 * time.Second)

	s.nbctl("ls-del", backSwitch, "--", "ls-del", lnSwitch)
	if s.hasPort(backPort) || s.hasPort(lnPort) {
		t.Fatalf("ls-del left the pod's ports")
	}
	s.healsWithin("the deleted Secondary switches with the pod's ports", 10*time.Second, programmed)
	for sw, want := range map[string]string{backSwitch: wantBack, lnSwitch: wantLn} {
		if got := s.nbctl("lsp-list", sw); withoutUUIDs(got) != withoutUUIDs(want) {
			t.Errorf("%s ports after the repair:\n%s\nwant:\n%s", sw, got, want)
		}
	}
}

func withoutUUIDs(out string) string { return normalized(uuidPattern.ReplaceAllString(out, "UUID")) }

// healsWithin waits for ok after another client's edit, no API event in
// between: the rows are back only if the dataplane re-applied them on its
// own, within d.
func (s *stack) healsWithin(what string, d time.Duration, ok func() bool) {
	s.t.Helper()
	started := time.Now()
	for !ok() {
		if time.Since(started) > d {
			s.t.Fatalf("%s: not back %v after another client's edit; NB:\n%s", what, d, s.nbctl("show"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Logf("%s: back in %v", what, time.Since(started).Round(10*time.Millisecond))
}
