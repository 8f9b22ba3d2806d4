package x402

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gagliardetto/solana-go"
	computebudget "github.com/gagliardetto/solana-go/programs/compute-budget"
	"github.com/gagliardetto/solana-go/programs/memo"
	"github.com/gagliardetto/solana-go/programs/token"
)

// SVMPayload is the exact scheme's Solana payload: a partially signed
// transaction, base64.
type SVMPayload struct {
	Transaction string `json:"transaction"`
}

// Solana refusal codes (as the official facilitators name them).
const (
	ReasonSVMDecode        = "invalid_exact_svm_payload_transaction_could_not_be_decoded"
	ReasonSVMFeePayer      = "fee_payer_not_managed_by_facilitator"
	ReasonSVMInstructions  = "invalid_exact_svm_payload_transaction_instructions_length"
	ReasonSVMComputeLimit  = "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction"
	ReasonSVMComputePrice  = "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high"
	ReasonSVMNoTransfer    = "invalid_exact_svm_payload_no_transfer_instruction"
	ReasonSVMMint          = "invalid_exact_svm_payload_mint_mismatch"
	ReasonSVMRecipient     = "invalid_exact_svm_payload_recipient_mismatch"
	ReasonSVMAmount        = "invalid_exact_svm_payload_amount_mismatch"
	ReasonSVMFeePayerFunds = "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds"
	ReasonSVMUnknownIx     = "invalid_exact_svm_payload_unknown_instruction"
	ReasonSVMSignature     = "invalid_exact_svm_payload_signature"
	ReasonSVMInsufficient  = "insufficient_funds"
	ReasonSVMDuplicate     = "duplicate_settlement"
	ReasonSVMSimulation    = "transaction_simulation_failed"
)

// maxComputeUnitPrice bounds the priority fee the facilitator pays
// (5 lamports per compute unit, in microlamports).
const maxComputeUnitPrice = 5_000_000

// SVMTransfer is a checked Solana payment.
type SVMTransfer struct {
	Tx          *solana.Transaction
	Authority   solana.PublicKey // the payer
	Source      solana.PublicKey
	Destination solana.PublicKey
	Mint        solana.PublicKey
	Amount      uint64
	// PayerSignature is the authority's signature: unique per transaction,
	// so it names the payment before the fee payer co-signs.
	PayerSignature solana.Signature
}

// VerifySVM checks an exact-scheme Solana payment against the server's
// requirements: the fee payer is the facilitator's and moves no funds, the
// instruction layout (compute limit, bounded compute price, TransferChecked
// from the payer's token account, then only memos) and the payer's
// signature over the message (authenticSVM), then the terms: the mint, the
// destination (the payee's associated token account) and the exact amount.
// A terms error after an authentic signature comes with the transfer.
func VerifySVM(p PaymentPayload, req PaymentRequirements, feePayer solana.PublicKey) (SVMTransfer, error) {
	if p.Accepted.Scheme != SchemeExact || req.Scheme != SchemeExact {
		return SVMTransfer{}, refuse("unsupported_scheme", "scheme must be exact")
	}
	if p.Accepted.Network != req.Network {
		return SVMTransfer{}, refuse("network_mismatch", "payment is for %s, requirements for %s", p.Accepted.Network, req.Network)
	}
	t, err := authenticSVM(p, feePayer)
	if err != nil {
		return SVMTransfer{}, err
	}
	mint, err := solana.PublicKeyFromBase58(req.Asset)
	if err != nil || !t.Mint.Equals(mint) {
		return t, refuse(ReasonSVMMint, "transfer mint %s is not %s", t.Mint, req.Asset)
	}
	payTo, err := solana.PublicKeyFromBase58(req.PayTo)
	if err != nil {
		return t, refuse(ReasonSVMRecipient, "requirements payTo is not a base58 address")
	}
	if dest, _, err := solana.FindAssociatedTokenAddress(payTo, mint); err != nil || !t.Destination.Equals(dest) {
		return t, refuse(ReasonSVMRecipient, "transfer destination %s is not the payee's token account", t.Destination)
	}
	if strconv.FormatUint(t.Amount, 10) != req.Amount {
		return t, refuse(ReasonSVMAmount, "transfer amount %d, price %s", t.Amount, req.Amount)
	}
	return t, nil
}

