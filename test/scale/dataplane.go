package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	ovsdbclient "github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/ovnk"
	"github.com/udnkit/udnkit/test/scale/internal/metrics"
	"github.com/udnkit/udnkit/test/scale/internal/report"
)

// measureDataplane starts one zone's OVN databases (NB and SB, no northd),
// runs the dataplane child with node-0000 as the zone's only node once the
// control plane has converged (a zone's dataplane catching up with a whole
// cluster, as after its restart), and waits for every row (dataplaneRun.wait).
func measureDataplane(ctx context.Context, d driverFlags, self, dir, kubeconfig string, watch cache.Cache, s report.Size) (*report.OVN, error) {
	run, err := startDataplane(ctx, self, dir, "dataplane", kubeconfig)
	if err != nil {
		return nil, err
	}
	defer run.stop()
	out, err := run.wait(ctx, d, watch, s)
	if err != nil {
		return nil, err
	}
	if err := run.restart(ctx, d, self, dir, out); err != nil {
		return nil, err
	}
	return out, nil
}

// dataplaneRun is one zone's OVN databases and its dataplane child, and the
// driver's own Northbound client that watches the routers.
type dataplaneRun struct {
	name        string
	pair        *ovsdbserver.Pair
	nb          ovsdbclient.Client
	dbModel     model.ClientDBModel
	dp          *child
	args        []string // the child's
	metrics     string   // its metrics address
	start       time.Time
	nbCPUBefore float64
	// nads is how many UDN NADs wait saw.
	nads int
}

// startDataplane starts the databases in dir/<name>-ovn and the dataplane
// child (log dir/<name>.log).
func startDataplane(ctx context.Context, self, dir, name, kubeconfig string) (_ *dataplaneRun, err error) {
	ovnDir := filepath.Join(dir, name+"-ovn")
	if err := os.MkdirAll(ovnDir, 0o755); err != nil {
		return nil, err
	}
	r := &dataplaneRun{name: name}
	defer func() {
		if err != nil {
			r.stop()
		}
	}()
	if r.pair, err = ovsdbserver.StartPair(ctx, ovnDir); err != nil {
		return nil, fmt.Errorf("starting OVN (make scale provisions OVN first): %w", err)
	}
	if r.dbModel, err = nbdb.FullDatabaseModel(); err != nil {
		return nil, err
	}
	if r.nb, err = ovsdbclient.NewOVSDBClient(r.dbModel, ovsdbclient.WithEndpoint(r.pair.NB.Address())); err != nil {
		return nil, err
	}
	if err := r.nb.Connect(ctx); err != nil {
		return nil, err
	}
	// Only what the wait reads: a monitor of the whole database made the
	// driver (and ovsdb-server, which sends every update to each monitor)
	// do the dataplane child's cache work a second time while it is timed.
	var lr nbdb.LogicalRouter
	if _, err := r.nb.Monitor(ctx, r.nb.NewMonitor(ovsdbclient.WithTable(&lr, &lr.Name, &lr.Ports, &lr.Policies))); err != nil {
		return nil, err
	}
	if r.metrics, err = freeAddr(); err != nil {
		return nil, err
	}
	r.args = []string{"-role=dataplane", "-child-kubeconfig=" + kubeconfig,
		"-metrics=" + r.metrics, "-nb=" + r.pair.NB.Address(), "-sb=" + r.pair.SB.Address(), "-zone-node=" + nodeName(0)}
	_, _, r.nbCPUBefore = metrics.ProcUsage(r.pair.NB.Pid())
	r.start = time.Now()
	if r.dp, err = startChild(self, filepath.Join(dir, name+".log"), r.args...); err != nil {
		return nil, err
	}
	return r, nil
}

// restart stops the dataplane child once its rows are complete and starts
// it again on the same databases, as a zone's dataplane restarts (an
// upgrade, a node reboot): converged is when it is connected to both
// databases with its caches filled (udnkit_ovn_connected), has queued every
// NAD and has no work left. The rows must be exactly those before.
func (r *dataplaneRun) restart(ctx context.Context, d driverFlags, self, dir string, out *report.OVN) error {
	r.dp.stop()
	restarted := time.Now()
	var err error
	if r.dp, err = startChild(self, filepath.Join(dir, r.name+"-restart.log"), r.args...); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, d.timeout, true, func(ctx context.Context) (bool, error) {
		m, err := metrics.Scrape(ctx, metrics.LocalHTTP, "http://"+r.metrics+"/metrics")
		return err == nil && dataplaneConverged(m, r.nads), nil
	})
	if err != nil {
		return fmt.Errorf("%s: the restarted dataplane did not converge within %s: %w", r.name, d.timeout, err)
	}
	out.Restart = time.Since(restarted)
	_, out.RestartPeakMiB, out.RestartCPU = r.dp.usage()
	rows, err := countRows(ctx, r.nb, r.dbModel)
	if err != nil {
		return err
	}
	if !maps.Equal(rows, out.Rows) {
		return fmt.Errorf("%s: the restarted dataplane changed the rows: %v before, %v after", r.name, out.Rows, rows)
	}
	fmt.Printf("   OVN (%s): restart to converged %s\n", r.name, out.Restart.Round(time.Millisecond))
	return nil
}

