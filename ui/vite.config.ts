import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The dashboard is served by the Go frontend under /dashboard/ from files
// embedded in the binary (ui/embed.go). Builds are deterministic (content
// hashes, no timestamps), so CI can rebuild and compare with the committed
// dist/.
export default defineConfig({
  base: "/dashboard/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 1024,
  },
  server: {
    // `npm run dev` proxies the API to a running `conduit dev`.
    proxy: { "/api": "http://127.0.0.1:8080" },
  },
});
