package dataplane

import "github.com/udnkit/udnkit/dataplane/rows"

// The desired rows and their owner (package rows), under the names callers
// of the dataplane use.
type (
	Desired = rows.Desired
	Router  = rows.Router
	Switch  = rows.Switch
	Copp    = rows.Copp
	Owner   = rows.Owner
)

// The external-ID keys udnkit writes (package rows).
const (
	ExternalIDNetwork  = rows.ExternalIDNetwork
	ExternalIDTopology = rows.ExternalIDTopology
	ExternalIDPiece    = rows.ExternalIDPiece
	ExternalIDShared   = rows.ExternalIDShared
	ExternalIDVM       = rows.ExternalIDVM

	ExternalIDUDNEnabledService = rows.ExternalIDUDNEnabledService
)
