package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/ovn-kubernetes/libovsdb/cache"
	ovsdbclient "github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	udnv1 "github.com/udnkit/udnkit/apis/k8s.ovn.org/v1"
	"github.com/udnkit/udnkit/apis/scheme"
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/sbdb"
	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/envtest/datapath"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/ovnk/podannotation"
)

// pathTrace notes when each step of one sample's path was first seen from
// outside: the objects' watch events (UDN admitted, NAD, network ID, each
// pod's k8s.ovn.org/pod-networks, the UDN's NetworkCreated) and each zone's
// databases (the Layer2 switch, each pod's port, the Southbound binding of
// the zone's own pod to its chassis). It waits for nothing: the figures are
// the benchmark's steps.
type pathTrace struct {
	mu        sync.Mutex
	start     time.Time
	namespace string
	// names are the rows of this sample: the switch's name and each pod's
	// port name (to the pod's name).
	switchName string
	ports      map[string]string
	seen       map[string]time.Time
}

// begin starts a sample's trace for the network of namespace/udn.
func (t *pathTrace) begin(start time.Time, namespace, udn string, pods []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nad := namespace + "/" + udn
	t.start, t.namespace, t.seen = start, namespace, map[string]time.Time{}
	t.switchName = ovnk.NamesFor(ovnk.UDNNetworkName(namespace, udn)).Switch()
	t.ports = map[string]string{}
	for _, p := range pods {
		t.ports[ovnk.PodPortName(nad, namespace, p)] = p
	}
}

// mark notes step name once, at its first sighting.
func (t *pathTrace) mark(name string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		return
	}
	if _, ok := t.seen[name]; !ok {
		t.seen[name] = now
	}
}

// steps adds the benchmark's own steps.
func (t *pathTrace) steps(steps []step) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range steps {
		t.seen[st.name] = st.at
	}
}

// String is the sample's steps in the order seen, as ms from the start.
func (t *pathTrace) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.seen))
	for n := range t.seen {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return t.seen[a].Compare(t.seen[b]) })
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, " %s=%d", n, t.seen[n].Sub(t.start).Milliseconds())
	}
	return strings.TrimSpace(b.String())
}

// inSample returns the trace's namespace (the sample's objects are there).
func (t *pathTrace) inSample(o client.Object) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen != nil && o.GetNamespace() == t.namespace
}

// watchObjects feeds the trace from the apiserver's watch events.
func (t *pathTrace) watchObjects(ctx context.Context, env *envtest.Environment) error {
	c, err := ctrlcache.New(env.Config, ctrlcache.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	observe := map[client.Object]func(client.Object){
		&udnv1.UserDefinedNetwork{}: func(o client.Object) {
			t.mark("udn")
			if meta.IsStatusConditionTrue(o.(*udnv1.UserDefinedNetwork).Status.Conditions, udnv1.ConditionNetworkCreated) {
				t.mark("udn-created")
			}
		},
		&nadv1.NetworkAttachmentDefinition{}: func(o client.Object) {
			t.mark("nad")
			if ids, err := ovnk.DecodeNetworkIDs(o.GetAnnotations()); err == nil && ids.HasID {
				t.mark("ids")
			}
		},
		&corev1.Pod{}: func(o client.Object) {
			t.mark("pod-" + o.GetName())
			nad := o.GetNamespace() + "/net"
			if n, err := podannotation.DecodePodNetwork(o.GetAnnotations(), nad); err == nil && n != nil {
				t.mark("addr-" + o.GetName())
			}
		},
	}
	for obj, f := range observe {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		seen := func(o any) {
			if co, ok := o.(client.Object); ok && t.inSample(co) {
				f(co)
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) { seen(o) }, UpdateFunc: func(_, o any) { seen(o) }}); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("the trace's informers did not sync")
	}
	return nil
}

// watchZones feeds the trace from every zone's Northbound (the switch and
// the ports) and Southbound (the bindings of the zone's own ports).
func (t *pathTrace) watchZones(ctx context.Context, b *testing.B, cluster *datapath.Cluster) error {
	nbModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		return err
	}
	sbModel, err := sbdb.FullDatabaseModel()
	if err != nil {
		return err
	}
	for _, n := range cluster.Nodes {
		zone := n.Name
		nb, err := t.monitor(ctx, b, nbModel, n.Zone.NB.Address(), &nbdb.LogicalSwitch{}, &nbdb.LogicalSwitchPort{})
		if err != nil {
			return err
		}
		nb.Cache().AddEventHandler(&cache.EventHandlerFuncs{AddFunc: func(_ string, m model.Model) {
			switch r := m.(type) {
			case *nbdb.LogicalSwitch:
				if t.is(func() bool { return r.Name == t.switchName }) {
					t.mark("switch@" + zone)
				}
			case *nbdb.LogicalSwitchPort:
				if pod := t.pod(r.Name); pod != "" {
					t.mark("port-" + pod + "@" + zone)
				}
			}
		}})
		sb, err := t.monitor(ctx, b, sbModel, n.Zone.SB.Address(), &sbdb.PortBinding{})
		if err != nil {
			return err
		}
		bound := func(m model.Model) {
			if pb, ok := m.(*sbdb.PortBinding); ok && pb.Chassis != nil {
				if pod := t.pod(pb.LogicalPort); pod != "" {
					t.mark("bound-" + pod + "@" + zone)
				}
			}
		}
		sb.Cache().AddEventHandler(&cache.EventHandlerFuncs{
			AddFunc:    func(_ string, m model.Model) { bound(m) },
			UpdateFunc: func(_ string, _, m model.Model) { bound(m) },
		})
	}
	return nil
}

// is runs f under the trace's lock.
func (t *pathTrace) is(f func() bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen != nil && f()
}

// pod is the pod whose port is named port in this sample, or "".
func (t *pathTrace) pod(port string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ports[port]
}

// monitor connects to one database and monitors tables.
func (t *pathTrace) monitor(ctx context.Context, b *testing.B, m model.ClientDBModel, addr string, tables ...model.Model) (ovsdbclient.Client, error) {
	c, err := ovsdbclient.NewOVSDBClient(m, ovsdbclient.WithEndpoint(addr))
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	b.Cleanup(c.Close)
	var opts []ovsdbclient.MonitorOption
	for _, tbl := range tables {
		opts = append(opts, ovsdbclient.WithTable(tbl))
	}
	if _, err := c.Monitor(ctx, c.NewMonitor(opts...)); err != nil {
		return nil, err
	}
	return c, nil
}
