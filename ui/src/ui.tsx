import { useEffect, useRef, useState, type ReactNode } from "react";
import { ApiError } from "./api";

// Page is a page's heading and body; the heading takes focus when the page
// opens, so screen-reader and keyboard users start at the top of the new page.
export function Page({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  const h = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Conduit`;
    h.current?.focus();
  }, [title]);
  return (
    <>
      <div className="page-head">
        <h1 tabIndex={-1} ref={h}>
          {title}
        </h1>
        {actions}
      </div>
      {children}
    </>
  );
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const msg = error instanceof Error ? error.message : String(error);
  const problems = error instanceof ApiError && Array.isArray(error.body?.problems) ? error.body.problems : [];
  return (
    <div role="alert" className="error">
      {msg}
      {problems.length > 0 && (
        <ul>
          {problems.map((p: any, i: number) => (
            <li key={i}>
              {p.node ? `${p.node}${p.field ? "." + p.field : ""}: ` : ""}
              {p.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

// useLoad runs a loader and keeps its result, error and a reload function.
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, n]);
  return { ...state, reload: () => setN((x) => x + 1) };
}

// Status is a status chip. The class is the status in lower case, so the
// enclave API's DEPLOYED finds the same colour family as a run's success.
export function Status({ status }: { status: string }) {
  return <span className={`status status-${String(status).toLowerCase()}`}>{status}</span>;
}

// ConfirmButton asks before it acts: the first press shows what will
// happen and a confirming button (focused) beside Cancel, in the page, so
// keyboard and screen-reader users meet the question where they pressed.
export function ConfirmButton({
  label,
  question,
  confirmLabel,
  onConfirm,
  danger = false,
  disabled = false,
}: {
  label: string;
  question: string;
  confirmLabel: string;
  onConfirm: () => void;
  danger?: boolean;
  disabled?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) yes.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" className={danger ? "danger" : undefined} disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={question}>
      <span>{question}</span>{" "}
      <button
        type="button"
        ref={yes}
        className={danger ? "danger" : "primary"}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirmLabel}
      </button>{" "}
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

// Money shows micro-USD rounded for people (two decimals; two significant
// digits for a fraction of a cent) with the exact amount on hover (and in
// the CSV export).
export function Money({ micros, sign = false }: { micros: number; sign?: boolean }) {
  const exact = `${micros} micro-USD (${(micros / 1e6).toFixed(6)} USD)`;
  return (
    <span className="amount" title={exact} data-micros={micros}>
      {roundUsd(micros, sign)}
    </span>
  );
}

export function roundUsd(micros: number, sign = false): string {
  const usd = micros / 1e6;
  const a = Math.abs(usd);
  let s: string;
  if (a === 0) s = "0.00";
  else if (a >= 0.01) s = a.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  else s = String(Number(a.toPrecision(2))); // a fraction of a cent: two significant digits
  if (s.includes("e")) s = a.toFixed(6);
  const minus = usd < 0 ? "−" : sign && usd > 0 ? "+" : "";
  return minus + s;
}

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
        } catch {
          // Clipboard access can be refused (insecure origin); select
          // the text instead so it can be copied by hand.
          const el = document.createElement("textarea");
          el.value = text;
          document.body.appendChild(el);
          el.select();
          document.execCommand("copy");
          el.remove();
        }
        setDone(true);
        setTimeout(() => setDone(false), 2000);
      }}
    >
      {done ? "Copied" : label}
    </button>
  );
}

export function Live({ children }: { children: ReactNode }) {
  return (
    <p role="status" aria-live="polite" className="live">
      {children}
    </p>
  );
}
