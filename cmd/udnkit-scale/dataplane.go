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
// runs the dataplane child with node-0000 as the zone's only node, and
// waits until every Primary Layer2 network's transit router has a port per
// node plus its switch port, and every Primary Layer3 network's cluster
// router has its subnet policy. It watches the Northbound routers through
// its own libovsdb monitor, and counts every table's rows once at the end.
func measureDataplane(ctx context.Context, d driverFlags, self, dir, kubeconfig string, watch cache.Cache, s size) (*ovnResult, error) {
	ovnDir := filepath.Join(dir, "ovn")
	if err := os.MkdirAll(ovnDir, 0o755); err != nil {
		return nil, err
	}
	pair, err := ovsdbserver.StartPair(ctx, ovnDir)
	if err != nil {
		return nil, fmt.Errorf("starting OVN (make scale installs Debian's ovn-central first): %w", err)
	}
	defer pair.Stop()

	var nads nadv1.NetworkAttachmentDefinitionList
	if err := watch.List(ctx, &nads, client.HasLabels{ovnk.LabelUserDefinedNetwork}); err != nil {
		return nil, err
	}
	transitRouters, clusterRouters := map[string]bool{}, map[string]bool{}
	for _, nad := range nads.Items {
		idx, err := strconv.Atoi(strings.TrimPrefix(nad.Namespace, "scale-"))
		if err != nil {
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

	dbModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	nb, err := ovsdbclient.NewOVSDBClient(dbModel, ovsdbclient.WithEndpoint(pair.NB.Address()))
	if err != nil {
		return nil, err
	}
	if err := nb.Connect(ctx); err != nil {
		return nil, err
	}
	defer nb.Close()
	// Only what the wait reads: a monitor of the whole database made the
	// driver (and ovsdb-server, which sends every update to each monitor)
	// do the dataplane child's cache work a second time while it is timed.
	var lr nbdb.LogicalRouter
	if _, err := nb.Monitor(ctx, nb.NewMonitor(ovsdbclient.WithTable(&lr, &lr.Name, &lr.Ports, &lr.Policies))); err != nil {
		return nil, err
	}

	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, _, nbCPUBefore := procUsage(pair.NB.Pid())
	start := time.Now()
	dp, err := startChild(self, filepath.Join(dir, "dataplane.log"), "-role=dataplane", "-child-kubeconfig="+kubeconfig,
		"-metrics="+metrics, "-nb="+pair.NB.Address(), "-sb="+pair.SB.Address(), "-zone-node="+nodeName(0))
	if err != nil {
		return nil, err
	}
	defer dp.stop()
	deadline := time.Now().Add(d.timeout)
	for {
		var routers []nbdb.LogicalRouter
		if err := nb.List(ctx, &routers); err != nil {
			return nil, err
		}
		trDone, crDone := 0, 0
		for _, r := range routers {
			if transitRouters[r.Name] && len(r.Ports) == s.nodes+1 {
				trDone++
			}
			if clusterRouters[r.Name] && len(r.Policies) > 0 {
				crDone++
			}
		}
		if trDone == len(transitRouters) && crDone == len(clusterRouters) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("OVN rows not complete after %s: transit routers %d/%d, Layer3 cluster routers %d/%d",
				d.timeout, trDone, len(transitRouters), crDone, len(clusterRouters))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	out := &ovnResult{allRows: time.Since(start)}
	out.rssMiB, out.peakMiB, out.cpu = dp.usage()
	_, _, nbCPU := procUsage(pair.NB.Pid())
	out.serverCPU = nbCPU - nbCPUBefore
	if out.rows, err = countRows(ctx, nb, dbModel); err != nil {
		return nil, err
	}
	if st, err := os.Stat(pair.NB.File()); err == nil {
		out.dbMiB = float64(st.Size()) / (1 << 20)
	}
	fmt.Printf("   OVN: all rows in %s, %d rows, dataplane RSS %.0f MiB\n", out.allRows.Round(time.Millisecond), out.total(), out.rssMiB)
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
