package x402

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// Authorization is an EIP-3009 TransferWithAuthorization, numbers as
// decimal strings as the clients send them.
type Authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
}

// EVMPayload is the exact scheme's EVM payload.
type EVMPayload struct {
	Signature     string        `json:"signature"`
	Authorization Authorization `json:"authorization"`
}

// Reasons a payment is refused (the codes the official facilitators use).
const (
	ReasonInvalidScheme      = "invalid_exact_evm_scheme"
	ReasonNetworkMismatch    = "invalid_exact_evm_network_mismatch"
	ReasonMissingDomain      = "invalid_exact_evm_missing_eip712_domain"
	ReasonRecipientMismatch  = "invalid_exact_evm_recipient_mismatch"
	ReasonSignature          = "invalid_exact_evm_signature"
	ReasonValidBefore        = "invalid_exact_evm_payload_authorization_valid_before"
	ReasonValidAfter         = "invalid_exact_evm_payload_authorization_valid_after"
	ReasonValueMismatch      = "invalid_exact_evm_payload_authorization_value_mismatch"
	ReasonInvalidPayload     = "invalid_exact_evm_payload"
	ReasonNonceUsed          = "invalid_exact_evm_nonce_already_used"
	ReasonInsufficientFunds  = "invalid_exact_evm_insufficient_balance"
	ReasonTransactionFailed  = "invalid_exact_evm_transaction_failed"
	validBeforeBufferSeconds = 6
)

// Refusal is a payment the facilitator declines, with its reason code.
type Refusal struct {
	Reason string
	Msg    string
}

func (r *Refusal) Error() string {
	if r.Msg == "" {
		return r.Reason
	}
	return r.Reason + ": " + r.Msg
}

