package signer

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"conduit/internal/errs"
)

// MaxCalldata bounds a transaction's data (a node's transaction pool refuses more than 128 KiB).
const MaxCalldata = 128 << 10

// invalid is a 400 naming the field.
func invalid(field, format string, args ...any) error {
	return errs.Field(field, fmt.Sprintf(format, args...))
}

// EVMTransaction is an unsigned EIP-1559 (type 2) transaction ready to be signed.
type EVMTransaction struct {
	tx *types.Transaction
}

// Tx is the unsigned transaction.
func (t EVMTransaction) Tx() *types.Transaction { return t.tx }

// Signer is the transaction signer of its chain (the latest rules; EIP-1559 transactions sign the
// same under London, Cancun and Prague).
func (t EVMTransaction) Signer() types.Signer { return types.LatestSignerForChainID(t.tx.ChainId()) }

// Hash is the hash the enclave signs.
func (t EVMTransaction) Hash() []byte { return t.Signer().Hash(t.tx).Bytes() }

// WithSignature is the signed transaction: its raw encoding (0x02…), hash and sender.
func (t EVMTransaction) WithSignature(sig []byte) (raw []byte, hash common.Hash, from common.Address, err error) {
	signed, err := t.tx.WithSignature(t.Signer(), sig)
	if err != nil {
		return nil, common.Hash{}, common.Address{}, err
	}
	if raw, err = signed.MarshalBinary(); err != nil {
		return nil, common.Hash{}, common.Address{}, err
	}
	from, err = types.Sender(t.Signer(), signed)
	return raw, signed.Hash(), from, err
}

// unsigned1559 is the RLP payload of an unsigned type-2 transaction, as wallets serialise it
// (ethers' unsignedSerialized): 0x02 ‖ rlp([chainId, nonce, maxPriorityFeePerGas, maxFeePerGas,
// gasLimit, to, value, data, accessList]).
type unsigned1559 struct {
	ChainID    *big.Int
	Nonce      uint64
	GasTipCap  *big.Int
	GasFeeCap  *big.Int
	Gas        uint64
	To         *common.Address `rlp:"nil"`
	Value      *big.Int
	Data       []byte
	AccessList types.AccessList
}

// ParseEVMTransaction reads the transaction field of a signing request: a JSON object of fields
// (chainId, nonce, to, value, gas, maxFeePerGas, maxPriorityFeePerGas, data, accessList; numbers as
// 0x-hex or decimal strings, or JSON numbers) or a string holding the RLP encoding of an unsigned
// EIP-1559 transaction (0x02…).
func ParseEVMTransaction(raw json.RawMessage) (EVMTransaction, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return EVMTransaction{}, invalid("transaction", "is required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return EVMTransaction{}, invalid("transaction", "is not a string")
		}
		return parseRLP(s)
	}
	if raw[0] != '{' {
		return EVMTransaction{}, invalid("transaction", "must be an object of fields or the RLP-encoded unsigned transaction (0x02…)")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return EVMTransaction{}, invalid("transaction", "is not a JSON object: %v", err)
	}
	return parseFields(fields)
}

func parseRLP(s string) (EVMTransaction, error) {
	b, err := decodeHex(s)
	if err != nil {
		return EVMTransaction{}, invalid("transaction", "is not hex: %v", err)
	}
	if len(b) == 0 || b[0] != types.DynamicFeeTxType {
		return EVMTransaction{}, invalid("transaction", "must be an EIP-1559 transaction (type 0x02)")
	}
	if len(b) > MaxCalldata+1024 {
		return EVMTransaction{}, invalid("transaction", "is larger than %d bytes", MaxCalldata+1024)
	}
	var u unsigned1559
	if err := rlp.DecodeBytes(b[1:], &u); err != nil {
		return EVMTransaction{}, invalid("transaction", "is not an unsigned EIP-1559 transaction: %v", err)
	}
	return build(u)
}

