#!/usr/bin/env bash
# Regenerates the Groth16 fixtures (vk.json, proof.json, public.json) from a
# tiny circuit (c = a*b, c and b public) with circom2 0.2.23 and snarkjs
# 0.7.6 from npm. Everything after the install runs offline: the powers of
# tau ceremony is a local one of size 2^4.
#   second proof (proof2.json, public2.json): same key, other witness, so a
#   test can swap public signals between two valid proofs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm install --silent --no-audit --no-fund snarkjs@0.7.6 circom2@0.2.23 >/dev/null
cat > mul.circom <<'C'
pragma circom 2.0.0;
template Mul() {
    signal input a;
    signal input b;
    signal output c;
    c <== a * b;
}
component main {public [b]} = Mul();
C
sj=node_modules/.bin/snarkjs
npx circom2 mul.circom --r1cs --wasm --sym >/dev/null
$sj powersoftau new bn128 4 pot0.ptau >/dev/null
$sj powersoftau contribute pot0.ptau pot1.ptau --name=fixture -e="conduit fixture entropy" >/dev/null
$sj powersoftau prepare phase2 pot1.ptau pot.ptau >/dev/null
$sj groth16 setup mul.r1cs pot.ptau mul0.zkey >/dev/null
$sj zkey contribute mul0.zkey mul.zkey --name=fixture -e="conduit zkey entropy" >/dev/null
$sj zkey export verificationkey mul.zkey vk.json >/dev/null
echo '{"a": 3, "b": 11}' > in1.json
echo '{"a": 7, "b": 5}' > in2.json
$sj wtns calculate mul_js/mul.wasm in1.json w1.wtns
$sj wtns calculate mul_js/mul.wasm in2.json w2.wtns
$sj groth16 prove mul.zkey w1.wtns proof.json public.json
$sj groth16 prove mul.zkey w2.wtns proof2.json public2.json
$sj groth16 verify vk.json public.json proof.json
$sj groth16 verify vk.json public2.json proof2.json
cp vk.json proof.json public.json proof2.json public2.json "$here/"
echo "fixtures rebuilt in $here"
