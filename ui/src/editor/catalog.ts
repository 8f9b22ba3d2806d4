// The catalog of what model and generation nodes may use (GET /api/catalog):
// text models with their token prices and the pay-per-call menus of the
// media kinds. Read once per page load and shared by every picker.
import { useEffect, useState } from "react";
import { get, usd } from "../api";

export type CatalogModel = { id: string; provider: string; promptPer1kUsd: number; completionPer1kUsd: number; contextTokens?: number };
export type MenuPrice = { seconds: number; priceUsd: number };
export type MenuModel = { id: string; label?: string; default?: boolean; note?: string; firstFrame?: boolean; prices?: MenuPrice[] };
export type MenuVoice = { id: string; description?: string; language?: string; default?: boolean; priceMultiplier?: number };
export type Menu = {
  pricing?: string;
  models?: MenuModel[];
  voices?: MenuVoice[];
  limits?: { maxTextChars?: number; maxPromptChars?: number; seconds?: number[]; aspectRatio?: string[]; model?: string[] };
};
export type Catalog = { models: CatalogModel[]; media: Record<string, Menu> };

let cached: Promise<Catalog> | null = null;

export function loadCatalog(): Promise<Catalog> {
  if (!cached) {
    cached = get<Catalog>("/api/catalog").catch((e) => {
      cached = null; // a failed load is tried again by the next picker
      throw e;
    });
  }
  return cached;
}

export function useCatalog(): { catalog?: Catalog; error?: unknown } {
  const [state, setState] = useState<{ catalog?: Catalog; error?: unknown }>({});
  useEffect(() => {
    let live = true;
    loadCatalog().then(
      (catalog) => live && setState({ catalog }),
      (error) => live && setState({ error }),
    );
    return () => {
      live = false;
    };
  }, []);
  return state;
}

export const modelLabel = (m: CatalogModel) => `${m.id} — ${usd(m.promptPer1kUsd)} / ${usd(m.completionPer1kUsd)} USD per 1k tokens (prompt / completion)`;

// menuModel is the model a generation node renders with: its own, or the
// menu's default.
export function menuModel(menu: Menu | undefined, id: string | undefined): MenuModel | undefined {
  const ms = menu?.models ?? [];
  return ms.find((m) => m.id === id) ?? ms.find((m) => m.default) ?? ms[0];
}

// priceFor is the menu price of a length on a model (music, video).
export function priceFor(menu: Menu | undefined, model: string | undefined, seconds: number | undefined): MenuPrice | undefined {
  const m = menuModel(menu, model);
  const ps = m?.prices ?? [];
  return seconds ? ps.find((p) => p.seconds === seconds) : ps[0];
}
