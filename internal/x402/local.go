package x402

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/gagliardetto/solana-go"
)

// EVMLedger is the chain the local facilitator settles on.
type EVMLedger interface {
	BalanceOf(ctx context.Context, who common.Address) (*big.Int, error)
	AuthorizationUsed(ctx context.Context, from common.Address, nonce [32]byte) (bool, error)
	TransferWithAuthorization(ctx context.Context, from, to common.Address, value, validAfter, validBefore *big.Int, nonce [32]byte, sig []byte) (common.Hash, error)
	// AuthorizationTransfer finds the transaction that spent from's nonce
	// and the transfer it made.
	AuthorizationTransfer(ctx context.Context, from common.Address, nonce [32]byte) (tx common.Hash, to common.Address, value *big.Int, found bool, err error)
}

// SVMLedger is the Solana token ledger the local facilitator settles on.
type SVMLedger interface {
	Balance(ctx context.Context, mint, owner string) (uint64, error)
	// Transfer moves tokens once per transaction signature and keeps the
	// signed transaction (wire bytes); it reports ErrSVMDuplicate and
	// ErrSVMInsufficientFunds.
	Transfer(ctx context.Context, signature, mint, from, to string, amount uint64, tx []byte) error
	// Settled reports whether the transaction with this signature was
	// settled.
	Settled(ctx context.Context, signature string) (bool, error)
}

// Errors an SVMLedger reports.
var (
	ErrSVMDuplicate         = errors.New("transaction already settled")
	ErrSVMInsufficientFunds = errors.New("insufficient funds")
)

// LocalFacilitator verifies payments itself and settles them on the
// embedded networks. It does everything a hosted facilitator does: real
// signature checks, real chain state, real transactions.
type LocalFacilitator struct {
	EVMNetwork string
	EVM        EVMLedger
	// SVMNetwork is the Solana network it settles, with its fee payer.
	SVMNetwork  string
	SVM         SVMLedger
	SVMFeePayer solana.PrivateKey
	// SVMClock issues the network's blockhashes; with it, a transaction
	// whose blockhash is unknown or expired is refused, as a validator
	// refuses it. Nil accepts any blockhash.
	SVMClock *SVMClock
	Now      func() time.Time
}

func (f *LocalFacilitator) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Supported lists the networks this facilitator settles.
func (f *LocalFacilitator) Supported(context.Context) (Supported, error) {
	s := Supported{Extensions: []string{}, Signers: map[string][]string{}}
	if f.EVM != nil {
		s.Kinds = append(s.Kinds, SupportedKind{X402Version: Version, Scheme: SchemeExact, Network: f.EVMNetwork})
	}
	if f.SVM != nil {
		s.Kinds = append(s.Kinds, SupportedKind{X402Version: Version, Scheme: SchemeExact, Network: f.SVMNetwork,
			Extra: map[string]any{"feePayer": f.SVMFeePayer.PublicKey().String()}})
	}
	return s, nil
}

// Verify checks the payment completely, chain state included.
func (f *LocalFacilitator) Verify(ctx context.Context, p PaymentPayload, req PaymentRequirements) (VerifyResponse, error) {
	if f.SVM != nil && req.Network == f.SVMNetwork {
		t, err := f.verifySVM(ctx, p, req)
		return verifyResponse(t.Authority.String(), err)
	}
	_, payer, err := f.verifyEVM(ctx, p, req)
	return verifyResponse(payer.Hex(), err)
}

