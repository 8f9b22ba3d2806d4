package frontend

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/errs"
)

// createKey: POST /api/keys {name, permissions?, walletAddress?}. A key
// grants at most the permissions it holds (403 naming the rest).
func (s *Server) createKey(c *gin.Context) {
	var body struct {
		Name          *string  `json:"name"`
		Permissions   []string `json:"permissions"`
		WalletAddress *string  `json:"walletAddress"`
	}
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	if body.Name == nil {
		fail(c, errs.Invalidf("name is required"))
		return
	}
	k, plain, err := s.deps.Accounts.CreateKeyAs(c.Request.Context(), principal(c), accounts.KeyRequest{
		Name: *body.Name, Permissions: body.Permissions, WalletAddress: body.WalletAddress,
	})
	if err != nil {
		fail(c, err)
		return
	}
	out := accounts.Record(k)
	out.Key = plain
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, out)
}

// listKeys: GET /api/keys.
func (s *Server) listKeys(c *gin.Context) {
	keys, err := s.deps.Accounts.Keys(c.Request.Context(), principal(c).AccountID)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]accounts.KeyRecord, len(keys))
	for i, k := range keys {
		out[i] = accounts.Record(k)
	}
	c.JSON(http.StatusOK, gin.H{"keys": out})
}

// keyScopes: GET /api/keys/scopes — every scope a key can hold, grouped
// and described (internal/apikey's catalog). The dashboard's key form is
// generated from it.
func (s *Server) keyScopes(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"groups": apikey.Catalog()})
}

// getKey: GET /api/keys/{id}.
func (s *Server) getKey(c *gin.Context) {
	k, err := s.deps.Accounts.Key(c.Request.Context(), principal(c).AccountID, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, accounts.Record(k))
}

// updateKey: PATCH /api/keys/{id} with any of name, permissions, status,
// walletAddress (null clears it). A key can neither widen a key (itself
// included) beyond its own permissions nor change a key that holds more.
func (s *Server) updateKey(c *gin.Context) {
	var raw map[string]json.RawMessage
	if err := decodeJSON(c, &raw); err != nil {
		fail(c, err)
		return
	}
	var p accounts.KeyPatch
	for field, v := range raw {
		var err error
		switch field {
		case "name":
			err = json.Unmarshal(v, &p.Name)
			if err == nil && p.Name == nil {
				err = errs.Invalidf("name must be a string")
			}
		case "permissions":
			err = json.Unmarshal(v, &p.Permissions)
			if err == nil && p.Permissions == nil {
				err = errs.Invalidf("permissions must be an array of scope names")
			}
		case "status":
			err = json.Unmarshal(v, &p.Status)
			if err == nil && p.Status == nil {
				err = errs.Invalidf("status must be active or inactive")
			}
		case "walletAddress":
			var w *string
			err = json.Unmarshal(v, &w)
			p.WalletAddress = &w
		default:
			err = errs.Invalidf("unknown field %q (updatable: name, permissions, status, walletAddress)", field)
		}
		if err != nil {
			fail(c, asBadRequest(err, field))
			return
		}
	}
	k, err := s.deps.Accounts.UpdateKey(c.Request.Context(), principal(c), c.Param("id"), p)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, accounts.Record(k))
}

// deleteKey: DELETE /api/keys/{id} revokes the key for good.
func (s *Server) deleteKey(c *gin.Context) {
	if err := s.deps.Accounts.DeleteKey(c.Request.Context(), principal(c), c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
