import Foundation
import HomeportCrypto
import HomeportWire

/// The JWS algorithms an ID token may be signed with. Never `none`, and never an HMAC: a
/// provider's public key is public, and a token "signed" with it as an HMAC secret proves nothing.
enum SignatureAlgorithm: String, Sendable, CaseIterable {
    case rs256 = "RS256"
    case es256 = "ES256"
}

/// One public key of a provider's JSON Web Key Set that can check ID tokens.
struct SigningKey: Sendable {
    /// The key's `kid`, if it has one.
    var id: String?
    /// What it checks with.
    var key: Key

    enum Key: Sendable {
        case rsa(RSAPublicKey)
        /// A P-256 point, uncompressed (65 bytes).
        case p256([UInt8])
    }

    /// The algorithm the key signs with (an RSA key RS256, a P-256 key ES256).
    var algorithm: SignatureAlgorithm {
        switch key {
        case .rsa: .rs256
        case .p256: .es256
        }
    }

    /// Whether `signature` is this key's signature of `message`.
    func isValidSignature(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        switch key {
        case .rsa(let key): key.isValidSignature(signature, of: message)
        case .p256(let point): P256Key.isValidSignature(signature, of: message, publicKey: point)
        }
    }
}

/// A provider's JSON Web Key Set (RFC 7517), read down to the keys that can check an ID token:
/// RSA keys of 2048 bits or more and P-256 keys, for signing (`use` absent or `sig`), whose
/// `alg`, when given, is the one their type signs with. Any other key is passed over, as a
/// client must: a set may carry encryption keys and kinds this reader does not know.
struct JSONWebKeySet: Sendable {
    var keys: [SigningKey]

    /// The set in `data`; throws when it is not a JSON object with a `keys` array.
    init(_ data: Data) throws {
        guard StrictJSON.isValidWithoutRepeatedKeys(Array(data)),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            let entries = object["keys"] as? [Any]
        else { throw ProviderError("its key set is not a JSON object with a \"keys\" array") }
        keys = entries.compactMap { ($0 as? [String: Any]).flatMap(Self.key) }
    }

    /// The keys that may have signed a token whose header names `algorithm` and `kid`: the one
    /// with that id, or, without an id, every key of that algorithm.
    func candidates(algorithm: SignatureAlgorithm, kid: String?) -> [SigningKey] {
        keys.filter { $0.algorithm == algorithm && (kid == nil || $0.id == kid) }
    }

    private static func key(_ entry: [String: Any]) -> SigningKey? {
        if let use = entry["use"] { guard use as? String == "sig" else { return nil } }
        if let operations = entry["key_ops"] {
            guard let list = operations as? [String], list.contains("verify") else { return nil }
        }
        let id = entry["kid"] as? String
        let declared = entry["alg"] as? String
        switch entry["kty"] as? String {
        case "RSA":
            guard declared == nil || declared == SignatureAlgorithm.rs256.rawValue,
                let n = (entry["n"] as? String).flatMap(IdentityProof.readBase64URL),
                let e = (entry["e"] as? String).flatMap(IdentityProof.readBase64URL),
                let key = try? RSAPublicKey(modulus: n, exponent: e)
            else { return nil }
            return SigningKey(id: id, key: .rsa(key))
        case "EC":
            guard declared == nil || declared == SignatureAlgorithm.es256.rawValue, entry["crv"] as? String == "P-256",
                let x = (entry["x"] as? String).flatMap(IdentityProof.readBase64URL), x.count == 32,
                let y = (entry["y"] as? String).flatMap(IdentityProof.readBase64URL), y.count == 32
            else { return nil }
            return SigningKey(id: id, key: .p256([0x04] + x + y))
        default:
            return nil
        }
    }
}

/// Why a provider could not be used or a token was not accepted: a sentence for the operator's
/// log and the tests, never shown with a token in it.
struct ProviderError: Error, CustomStringConvertible, Equatable {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
