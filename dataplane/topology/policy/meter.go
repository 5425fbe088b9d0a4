package policy

import (
	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/rows"
	"github.com/udnkit/udnkit/dataplane/topology/base"
)

// ACL logging meter, as upstream's controller manager creates it once per
// zone (pkg/controllermanager/controller_manager.go createACLLoggingMeter;
// types.OvnACLLoggingMeter, config.Logging.ACLLoggingRateLimit's default).
const (
	ACLLoggingMeterName = "acl-logging"
	ACLLoggingRate      = 20
)

// ACLLoggingMeter is the zone's acl-logging meter every ACL of this package
// names (their meter column): fair, in packets per second, one band that
// drops above ACLLoggingRate. Shared by the zone (rows.ZoneMeter): created
// when missing, never updated or deleted.
func ACLLoggingMeter() rows.ZoneMeter {
	return rows.ZoneMeter{
		Row:  nbdb.Meter{Name: ACLLoggingMeterName, Fair: base.Ptr(true), Unit: nbdb.MeterUnitPktps},
		Band: nbdb.MeterBand{Action: nbdb.MeterBandActionDrop, Rate: ACLLoggingRate},
	}
}
