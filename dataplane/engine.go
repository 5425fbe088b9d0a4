package dataplane

import "github.com/udnkit/udnkit/dataplane/internal/engine"

// What an Apply did, and what the client asks its controllers to re-apply
// (package engine), under the names callers of the dataplane use.
type (
	Result   = engine.Result
	Resync   = engine.Resync
	KeyLocks = engine.KeyLocks
)

// The reasons of a Resync.
const (
	ResyncDatabaseReplaced = engine.ResyncDatabaseReplaced
	ResyncOwnedRowsLost    = engine.ResyncOwnedRowsLost
	ResyncForeignEdit      = engine.ResyncForeignEdit
)

// DefaultMaxTransactionOps bounds one Northbound transaction of an Apply
// (Client.MaxTransactionOps; package txn says how it was chosen).
const DefaultMaxTransactionOps = engine.DefaultMaxTransactionOps