// evmFields are the names accepted in the object form, with the aliases wallets use.
var evmFields = map[string]string{
	"chainId": "chainId", "nonce": "nonce", "to": "to", "value": "value", "gas": "gas", "gasLimit": "gas",
	"maxFeePerGas": "maxFeePerGas", "maxPriorityFeePerGas": "maxPriorityFeePerGas", "data": "data", "input": "data",
	"accessList": "accessList", "type": "type", "from": "from",
}

func parseFields(in map[string]json.RawMessage) (EVMTransaction, error) {
	f := map[string]json.RawMessage{}
	names := make([]string, 0, len(in))
	for k := range in {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		canon, ok := evmFields[k]
		if !ok {
			return EVMTransaction{}, invalid("transaction."+k, "is not a field of an EIP-1559 transaction")
		}
		if _, dup := f[canon]; dup {
			return EVMTransaction{}, invalid("transaction."+k, "is given twice (under two names)")
		}
		f[canon] = in[k]
	}
	if t, ok := f["type"]; ok {
		n, err := quantity("transaction.type", t, 8)
		if err != nil {
			return EVMTransaction{}, err
		}
		if n.Int64() != types.DynamicFeeTxType {
			return EVMTransaction{}, invalid("transaction.type", "must be 2 (EIP-1559)")
		}
	}
	var u unsigned1559
	var err error
	req := func(name string, bits int) *big.Int {
		if err != nil {
			return nil
		}
		v, ok := f[name]
		if !ok || string(v) == "null" {
			err = invalid("transaction."+name, "is required")
			return nil
		}
		var n *big.Int
		n, err = quantity("transaction."+name, v, bits)
		return n
	}
	u.ChainID = req("chainId", 256)
	nonce := req("nonce", 64)
	gas := req("gas", 64)
	u.GasFeeCap = req("maxFeePerGas", 256)
	u.GasTipCap = req("maxPriorityFeePerGas", 256)
	if err != nil {
		return EVMTransaction{}, err
	}
	u.Nonce, u.Gas = nonce.Uint64(), gas.Uint64()
	u.Value = new(big.Int)
	if v, ok := f["value"]; ok && string(v) != "null" {
		if u.Value, err = quantity("transaction.value", v, 256); err != nil {
			return EVMTransaction{}, err
		}
	}
	if v, ok := f["to"]; ok && string(v) != "null" {
		var s string
		if json.Unmarshal(v, &s) != nil || !common.IsHexAddress(s) || !strings.HasPrefix(strings.ToLower(s), "0x") {
			return EVMTransaction{}, invalid("transaction.to", "must be a 0x-prefixed 20-byte address")
		}
		if s != strings.ToLower(s) && s[2:] != strings.ToUpper(s[2:]) && common.HexToAddress(s).Hex() != s {
			return EVMTransaction{}, invalid("transaction.to", "has a wrong EIP-55 checksum")
		}
		a := common.HexToAddress(s)
		u.To = &a
	}
	if v, ok := f["data"]; ok && string(v) != "null" {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return EVMTransaction{}, invalid("transaction.data", "must be a 0x-hex string")
		}
		if u.Data, err = decodeHex(s); err != nil {
			return EVMTransaction{}, invalid("transaction.data", "is not hex: %v", err)
		}
	}
	if v, ok := f["accessList"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &u.AccessList); err != nil {
			return EVMTransaction{}, invalid("transaction.accessList", "is not an access list: %v", err)
		}
	}
	if v, ok := f["from"]; ok && string(v) != "null" {
		// Wallets send it; the signature decides the sender. It is checked against the enclave's
		// address by the caller (ExpectedFrom).
		var s string
		if json.Unmarshal(v, &s) != nil || !common.IsHexAddress(s) {
			return EVMTransaction{}, invalid("transaction.from", "must be a 20-byte address")
		}
	}
	return build(u)
}

