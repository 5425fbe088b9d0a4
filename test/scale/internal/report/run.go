package report

import "time"

// Kind is one of the eight network kinds, assigned round-robin by index.
type Kind struct {
	Cluster, Layer3, Primary bool
}

// KindOf is the kind of network i.
func KindOf(i int) Kind {
	return Kind{Cluster: i&4 != 0, Layer3: i&1 != 0, Primary: i&2 == 0}
}

// Size is one run.
type Size struct {
	Label                  string
	Nodes, Networks, Pods  int
	PrimaryL2, L3, L2Pods  int // expected counts derived from the kinds
	PrimaryL3              int
	ExpectedTransitRouters int
}

// NewSize is the run label of nodes Nodes, networks networks and pods pods,
// with the counts their kinds give.
func NewSize(label string, nodes, networks, pods int) Size {
	s := Size{Label: label, Nodes: nodes, Networks: networks, Pods: pods}
	for i := range networks {
		k := KindOf(i)
		switch {
		case k.Layer3:
			s.L3++
			if k.Primary {
				s.PrimaryL3++
			}
		case k.Primary:
			s.PrimaryL2++
		}
	}
	for p := range pods {
		if k := KindOf(p % networks); k.Primary && !k.Layer3 {
			s.L2Pods++
		}
	}
	return s
}

// Result is what one run measured; durations are from the first create.
type Result struct {
	Size
	CreateAll, NADs, IDs, HostSubnets, Addresses time.Duration
	CreateErrors, CreateRetries                  int64
	RSSMiB, PeakMiB, CPUSeconds                  float64
	WebhookRSSMiB, WebhookCPUSeconds             float64
	DriverCPUSeconds                             float64
	Requests, RestartRequests                    map[string]float64
	Reconciles                                   map[string]float64 // the manager's, by controller
	Restart                                      time.Duration
	RestartPeakMiB, RestartCPUSeconds            float64
	OVN                                          *OVN
	// OVNLive: the dataplane that ran from before the first create (-dataplane-live).
	OVNLive *OVN
}

// OVN is what a run measured of the dataplane programming one zone's
// ovsdb-server.
type OVN struct {
	AllRows              time.Duration
	Rows                 map[string]int
	DBMiB                float64
	RSSMiB, PeakMiB, CPU float64
	ServerCPU            float64 // the Northbound ovsdb-server's
	// Restart: the child stopped and started again on the same databases
	// (measureDataplane only): to converged, its peak RSS and CPU.
	Restart                    time.Duration
	RestartPeakMiB, RestartCPU float64
}

// Total is the number of Northbound rows.
func (o *OVN) Total() int {
	n := 0
	for _, v := range o.Rows {
		n += v
	}
	return n
}
