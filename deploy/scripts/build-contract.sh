#!/usr/bin/env bash
# Rebuilds the local EIP-3009 token (internal/x402/evmchain/LocalUSD.{abi,bin})
# and the proof aggregation contract (internal/zkagg) from their Solidity source with solcjs 0.8.26 from the npm registry.
set -euo pipefail
cd "$(dirname "$0")/../../internal/x402/evmchain"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm install --silent --no-audit --no-fund solc@0.8.26 >/dev/null)
"$work/node_modules/.bin/solcjs" --optimize --bin --abi -o "$work/out" contracts/LocalUSD.sol
cp "$work/out/contracts_LocalUSD_sol_LocalUSD.abi" LocalUSD.abi
cp "$work/out/contracts_LocalUSD_sol_LocalUSD.bin" LocalUSD.bin
echo "rebuilt LocalUSD.abi and LocalUSD.bin"

# The proof registry of the zkVerify relay and KYC proofs
# (internal/zkverify/registry/ProofRegistry.{abi,bin}).
cd ../../zkverify/registry
"$work/node_modules/.bin/solcjs" --optimize --bin --abi -o "$work/out" contracts/ProofRegistry.sol
cp "$work/out/contracts_ProofRegistry_sol_ProofRegistry.abi" ProofRegistry.abi
cp "$work/out/contracts_ProofRegistry_sol_ProofRegistry.bin" ProofRegistry.bin
echo "rebuilt ProofRegistry.abi and ProofRegistry.bin"
# The proof aggregation contract (internal/zkagg/ZKAggregation.{abi,bin}).
(cd ../../zkagg && "$work/node_modules/.bin/solcjs" --optimize --bin --abi -o "$work/zkagg" contracts/ZKAggregation.sol && cp "$work/zkagg/contracts_ZKAggregation_sol_ZKAggregation.abi" ZKAggregation.abi && cp "$work/zkagg/contracts_ZKAggregation_sol_ZKAggregation.bin" ZKAggregation.bin)
echo "rebuilt ZKAggregation.abi and ZKAggregation.bin"
