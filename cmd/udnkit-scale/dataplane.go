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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/ovnk"
)

// measureDataplane starts one zone's OVN databases (NB and SB, no northd),
// runs the dataplane child with node-0000 as the zone's only node once the
// control plane has converged (a zone's dataplane catching up with a whole
// cluster, as after its restart), and waits for every row (dataplaneRun.wait).
func measureDataplane(ctx context.Context, d driverFlags, self, dir, kubeconfig string, watch cache.Cache, s size) (*ovnResult, error) {
	run, err := startDataplane(ctx, self, dir, "dataplane", kubeconfig)
	if err != nil {
		return nil, err
	}
	defer run.stop()
	return run.wait(ctx, d, watch, s)
}

// dataplaneRun is one zone's OVN databases and its dataplane child, and the
// driver's own Northbound client that watches the routers.
type dataplaneRun struct {
	name        string
	pair        *ovsdbserver.Pair
	nb          ovsdbclient.Client
	dbModel     model.ClientDBModel
	dp          *child
	start       time.Time
	nbCPUBefore float64
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
		return nil, fmt.Errorf("starting OVN (make scale installs Debian's ovn-central first): %w", err)
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
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, _, r.nbCPUBefore = procUsage(r.pair.NB.Pid())
	r.start = time.Now()
	r.dp, err = startChild(self, filepath.Join(dir, name+".log"), "-role=dataplane", "-child-kubeconfig="+kubeconfig,
		"-metrics="+metrics, "-nb="+r.pair.NB.Address(), "-sb="+r.pair.SB.Address(), "-zone-node="+nodeName(0))
	if err != nil {
		return nil, err
	}
	return r, nil
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
func (r *dataplaneRun) wait(ctx context.Context, d driverFlags, watch cache.Cache, s size) (*ovnResult, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := watch.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return nil, err
	}
	transitRouters, clusterRouters := map[string]bool{}, map[string]bool{}
	for _, nad := range nads.Items {
		idx, err := strconv.Atoi(strings.TrimPrefix(nad.Namespace, "scale-"))
		if err != nil || !nad.DeletionTimestamp.IsZero() {
			continue
		}
		k := kindOf(idx)
		if !k.primary {
			continue
		}
		names := ovnk.NamesFor(nad.Annotations[ovnk.AnnotationNetworkName])
		if k.layer3 {
			clusterRouters[names.ClusterRouter()] = true
		} else {
			transitRouters[names.TransitRouter()] = true
		}
	}
	deadline := time.Now().Add(d.timeout)
	for {
		var routers []nbdb.LogicalRouter
		if err := r.nb.List(ctx, &routers); err != nil {
			return nil, err
		}
		trDone, crDone := 0, 0
		for _, lr := range routers {
			if transitRouters[lr.Name] && len(lr.Ports) == s.nodes+1 {
				trDone++
			}
			if clusterRouters[lr.Name] && len(lr.Policies) > 0 {
				crDone++
			}
		}
		if trDone == len(transitRouters) && crDone == len(clusterRouters) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: OVN rows not complete after %s: transit routers %d/%d, Layer3 cluster routers %d/%d",
				r.name, d.timeout, trDone, len(transitRouters), crDone, len(clusterRouters))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	out := &ovnResult{allRows: time.Since(r.start)}
	out.rssMiB, out.peakMiB, out.cpu = r.dp.usage()
	_, _, nbCPU := procUsage(r.pair.NB.Pid())
	out.serverCPU = nbCPU - r.nbCPUBefore
	var err error
	if out.rows, err = countRows(ctx, r.nb, r.dbModel); err != nil {
		return nil, err
	}
	if st, err := os.Stat(r.pair.NB.File()); err == nil {
		out.dbMiB = float64(st.Size()) / (1 << 20)
	}
	fmt.Printf("   OVN (%s): all rows in %s, %d rows, dataplane RSS %.0f MiB\n", r.name, out.allRows.Round(time.Millisecond), out.total(), out.rssMiB)
	return out, nil
}

func (o *ovnResult) total() int {
	n := 0
	for _, v := range o.rows {
		n += v
	}
	return n
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
