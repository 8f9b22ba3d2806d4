package chaos_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"conduit/internal/money"
	"conduit/internal/x402"
	"conduit/workflows"
)

// campaign is what the campaign did, for the checks.
type campaign struct {
	account, key string
	initial      money.Micros
	since        time.Time
	invokes      []*invokeReq
	paid         []*paidReq
	kills        []kill
	// offer is the Solana offer every payment answered.
	offer x402.PaymentRequirements
}

// checkCampaign asserts, for every request the campaign made, that it
// ended exactly once with its money right:
//
//   - every workflow the campaign started closed as completed, and each
//     pipeline run was run to its end by exactly one execution;
//   - every pipeline run is finished; its hold was settled once (one hold,
//     one release, at most one charge entry): a success charged its cost
//     (never more than the hold), anything else nothing; no hold is open;
//   - an Idempotency-Key named one run across all its retries, and names
//     it still; an unkeyed request refused with 503 left no run behind;
//   - the account's balance is its initial credit plus its top-ups minus
//     its charges, and equals the sum of its ledger;
//   - each paid render's payment settled once and was credited once; the
//     run captured its price once (success) or released it (failure);
//   - each top-up payment settled once and was granted once to the right
//     account; every answer after the first says duplicate:true;
//   - the Solana ledger's transfers to the payee are exactly the payments
//     recorded as settled, and each wallet paid exactly what it bought;
//   - the campaign was not vacuous: kills landed on open workflows, and
//     histories show work cut off (workflow tasks timed out, activities
//     retried).
func checkCampaign(t *testing.T, c campaign) {
	ctx := context.Background()
	db, err := pgx.Connect(ctx, env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)

	execs := listExecutions(t, c.since)
	byWorkflow := map[string][]execution{}
	for _, e := range execs {
		if e.status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			t.Errorf("workflow %s (%s) closed as %s", e.id, e.typ, e.status)
		}
		byWorkflow[e.id] = append(byWorkflow[e.id], e)
	}

	charged := checkRuns(t, ctx, db, c, byWorkflow)
	granted := checkPaid(t, ctx, db, c)

	// The account: initial credit + its top-ups − its charges.
	bal, err := env.Platform.Store.Balance(ctx, c.account)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := env.Platform.Store.LedgerSum(ctx, c.account)
	if err != nil {
		t.Fatal(err)
	}
	if want := c.initial + granted - charged; bal != want || sum != bal {
		t.Errorf("account balance %s (ledger sum %s), want %s = %s initial + %s top-ups − %s charged", bal, sum, want, c.initial, granted, charged)
	}

	// Nothing anywhere is left held or half-settled.
	var held, unsettled int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM holds WHERE status = 'held'`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status <> 'settled'`).Scan(&unsettled); err != nil {
		t.Fatal(err)
	}
	if held != 0 || unsettled != 0 {
		t.Errorf("%d holds left open, %d payments left unsettled", held, unsettled)
	}
	checkLedger(t, ctx, db, c.offer)
	checkNotVacuous(t, c, execs)
}

