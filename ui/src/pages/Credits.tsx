import { Fragment, useEffect, useState } from "react";
import { get, post, qs, usd, when } from "../api";
import { FilterForm, Pager, usePagedList } from "../list";
import { ErrorNote, Money, Page, useLoad } from "../ui";

// The ledger is read one line per run (GET /api/account/ledger?group=run):
// a run's hold, release and charge are folded by the server into one line
// whose parts can be opened; a line's type is charge (charged), release
// (nothing charged) or hold (not settled yet). What the hold paid for (a
// run, an enclave's uptime, a render) is its reference.
const kinds = ["charge", "release", "hold", "free_grant", "topup", "pack", "grant", "payment", "refund"];

type Entry = {
  id: string;
  type: string;
  amount: number;
  amountMicros: number;
  reference?: string;
  description?: string;
  createdAt: string;
  parts?: Entry[];
};

const label: Record<string, string> = { charge: "charged", release: "not charged", hold: "held" };

// csvField quotes a field when it must (RFC 4180).
function csvField(v: string | number): string {
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

// exportCsv reads every line of the filtered ledger (bounded: at most
// 50 pages of 200) and saves them as CSV with exact amounts.
async function exportCsv(params: Record<string, string>) {
  const rows: string[] = ["id,createdAt,type,amountUsd,amountMicros,reference,description,parts"];
  let after = "";
  for (let page = 0; page < 50; page++) {
    const r = await get<{ entries: Entry[]; nextAfter?: string }>("/api/account/ledger" + qs({ ...params, group: "run", limit: 200, after }));
    for (const e of r.entries) {
      const parts = (e.parts ?? []).map((p) => `${p.type}:${p.amountMicros}`).join(" ");
      rows.push(
        [e.id, e.createdAt, e.type, (e.amountMicros / 1e6).toFixed(6), e.amountMicros, e.reference ?? "", e.description ?? "", parts].map(csvField).join(","),
      );
    }
    if (!r.nextAfter) break;
    after = r.nextAfter;
  }
  const blob = new Blob([rows.join("\r\n") + "\r\n"], { type: "text/csv" });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = `conduit-ledger-${new Date().toISOString().slice(0, 10)}.csv`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  return rows.length - 1;
}
type Pack = { id: string; price: number; credit: number };

// roundBalance rounds a balance down to the cent for reading (54.509952 →
// 54.50): what can be spent, never more.
function roundBalance(n: number) {
  return (Math.floor(n * 100 + 1e-9) / 100).toFixed(2);
}

export function Credits() {
  const balance = useLoad(() => get<{ balanceUsd: number }>("/api/account/balance"), []);
  const packs = useLoad(() => get<{ packs: Pack[]; provider: string; testMode: boolean }>("/api/billing/packs"), []);
  const [types, setTypes] = useState<string[]>([]);
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [filter, setFilter] = useState({ types: "", from: "", to: "" });
  const ledgerParams = {
    type: filter.types,
    from: filter.from ? new Date(filter.from + "T00:00:00").toISOString() : "",
    to: filter.to ? new Date(filter.to + "T23:59:59.999").toISOString() : "",
  };
  const ledger = usePagedList<{ entries: Entry[] }>("/api/account/ledger", { ...ledgerParams, group: "run" });
  const [open, setOpen] = useState<string[]>([]);
  const [exported, setExported] = useState("");
  const [exportError, setExportError] = useState<unknown>(null);
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
          {balance.data ? <span title={`${balance.data.balanceUsd.toFixed(6)} USD exactly`}>{roundBalance(balance.data.balanceUsd)} USD</span> : "…"}
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
        <div className="toolbar-row">
          <button
            type="button"
            onClick={async () => {
              setExportError(null);
              setExported("");
              try {
                const n = await exportCsv(ledgerParams);
                setExported(`Exported ${n} lines as CSV (exact amounts in micro-USD).`);
              } catch (e) {
                setExportError(e);
              }
            }}
          >
            Export CSV
          </button>
          <span role="status" className="hint">
            {exported}
          </span>
        </div>
        <ErrorNote error={ledger.error || exportError} />
        <table data-testid="ledger">
          <caption className="sr-only">Ledger, one line per run, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Type</th>
              <th scope="col" className="num">
                Amount (USD)
              </th>
              <th scope="col">Description</th>
              <th scope="col">Reference</th>
            </tr>
          </thead>
          <tbody>
            {ledger.data?.entries.map((e) => {
              const isOpen = open.includes(e.id);
              return (
                <Fragment key={e.id}>
                  <tr className="ledger-line" data-type={e.type}>
                    <td className="when">{when(e.createdAt)}</td>
                    <td>
                      {e.parts ? (
                        <button
                          type="button"
                          className="linkish"
                          aria-expanded={isOpen}
                          onClick={() => setOpen(isOpen ? open.filter((x) => x !== e.id) : [...open, e.id])}
                        >
                          <span aria-hidden="true">{isOpen ? "▾" : "▸"}</span> {label[e.type] ?? e.type}
                        </button>
                      ) : (
                        e.type
                      )}
                    </td>
                    <td className={`num ${e.amountMicros < 0 ? "neg" : e.amountMicros > 0 ? "pos" : ""}`}>
                      <Money micros={e.amountMicros} sign />
                    </td>
                    <td>{e.description}</td>
                    <td className="mono">{e.reference}</td>
                  </tr>
                  {isOpen &&
                    e.parts?.map((p) => (
                      <tr key={p.id} className="ledger-parts">
                        <td className="when">{when(p.createdAt)}</td>
                        <td>{p.type}</td>
                        <td className={`num ${p.amountMicros < 0 ? "neg" : "pos"}`}>
                          <Money micros={p.amountMicros} sign />
                        </td>
                        <td>{p.description}</td>
                        <td className="mono">entry {p.id}</td>
                      </tr>
                    ))}
                </Fragment>
              );
            })}
            {ledger.data && ledger.data.entries.length === 0 && (
              <tr>
                <td colSpan={5}>No entries.</td>
              </tr>
            )}
          </tbody>
        </table>
        <Pager list={ledger} />
      </section>
    </Page>
  );
}