// dataplaneConverged says whether a dataplane child's metrics show both
// databases connected, at least nads requests queued by its Layer2
// controller (every UDN NAD, from the initial list) and no work left.
func dataplaneConverged(m metrics.Samples, nads int) bool {
	if depth, err := m.QueueDepth(); err != nil || depth > 0 {
		return false
	}
	up, adds := 0, 0.0
	for _, s := range m {
		switch {
		case s.Name == "udnkit_ovn_connected" && s.Value == 1:
			up++
		case s.Name == "workqueue_adds_total" && s.Labels["name"] == "dataplane-layer2":
			adds += s.Value
		}
	}
	return up == 2 && adds >= float64(nads)
}

func (r *dataplaneRun) stop() {
	if r.dp != nil {
		r.dp.stop() // first: its lease is released for the next dataplane child
	}
	if r.nb != nil {
		r.nb.Close()
	}
	if r.pair != nil {
		r.pair.Stop()
	}
}

// wait waits until every Primary Layer2 network's transit router has a port
// per node plus its switch port, and every Primary Layer3 network's cluster
// router has its subnet policy (the networks as the NADs are now), then
// counts every table's rows once. Times and CPU are from the child's start.
func (r *dataplaneRun) wait(ctx context.Context, d driverFlags, watch cache.Cache, s report.Size) (*report.OVN, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := watch.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return nil, err
	}
	r.nads = len(nads.Items)
	transitRouters, clusterRouters := map[string]bool{}, map[string]bool{}
	for _, nad := range nads.Items {
		idx, err := strconv.Atoi(strings.TrimPrefix(nad.Namespace, "scale-"))
		if err != nil || !nad.DeletionTimestamp.IsZero() {
			continue
		}
		k := report.KindOf(idx)
		if !k.Primary {
			continue
		}
		names := ovnk.NamesFor(nad.Annotations[ovnk.AnnotationNetworkName])
		if k.Layer3 {
			clusterRouters[names.ClusterRouter()] = true
		} else {
			transitRouters[names.TransitRouter()] = true
		}
	}
	trDone, crDone := 0, 0
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, d.timeout, true, func(ctx context.Context) (bool, error) {
		var routers []nbdb.LogicalRouter
		if err := r.nb.List(ctx, &routers); err != nil {
			return false, err
		}
		trDone, crDone = 0, 0
		for _, lr := range routers {
			if transitRouters[lr.Name] && len(lr.Ports) == s.Nodes+1 {
				trDone++
			}
			if clusterRouters[lr.Name] && len(lr.Policies) > 0 {
				crDone++
			}
		}
		return trDone == len(transitRouters) && crDone == len(clusterRouters), nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return nil, fmt.Errorf("%s: OVN rows not complete after %s: transit routers %d/%d, Layer3 cluster routers %d/%d",
			r.name, d.timeout, trDone, len(transitRouters), crDone, len(clusterRouters))
	}
	if err != nil {
		return nil, err
	}
	out := &report.OVN{AllRows: time.Since(r.start)}
	out.RSSMiB, out.PeakMiB, out.CPU = r.dp.usage()
	_, _, nbCPU := metrics.ProcUsage(r.pair.NB.Pid())
	out.ServerCPU = nbCPU - r.nbCPUBefore
	if out.Rows, err = countRows(ctx, r.nb, r.dbModel); err != nil {
		return nil, err
	}
	if st, err := os.Stat(r.pair.NB.File()); err == nil {
		out.DBMiB = float64(st.Size()) / (1 << 20)
	}
	fmt.Printf("   OVN (%s): all rows in %s, %d rows, dataplane RSS %.0f MiB\n", r.name, out.AllRows.Round(time.Millisecond), out.Total(), out.RSSMiB)
	r.printReconciles(ctx)
	return out, nil
}

// printReconciles prints the child's reconciles so far by controller, to
// tell a controller that runs more often per network as networks grow from
// one whose each run costs more.
func (r *dataplaneRun) printReconciles(ctx context.Context) {
	rec, err := metrics.ManagerReconciles(ctx, r.metrics)
	if err != nil {
		return
	}
	var each []string
	for _, c := range slices.Sorted(maps.Keys(rec)) {
		each = append(each, fmt.Sprintf("%s %.0f", strings.TrimPrefix(c, "dataplane-"), rec[c]))
	}
	fmt.Printf("   OVN (%s): reconciles %s\n", r.name, strings.Join(each, ", "))
}

// countRows is the number of rows of each table of the model that has any,
// read once with one select per table (only the row UUIDs).
func countRows(ctx context.Context, nb ovsdbclient.Client, dbModel model.ClientDBModel) (map[string]int, error) {
	tables := slices.Sorted(maps.Keys(dbModel.Types()))
	ops := make([]ovsdb.Operation, 0, len(tables))
	for _, t := range tables {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: t, Where: []ovsdb.Condition{}, Columns: []string{"_uuid"}})
	}
	results, err := nb.Transact(ctx, ops...)
	if err != nil {
		return nil, fmt.Errorf("counting the Northbound rows: %w", err)
	}
	out := map[string]int{}
	for i, r := range results {
		if i < len(tables) && r.Error != "" {
			return nil, fmt.Errorf("counting the Northbound rows of %s: %s: %s", tables[i], r.Error, r.Details)
		}
		if i < len(tables) && len(r.Rows) > 0 {
			out[tables[i]] = len(r.Rows)
		}
	}
	return out, nil
}