// checkRuns checks every pipeline run of the account and returns what
// they were charged together.
func checkRuns(t *testing.T, ctx context.Context, db *pgx.Conn, c campaign, byWorkflow map[string][]execution) money.Micros {
	type run struct {
		id, pipeline, status, key, workflow, hold, error string
		cost                                             money.Micros
	}
	rows, err := db.Query(ctx, `SELECT run_id, pipeline_id, status, coalesce(idempotency_key, ''), workflow_id, hold_id, error, cost_micros FROM runs WHERE account_id = $1`, c.account)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (run, error) {
		var x run
		err := r.Scan(&x.id, &x.pipeline, &x.status, &x.key, &x.workflow, &x.hold, &x.error, &x.cost)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var total money.Micros
	byKey := map[string][]run{}
	var unkeyed []string
	statuses := map[string]int{}
	withdrawn := 0
	for _, r := range runs {
		statuses[r.status]++
		switch {
		case r.key != "":
			byKey[r.pipeline+"/"+r.key] = append(byKey[r.pipeline+"/"+r.key], r)
		case r.error == workflows.LateAdmissionError && r.status == workflows.StatusError:
			// Admitted too late for its caller (a worker died after
			// writing it): ended unrun and uncharged, its caller answered
			// 503. Checked below like every run: released, nothing charged.
			withdrawn++
		default:
			unkeyed = append(unkeyed, r.id)
		}
		if r.status == workflows.StatusRunning {
			t.Errorf("run %s is still running", r.id)
			continue
		}
		// The hold: settled once, charged the cost on success only.
		charge := checkHold(t, ctx, db, "run "+r.id, r.hold, r.status == workflows.StatusSuccess, r.cost)
		if r.status != workflows.StatusSuccess && r.cost != 0 {
			t.Errorf("run %s ended %s with cost %s", r.id, r.status, r.cost)
		}
		total += charge
		// At most one execution of its workflow ran it to its end; any
		// other answered a retry (duplicate) or admitted nothing. (An
		// execution whose worker died after finishing the run in the
		// same workflow task as its admission finds the run finished when
		// that task runs again, and ends as a duplicate: then none does.)
		var ended []string
		duplicates := 0
		for _, e := range byWorkflow[r.workflow] {
			switch e.runStatus {
			case workflows.StatusDuplicate:
				duplicates++
			case workflows.StatusRefused:
			default:
				ended = append(ended, e.runStatus)
			}
		}
		if len(ended) > 1 || len(ended) == 1 && ended[0] != r.status || len(ended) == 0 && duplicates == 0 {
			t.Errorf("run %s (%s) was ended by %d executions of %s: %v", r.id, r.status, len(ended), r.workflow, ended)
		}
		if len(ended) == 0 {
			t.Logf("run %s (%s): ended by an execution that found it finished when its last workflow task ran again", r.id, r.status)
		}
	}
	t.Logf("pipeline runs: %d (%v), charged %s; %d unkeyed runs withdrawn as admitted too late for their callers", len(runs), statuses, total, withdrawn)

	// Every request: keyed ones name one run across all retries, and name
	// it still; unkeyed ones have a run exactly when they were accepted.
	accepted := map[string]bool{}
	auth := []string{"Authorization", "Bearer " + c.key}
	var retriedKeys, refusedUnkeyed int
	for _, r := range c.invokes {
		if r.key == "" {
			for _, id := range r.accepted {
				accepted[id] = true
			}
			if r.replayed > 0 {
				t.Errorf("an invoke without a key was answered as a replay: %v", r.accepted)
			}
			refusedUnkeyed += r.refused
			continue
		}
		if r.refused > 0 {
			retriedKeys++
		}
		got := byKey[r.pipeline+"/"+r.key]
		if len(got) != 1 {
			t.Errorf("Idempotency-Key %s: %d runs", r.key, len(got))
			continue
		}
		for _, id := range r.accepted {
			if id != got[0].id {
				t.Errorf("Idempotency-Key %s answered run %s, but its run is %s", r.key, id, got[0].id)
			}
		}
		again := mustSend(t, "POST", "/api/pipelines/"+r.pipeline+"/invoke", map[string]any{"inputs": map[string]any{"question": r.question}}, 202,
			append(auth, "Idempotency-Key", r.key)...)
		if again.json["runId"] != got[0].id || again.json["status"] != got[0].status || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("Idempotency-Key %s replayed as %v (replayed %q), want run %s %s", r.key, again.json, again.header.Get("Idempotent-Replayed"), got[0].id, got[0].status)
		}
	}
	slices.Sort(unkeyed)
	want := make([]string, 0, len(accepted))
	for id := range accepted {
		want = append(want, id)
	}
	slices.Sort(want)
	if !slices.Equal(unkeyed, want) {
		t.Errorf("runs without a key %v, but the unkeyed requests were accepted as %v (a 503 says nothing was charged)", unkeyed, want)
	}
	t.Logf("invokes: %d keyed requests retried after a 503, %d unkeyed requests refused with 503", retriedKeys, refusedUnkeyed)

	// What the API answers at each statusUrl is what PostgreSQL says, and
	// so is what a run's workflow returns (chat completions read it).
	for _, r := range runs {
		got := mustSend(t, "GET", "/api/pipelines/"+r.pipeline+"/invoke?runId="+url.QueryEscape(r.id), nil, 200, auth...)
		if got.json["status"] != r.status {
			t.Errorf("run %s: statusUrl says %v, the history %s", r.id, got.json["status"], r.status)
		}
		if r.key != "" {
			continue // later executions of a keyed workflow answer other requests
		}
		var st workflows.RunState
		if err := env.Platform.Temporal.GetWorkflow(ctx, r.workflow, "").Get(ctx, &st); err != nil || st.RunID != r.id || st.Status != r.status || st.Cost != r.cost {
			t.Errorf("run %s (%s, cost %s): its workflow returned %+v (%v)", r.id, r.status, r.cost, st, err)
		}
	}
	return total
}