// Settle verifies, then settles: transferWithAuthorization on the EVM
// network, or the fee payer's co-signature and a ledger transfer on the
// Solana network.
func (f *LocalFacilitator) Settle(ctx context.Context, p PaymentPayload, req PaymentRequirements) (SettleResponse, error) {
	if f.SVM != nil && req.Network == f.SVMNetwork {
		return f.settleSVM(ctx, p, req)
	}
	ep, payer, err := f.verifyEVM(ctx, p, req)
	if err != nil {
		return refusedSettle(payer.Hex(), req.Network, err)
	}
	a := ep.Authorization
	value, _ := new(big.Int).SetString(a.Value, 10)
	va, _ := new(big.Int).SetString(a.ValidAfter, 10)
	vb, _ := new(big.Int).SetString(a.ValidBefore, 10)
	nonce := [32]byte(hexutil.MustDecode(a.Nonce))
	sig := hexutil.MustDecode(ep.Signature)
	tx, err := f.EVM.TransferWithAuthorization(ctx, payer, common.HexToAddress(a.To), value, va, vb, nonce, sig)
	if err != nil {
		return SettleResponse{Success: false, ErrorReason: ReasonTransactionFailed, ErrorMessage: "invalid_payload: " + err.Error(), Payer: payer.Hex(), Network: req.Network}, nil
	}
	return SettleResponse{Success: true, Transaction: tx.Hex(), Network: req.Network, Payer: payer.Hex(), Amount: a.Value}, nil
}

// FindSettlement looks the payment up on the chain it would have settled
// on. EVM: the transaction that spent the authorization's nonce, when it
// moved exactly the authorized value to the payee. Solana: the fee payer's
// signature over the payment's message is deterministic (Ed25519), so it
// names the transaction this facilitator would have sent.
func (f *LocalFacilitator) FindSettlement(ctx context.Context, p PaymentPayload, req PaymentRequirements) (SettleResponse, bool, error) {
	if f.SVM != nil && req.Network == f.SVMNetwork {
		t, err := VerifySVM(p, req, f.SVMFeePayer.PublicKey())
		if err != nil {
			return SettleResponse{}, false, nil
		}
		msg, err := t.Tx.Message.MarshalBinary()
		if err != nil {
			return SettleResponse{}, false, err
		}
		sig, err := f.SVMFeePayer.Sign(msg)
		if err != nil {
			return SettleResponse{}, false, err
		}
		ok, err := f.SVM.Settled(ctx, sig.String())
		if err != nil || !ok {
			return SettleResponse{}, false, err
		}
		return SettleResponse{Success: true, Transaction: sig.String(), Network: req.Network, Payer: t.Authority.String(), Amount: req.Amount}, true, nil
	}
	if f.EVM == nil || req.Network != f.EVMNetwork {
		return SettleResponse{}, false, nil
	}
	ep, payer, err := checkEVM(p, req)
	if err != nil {
		return SettleResponse{}, false, nil
	}
	tx, to, value, found, err := f.EVM.AuthorizationTransfer(ctx, payer, [32]byte(hexutil.MustDecode(ep.Authorization.Nonce)))
	if err != nil || !found {
		return SettleResponse{}, false, err
	}
	if to != common.HexToAddress(req.PayTo) || value.String() != req.Amount {
		return SettleResponse{}, false, nil // the nonce paid something else
	}
	return SettleResponse{Success: true, Transaction: tx.Hex(), Network: req.Network, Payer: payer.Hex(), Amount: req.Amount}, true, nil
}

// verifyEVM adds the chain checks to VerifyEVM: nonce unused, balance.
func (f *LocalFacilitator) verifyEVM(ctx context.Context, p PaymentPayload, req PaymentRequirements) (EVMPayload, common.Address, error) {
	if f.EVM == nil || req.Network != f.EVMNetwork {
		return EVMPayload{}, common.Address{}, refuse("unsupported_network", "this facilitator does not settle on %s", req.Network)
	}
	ep, payer, err := VerifyEVM(p, req, f.now())
	if err != nil {
		return ep, payer, err
	}
	nonce := [32]byte(hexutil.MustDecode(ep.Authorization.Nonce))
	used, err := f.EVM.AuthorizationUsed(ctx, payer, nonce)
	if err != nil {
		return ep, payer, err
	}
	if used {
		return ep, payer, refuse(ReasonNonceUsed, "authorization nonce already submitted")
	}
	bal, err := f.EVM.BalanceOf(ctx, payer)
	if err != nil {
		return ep, payer, err
	}
	value, _ := new(big.Int).SetString(ep.Authorization.Value, 10)
	if bal.Cmp(value) < 0 {
		return ep, payer, refuse(ReasonInsufficientFunds, "execution reverted: transfer amount exceeds balance (balance %s, value %s)", bal, value)
	}
	return ep, payer, nil
}

