package svmrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
)

type method func(ctx context.Context, p params) (any, *jsonrpc.RPCError)

func (n *Network) methods() map[string]method {
	return map[string]method{
		"getLatestBlockhash":                n.getLatestBlockhash,
		"isBlockhashValid":                  n.isBlockhashValid,
		"getAccountInfo":                    n.getAccountInfo,
		"getMultipleAccounts":               n.getMultipleAccounts,
		"getBalance":                        n.getBalance,
		"getTokenAccountBalance":            n.getTokenAccountBalance,
		"getTokenAccountsByOwner":           n.getTokenAccountsByOwner,
		"getSignatureStatuses":              n.getSignatureStatuses,
		"getTransaction":                    n.getTransaction,
		"getMinimumBalanceForRentExemption": n.getMinimumBalanceForRentExemption,
		// Asked by wallets and client libraries to identify the cluster
		// and check that it is up.
		"getSlot":        func(context.Context, params) (any, *jsonrpc.RPCError) { return n.Clock.Slot(), nil },
		"getBlockHeight": func(context.Context, params) (any, *jsonrpc.RPCError) { return n.Clock.Slot(), nil },
		"getHealth":      func(context.Context, params) (any, *jsonrpc.RPCError) { return "ok", nil },
		"getGenesisHash": func(context.Context, params) (any, *jsonrpc.RPCError) { return DevnetGenesisHash, nil },
		"getVersion": func(context.Context, params) (any, *jsonrpc.RPCError) {
			return map[string]any{"solana-core": "2.2.0", "feature-set": uint32(0)}, nil
		},
	}
}

// DevnetGenesisHash is devnet's genesis hash: the embedded network answers
// for devnet's CAIP-2 id (solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1), whose
// reference is this hash's first 32 characters.
const DevnetGenesisHash = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"

// params are a request's positional parameters.
type params []json.RawMessage

func (p params) need(n int) *jsonrpc.RPCError {
	if len(p) < n {
		return invalidParams(fmt.Sprintf("`params` should have at least %d argument(s)", n))
	}
	return nil
}

// pubkey parses parameter i as a base58 public key, with the validator's
// messages.
func (p params) pubkey(i int) (solana.PublicKey, *jsonrpc.RPCError) {
	if err := p.need(i + 1); err != nil {
		return solana.PublicKey{}, err
	}
	var s string
	if err := json.Unmarshal(p[i], &s); err != nil {
		return solana.PublicKey{}, invalidParams("Invalid params: invalid type: expected a string.")
	}
	return parsePubkey(s)
}

func parsePubkey(s string) (solana.PublicKey, *jsonrpc.RPCError) {
	pk, err := solana.PublicKeyFromBase58(s)
	if err != nil {
		if len(s) > 44 || len(s) < 32 {
			return pk, invalidParams("Invalid param: WrongSize")
		}
		return pk, invalidParams("Invalid param: Invalid")
	}
	return pk, nil
}

// config decodes the optional configuration object at i into v.
func (p params) config(i int, v any) *jsonrpc.RPCError {
	if len(p) <= i || string(p[i]) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(p[i]))
	if err := dec.Decode(v); err != nil {
		return invalidParams("Invalid params: " + err.Error() + ".")
	}
	return nil
}

func (n *Network) context() rpc.RPCContext {
	return rpc.RPCContext{Context: rpc.Context{Slot: n.Clock.Slot()}}
}

func (n *Network) getLatestBlockhash(context.Context, params) (any, *jsonrpc.RPCError) {
	slot, hash, last := n.Clock.Latest()
	return rpc.GetLatestBlockhashResult{
		RPCContext: rpc.RPCContext{Context: rpc.Context{Slot: slot}},
		Value:      &rpc.LatestBlockhashResult{Blockhash: hash, LastValidBlockHeight: last},
	}, nil
}

func (n *Network) isBlockhashValid(_ context.Context, p params) (any, *jsonrpc.RPCError) {
	if err := p.need(1); err != nil {
		return nil, err
	}
	var s string
	if err := json.Unmarshal(p[0], &s); err != nil {
		return nil, invalidParams("Invalid params: invalid type: expected a string.")
	}
	h, err := solana.HashFromBase58(s)
	if err != nil {
		return nil, invalidParams("Invalid param: Invalid")
	}
	_, ok := n.Clock.Valid(h)
	return rpc.IsValidBlockhashResult{RPCContext: n.context(), Value: ok}, nil
}