// checkHold checks a settled hold and its ledger entries and returns what
// it charged: success captures want (at most the hold) with one charge
// entry, anything else releases it with none.
func checkHold(t *testing.T, ctx context.Context, db *pgx.Conn, what, holdID string, success bool, want money.Micros) money.Micros {
	t.Helper()
	if holdID == "" {
		t.Errorf("%s has no hold", what)
		return 0
	}
	var status string
	var amount, charged money.Micros
	if err := db.QueryRow(ctx, `SELECT status, amount_micros, charged_micros FROM holds WHERE id = $1`, holdID).Scan(&status, &amount, &charged); err != nil {
		t.Errorf("%s: hold %s: %v", what, holdID, err)
		return 0
	}
	entries := map[string]int{}
	sums := map[string]money.Micros{}
	rows, err := db.Query(ctx, `SELECT kind, amount_micros FROM ledger_entries WHERE hold_id = $1`, holdID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var kind string
		var a money.Micros
		if err := rows.Scan(&kind, &a); err != nil {
			t.Fatal(err)
		}
		entries[kind]++
		sums[kind] += a
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if entries["hold"] != 1 || sums["hold"] != -amount || entries["release"] != 1 || sums["release"] != amount || entries["charge"] > 1 {
		t.Errorf("%s: hold %s of %s has entries %v %v", what, holdID, amount, entries, sums)
	}
	switch {
	case success && (status != "captured" || charged != want || want > amount || want <= 0 || entries["charge"] != 1 || sums["charge"] != -want):
		t.Errorf("%s succeeded: hold %s is %s, charged %s of %s (%d charge entries, %s), want %s", what, holdID, status, charged, amount, entries["charge"], -sums["charge"], want)
	case !success && (status != "released" || charged != 0 || entries["charge"] != 0):
		t.Errorf("%s failed: hold %s is %s, charged %s (%d charge entries)", what, holdID, status, charged, entries["charge"])
	}
	return charged
}

// checkPaid checks every render and top-up payment and returns what
// top-ups granted to the campaign's account.
func checkPaid(t *testing.T, ctx context.Context, db *pgx.Conn, c campaign) money.Micros {
	network, topUp := c.offer.Network, env.Platform.Payments.TopUp
	var granted money.Micros
	outcomes := map[string]int{}
	for _, p := range c.paid {
		payer := p.wallet.PublicKey().String()
		what := p.kind + " paid by " + payer
		// What the wallet paid on the ledger: exactly one transfer, to
		// the payee, of the recorded payment.
		left, err := env.Platform.Store.SVMBalance(ctx, c.offer.Asset, payer)
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			status, purpose, tx, account string
			amount                       money.Micros
		}
		rows, err := db.Query(ctx, `SELECT status, purpose, coalesce(transaction, ''), coalesce(account_id, ''), amount_micros FROM payments WHERE network = $1 AND payer = $2`,
			network, x402.NormalizeAddress(network, payer))
		if err != nil {
			t.Fatal(err)
		}
		pays, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.status, &x.purpose, &x.tx, &x.account, &x.amount)
		})
		if err != nil {
			t.Fatal(err)
		}
		var transfers []string
		trows, err := db.Query(ctx, `SELECT signature || ' ' || to_owner || ' ' || amount FROM svm_transfers WHERE from_owner = $1`, payer)
		if err != nil {
			t.Fatal(err)
		}
		if transfers, err = pgx.CollectRows(trows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		if p.expired {
			// Refused for its expired blockhash: nothing may have moved
			// or been recorded as settled.
			outcomes[p.kind+" refused: blockhash expired"]++
			if left != uint64(p.minted) || len(transfers) != 0 || (len(pays) == 1 && pays[0].status == "settled") {
				t.Errorf("%s: refused for its expired blockhash, yet left %d of %d, transfers %v, payments %+v", what, left, p.minted, transfers, pays)
			}
			continue
		}
		if len(pays) != 1 || pays[0].status != "settled" {
			t.Errorf("%s: payments %+v (answers %v)", what, pays, p.statuses)
			continue
		}
		pay := pays[0]
		if spent := p.minted - money.Micros(left); spent != pay.amount || len(transfers) != 1 ||
			transfers[0] != pay.tx+" "+c.offer.PayTo+" "+itoa(pay.amount) {
			t.Errorf("%s: the wallet spent %s in transfers %v; the payment recorded is %+v", what, spent, transfers, pay)
		}
		switch p.kind {
		case "render":
			outcomes["render "+checkRender(t, ctx, db, p, pay.purpose, pay.tx, pay.amount)]++
		case "topup":
			account := c.account
			if !p.bearer {
				wa, err := env.Platform.Store.FindWalletAccount(ctx, network, payer)
				if err != nil {
					t.Errorf("%s: its wallet account: %v", what, err)
					continue
				}
				account = wa.ID
			}
			if want := "topup/" + map[bool]string{true: c.account, false: "wallet"}[p.bearer]; pay.purpose != want || pay.amount != topUp {
				t.Errorf("%s: payment for %s of %s, want %s of %s", what, pay.purpose, pay.amount, want, topUp)
			}
			var n int
			var sum money.Micros
			var to string
			if err := db.QueryRow(ctx, `SELECT count(*), coalesce(sum(amount_micros), 0)::bigint, coalesce(min(account_id), '') FROM ledger_entries WHERE kind = 'topup' AND idempotency_key = $1`,
				"topup/"+network+"/"+pay.tx).Scan(&n, &sum, &to); err != nil {
				t.Fatal(err)
			}
			if n != 1 || sum != topUp || to != account {
				t.Errorf("%s: granted %d times, %s to %s (want once, %s to %s)", what, n, sum, to, topUp, account)
			}
			if p.bearer {
				granted += topUp
			} else if bal, _ := env.Platform.Store.Balance(ctx, account); bal != topUp {
				t.Errorf("%s: its wallet account holds %s, want %s", what, bal, topUp)
			}
			// Only one answer may report the grant; every other one (a
			// retry after a lost answer, a replay) is a duplicate.
			fresh := 0
			for _, a := range p.answers {
				if a["transaction"] != pay.tx {
					t.Errorf("%s: answered transaction %v, settled %s", what, a["transaction"], pay.tx)
				}
				switch {
				case a["duplicate"] == false && a["grantedUsd"] == usd(topUp):
					fresh++
				case a["duplicate"] == true && a["grantedUsd"] == 0.0:
				default:
					t.Errorf("%s: answer %v", what, a)
				}
			}
			if fresh > 1 || len(p.answers) == 0 {
				t.Errorf("%s: %d answers reported the grant (answers %v, statuses %v)", what, fresh, p.answers, p.statuses)
			}
			if len(p.statuses) > 1 {
				outcomes["topup retried"]++
			}
			var headers []string
			if p.bearer {
				headers = append(headers, "Authorization", "Bearer "+c.key)
			}
			again := mustSend(t, "POST", "/api/billing/credits/x402", nil, 200, append(headers, "PAYMENT-SIGNATURE", p.header)...)
			if again.json["duplicate"] != true || again.json["grantedUsd"] != 0.0 || again.json["transaction"] != pay.tx {
				t.Errorf("%s: presented again: %v", what, again.json)
			}
			outcomes["topup"]++
		}
	}
	t.Logf("paid requests: %v", outcomes)
	return granted
}

