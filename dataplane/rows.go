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
