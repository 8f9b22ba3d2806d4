package x402

import (
	"context"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/gagliardetto/solana-go"
)

// Verified is a presented payment whose signature checked out against the
// server's own requirements. Only a Verified payment's payer and id may key
// anything: a workflow id, a database row, a rate-limit counter, a cached
// refusal. Before that they are whatever the sender chose to write.
type Verified struct {
	Network string
	// Payer is the paying wallet as keys spell it (NormalizeAddress).
	Payer string
	// ID is unique to the payment on its network: the EIP-3009 nonce
	// (lower-case hex) or the Solana payer's signature (base58).
	ID string
}

// Authentic says the payer's signature checked out (though the terms may
// not have).
func (v Verified) Authentic() bool { return v.ID != "" }

// VerifySignature checks a payment's signature and terms — scheme, network,
// asset, recipient, exact amount, and for Solana the instruction layout and
// fee payer — against req, without asking any chain. When the signature is
// authentic but the terms differ it returns both the Verified payment and
// the refusal: an authentic payment presented for the wrong purchase is
// told it was already used if it was. It leaves out the validity window:
// the same payment presented again after it expired is still that payment
// (a replay to be answered, not a stranger), and settlement checks time.
func VerifySignature(p PaymentPayload, req PaymentRequirements) (Verified, error) {
	if strings.HasPrefix(req.Network, "solana:") {
		fee, _ := req.Extra["feePayer"].(string)
		feePayer, err := solana.PublicKeyFromBase58(fee)
		if err != nil {
			return Verified{}, refuse(ReasonSVMFeePayer, "the requirements name no fee payer")
		}
		t, err := VerifySVM(p, req, feePayer)
		if t.PayerSignature.IsZero() {
			return Verified{}, err
		}
		return Verified{Network: req.Network, Payer: t.Authority.String(), ID: t.PayerSignature.String()}, err
	}
	ep, from, err := checkEVM(p, req)
	if from == (common.Address{}) {
		return Verified{}, err
	}
	return Verified{Network: req.Network, Payer: NormalizeAddress(req.Network, from.Hex()), ID: strings.ToLower(ep.Authorization.Nonce)}, err
}

// CheckResource refuses a payment that names another resource than the one
// being bought: a payment signed for one paid endpoint does not buy another
// at the same price. A payment naming none (the field is optional in the
// protocol) is bound by the settlement record instead.
func CheckResource(p PaymentPayload, url string) error {
	if p.Resource != nil && p.Resource.URL != url {
		return refuse(ReasonInvalidPayload, "this payment was made for %s, not %s", p.Resource.URL, url)
	}
	return nil
}

// DisplayAddress is how an address is shown in every answer: EIP-55
// checksummed on EVM networks, base58 as is on Solana.
func DisplayAddress(network, addr string) string {
	if strings.HasPrefix(network, "eip155:") && common.IsHexAddress(addr) {
		return common.HexToAddress(addr).Hex()
	}
	return addr
}

// SettlementFinder finds a payment's settlement on its chain. It is how a
// settlement whose answer was lost (a crash, a timeout, a database error
// after the chain accepted it) is reconciled instead of refused as "nonce
// already used".
type SettlementFinder interface {
	// FindSettlement reports the settlement of exactly this payment — the
	// same authorization moving the same amount to the same payee — and
	// false when the chain has none.
	FindSettlement(ctx context.Context, p PaymentPayload, req PaymentRequirements) (SettleResponse, bool, error)
}
