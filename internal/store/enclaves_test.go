package store_test

import (
	"context"
	"testing"
	"time"

	"conduit/internal/enclaves"
	"conduit/internal/store"
)

func TestEnclaveRecordAndLogs(t *testing.T) {
	ctx := context.Background()
	acct, err := st.EnsureHumanAccount(ctx, store.NewID("acct"), "enclaves", 0)
	if err != nil {
		t.Fatal(err)
	}
	c := enclaves.Create{Name: "a", ProviderConfig: &enclaves.ProviderConfig{DockerImage: "127.0.0.1:1/a:1"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	id := store.NewEnclaveID()
	e, err := st.CreateEnclave(ctx, store.NewEnclave{ID: id, AccountID: acct.ID, Create: c, Status: enclaves.PendingDeploy})
	if err != nil || e.Status != enclaves.PendingDeploy || e.ProviderConfig.MemoryMiB != 256 {
		t.Fatalf("create: %+v %v", e, err)
	}
	// Creating again (a retried step) answers the stored record.
	if again, err := st.CreateEnclave(ctx, store.NewEnclave{ID: id, AccountID: acct.ID, Create: c, Status: enclaves.Deployed}); err != nil || again.Status != enclaves.PendingDeploy {
		t.Fatalf("create again: %+v %v", again, err)
	}
	allowed := []enclaves.Status{enclaves.PendingDeploy}
	name := "renamed"
	if e, ok, err := st.PatchEnclave(ctx, id, enclaves.Patch{Name: &name}, allowed); !ok || err != nil || e.Name != "renamed" {
		t.Fatalf("patch: %+v %v %v", e, ok, err)
	}
	if err := st.ProjectEnclave(ctx, store.EnclaveProjection{ID: id, Status: enclaves.Deployed, WalletAddress: "0xabc", PCRs: map[string]string{"0": "00"}, Endpoint: "127.0.0.1:9"}); err != nil {
		t.Fatal(err)
	}
	other := "again"
	if e, ok, err := st.PatchEnclave(ctx, id, enclaves.Patch{Name: &other}, allowed); ok || err != nil || e.Name != "renamed" || e.Status != enclaves.Deployed {
		t.Fatalf("patch while deployed: %+v %v %v", e, ok, err)
	}
	if ok, err := st.DeleteEnclave(ctx, id); ok || err != nil {
		t.Fatalf("delete while deployed: %v %v", ok, err)
	}

	one, two := int64(1), int64(2)
	logs := []store.EnclaveLog{
		{Type: "application", Source: "s", Stream: "stdout", Message: "line 1", AppSeq: &one},
		{Type: "application", Source: "s", Stream: "stdout", Message: "line 2", AppSeq: &two},
		{Type: "ecs", Source: "s", Message: "deployed"},
	}
	if err := st.AppendEnclaveLogs(ctx, id, logs); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEnclaveLogs(ctx, id, logs[:2]); err != nil { // copied twice: kept once
		t.Fatal(err)
	}
	if n, err := st.LastAppSeq(ctx, id); n != 2 || err != nil {
		t.Fatalf("last app seq %d %v", n, err)
	}
	app, err := st.EnclaveLogs(ctx, id, "application", 100)
	if err != nil || len(app) != 2 || app[0].Message != "line 1" || app[1].LogGroup != "/conduit/enclaves/"+id+"/application" {
		t.Fatalf("application logs: %+v %v", app, err)
	}
	if all, _ := st.EnclaveLogs(ctx, id, "all", 2); len(all) != 2 || all[1].Message != "deployed" {
		t.Fatalf("newest 2: %+v", all)
	}
	old := []store.EnclaveLog{{Type: "ecs", Source: "s", Message: "old", At: time.Now().Add(-48 * time.Hour)}}
	if err := st.AppendEnclaveLogs(ctx, id, old); err != nil {
		t.Fatal(err)
	}
	if n, err := st.PruneEnclaveLogs(ctx, time.Now().Add(-24*time.Hour)); n < 1 || err != nil {
		t.Fatalf("prune: %d %v", n, err)
	}
	if all, _ := st.EnclaveLogs(ctx, id, "all", 100); len(all) != 3 {
		t.Fatalf("after prune: %+v", all)
	}

	if err := st.ProjectEnclave(ctx, store.EnclaveProjection{ID: id, Status: enclaves.Destroyed}); err != nil {
		t.Fatal(err)
	}
	if e, _ := st.Enclave(ctx, id); e.WalletAddress != "0xabc" || e.Endpoint != "" {
		t.Fatalf("destroyed: %+v", e)
	}
	if ok, err := st.DeleteEnclave(ctx, id); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if all, _ := st.EnclaveLogs(ctx, id, "all", 100); len(all) != 0 {
		t.Fatalf("logs outlived their enclave: %+v", all)
	}
}

// A failed attempt is cleared when the enclave moves on, and kept when
// it fails: then it is why (an image over a limit names the setting).
func TestEnclaveLastFailureKeptOnFailure(t *testing.T) {
	ctx := context.Background()
	acct, err := st.EnsureHumanAccount(ctx, store.NewID("acct"), "enclaves-failure", 0)
	if err != nil {
		t.Fatal(err)
	}
	c := enclaves.Create{Name: "a", ProviderConfig: &enclaves.ProviderConfig{DockerImage: "127.0.0.1:1/a:1"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		to   enclaves.Status
		keep bool
	}{{enclaves.Deployed, false}, {enclaves.Failed, true}} {
		id := store.NewEnclaveID()
		if _, err := st.CreateEnclave(ctx, store.NewEnclave{ID: id, AccountID: acct.ID, Create: c, Status: enclaves.Deploying}); err != nil {
			t.Fatal(err)
		}
		if err := st.NoteEnclaveFailure(ctx, id, 1, "over the limit enclaves.limits.layer_bytes"); err != nil {
			t.Fatal(err)
		}
		if err := st.ProjectEnclave(ctx, store.EnclaveProjection{ID: id, Status: tc.to, ErrorMessage: "x"}); err != nil {
			t.Fatal(err)
		}
		e, err := st.Enclave(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if kept := e.LastFailure.Message != "" && e.LastFailure.Attempt == 1 && !e.LastFailure.At.IsZero(); kept != tc.keep {
			t.Errorf("moved to %s: lastFailure %+v, want kept %v", tc.to, e.LastFailure, tc.keep)
		}
	}
}

// An account's enclave disk usage sums its enclaves' recorded bytes,
// destroyed ones aside.
func TestEnclaveDiskBytes(t *testing.T) {
	ctx := context.Background()
	acct, err := st.EnsureHumanAccount(ctx, store.NewID("acct"), "enclaves-disk", 0)
	if err != nil {
		t.Fatal(err)
	}
	c := enclaves.Create{Name: "a", ProviderConfig: &enclaves.ProviderConfig{DockerImage: "127.0.0.1:1/a:1"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range []int64{1000, 234} {
		id := store.NewEnclaveID()
		if _, err := st.CreateEnclave(ctx, store.NewEnclave{ID: id, AccountID: acct.ID, Create: c, Status: enclaves.Deploying}); err != nil {
			t.Fatal(err)
		}
		if err := st.SetEnclaveDiskBytes(ctx, id, n); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if n, err := st.EnclaveDiskBytes(ctx, acct.ID); err != nil || n != 1234 {
		t.Fatalf("usage %d, %v", n, err)
	}
	if err := st.ProjectEnclave(ctx, store.EnclaveProjection{ID: ids[0], Status: enclaves.Destroyed}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.EnclaveDiskBytes(ctx, acct.ID); err != nil || n != 234 {
		t.Fatalf("usage after destroying one: %d, %v", n, err)
	}
	if n, err := st.EnclaveDiskBytes(ctx, "nobody"); err != nil || n != 0 {
		t.Fatalf("an account without enclaves: %d, %v", n, err)
	}
}
