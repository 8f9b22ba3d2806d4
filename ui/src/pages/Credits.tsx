import { useEffect, useState } from "react";
import { get, post, qs, usd, when } from "../api";
import { DataTable, FilterForm, Pager, usePagedList } from "../list";
import { ErrorNote, Page, useLoad } from "../ui";

const kinds = ["free_grant", "topup", "pack", "grant", "hold", "release", "charge", "refund"];

type Entry = { id: string; type: string; amount: number; amountMicros: number; reference?: string; description?: string; createdAt: string };
type Pack = { id: string; price: number; credit: number };

export function Credits() {
  const balance = useLoad(() => get<{ balanceUsd: number }>("/api/account/balance"), []);
  const packs = useLoad(() => get<{ packs: Pack[]; provider: string; testMode: boolean }>("/api/billing/packs"), []);
  const [types, setTypes] = useState<string[]>([]);
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [filter, setFilter] = useState({ types: "", from: "", to: "" });
  const ledger = usePagedList<{ entries: Entry[] }>("/api/account/ledger", {
    type: filter.types,
    from: filter.from ? new Date(filter.from + "T00:00:00").toISOString() : "",
    to: filter.to ? new Date(filter.to + "T23:59:59.999").toISOString() : "",
  });
  const [buyError, setBuyError] = useState<unknown>(null);
  const [buying, setBuying] = useState("");

  const buy = async (pack: Pack) => {
    setBuying(pack.id);
    setBuyError(null);
    try {
      const back = "/dashboard/billing";
      const s = await post<{ id: string; url: string }>("/api/billing/packs/checkout", {
        pack: pack.id,
        successUrl: `${back}?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
        cancelUrl: `${back}?checkout=cancelled`,
      });
      location.assign(s.url);
    } catch (e) {
      setBuyError(e);
      setBuying("");
    }
  };
  const params = new URLSearchParams(location.search);
  const outcome = params.get("checkout");
  const sessionId = params.get("session_id") ?? "";
  // Back from a paid checkout: the pack is granted by a workflow the
  // provider's webhook starts, so watch the ledger until it shows.
  const [credited, setCredited] = useState(false);
  useEffect(() => {
    if (outcome !== "success" || !sessionId) return;
    let live = true;
    let timer: number | undefined;
    const check = async (left: number) => {
      try {
        const r = await get<{ entries: Entry[] }>("/api/account/ledger" + qs({ type: "pack", limit: 20 }));
        if (!live) return;
        if (r.entries.some((e) => e.reference?.includes(sessionId))) {
          setCredited(true);
          balance.reload();
          ledger.reload();
          return;
        }
      } catch {
        // try again below
      }
      if (live && left > 0) timer = window.setTimeout(() => check(left - 1), 1000);
    };
    check(60);
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [outcome, sessionId]);

  return (
    <Page title="Credits">
      {outcome === "success" && (
        <p role="status" className="ok">
          {credited
            ? "Payment received: the pack is credited to your balance."
            : "Payment received: the pack is credited as soon as the payment provider confirms it…"}
        </p>
      )}
      {outcome === "cancelled" && <p role="status">Checkout cancelled; nothing was charged.</p>}
      <section aria-labelledby="balance-h" className="card">
        <h2 id="balance-h">Balance</h2>
        <ErrorNote error={balance.error} />
        <p className="big" data-testid="balance">
          {balance.data ? `${usd(balance.data.balanceUsd)} USD` : "…"}
        </p>
        <button type="button" onClick={() => (balance.reload(), ledger.reload())}>
          Refresh
        </button>
      </section>

      <section aria-labelledby="packs-h" className="card">
        <h2 id="packs-h">Buy a credit pack</h2>
        {packs.data?.testMode && (
          <p className="note">
            <strong>Test mode:</strong> checkout is the built-in local payment page; no card is charged.
          </p>
        )}
        <ErrorNote error={packs.error || buyError} />
        <ul className="packs">
          {packs.data?.packs.map((p) => (
            <li key={p.id}>
              <p className="big">{usd(p.price)} USD</p>
              <p>
                {usd(p.credit)} USD of credit{p.credit > p.price ? ` (${usd(p.credit - p.price)} bonus)` : ""}
              </p>
              <button type="button" className="primary" disabled={buying !== ""} onClick={() => buy(p)}>
                Buy the {usd(p.price)} USD pack
              </button>
            </li>
          ))}
        </ul>
      </section>

      <section aria-labelledby="ledger-h" className="card">
        <h2 id="ledger-h">Ledger</h2>
        <FilterForm
          card={false}
          onApply={() => {
            setFilter({ types: types.join(","), from, to });
            ledger.restart();
          }}
        >
          <fieldset>
            <legend>Types</legend>
            {kinds.map((k) => (
              <label key={k} className="inline">
                <input
                  type="checkbox"
                  checked={types.includes(k)}
                  onChange={(e) => setTypes(e.target.checked ? [...types, k] : types.filter((t) => t !== k))}
                />
                {k}
              </label>
            ))}
          </fieldset>
          <label>
            From
            <input type="date" value={from} onChange={(e) => setFrom(e.target.value)} />
          </label>
          <label>
            To
            <input type="date" value={to} onChange={(e) => setTo(e.target.value)} />
          </label>
        </FilterForm>
        <ErrorNote error={ledger.error} />
        <DataTable
          caption="Ledger entries, newest first"
          rows={ledger.data?.entries}
          rowKey={(e) => e.id}
          empty="No entries."
          columns={[
            { header: "When", cell: (e) => when(e.createdAt) },
            { header: "Type", cell: (e) => e.type },
            {
              header: "Amount (USD)",
              num: true,
              className: (e) => (e.amount < 0 ? "neg" : "pos"),
              cell: (e) => (e.amount > 0 ? "+" : "") + usd(e.amount),
            },
            { header: "Description", cell: (e) => e.description },
            { header: "Reference", className: () => "mono", cell: (e) => e.reference },
          ]}
        />
        <Pager list={ledger} />
      </section>
    </Page>
  );
}
