package dataplane

import "github.com/udnkit/udnkit/dataplane/internal/plan"

// newPlan plans an Apply of d against the client's index with the owner's
// key memo (under the network's lock, which Apply holds).
func (c *Client) newPlan(d *Desired) (*plan.Planner, error) {
	return plan.Incremental(c.NB, c.index, &c.memos, d)
}

// indexPlan plans d against the client's index (memo nil: none).
func (c *Client) indexPlan(d *Desired, memo *plan.Memo) (*plan.Planner, error) {
	return plan.Indexed(c.NB, c.index, d, memo)
}

// fullPlan is the full diff of d against the client's cache.
func (c *Client) fullPlan(d *Desired) (*plan.Planner, error) {
	return plan.Full(c.NB, c.index, d)
}