// checkRender checks a paid render's run and money and returns its status.
func checkRender(t *testing.T, ctx context.Context, db *pgx.Conn, p *paidReq, purpose, tx string, paid money.Micros) string {
	what := "render paid by " + p.wallet.PublicKey().String()
	runID, ok := strings.CutPrefix(purpose, "render/")
	if !ok {
		t.Errorf("%s: payment for %s", what, purpose)
		return ""
	}
	var status, runTx, hold, account string
	var runPaid, price money.Micros
	err := db.QueryRow(ctx, `SELECT status, coalesce(transaction, ''), hold_id, account_id, paid_micros, price_micros FROM media_runs WHERE run_id = $1`, runID).
		Scan(&status, &runTx, &hold, &account, &runPaid, &price)
	if errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("%s: its run %s was never recorded", what, runID)
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if status == "running" || runTx != tx || runPaid != paid || price != paid {
		t.Errorf("%s: run %s is %s, transaction %s paid %s price %s; the payment is %s of %s", what, runID, status, runTx, runPaid, price, tx, paid)
	}
	for _, a := range p.answers {
		if a["runId"] != runID {
			t.Errorf("%s: answered run %v, the payment bought %s", what, a["runId"], runID)
		}
	}
	// Credited once to the wallet's account; the price captured once, or
	// released for the free retry.
	var n int
	var sum money.Micros
	if err := db.QueryRow(ctx, `SELECT count(*), coalesce(sum(amount_micros), 0)::bigint FROM ledger_entries WHERE kind = 'payment' AND account_id = $1`, account).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != 1 || sum != paid {
		t.Errorf("%s: credited %d times, %s (want once, %s)", what, n, sum, paid)
	}
	charged := checkHold(t, ctx, db, what, hold, status == "success", price)
	bal, err := env.Platform.Store.Balance(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if sum, _ := env.Platform.Store.LedgerSum(ctx, account); bal != paid-charged || sum != bal {
		t.Errorf("%s: wallet account balance %s (ledger %s), want %s paid − %s charged", what, bal, sum, paid, charged)
	}
	return status
}

// checkLedger: the Solana ledger's transfers to the payee are exactly the
// payments recorded as settled on that network.
func checkLedger(t *testing.T, ctx context.Context, db *pgx.Conn, offer x402.PaymentRequirements) {
	rows, err := db.Query(ctx, `SELECT signature || ' ' || amount FROM svm_transfers WHERE to_owner = $1 AND mint = $2`, offer.PayTo, offer.Asset)
	if err != nil {
		t.Fatal(err)
	}
	transfers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	rows, err = db.Query(ctx, `SELECT transaction || ' ' || amount_micros FROM payments WHERE network = $1 AND status = 'settled'`, offer.Network)
	if err != nil {
		t.Fatal(err)
	}
	settled, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(transfers)
	sort.Strings(settled)
	if !slices.Equal(transfers, settled) {
		t.Errorf("the ledger moved %d transfers to the payee %v; %d payments are recorded settled %v", len(transfers), transfers, len(settled), settled)
	}
	t.Logf("Solana ledger: %d transfers to the payee, each a settled payment", len(transfers))
}

// checkNotVacuous: kills landed while workflows were open, and the
// histories show work a kill cut off.
func checkNotVacuous(t *testing.T, c campaign, execs []execution) {
	landed := 0
	for _, k := range c.kills {
		if k.open > 0 {
			landed++
		}
	}
	counts := map[string]int{}
	for _, e := range execs {
		for k, v := range historyScars(t, e) {
			counts[e.typ+" "+k] += v
		}
	}
	t.Logf("kills that landed on open workflows: %d of %d; cut-off work in histories: %v", landed, len(c.kills), counts)
	scars := 0
	for _, v := range counts {
		scars += v
	}
	if landed < (len(c.kills)+1)/2 || scars == 0 {
		t.Errorf("the campaign was vacuous: %d of %d kills landed on open workflows, %d interruptions in histories", landed, len(c.kills), scars)
	}
}

// historyScars counts what a kill leaves in a history: workflow tasks that
// timed out (the worker died holding one: its local activities — the
// admission, inline model calls, the finish — died with it) and
// activities that needed more than one attempt or timed out.
func historyScars(t *testing.T, e execution) map[string]int {
	out := map[string]int{}
	it := env.Platform.Temporal.GetWorkflowHistory(context.Background(), e.id, e.runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			out["workflow task timed out"]++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			out["activity timed out"]++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if a := ev.GetActivityTaskStartedEventAttributes(); a.GetAttempt() > 1 {
				out["activity retried"]++
				if f := a.GetLastFailure(); f != nil && strings.Contains(strings.ToLower(f.GetMessage()), "timeout") {
					out["activity retried after a timeout"]++
				}
			}
		}
	}
	return out
}

