import { useState, type FormEvent, type ReactNode } from "react";
import { get, qs } from "./api";
import { useLoad } from "./ui";

// The shared pieces of every list page: one paged-list hook following the
// API's paging convention (docs/paging.md: limit and after in, nextAfter
// out), its pager, a filter form and a table.

type Params = Record<string, string | number | undefined | null>;

// usePagedList reads path a page at a time. It keeps the trail of pages
// read so "Newer" goes back without the API paging backwards; new params
// start again at the newest page, and restart (applying filters, even
// unchanged ones) reads the newest page afresh.
export function usePagedList<T>(path: string, params: Params, limit = 25) {
  const key = JSON.stringify(params);
  const [trail, setTrail] = useState<{ key: string; afters: string[] }>({ key, afters: [""] });
  const afters = trail.key === key ? trail.afters : [""];
  const after = afters[afters.length - 1];
  const list = useLoad(() => get<T & { nextAfter?: string }>(path + qs({ ...params, limit, after })), [path, key, after]);
  const next = list.data?.nextAfter;
  return {
    ...list,
    hasNewer: afters.length > 1,
    hasOlder: !!next,
    newer: () => setTrail({ key, afters: afters.slice(0, -1) }),
    older: () => next && setTrail({ key, afters: [...afters, next] }),
    restart: () => {
      setTrail({ key, afters: [""] });
      list.reload();
    },
  };
}

export function Pager({ list }: { list: { hasNewer: boolean; hasOlder: boolean; newer: () => void; older: () => void } }) {
  return (
    <div className="pager">
      <button type="button" disabled={!list.hasNewer} onClick={list.newer}>
        Newer
      </button>
      <button type="button" disabled={!list.hasOlder} onClick={list.older}>
        Older
      </button>
    </div>
  );
}

// FilterForm holds a list's filters; they apply on submit (one request
// per decision, not per keystroke). onRefresh adds a Refresh button.
export function FilterForm({ onApply, onRefresh, card = true, children }: { onApply: () => void; onRefresh?: () => void; card?: boolean; children: ReactNode }) {
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply();
  };
  return (
    <form onSubmit={submit} className={card ? "filters card" : "filters"}>
      {children}
      <button type="submit">Apply filters</button>
      {onRefresh && (
        <button type="button" onClick={onRefresh}>
          Refresh
        </button>
      )}
    </form>
  );
}

// SelectFilter is a labelled choice among options; "" is the empty choice,
// shown as anyLabel.
export function SelectFilter({
  label,
  name,
  value,
  onChange,
  options,
  anyLabel,
}: {
  label: string;
  name: string;
  value: string;
  onChange: (v: string) => void;
  options: { value: string; label: string }[];
  anyLabel: string;
}) {
  return (
    <label>
      {label}
      <select name={name} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">{anyLabel}</option>
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </label>
  );
}

export type Column<T> = { header: string; num?: boolean; cell: (row: T) => ReactNode; className?: (row: T) => string };

// DataTable is a captioned table (the caption for screen readers), one
// row per item and a sentence when there are none.
export function DataTable<T>({ caption, columns, rows, rowKey, empty }: { caption: string; columns: Column<T>[]; rows?: T[]; rowKey: (row: T) => string; empty: string }) {
  return (
    <table>
      <caption className="sr-only">{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c.header} scope="col" className={c.num ? "num" : undefined}>
              {c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows?.map((r) => (
          <tr key={rowKey(r)}>
            {columns.map((c) => (
              <td key={c.header} className={[c.num ? "num" : "", c.className?.(r) ?? ""].join(" ").trim() || undefined}>
                {c.cell(r)}
              </td>
            ))}
          </tr>
        ))}
        {rows && rows.length === 0 && (
          <tr>
            <td colSpan={columns.length}>{empty}</td>
          </tr>
        )}
      </tbody>
    </table>
  );
}