func (n *Network) getMinimumBalanceForRentExemption(_ context.Context, p params) (any, *jsonrpc.RPCError) {
	if err := p.need(1); err != nil {
		return nil, err
	}
	var size uint64
	if err := json.Unmarshal(p[0], &size); err != nil {
		return nil, invalidParams("Invalid params: invalid type: expected usize.")
	}
	if size > maxRentSize {
		return nil, invalidParams(fmt.Sprintf("Invalid params: data length %d is too large: its rent-exempt minimum overflows u64 (at most %d).", size, uint64(maxRentSize)))
	}
	return RentExempt(size), nil
}

func (n *Network) getBalance(ctx context.Context, p params) (any, *jsonrpc.RPCError) {
	pk, rerr := p.pubkey(0)
	if rerr != nil {
		return nil, rerr
	}
	a, err := n.account(ctx, pk)
	if err != nil {
		return nil, errInternal
	}
	var lamports uint64
	if a != nil {
		lamports = a.lamports
	}
	return rpc.GetBalanceResult{RPCContext: n.context(), Value: lamports}, nil
}

type accountConfig struct {
	Encoding       solana.EncodingType `json:"encoding"`
	Commitment     string              `json:"commitment"`
	MinContextSlot *uint64             `json:"minContextSlot"`
	DataSlice      *rpc.DataSlice      `json:"dataSlice"`
}

func (c accountConfig) check() *jsonrpc.RPCError {
	switch c.Encoding {
	case "", "binary", solana.EncodingBase58, solana.EncodingBase64, solana.EncodingBase64Zstd, solana.EncodingJSONParsed:
		return nil
	}
	return invalidParams(fmt.Sprintf("Invalid params: unknown variant `%s`, expected one of `binary`, `base58`, `base64`, `jsonParsed`, `base64+zstd`.", c.Encoding))
}

func (n *Network) getAccountInfo(ctx context.Context, p params) (any, *jsonrpc.RPCError) {
	pk, rerr := p.pubkey(0)
	if rerr != nil {
		return nil, rerr
	}
	var cfg accountConfig
	if rerr := p.config(1, &cfg); rerr != nil {
		return nil, rerr
	}
	if rerr := cfg.check(); rerr != nil {
		return nil, rerr
	}
	a, err := n.account(ctx, pk)
	if err != nil {
		return nil, errInternal
	}
	v, rerr := a.encode(cfg.Encoding, cfg.DataSlice)
	if rerr != nil {
		return nil, rerr
	}
	return rpc.GetAccountInfoResult{RPCContext: n.context(), Value: v}, nil
}

func (n *Network) getMultipleAccounts(ctx context.Context, p params) (any, *jsonrpc.RPCError) {
	if err := p.need(1); err != nil {
		return nil, err
	}
	var keys []string
	if err := json.Unmarshal(p[0], &keys); err != nil {
		return nil, invalidParams("Invalid params: invalid type: expected a sequence.")
	}
	if len(keys) > 100 {
		return nil, invalidParams("Too many inputs provided; max 100")
	}
	var cfg accountConfig
	if rerr := p.config(1, &cfg); rerr != nil {
		return nil, rerr
	}
	if rerr := cfg.check(); rerr != nil {
		return nil, rerr
	}
	out := rpc.GetMultipleAccountsResult{RPCContext: n.context(), Value: make([]*rpc.Account, 0, len(keys))}
	for _, k := range keys {
		pk, rerr := parsePubkey(k)
		if rerr != nil {
			return nil, rerr
		}
		a, err := n.account(ctx, pk)
		if err != nil {
			return nil, errInternal
		}
		v, rerr := a.encode(cfg.Encoding, cfg.DataSlice)
		if rerr != nil {
			return nil, rerr
		}
		out.Value = append(out.Value, v)
	}
	return out, nil
}

func (n *Network) getTokenAccountBalance(ctx context.Context, p params) (any, *jsonrpc.RPCError) {
	pk, rerr := p.pubkey(0)
	if rerr != nil {
		return nil, rerr
	}
	a, err := n.account(ctx, pk)
	if err != nil {
		return nil, errInternal
	}
	if a == nil {
		return nil, invalidParams("Invalid param: could not find account")
	}
	if a.token == nil {
		return nil, invalidParams("Invalid param: not a Token account")
	}
	return rpc.GetTokenAccountBalanceResult{RPCContext: n.context(), Value: n.uiAmount(a.token.Amount)}, nil
}

