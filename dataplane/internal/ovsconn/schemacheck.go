package ovsconn

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/sbdb"
	"github.com/udnkit/udnkit/ovnk"
)

// The dataplane's models are generated from the schemas of ovnk.OVNVersion,
// and libovsdb refuses a server whose schema lacks any column of a model: a
// server older than those schemas (OVN 23.03's Northbound is 7.0.0) cannot be
// programmed. OVN's transit router itself arrived in OVN 25.03 (Northbound
// 7.11.0); the models' schema is newer still, so it is the minimum.
var modelSchemas = map[string]string{
	nbdb.Schema().Name: nbdb.Schema().Version,
	sbdb.Schema().Name: sbdb.Schema().Version,
}

// schemaCheck reads a database server's schema version with a model of no
// tables, which every version satisfies, so that an old server is refused
// with its version and the minimum rather than libovsdb's list of every
// missing column.
type schemaCheck struct {
	label, name, want string
	probe             client.Client
}

func newSchemaCheck(label string, m model.ClientDBModel, opts []client.Option) (*schemaCheck, error) {
	empty, err := model.NewClientDBModel(m.Name(), map[string]model.Model{})
	if err != nil {
		return nil, err
	}
	probe, err := client.NewOVSDBClient(empty, opts...)
	if err != nil {
		return nil, err
	}
	return &schemaCheck{label: label, name: m.Name(), want: modelSchemas[m.Name()], probe: probe}, nil
}

// tooOld connects once and returns a refusal when the server's schema is
// older than the models', nil when it is not or when the server cannot be
// read (the caller's own error then stands). It sets
// udnkit_ovn_schema_too_old{db} either way.
func (s *schemaCheck) tooOld(ctx context.Context) error {
	if err := s.probe.Connect(ctx); err != nil {
		return nil
	}
	got := s.probe.Schema().Version
	s.probe.Disconnect()
	if !olderVersion(got, s.want) {
		schemaTooOld.WithLabelValues(s.label).Set(0)
		return nil
	}
	schemaTooOld.WithLabelValues(s.label).Set(1)
	return fmt.Errorf("the server's %s schema is %s, older than %s: udnkit needs OVN %s or newer (its models are generated from that release's schemas)",
		s.name, got, s.want, ovnk.OVNVersion)
}

// connected records that the server's schema was accepted.
func (s *schemaCheck) connected() { schemaTooOld.WithLabelValues(s.label).Set(0) }

// olderVersion says whether the OVSDB schema version a ("major.minor.patch")
// is older than b; a version that does not parse counts as older.
func olderVersion(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	if len(pa) != 3 || len(pb) != 3 {
		return true
	}
	for i := range 3 {
		x, errA := strconv.Atoi(pa[i])
		y, errB := strconv.Atoi(pb[i])
		if errA != nil || errB != nil {
			return true
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// schemaTooOld is 1 while the dataplane refuses a database server whose
// schema is older than its models'.
var schemaTooOld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "udnkit_ovn_schema_too_old",
	Help: "Whether the OVN database (db: nb or sb) serves a schema older than the dataplane's models, which the dataplane refuses: 1 refused, 0 accepted.",
}, []string{"db"})

func init() { metrics.Registry.MustRegister(schemaTooOld) }