// verifySVM adds the ledger check to VerifySVM: the payer can cover it.
func (f *LocalFacilitator) verifySVM(ctx context.Context, p PaymentPayload, req PaymentRequirements) (SVMTransfer, error) {
	t, err := VerifySVM(p, req, f.SVMFeePayer.PublicKey())
	if err != nil {
		return t, err
	}
	if f.SVMClock != nil {
		if _, ok := f.SVMClock.Valid(t.Tx.Message.RecentBlockhash); !ok {
			// What simulation reports for such a transaction.
			return t, refuse(ReasonSVMSimulation, "Transaction simulation failed: Blockhash not found")
		}
	}
	bal, err := f.SVM.Balance(ctx, req.Asset, t.Authority.String())
	if err != nil {
		return t, err
	}
	if bal < t.Amount {
		return t, refuse(ReasonSVMInsufficient, "execution reverted: insufficient funds (balance %d, amount %d)", bal, t.Amount)
	}
	return t, nil
}

// settleSVM co-signs as fee payer — the fee payer's signature is the
// transaction id — and moves the tokens on the ledger once.
func (f *LocalFacilitator) settleSVM(ctx context.Context, p PaymentPayload, req PaymentRequirements) (SettleResponse, error) {
	t, err := f.verifySVM(ctx, p, req)
	if err != nil {
		return refusedSettle(t.Authority.String(), req.Network, err)
	}
	msg, err := t.Tx.Message.MarshalBinary()
	if err != nil {
		return SettleResponse{}, err
	}
	sig, err := f.SVMFeePayer.Sign(msg)
	if err != nil {
		return SettleResponse{}, err
	}
	t.Tx.Signatures[0] = sig
	wire, err := t.Tx.MarshalBinary()
	if err != nil {
		return SettleResponse{}, err
	}
	err = f.SVM.Transfer(ctx, sig.String(), req.Asset, t.Authority.String(), req.PayTo, t.Amount, wire)
	switch {
	case errors.Is(err, ErrSVMDuplicate):
		return refusedSettle(t.Authority.String(), req.Network, refuse(ReasonSVMDuplicate, "transaction already settled"))
	case errors.Is(err, ErrSVMInsufficientFunds):
		return refusedSettle(t.Authority.String(), req.Network, refuse(ReasonSVMInsufficient, "execution reverted: insufficient funds"))
	case err != nil:
		return SettleResponse{}, err
	}
	return SettleResponse{Success: true, Transaction: sig.String(), Network: req.Network, Payer: t.Authority.String(), Amount: req.Amount}, nil
}

func refusedSettle(payer, network string, err error) (SettleResponse, error) {
	v, err := verifyResponse(payer, err)
	return SettleResponse{Success: false, ErrorReason: v.InvalidReason, ErrorMessage: v.InvalidMessage, Payer: v.Payer, Network: network}, err
}

// verifyResponse turns a refusal into the protocol's answer; other errors
// stay errors (the chain could not be asked).
func verifyResponse(payer string, err error) (VerifyResponse, error) {
	v := VerifyResponse{IsValid: err == nil}
	if payer != (common.Address{}).Hex() && payer != (solana.PublicKey{}).String() {
		v.Payer = payer
	}
	var ref *Refusal
	if errors.As(err, &ref) {
		v.InvalidReason, v.InvalidMessage = ref.Reason, "invalid_payload: "+strings.TrimPrefix(ref.Msg, "invalid_payload: ")
		return v, nil
	}
	return v, err
}
