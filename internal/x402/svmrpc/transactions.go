package svmrpc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
)

// A transaction is finalized 32 slots after it landed (the validator's
// MAX_LOCKOUT_HISTORY depth for a supermajority root, in round numbers).
const finalizedAfter = 32

func parseSignature(s string) (solana.Signature, *jsonrpc.RPCError) {
	sig, err := solana.SignatureFromBase58(s)
	if err != nil {
		return sig, invalidParams("Invalid param: " + err.Error())
	}
	return sig, nil
}

func (n *Network) getSignatureStatuses(ctx context.Context, p params) (any, *jsonrpc.RPCError) {
	if err := p.need(1); err != nil {
		return nil, err
	}
	var sigs []string
	if err := json.Unmarshal(p[0], &sigs); err != nil {
		return nil, invalidParams("Invalid params: invalid type: expected a sequence.")
	}
	if len(sigs) > 256 {
		return nil, invalidParams("Too many inputs provided; max 256")
	}
	cur := n.Clock.Slot()
	out := rpc.GetSignatureStatusesResult{RPCContext: rpc.RPCContext{Context: rpc.Context{Slot: cur}}, Value: make([]*rpc.SignatureStatusesResult, 0, len(sigs))}
	for _, s := range sigs {
		sig, rerr := parseSignature(s)
		if rerr != nil {
			return nil, rerr
		}
		_, at, found, err := n.Ledger.Transaction(ctx, sig.String())
		if err != nil {
			return nil, errInternal
		}
		if !found {
			out.Value = append(out.Value, nil)
			continue
		}
		slot := n.Clock.SlotAt(at)
		st := &rpc.SignatureStatusesResult{Slot: slot, ConfirmationStatus: rpc.ConfirmationStatusFinalized,
			Status: rpc.DeprecatedTransactionMetaStatus{"Ok": nil}}
		if depth := cur - min(slot, cur); depth < finalizedAfter {
			st.Confirmations, st.ConfirmationStatus = &depth, rpc.ConfirmationStatusConfirmed
		}
		out.Value = append(out.Value, st)
	}
	return out, nil
}

type transactionConfig struct {
	Encoding                       solana.EncodingType `json:"encoding"`
	Commitment                     string              `json:"commitment"`
	MaxSupportedTransactionVersion *uint64             `json:"maxSupportedTransactionVersion"`
}

// getTransaction answers for settled payments: the transaction as the
// facilitator sent it (both signatures) and a successful meta. The ledger
// keeps no balance history, so the meta carries no pre/post balances.
func (n *Network) getTransaction(ctx context.Context, p params) (any, *jsonrpc.RPCError) {
	if err := p.need(1); err != nil {
		return nil, err
	}
	var s string
	if err := json.Unmarshal(p[0], &s); err != nil {
		return nil, invalidParams("Invalid params: invalid type: expected a string.")
	}
	sig, rerr := parseSignature(s)
	if rerr != nil {
		return nil, rerr
	}
	var cfg transactionConfig
	if len(p) > 1 {
		// The second parameter may be the config or, in the old form, an
		// encoding string.
		var enc string
		if json.Unmarshal(p[1], &enc) == nil {
			cfg.Encoding = solana.EncodingType(enc)
		} else if rerr := p.config(1, &cfg); rerr != nil {
			return nil, rerr
		}
	}
	switch cfg.Encoding {
	case "", solana.EncodingJSON, solana.EncodingBase58, solana.EncodingBase64, solana.EncodingJSONParsed:
	default:
		return nil, invalidParams(fmt.Sprintf("Invalid params: unknown variant `%s`, expected one of `binary`, `base64`, `base58`, `json`, `jsonParsed`.", cfg.Encoding))
	}
	wire, at, found, err := n.Ledger.Transaction(ctx, sig.String())
	if err != nil {
		return nil, errInternal
	}
	if !found {
		return nil, nil // the validator answers null
	}
	tx, err := solana.TransactionFromBytes(wire)
	if err != nil {
		return nil, errInternal
	}
	version := rpc.LegacyTransactionVersion
	if tx.Message.IsVersioned() {
		version = rpc.TransactionVersion(0)
		if cfg.MaxSupportedTransactionVersion == nil {
			return nil, &jsonrpc.RPCError{Code: -32015, Message: "Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 0"}
		}
	}
	var raw []byte
	switch cfg.Encoding {
	case solana.EncodingBase58, solana.EncodingBase64:
		raw, err = json.Marshal(solana.Data{Content: wire, Encoding: cfg.Encoding})
	default:
		raw, err = json.Marshal(tx)
	}
	if err != nil {
		return nil, errInternal
	}
	env := new(rpc.TransactionResultEnvelope)
	if err := env.UnmarshalJSON(raw); err != nil {
		return nil, errInternal
	}
	bt := solana.UnixTimeSeconds(at.Unix())
	zeros := make([]uint64, len(tx.Message.AccountKeys))
	return rpc.GetTransactionResult{
		Slot: n.Clock.SlotAt(at), BlockTime: &bt, Transaction: env, Version: version,
		Meta: &rpc.TransactionMeta{
			Fee: lamportsPerSig * uint64(len(tx.Signatures)), PreBalances: zeros, PostBalances: zeros,
			InnerInstructions: []rpc.InnerInstruction{}, PreTokenBalances: []rpc.TokenBalance{}, PostTokenBalances: []rpc.TokenBalance{},
			LogMessages: []string{}, Status: rpc.DeprecatedTransactionMetaStatus{"Ok": nil}, Rewards: []rpc.BlockReward{},
			LoadedAddresses: rpc.LoadedAddresses{ReadOnly: solana.PublicKeySlice{}, Writable: solana.PublicKeySlice{}},
		},
	}, nil
}
