package nadtrust

// Waiting is how many Labelled calls wait for the list that has not begun
// yet.
func Waiting(g *Guard) int {
	g.lists.Lock()
	defer g.lists.Unlock()
	if g.next == nil {
		return 0
	}
	return g.next.calls
}
