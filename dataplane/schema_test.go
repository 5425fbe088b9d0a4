package dataplane

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udnkit/udnkit/dataplane/nbdb"
	"github.com/udnkit/udnkit/dataplane/ovsdbserver"
	"github.com/udnkit/udnkit/internal/testenv"
	"github.com/udnkit/udnkit/ovnk"
)

// An OVN older than the models' schema (OVN 23.03 serves Northbound 7.0.0;
// the transit router needs 25.03) is refused with both versions and the OVN
// release to install, on the connection error /readyz/dataplane serves, and
// udnkit_ovn_schema_too_old{db="nb"} is 1; a current one is accepted and the
// gauge is 0.
func TestConnectRefusesAnOlderNorthboundSchema(t *testing.T) {
	testenv.Real(t, "ovsdb-server")
	dir, err := os.MkdirTemp("", "schema")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx := context.Background()

	// The older server: this release's Northbound schema as it was before
	// one of its columns, at an older version.
	raw, err := os.ReadFile(ovsdbserver.SchemaFile(ovsdbserver.Northbound))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	schema["version"] = "7.10.0"
	lrp := schema["tables"].(map[string]any)[nbdb.LogicalRouterPortTable].(map[string]any)
	delete(lrp["columns"].(map[string]any), "dhcp_relay")
	old, _ := json.Marshal(schema)
	oldSchema := filepath.Join(dir, "old-nb.ovsschema")
	if err := os.WriteFile(oldSchema, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := ovsdbserver.Command("ovsdb-tool", "create", filepath.Join(dir, "ovnnb.db"), oldSchema).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	db, err := ovsdbserver.StartPair(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Stop)

	c, err := New(Config{NBAddress: db.NB.Address(), SBAddress: db.SB.Address()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Connect(attempt); err == nil {
		t.Fatal("the dataplane connected to a Northbound schema 7.10.0")
	}
	want := "the server's OVN_Northbound schema is 7.10.0, older than " + nbdb.Schema().Version +
		": udnkit needs OVN " + ovnk.OVNVersion + " or newer"
	if err := c.Check(nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("readiness with an old Northbound: %v, want it to contain %q", err, want)
	}
	if got := metricValue("udnkit_ovn_schema_too_old", map[string]string{"db": "nb"}); got != 1 {
		t.Errorf(`udnkit_ovn_schema_too_old{db="nb"} = %v with an old Northbound, want 1`, got)
	}

	current := newEnv(t)
	if got := metricValue("udnkit_ovn_schema_too_old", map[string]string{"db": "nb"}); got != 0 {
		t.Errorf(`udnkit_ovn_schema_too_old{db="nb"} = %v after connecting to OVN %s, want 0`, got, ovnk.OVNVersion)
	}
	if err := current.c.Check(nil); err != nil {
		t.Errorf("readiness with the current schema: %v", err)
	}
}
