package ovnk

// The default control plane protection (COPP) OVN-Kubernetes gives every
// router it creates (upstream's pkg/ovn/copp.go EnsureDefaultCOPP and
// pkg/types/const.go): one Copp row per zone, named DefaultCOPPName, that
// names for each protocol OVN meters (COPPProtocols) the meter
// COPPMeterName(protocol); every meter is fair, counts packets per second
// and holds one band that drops above COPPMeterBandRate.
const (
	DefaultCOPPName     = "ovnkube-default" // types.DefaultCOPPName
	COPPMeterUnit       = "pktps"           // types.PacketsPerSecond
	COPPMeterBandAction = "drop"            // types.MeterAction
	COPPMeterBandRate   = 25
	// coppMeterSuffix is types.OvnRateLimitingMeter.
	coppMeterSuffix = "rate-limiter"
)

// COPPProtocols are the protocols the default COPP meters, in upstream's
// order (defaultProtocolNames).
func COPPProtocols() []string {
	return []string{"arp", "arp-resolve", "bfd", "event-elb", "icmp4-error", "icmp6-error", "reject", "tcp-reset", "svc-monitor"}
}

// COPPMeterName is the default COPP's meter of a protocol:
// <protocol>-rate-limiter.
func COPPMeterName(protocol string) string { return protocol + "-" + coppMeterSuffix }
