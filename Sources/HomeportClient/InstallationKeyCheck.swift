import Foundation
import HomeportWire

#if canImport(CryptoKit)
    import CryptoKit
#else
    import HomeportCrypto
#endif

/// The client's half of ``IdentityProof``: a fresh challenge for each probe, and the check of an
/// answer's signature against the key it names (CryptoKit on Apple platforms, OpenSSL elsewhere).
public enum InstallationKeyCheck {
    /// 32 bytes from the system's secure generator, in base64url.
    public static func challenge() -> String {
        var generator = SystemRandomNumberGenerator()
        return IdentityProof.base64URL((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// Whether `signature` (base64url) is `publicKey`'s (as written on the wire) signature of the
    /// proof of `instanceId` for `challenge` asked through `host`.
    public static func isValid(
        signature: String, publicKey: String, instanceId: InstanceID, challenge: String, host: String
    ) -> Bool {
        guard let key = IdentityProof.readKey(publicKey), let signature = IdentityProof.readBase64URL(signature) else {
            return false
        }
        let message = IdentityProof.message(instanceId: instanceId, challenge: challenge, host: host)
        #if canImport(CryptoKit)
            switch IdentityProof.KeyKind(raw: key) {
            case .p256:
                guard let publicKey = try? P256.Signing.PublicKey(x963Representation: key),
                    let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
                else { return false }
                return publicKey.isValidSignature(parsed, for: message)
            case .ed25519:
                guard let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: key) else { return false }
                return publicKey.isValidSignature(signature, for: message)
            case nil: return false
            }
        #else
            return InstallationKeys.isValidSignature(signature, of: message, publicKey: key)
        #endif
    }

    /// The fingerprint of a key as written on the wire; `nil` for anything that is not one.
    public static func fingerprint(_ publicKey: String) -> String? {
        digest(publicKey).map(IdentityProof.fingerprint(sha256:))
    }

    /// The SHA-256 of a key as written on the wire (its raw public half's): what a fingerprint
    /// shows and a TLS pin compares; `nil` for anything that is not a key.
    public static func digest(_ publicKey: String) -> [UInt8]? {
        IdentityProof.readKey(publicKey).map(sha256)
    }

    /// The SHA-256 of `bytes` (CryptoKit on Apple platforms, OpenSSL elsewhere).
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        #if canImport(CryptoKit)
            Array(SHA256.hash(data: bytes))
        #else
            Digest.sha256(bytes)
        #endif
    }
}
