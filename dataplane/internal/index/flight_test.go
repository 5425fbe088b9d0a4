package index

import (
	"testing"
	"time"
)

// AwaitFlights returns at once when nothing is in flight, waits for every
// transaction in flight when it is called (done twice is harmless), and not
// for one sent after it began.
func TestAwaitFlightsWaitsForTheTransactionsInFlight(t *testing.T) {
	ix := New(nil, testKeep)
	if ix.AwaitFlights(FlightWait) {
		t.Fatal("nothing in flight: AwaitFlights said some were")
	}

	first, second := ix.Sending(), ix.Sending()
	returned := make(chan bool)
	go func() { returned <- ix.AwaitFlights(FlightWait) }()
	time.Sleep(20 * time.Millisecond)
	later := ix.Sending() // sent after the wait began: not waited for
	defer later()
	first()
	first()
	select {
	case <-returned:
		t.Fatal("AwaitFlights returned with a transaction still in flight")
	case <-time.After(20 * time.Millisecond):
	}
	second()
	select {
	case had := <-returned:
		if !had {
			t.Fatal("AwaitFlights said nothing was in flight")
		}
	case <-time.After(time.Second):
		t.Fatal("AwaitFlights still waiting once the transactions in flight at its call were done (it waits for one sent later)")
	}
}