// execution is one workflow execution the campaign started.
type execution struct {
	id, runID, typ string
	status         enumspb.WorkflowExecutionStatus
	runStatus      string
}

// listExecutions lists every workflow execution started since then.
func listExecutions(t *testing.T, since time.Time) []execution {
	var out []execution
	var token []byte
	for {
		resp, err := env.Platform.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "StartTime > '" + since.UTC().Format(time.RFC3339Nano) + "'", PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.Executions {
			out = append(out, execution{id: e.GetExecution().GetWorkflowId(), runID: e.GetExecution().GetRunId(), typ: e.GetType().GetName(),
				status: e.GetStatus(), runStatus: runStatus(e)})
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return out
		}
	}
}

// runStatus reads an execution's RunStatus search attribute.
func runStatus(e *workflowpb.WorkflowExecutionInfo) string {
	p := e.GetSearchAttributes().GetIndexedFields()[workflows.AttrRunStatus.GetName()]
	var s string
	if p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}

// openWorkflows counts the workflows started since then that are open.
func openWorkflows(t *testing.T, since time.Time) int {
	resp, err := env.Platform.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query:    "ExecutionStatus = 'Running' AND StartTime > '" + since.UTC().Format(time.RFC3339Nano) + "'",
		PageSize: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Executions)
}

func itoa(m money.Micros) string { return strconv.FormatInt(int64(m), 10) }

// usd is an amount as the API's JSON numbers decode.
func usd(m money.Micros) float64 {
	f, _ := strconv.ParseFloat(m.String(), 64)
	return f
}