func refuse(reason, format string, args ...any) error {
	return &Refusal{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// ChainID reads N from "eip155:N".
func ChainID(network string) (*big.Int, error) {
	id, ok := strings.CutPrefix(network, "eip155:")
	n, okN := new(big.Int).SetString(id, 10)
	if !ok || !okN || n.Sign() <= 0 {
		return nil, fmt.Errorf("%q is not an eip155 network", network)
	}
	return n, nil
}

// TransferTypedData is the EIP-712 message a payer signs, with the domain
// built from the server's requirements (never the client's copy).
func TransferTypedData(req PaymentRequirements, auth Authorization) (apitypes.TypedData, error) {
	chainID, err := ChainID(req.Network)
	if err != nil {
		return apitypes.TypedData{}, err
	}
	name, _ := req.Extra["name"].(string)
	version, _ := req.Extra["version"].(string)
	if name == "" || version == "" {
		return apitypes.TypedData{}, refuse(ReasonMissingDomain, "requirements.extra must carry the token's EIP-712 name and version")
	}
	return apitypes.TypedData{
		Types: apitypes.Types{
			"EIP712Domain": {
				{Name: "name", Type: "string"}, {Name: "version", Type: "string"},
				{Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"},
			},
			"TransferWithAuthorization": {
				{Name: "from", Type: "address"}, {Name: "to", Type: "address"}, {Name: "value", Type: "uint256"},
				{Name: "validAfter", Type: "uint256"}, {Name: "validBefore", Type: "uint256"}, {Name: "nonce", Type: "bytes32"},
			},
		},
		PrimaryType: "TransferWithAuthorization",
		Domain: apitypes.TypedDataDomain{
			Name: name, Version: version, ChainId: (*math.HexOrDecimal256)(chainID),
			VerifyingContract: common.HexToAddress(req.Asset).Hex(),
		},
		Message: apitypes.TypedDataMessage{
			"from": auth.From, "to": auth.To, "value": auth.Value,
			"validAfter": auth.ValidAfter, "validBefore": auth.ValidBefore, "nonce": auth.Nonce,
		},
	}, nil
}

// ParseEVMPayload reads the exact scheme's EVM payload strictly.
func ParseEVMPayload(raw json.RawMessage) (EVMPayload, []byte, error) {
	var p EVMPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, nil, refuse(ReasonInvalidPayload, "payload is not an EIP-3009 authorization: %v", err)
	}
	a := p.Authorization
	for name, v := range map[string]string{"from": a.From, "to": a.To} {
		if !common.IsHexAddress(v) {
			return p, nil, refuse(ReasonInvalidPayload, "authorization.%s %q is not an address", name, v)
		}
	}
	for name, v := range map[string]string{"value": a.Value, "validAfter": a.ValidAfter, "validBefore": a.ValidBefore} {
		if n, ok := new(big.Int).SetString(v, 10); !ok || n.Sign() < 0 || n.BitLen() > 256 {
			return p, nil, refuse(ReasonInvalidPayload, "authorization.%s %q is not a decimal uint256", name, v)
		}
	}
	if nonce, err := hexutil.Decode(a.Nonce); err != nil || len(nonce) != 32 {
		return p, nil, refuse(ReasonInvalidPayload, "authorization.nonce must be 32 bytes of hex")
	}
	sig, err := hexutil.Decode(p.Signature)
	if err != nil || len(sig) != 65 {
		return p, nil, refuse(ReasonSignature, "signature must be 65 bytes of hex (r, s, v)")
	}
	return p, sig, nil
}

// VerifyEVM checks an exact-scheme EVM payment against the server's
// requirements, everything that does not need the chain: the signature and
// terms (see checkEVM) and the validity window. It returns the payer.
// Chain state (nonce unused, balance) is the settling chain's to check.
func VerifyEVM(p PaymentPayload, req PaymentRequirements, now time.Time) (EVMPayload, common.Address, error) {
	ep, from, err := checkEVM(p, req)
	if err != nil {
		return ep, from, err
	}
	nowS := now.Unix()
	if vb, _ := strconv.ParseInt(ep.Authorization.ValidBefore, 10, 64); vb < nowS+validBeforeBufferSeconds {
		return ep, from, refuse(ReasonValidBefore, "authorization expired or expires within %d s", validBeforeBufferSeconds)
	}
	if va, err := strconv.ParseInt(ep.Authorization.ValidAfter, 10, 64); err != nil || va > nowS {
		return ep, from, refuse(ReasonValidAfter, "authorization is not valid yet")
	}
	return ep, from, nil
}

// checkEVM checks what a payment is, whenever it is presented: scheme and
// network, the EIP-712 signature recovering to authorization.from (over
// the requirements' token and chain), then the terms: recipient and exact
// value. A terms error after an authentic signature comes with the payer.
func checkEVM(p PaymentPayload, req PaymentRequirements) (EVMPayload, common.Address, error) {
	ep, from, err := authenticEVM(p, req)
	if err != nil {
		return ep, common.Address{}, err
	}
	if common.HexToAddress(ep.Authorization.To) != common.HexToAddress(req.PayTo) {
		return ep, from, refuse(ReasonRecipientMismatch, "authorization pays %s, not %s", ep.Authorization.To, req.PayTo)
	}
	want, _ := new(big.Int).SetString(req.Amount, 10)
	got, _ := new(big.Int).SetString(ep.Authorization.Value, 10)
	if want == nil || got == nil || want.Cmp(got) != 0 {
		return ep, from, refuse(ReasonValueMismatch, "authorization value %s, price %s", ep.Authorization.Value, req.Amount)
	}
	return ep, from, nil
}

// authenticEVM checks that authorization.from signed the authorization.
func authenticEVM(p PaymentPayload, req PaymentRequirements) (EVMPayload, common.Address, error) {
	if p.Accepted.Scheme != SchemeExact || req.Scheme != SchemeExact {
		return EVMPayload{}, common.Address{}, refuse(ReasonInvalidScheme, "scheme must be exact")
	}
	if p.Accepted.Network != req.Network {
		return EVMPayload{}, common.Address{}, refuse(ReasonNetworkMismatch, "payment is for %s, requirements for %s", p.Accepted.Network, req.Network)
	}
	ep, sig, err := ParseEVMPayload(p.Payload)
	if err != nil {
		return ep, common.Address{}, err
	}
	td, err := TransferTypedData(req, ep.Authorization)
	if err != nil {
		return ep, common.Address{}, err
	}
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return ep, common.Address{}, refuse(ReasonInvalidPayload, "authorization cannot be hashed: %v", err)
	}
	rsv := append([]byte(nil), sig...)
	if rsv[64] >= 27 {
		rsv[64] -= 27
	}
	pub, err := crypto.SigToPub(digest, rsv)
	from := common.HexToAddress(ep.Authorization.From)
	if err != nil || crypto.PubkeyToAddress(*pub) != from {
		return ep, common.Address{}, refuse(ReasonSignature, "signature does not recover to authorization.from")
	}
	return ep, from, nil
}

// SignEVM signs an EIP-3009 authorization for req with key, as the official
// EVM client does (validAfter now−600, validBefore now+maxTimeout, random
// nonce supplied by the caller). Used by the dev payer and tests.
func SignEVM(req PaymentRequirements, keyHex string, nonce [32]byte, now time.Time) (PaymentPayload, error) {
	key, err := crypto.HexToECDSA(strings.TrimPrefix(keyHex, "0x"))
	if err != nil {
		return PaymentPayload{}, err
	}
	auth := Authorization{
		From: crypto.PubkeyToAddress(key.PublicKey).Hex(), To: common.HexToAddress(req.PayTo).Hex(), Value: req.Amount,
		ValidAfter:  strconv.FormatInt(now.Unix()-600, 10),
		ValidBefore: strconv.FormatInt(now.Unix()+int64(req.MaxTimeoutSeconds), 10),
		Nonce:       hexutil.Encode(nonce[:]),
	}
	td, err := TransferTypedData(req, auth)
	if err != nil {
		return PaymentPayload{}, err
	}
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return PaymentPayload{}, err
	}
	sig, err := crypto.Sign(digest, key)
	if err != nil {
		return PaymentPayload{}, err
	}
	sig[64] += 27
	payload, err := json.Marshal(EVMPayload{Signature: hexutil.Encode(sig), Authorization: auth})
	if err != nil {
		return PaymentPayload{}, err
	}
	return PaymentPayload{X402Version: Version, Accepted: req, Payload: payload}, nil
}