func (n *Network) getTokenAccountsByOwner(ctx context.Context, p params) (any, *jsonrpc.RPCError) {
	owner, rerr := p.pubkey(0)
	if rerr != nil {
		return nil, rerr
	}
	if rerr := p.need(2); rerr != nil {
		return nil, rerr
	}
	var filter struct {
		Mint      *string `json:"mint"`
		ProgramID *string `json:"programId"`
	}
	if err := json.Unmarshal(p[1], &filter); err != nil || (filter.Mint == nil) == (filter.ProgramID == nil) {
		return nil, invalidParams("Invalid params: expected a map with exactly one of `mint` or `programId`.")
	}
	var cfg accountConfig
	if rerr := p.config(2, &cfg); rerr != nil {
		return nil, rerr
	}
	if rerr := cfg.check(); rerr != nil {
		return nil, rerr
	}
	out := rpc.GetTokenAccountsResult{RPCContext: n.context(), Value: []*rpc.TokenAccount{}}
	switch {
	case filter.Mint != nil:
		mint, rerr := parsePubkey(*filter.Mint)
		if rerr != nil {
			return nil, rerr
		}
		if !mint.Equals(n.Mint) {
			return nil, invalidParams("Invalid param: could not find mint")
		}
	default:
		prog, rerr := parsePubkey(*filter.ProgramID)
		if rerr != nil {
			return nil, rerr
		}
		if !prog.Equals(solana.TokenProgramID) && !prog.Equals(solana.Token2022ProgramID) {
			return nil, invalidParams("Invalid param: unrecognized Token program id")
		}
		if prog.Equals(solana.Token2022ProgramID) {
			return out, nil // the play token is an SPL Token mint
		}
	}
	ata, _, err := solana.FindAssociatedTokenAddress(owner, n.Mint)
	if err != nil {
		return out, nil
	}
	a, err := n.account(ctx, ata)
	if err != nil {
		return nil, errInternal
	}
	if a == nil {
		return out, nil
	}
	v, rerr := a.encode(cfg.Encoding, cfg.DataSlice)
	if rerr != nil {
		return nil, rerr
	}
	out.Value = append(out.Value, &rpc.TokenAccount{Pubkey: ata, Account: *v})
	return out, nil
}

func (n *Network) uiAmount(amount uint64) *rpc.UiTokenAmount {
	s := formatUnits(amount, n.Decimals)
	f, _ := strconv.ParseFloat(s, 64)
	return &rpc.UiTokenAmount{Amount: strconv.FormatUint(amount, 10), Decimals: n.Decimals, UiAmount: &f, UiAmountString: s}
}

// formatUnits spells amount with decimals the way the validator's
// uiAmountString does: no trailing zeros, no trailing point.
func formatUnits(amount uint64, decimals uint8) string {
	s := new(big.Rat).SetFrac(new(big.Int).SetUint64(amount), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)).FloatString(int(decimals))
	if decimals > 0 {
		s = trimRight(trimRight(s, '0'), '.')
	}
	return s
}

func trimRight(s string, c byte) string {
	for len(s) > 0 && s[len(s)-1] == c {
		s = s[:len(s)-1]
	}
	return s
}

// account is one account of the embedded network.
type account struct {
	lamports uint64
	owner    solana.PublicKey
	data     []byte
	parsed   any // the jsonParsed form, for token program accounts
	token    *token.Account
}

// rentEpoch is u64::MAX: rent-exempt accounts never owe rent.
var rentEpoch = new(big.Int).SetUint64(^uint64(0))

