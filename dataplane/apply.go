package dataplane

import (
	"context"

	"github.com/udnkit/udnkit/dataplane/internal/engine"
	"github.com/udnkit/udnkit/dataplane/rows"
)

// What the front forwards to its engine (package engine documents each):
// only what callers outside the package use. Result and Resync stay the
// engine's types: every caller that names one is a package under
// dataplane/, which may import dataplane/internal/engine.

// Apply makes the Northbound database hold exactly the desired rows of d's
// piece, creating, updating and removing only rows the piece owns, and
// waits until the client's cache shows them.
func (c *Client) Apply(ctx context.Context, d *rows.Desired) (engine.Result, error) {
	return c.eng.Apply(ctx, d)
}

// ApplyTogether applies pieces of one network as Apply applies each, those
// that can in one transaction.
func (c *Client) ApplyTogether(ctx context.Context, ds ...*rows.Desired) ([]engine.Result, error) {
	return c.eng.ApplyTogether(ctx, ds...)
}

// ApplyTogetherUnless is ApplyTogether, except that a piece is left
// unwritten when unless (nil: never) says so, asked with the network's lock
// held.
func (c *Client) ApplyTogetherUnless(ctx context.Context, unless func(context.Context) (bool, error), ds ...*rows.Desired) ([]engine.Result, error) {
	return c.eng.ApplyTogetherUnless(ctx, unless, ds...)
}

// ApplyUnless is Apply, except that it does nothing when unless (nil:
// never) says so; unless is asked with the network's lock held.
func (c *Client) ApplyUnless(ctx context.Context, d *rows.Desired, unless func(context.Context) (bool, error)) (engine.Result, error) {
	return c.eng.ApplyUnless(ctx, d, unless)
}

// RemoveUnless removes the rows of each owner's piece (one network's
// each), except the networks unless (nil: none) names, asked once with
// every network's lock held; the removals share a few transactions.
func (c *Client) RemoveUnless(ctx context.Context, owners []rows.Owner, unless func(context.Context, []string) (map[string]bool, error)) (engine.Result, error) {
	return c.eng.RemoveUnless(ctx, owners, unless)
}

// Networks lists the networks that have routers of a topology piece in the
// Northbound database.
func (c *Client) Networks(topology, piece string) []string { return c.eng.Networks(topology, piece) }

// PieceNetworks lists the networks that own any Northbound row of a
// topology piece.
func (c *Client) PieceNetworks(topology, piece string) []string {
	return c.eng.PieceNetworks(topology, piece)
}

// PieceHasNetwork says whether the network owns any Northbound row of a
// topology piece: PieceNetworks for one network, a map look-up per table.
func (c *Client) PieceHasNetwork(topology, piece, network string) bool {
	return c.eng.PieceHasNetwork(topology, piece, network)
}

// LoadBalancerGroups names the Northbound database's load balancer groups,
// sorted: zone rows without external_ids, which a sweep finds by name.
func (c *Client) LoadBalancerGroups() []string { return c.eng.LoadBalancerGroups() }

// OnResync sets what the client calls, from its own goroutine, when the
// Northbound database no longer holds networks' rows as udnkit wrote them;
// set it before Connect.
func (c *Client) OnResync(f func(engine.Resync)) { c.eng.OnResync(f) }