// ExpectedFrom is the transaction object's from field, when given.
func ExpectedFrom(raw json.RawMessage) (common.Address, bool) {
	var f struct {
		From string `json:"from"`
	}
	if json.Unmarshal(raw, &f) != nil || !common.IsHexAddress(f.From) {
		return common.Address{}, false
	}
	return common.HexToAddress(f.From), true
}

func build(u unsigned1559) (EVMTransaction, error) {
	switch {
	case u.ChainID == nil || u.ChainID.Sign() <= 0:
		return EVMTransaction{}, invalid("transaction.chainId", "must be a positive chain id")
	case u.Gas == 0:
		return EVMTransaction{}, invalid("transaction.gas", "must be positive")
	case u.GasFeeCap.Cmp(u.GasTipCap) < 0:
		return EVMTransaction{}, invalid("transaction.maxPriorityFeePerGas", "is above maxFeePerGas")
	case len(u.Data) > MaxCalldata:
		return EVMTransaction{}, invalid("transaction.data", "is %d bytes; at most %d", len(u.Data), MaxCalldata)
	}
	for _, n := range []*big.Int{u.GasFeeCap, u.GasTipCap, u.Value} {
		if n == nil || n.Sign() < 0 || n.BitLen() > 256 {
			return EVMTransaction{}, invalid("transaction", "a fee or value is negative or over 256 bits")
		}
	}
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: u.ChainID, Nonce: u.Nonce, GasTipCap: u.GasTipCap, GasFeeCap: u.GasFeeCap,
		Gas: u.Gas, To: u.To, Value: u.Value, Data: u.Data, AccessList: u.AccessList})
	return EVMTransaction{tx: tx}, nil
}

// quantity reads a JSON number or a decimal or 0x-hex string as a non-negative integer of at most
// bits bits.
func quantity(field string, raw json.RawMessage, bits int) (*big.Int, error) {
	var s string
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid(field, "is not a string")
		}
	} else {
		s = string(raw)
	}
	s = strings.TrimSpace(s)
	n := new(big.Int)
	ok := false
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		if len(s) > 2 && len(s) <= 2+bits/4+1 {
			_, ok = n.SetString(s[2:], 16)
		}
	case s != "" && len(s) <= 80:
		_, ok = n.SetString(s, 10)
	}
	if !ok {
		return nil, invalid(field, "must be a whole number (decimal or 0x-hex), got %s", truncate(string(raw), 40))
	}
	if n.Sign() < 0 || n.BitLen() > bits {
		return nil, invalid(field, "must be from 0 to 2^%d-1", bits)
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// decodeHex reads hex with or without 0x; an odd length is refused.
func decodeHex(s string) ([]byte, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	return hex.DecodeString(s)
}

// MessageBytes reads the message of a signing request in its encoding: "utf8" (the text as is),
// "hex" (0x-prefixed bytes) or "base64"; with no encoding a 0x-prefixed hex string is bytes (as
// wallets send personal_sign) and anything else is text.
func MessageBytes(msg, encoding string) ([]byte, error) {
	switch encoding {
	case "":
		if strings.HasPrefix(msg, "0x") {
			if b, err := decodeHex(msg); err == nil {
				return nonEmpty(b)
			}
		}
		return nonEmpty([]byte(msg))
	case "utf8", "utf-8", "text":
		return nonEmpty([]byte(msg))
	case "hex":
		b, err := decodeHex(msg)
		if err != nil {
			return nil, invalid("message", "is not hex: %v", err)
		}
		return nonEmpty(b)
	case "base64":
		b, err := decodeBase64(msg)
		if err != nil {
			return nil, invalid("message", "is not base64: %v", err)
		}
		return nonEmpty(b)
	}
	return nil, invalid("encoding", "must be utf8, hex or base64")
}

func nonEmpty(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, invalid("message", "is required")
	}
	if len(b) > MaxMessage {
		return nil, invalid("message", "is %d bytes; at most %d are signed", len(b), MaxMessage)
	}
	return b, nil
}

