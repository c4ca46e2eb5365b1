// Package clienttoken mints and verifies session-scoped client tokens: the
// short-lived credential a browser holds instead of an API key (docs/DESIGN.md,
// "Client channel"). It imports only the standard library.
//
// # Token format
//
// A token is two base64url (no padding, strict) parts joined by a dot:
//
//	<payload>.<mac>
//
// The payload is a compact binary record, version 1:
//
//	byte    version (1)
//	u8+str  key id        (1..64 bytes)
//	u8+str  session id    (1..128 bytes)
//	u8+str  account id    (1..128 bytes)
//	i64     issued at     (Unix seconds, big endian)
//	i64     expires at    (Unix seconds, big endian)
//
// The mac is HMAC-SHA256, keyed with the key the payload names, over the
// domain string "sandman-client-token\x00" followed by the payload part as
// it appears in the token (its base64url text). Verification decodes the
// payload, looks the key up by id, recomputes the mac and compares with
// hmac.Equal (constant time), and only then reads the claims. A token that
// verifies has exactly one encoding: no padding, no trailing bits, no
// trailing bytes.
//
// # Lifetimes
//
// DefaultTTL is 15 minutes and MaxTTL 24 hours (docs/DESIGN.md). A token is valid
// while now < expires_at, with now read from the injected Clock; there is no
// clock-skew allowance because the same deployment mints and verifies.
//
// # Errors
//
// Verify returns one of ErrMalformed, ErrBadSignature, ErrExpired (all
// meaning 401 unauthorized: the caller must fetch a new token) or
// ErrWrongSession (403 forbidden: a valid token for another session). Use
// errors.Is, or HTTPStatus for the status code. A key id the set does not hold is ErrBadSignature: after a
// rotation the old tokens simply stop verifying.
//
// # Keys and rotation
//
// A KeySet has one signing key and up to two further verifying keys (so at
// most three keys: during a rotation the new key signs while the previous
// ones still verify until the tokens they signed have expired, at most
// MaxTTL later). Rotation: add the new key as signing and move the old one
// to verifying; after MaxTTL remove the old one.
//
// In AWS the key set is a Secrets Manager secret whose SecretString is
//
//	{
//	  "signing_key_id": "k2",
//	  "keys": [
//	    {"id": "k2", "secret": "<standard base64 of at least 32 random bytes>"},
//	    {"id": "k1", "secret": "<standard base64 of at least 32 random bytes>"}
//	  ]
//	}
//
// read with ParseKeySet. The stack creates that secret with a generated
// value in the one-key form {"signing_key_id":"k1","secret":"<64
// alphanumerics>"} (Secrets Manager generates top-level fields only; 64
// alphanumerics are standard base64 of 48 bytes), which ParseKeySet also
// reads; a rotation rewrites it in the form above. Functions read the set
// at cold start, so a rotation first adds the new key as verifying, then,
// once every instance has restarted, makes it the signing key
// (docs/OPERATIONS.md "Rotating the client-token keys"). Locally
// LoadOrCreateFile keeps the same JSON in the state folder
// (DefaultFileName, mode 0600), generating one random key on first use.
package clienttoken
