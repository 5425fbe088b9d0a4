package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/udnkit/udnkit/envtest"
	"github.com/udnkit/udnkit/internal/chartrender"
)

// serviceCIDRs is the local cluster's service range: the apiserver's
// --service-cluster-ip-range and every manager's --service-cidrs, so the
// manager refuses networks over the range the apiserver really allocates
// Services from.
const serviceCIDRs = "10.96.0.0/16"

// accessTemplate holds the chart's ClusterRoles for people: udnkit-admin,
// -edit and -view, labelled to be aggregated into Kubernetes' admin, edit
// and view.
const accessTemplate = "templates/access.yaml"

// installAccess creates the ClusterRoles of the chart's accessTemplate,
// rendered from the chart in root with its default values as `helm install`
// would, and fills Kubernetes' aggregated ClusterRoles from them.
func installAccess(ctx context.Context, c client.Client, root string) error {
	version, err := envtest.KubernetesVersion()
	if err != nil {
		return err
	}
	objs, err := chartrender.Objects(filepath.Join(root, "charts", "udnkit"), nil,
		chartrender.Release{Name: "udnkit", Namespace: "udnkit-system", KubeVersion: "v" + version}, accessTemplate)
	if err != nil {
		return fmt.Errorf("rendering the chart's %s: %w", accessTemplate, err)
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return envtest.AggregateClusterRoles(ctx, c)
}

// keepRolesAggregated does, until ctx ends, what kube-controller-manager's
// clusterrole-aggregation controller does and envtest lacks: it copies the
// rules of the ClusterRoles labelled rbac.authorization.k8s.io/aggregate-to-*
// into the ClusterRoles that select them (admin, edit, view), so a role a
// user applies is aggregated as in a cluster.
func keepRolesAggregated(ctx context.Context, c client.Client, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := envtest.AggregateClusterRoles(ctx, c); err != nil && ctx.Err() == nil {
				log.FromContext(ctx).Error(err, "aggregating ClusterRoles")
			}
		}
	}
}