// PersonalHash is the EIP-191 (personal_sign) hash of a message.
func PersonalHash(msg []byte) []byte { return accounts.TextHash(msg) }

// WalletSignature turns the agent's [R‖S‖V] (V 0/1) into the form wallets return for messages and
// typed data (V 27/28).
func WalletSignature(sig []byte) []byte {
	out := append([]byte(nil), sig...)
	if len(out) == 65 && out[64] < 27 {
		out[64] += 27
	}
	return out
}

// TypedData is an EIP-712 request: types, primaryType, domain and message as eth_signTypedData_v4
// sends them. The ethers form is accepted too: value for message, no primaryType (the one type no
// other type refers to) and no EIP712Domain in types (derived from the domain's fields).
type TypedData struct {
	Types       apitypes.Types           `json:"types"`
	PrimaryType string                   `json:"primaryType"`
	Domain      apitypes.TypedDataDomain `json:"domain"`
	Message     map[string]any           `json:"message"`
	Value       map[string]any           `json:"value"`
}

// TypedDataHash is the EIP-712 digest of a typed-data request (go-ethereum's apitypes does the
// hashing).
func TypedDataHash(raw []byte) ([]byte, apitypes.TypedData, error) {
	var in TypedData
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&in); err != nil {
		return nil, apitypes.TypedData{}, invalid("typedData", "is not EIP-712 typed data: %v", err)
	}
	if len(in.Types) == 0 {
		return nil, apitypes.TypedData{}, invalid("types", "is required")
	}
	msg := in.Message
	if msg == nil {
		msg = in.Value
	}
	if msg == nil {
		return nil, apitypes.TypedData{}, invalid("message", "is required")
	}
	types := apitypes.Types{}
	for k, v := range in.Types {
		types[k] = v
	}
	if _, ok := types["EIP712Domain"]; !ok {
		types["EIP712Domain"] = domainType(in.Domain)
	}
	primary := in.PrimaryType
	if primary == "" {
		var err error
		if primary, err = primaryType(in.Types); err != nil {
			return nil, apitypes.TypedData{}, err
		}
	}
	if _, ok := types[primary]; !ok {
		return nil, apitypes.TypedData{}, invalid("primaryType", "%q is not one of the types", primary)
	}
	td := apitypes.TypedData{Types: types, PrimaryType: primary, Domain: in.Domain, Message: msg}
	hash, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return nil, td, invalid("typedData", "cannot be hashed: %v", err)
	}
	return hash, td, nil
}

// domainType is EIP712Domain for the domain fields present, in the order EIP-712 lists them.
func domainType(d apitypes.TypedDataDomain) []apitypes.Type {
	var t []apitypes.Type
	if d.Name != "" {
		t = append(t, apitypes.Type{Name: "name", Type: "string"})
	}
	if d.Version != "" {
		t = append(t, apitypes.Type{Name: "version", Type: "string"})
	}
	if d.ChainId != nil {
		t = append(t, apitypes.Type{Name: "chainId", Type: "uint256"})
	}
	if d.VerifyingContract != "" {
		t = append(t, apitypes.Type{Name: "verifyingContract", Type: "address"})
	}
	if d.Salt != "" {
		t = append(t, apitypes.Type{Name: "salt", Type: "bytes32"})
	}
	return t
}

// primaryType is the one struct type that no other type refers to (ethers' rule).
func primaryType(ts apitypes.Types) (string, error) {
	referenced := map[string]bool{}
	for name, fields := range ts {
		for _, f := range fields {
			base := strings.SplitN(f.Type, "[", 2)[0]
			if base != name {
				referenced[base] = true
			}
		}
	}
	var roots []string
	for name := range ts {
		if name != "EIP712Domain" && !referenced[name] {
			roots = append(roots, name)
		}
	}
	sort.Strings(roots)
	if len(roots) != 1 {
		return "", invalid("primaryType", "is required: the types have %d candidates (%s)", len(roots), strings.Join(roots, ", "))
	}
	return roots[0], nil
}