// authenticSVM decodes the transaction, checks its layout and that the
// transfer's authority signed it.
func authenticSVM(p PaymentPayload, feePayer solana.PublicKey) (SVMTransfer, error) {
	var sp SVMPayload
	if err := json.Unmarshal(p.Payload, &sp); err != nil || sp.Transaction == "" {
		return SVMTransfer{}, refuse(ReasonSVMDecode, "payload must carry a base64 transaction")
	}
	tx, err := solana.TransactionFromBase64(sp.Transaction)
	if err != nil {
		return SVMTransfer{}, refuse(ReasonSVMDecode, "%v", err)
	}
	m := &tx.Message
	if len(m.AccountKeys) == 0 || !m.AccountKeys[0].Equals(feePayer) {
		return SVMTransfer{}, refuse(ReasonSVMFeePayer, "the transaction's fee payer must be %s", feePayer)
	}
	ixs := m.Instructions
	if len(ixs) < 3 || len(ixs) > 6 {
		return SVMTransfer{}, refuse(ReasonSVMInstructions, "expected 3 to 6 instructions, got %d", len(ixs))
	}
	program := func(i int) solana.PublicKey {
		pk, err := m.Program(ixs[i].ProgramIDIndex)
		if err != nil {
			return solana.PublicKey{}
		}
		return pk
	}
	if !program(0).Equals(solana.ComputeBudget) || len(ixs[0].Data) != 5 || ixs[0].Data[0] != 2 {
		return SVMTransfer{}, refuse(ReasonSVMComputeLimit, "the first instruction must set the compute unit limit")
	}
	if !program(1).Equals(solana.ComputeBudget) || len(ixs[1].Data) != 9 || ixs[1].Data[0] != 3 {
		return SVMTransfer{}, refuse(ReasonSVMComputePrice, "the second instruction must set the compute unit price")
	}
	if price := binary.LittleEndian.Uint64(ixs[1].Data[1:]); price > maxComputeUnitPrice {
		return SVMTransfer{}, refuse(ReasonSVMComputePrice, "compute unit price %d exceeds %d microlamports", price, maxComputeUnitPrice)
	}
	tr := ixs[2]
	if !program(2).Equals(solana.TokenProgramID) || len(tr.Data) != 10 || tr.Data[0] != token.Instruction_TransferChecked || len(tr.Accounts) < 4 {
		return SVMTransfer{}, refuse(ReasonSVMNoTransfer, "the third instruction must be a token TransferChecked")
	}
	for i := 3; i < len(ixs); i++ {
		if !program(i).Equals(solana.MemoProgramID) {
			return SVMTransfer{}, refuse(ReasonSVMUnknownIx, "instruction %d is neither a memo nor expected", i+1)
		}
	}
	acct := func(i int) solana.PublicKey { pk, _ := m.Account(tr.Accounts[i]); return pk }
	t := SVMTransfer{Tx: tx, Source: acct(0), Mint: acct(1), Destination: acct(2), Authority: acct(3), Amount: binary.LittleEndian.Uint64(tr.Data[1:9])}
	for _, idx := range tr.Accounts {
		if pk, _ := m.Account(idx); pk.Equals(feePayer) {
			return SVMTransfer{}, refuse(ReasonSVMFeePayerFunds, "the fee payer must not take part in the transfer")
		}
	}
	if wantSource, _, err := solana.FindAssociatedTokenAddress(t.Authority, t.Mint); err != nil || !t.Source.Equals(wantSource) {
		return SVMTransfer{}, refuse(ReasonSVMNoTransfer, "transfer source is not the payer's token account")
	}
	msg, err := m.MarshalBinary()
	if err != nil {
		return SVMTransfer{}, refuse(ReasonSVMDecode, "%v", err)
	}
	signers := m.Signers()
	if len(tx.Signatures) != len(signers) {
		return SVMTransfer{}, refuse(ReasonSVMSignature, "expected %d signature slots, got %d", len(signers), len(tx.Signatures))
	}
	for i, s := range signers {
		if s.Equals(t.Authority) {
			if !tx.Signatures[i].Verify(s, msg) {
				return SVMTransfer{}, refuse(ReasonSVMSignature, "the payer's signature does not verify")
			}
			t.PayerSignature = tx.Signatures[i]
			return t, nil
		}
	}
	return SVMTransfer{}, refuse(ReasonSVMSignature, "the transfer authority did not sign")
}

// SignSVM builds and partially signs a payment the way the official
// Solana client does (compute limit 20,000, price 1 microlamport,
// TransferChecked between associated token accounts, a random memo; the
// fee payer's slot left empty). Used by the dev payer and tests.
func SignSVM(req PaymentRequirements, payer solana.PrivateKey, blockhash solana.Hash) (PaymentPayload, error) {
	feePayerStr, _ := req.Extra["feePayer"].(string)
	feePayer, err := solana.PublicKeyFromBase58(feePayerStr)
	if err != nil {
		return PaymentPayload{}, fmt.Errorf("requirements.extra.feePayer is required: %w", err)
	}
	mint, err := solana.PublicKeyFromBase58(req.Asset)
	if err != nil {
		return PaymentPayload{}, err
	}
	payTo, err := solana.PublicKeyFromBase58(req.PayTo)
	if err != nil {
		return PaymentPayload{}, err
	}
	amount, err := strconv.ParseUint(req.Amount, 10, 64)
	if err != nil {
		return PaymentPayload{}, err
	}
	owner := payer.PublicKey()
	src, _, err := solana.FindAssociatedTokenAddress(owner, mint)
	if err != nil {
		return PaymentPayload{}, err
	}
	dst, _, err := solana.FindAssociatedTokenAddress(payTo, mint)
	if err != nil {
		return PaymentPayload{}, err
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	tx, err := solana.NewTransaction([]solana.Instruction{
		computebudget.NewSetComputeUnitLimitInstruction(20_000).Build(),
		computebudget.NewSetComputeUnitPriceInstruction(1).Build(),
		token.NewTransferCheckedInstruction(amount, 6, src, mint, dst, owner, nil).Build(),
		memo.NewMemoInstruction([]byte(hex.EncodeToString(nonce)), owner).Build(),
	}, blockhash, solana.TransactionPayer(feePayer))
	if err != nil {
		return PaymentPayload{}, err
	}
	if _, err := tx.PartialSign(func(k solana.PublicKey) *solana.PrivateKey {
		if k.Equals(owner) {
			return &payer
		}
		return nil
	}); err != nil {
		return PaymentPayload{}, err
	}
	b64, err := tx.ToBase64()
	if err != nil {
		return PaymentPayload{}, err
	}
	payload, _ := json.Marshal(SVMPayload{Transaction: b64})
	return PaymentPayload{X402Version: Version, Accepted: req, Payload: payload}, nil
}

// NormalizeAddress is how a wallet address is keyed on its network: EVM
// addresses lower-cased, base58 (case-sensitive) kept as is. Keys are never
// shown: answers spell addresses with DisplayAddress.
func NormalizeAddress(network, addr string) string {
	if strings.HasPrefix(network, "eip155:") {
		return strings.ToLower(addr)
	}
	return addr
}
