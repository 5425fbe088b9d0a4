package netns

import (
	"testing"
	"time"
)

// TestLongestOutage checks the outage runs from sending the first of
// consecutive unanswered requests to sending the next answered one (or the
// end of the last request's interval), and ignores a gap in sending with every request answered.
func TestLongestOutage(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name     string
		sent     []int // send times in ms, by sequence number
		answered []int // answered sequence numbers
		want     time.Duration
	}{
		{name: "every request answered, 300 ms without sending", sent: []int{0, 20, 320, 340}, answered: []int{0, 1, 2, 3}},
		{name: "two runs lost, the longer counts", sent: []int{0, 20, 40, 60, 80, 100, 120}, answered: []int{0, 2, 6},
			want: 60 * time.Millisecond},
		{name: "lost to the end", sent: []int{0, 20, 40, 60}, answered: []int{0, 1}, want: 40 * time.Millisecond},
		{name: "nothing answered", sent: []int{0, 20, 40}, want: 60 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Probe{interval: 20 * time.Millisecond, sent: map[uint16]time.Time{}, replies: map[uint16]time.Time{}}
			for seq, ms := range tc.sent {
				p.sent[uint16(seq)] = at(ms)
			}
			for _, seq := range tc.answered {
				p.replies[uint16(seq)] = at(tc.sent[seq] + 5)
			}
			if got := p.longestOutage(); got != tc.want {
				t.Fatalf("longest outage %s, want %s", got, tc.want)
			}
		})
	}
}