// account finds pk: the mint, a holder's associated token account, or the
// fee payer. Other addresses hold nothing (nil).
func (n *Network) account(ctx context.Context, pk solana.PublicKey) (*account, error) {
	switch {
	case pk.Equals(n.Mint):
		supply, err := n.Ledger.Supply(ctx, n.Mint.String())
		if err != nil {
			return nil, err
		}
		auth := n.MintAuthority
		m := token.Mint{MintAuthority: &auth, Supply: supply, Decimals: n.Decimals, IsInitialized: true}
		data, err := encode(m)
		if err != nil {
			return nil, err
		}
		return &account{lamports: RentExempt(mintSize), owner: solana.TokenProgramID, data: data, parsed: map[string]any{
			"program": "spl-token", "space": mintSize,
			"parsed": map[string]any{"type": "mint", "info": map[string]any{
				"mintAuthority": auth.String(), "supply": strconv.FormatUint(supply, 10), "decimals": n.Decimals,
				"isInitialized": true, "freezeAuthority": nil,
			}},
		}}, nil
	case pk.Equals(n.FeePayer):
		return &account{lamports: feePayerLamports, owner: solana.SystemProgramID, data: []byte{}}, nil
	}
	owner, ok, err := n.tokenAccountOwner(ctx, pk)
	if err != nil || !ok {
		return nil, err
	}
	amount, exists, err := n.Ledger.Balance(ctx, n.Mint.String(), owner.String())
	if err != nil || !(exists || n.isPayee(owner)) {
		return nil, err
	}
	ta := token.Account{Mint: n.Mint, Owner: owner, Amount: amount, State: token.Initialized}
	data, err := encode(ta)
	if err != nil {
		return nil, err
	}
	return &account{lamports: RentExempt(tokenAccountSize), owner: solana.TokenProgramID, data: data, token: &ta, parsed: map[string]any{
		"program": "spl-token", "space": tokenAccountSize,
		"parsed": map[string]any{"type": "account", "info": map[string]any{
			"isNative": false, "mint": n.Mint.String(), "owner": owner.String(),
			"state": "initialized", "tokenAmount": n.uiAmount(amount),
		}},
	}}, nil
}

func (n *Network) tokenAccountOwner(ctx context.Context, pk solana.PublicKey) (solana.PublicKey, bool, error) {
	if o, ok := n.atas.Load(pk); ok {
		return o.(solana.PublicKey), true, nil
	}
	holders, err := n.Ledger.Holders(ctx, n.Mint.String())
	if err != nil {
		return solana.PublicKey{}, false, err
	}
	for _, p := range n.Payees {
		holders = append(holders, p.String())
	}
	for _, h := range holders {
		owner, err := solana.PublicKeyFromBase58(h)
		if err != nil {
			continue
		}
		ata, _, err := solana.FindAssociatedTokenAddress(owner, n.Mint)
		if err != nil {
			continue
		}
		n.atas.Store(ata, owner)
		if ata.Equals(pk) {
			return owner, true, nil
		}
	}
	return solana.PublicKey{}, false, nil
}

func (n *Network) isPayee(owner solana.PublicKey) bool {
	for _, p := range n.Payees {
		if p.Equals(owner) {
			return true
		}
	}
	return false
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := bin.NewBinEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encode renders the account in the requested encoding; jsonParsed falls
// back to base64 for accounts without a parser, as the validator does.
func (a *account) encode(enc solana.EncodingType, slice *rpc.DataSlice) (*rpc.Account, *jsonrpc.RPCError) {
	if a == nil {
		return nil, nil
	}
	out := &rpc.Account{Lamports: a.lamports, Owner: a.owner, RentEpoch: rentEpoch, Space: uint64(len(a.data))}
	var raw []byte
	var err error
	if enc == solana.EncodingJSONParsed && a.parsed != nil && slice == nil {
		raw, err = json.Marshal(a.parsed)
	} else {
		data := a.data
		if slice != nil {
			off, ln := uint64(0), uint64(len(data))
			if slice.Offset != nil {
				off = min(*slice.Offset, ln)
			}
			if slice.Length != nil {
				ln = *slice.Length
			}
			// Checked on the client's numbers, before off is clamped: a
			// wrapped off+ln would slice backwards and panic.
			if slice.Offset != nil && ln > math.MaxUint64-*slice.Offset {
				return nil, invalidParams("Invalid params: dataSlice offset + length overflows u64.")
			}
			data = data[off:min(off+ln, uint64(len(data)))]
		}
		switch enc {
		case "", "binary", solana.EncodingBase58: // binary is the legacy name of base58
			if len(data) > 128 {
				return nil, invalidParams("Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.")
			}
			raw, err = json.Marshal(solana.Data{Content: data, Encoding: solana.EncodingBase58})
		case solana.EncodingBase64Zstd:
			raw, err = json.Marshal(solana.Data{Content: data, Encoding: solana.EncodingBase64Zstd})
		default:
			raw, err = json.Marshal(solana.Data{Content: data, Encoding: solana.EncodingBase64})
		}
	}
	if err != nil {
		return nil, errInternal
	}
	out.Data = new(rpc.DataBytesOrJSON)
	if err := out.Data.UnmarshalJSON(raw); err != nil {
		return nil, errInternal
	}
	return out, nil
}
