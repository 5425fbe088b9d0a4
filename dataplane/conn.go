package dataplane

import (
	"context"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/udnkit/udnkit/dataplane/internal/ovsconn"
)

// Where the OVN databases are and how to reach them (package ovsconn).
type (
	Config = ovsconn.Config
	TLS    = ovsconn.TLS
)

// DefaultConnectTimeout is Config.ConnectTimeout's default
// (--ovn-connect-timeout; package ovsconn says why).
const DefaultConnectTimeout = ovsconn.DefaultConnectTimeout

// ParseEndpoints splits an --ovn-*-address value into its endpoints and
// checks each one's syntax; flag names the flag in errors.
func ParseEndpoints(flag, address string) ([]string, error) {
	return ovsconn.ParseEndpoints(flag, address)
}

// transact sends ops in one transaction and checks every result.
func transact(ctx context.Context, c client.Client, ops []ovsdb.Operation) error {
	results, err := c.Transact(ctx, ops...)
	if err != nil {
		return err
	}
	if _, err := ovsdb.CheckOperationResults(results, ops); err != nil {
		return err
	}
	return nil
}
