package app

import (
	"net/url"

	"conduit/internal/zkpassport"
)

// openZKPassport builds zkPassport verification from zkpassport.*: the
// domain requests bind to (zkpassport.domain, else the public URL's
// host), the attestation key and the sidecar verifier when configured.
func (p *Platform) openZKPassport() (*zkpassport.Service, error) {
	c := p.Config.ZKPassport
	signer, ephemeral, err := zkpassport.NewSigner(c.SigningKey)
	if err != nil {
		return nil, err
	}
	if ephemeral {
		p.Log.Info("zkPassport attestations are signed with a key made at start (set zkpassport.signing_key to keep one across restarts)", "keyId", signer.KeyID)
	}
	domain := c.Domain
	if domain == "" {
		if u, err := url.Parse(p.Config.BaseURL()); err == nil {
			domain = u.Hostname()
		}
	}
	svc := &zkpassport.Service{Store: p.Store, Temporal: p.Temporal, Config: c, Domain: domain, BaseURL: p.Config.BaseURL(), Signer: signer}
	if c.VerifierURL != "" {
		svc.Verifier = zkpassport.NewHTTPVerifier(c.VerifierURL, c.VerifierTimeout)
	} else {
		p.Log.Info("zkPassport proofs are checked without their cryptography: no verifier sidecar (zkpassport.verifier_url)")
	}
	return svc, nil
}
