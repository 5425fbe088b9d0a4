package ovsconn

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
)

// libovsdb's log of a dropped event reaches Options.Dropped through the logger.
func TestDropSinkTellsTheIndex(t *testing.T) {
	for _, inner := range []logr.Logger{logr.Discard(), testr.New(t)} {
		dropped := 0
		logger := logr.New(newDropSink(inner.GetSink(), func() { dropped++ })).WithName("cache").WithValues("db", "nb")
		logger.Info("something else")
		if dropped != 0 {
			t.Fatal("another message marked events lost")
		}
		logger.Info(droppedEvent)
		if dropped != 1 {
			t.Errorf("the dropped event was not noticed (inner sink %T)", inner.GetSink())
		}
	}
}
