/// Why a WebAuthn ceremony is refused. The server answers every one the same way (a wrong
/// credential), and logs ``description``.
public enum WebAuthnError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Bytes or JSON that are not what the ceremony sends.
    case malformed(String)
    /// The client data is for the other ceremony (`webauthn.get` at registration, say).
    case wrongType(String)
    /// The challenge is not the one the server issued (or it was used, or it expired).
    case challengeMismatch
    /// The page the browser ran the ceremony on is not one of the server's.
    case originMismatch(String)
    /// The credential is scoped to another relying party.
    case relyingPartyMismatch
    /// The authenticator did not check that a person was present.
    case userNotPresent
    /// The authenticator did not verify the person (PIN, biometrics), and it was required.
    case userNotVerified
    /// A COSE algorithm Homeport does not accept.
    case unsupportedAlgorithm(Int64)
    /// An attestation format Homeport does not accept.
    case unsupportedAttestation(String)
    /// The signature does not verify.
    case badSignature
    /// The signature counter did not go up: the credential may have been cloned.
    case counterWentBack(stored: UInt32, presented: UInt32)

    /// The reason, in a few words, for the log.
    public var description: String {
        switch self {
        case .malformed(let what): "malformed: \(what)"
        case .wrongType(let type): "client data of type '\(type.prefix(40))'"
        case .challengeMismatch: "not the challenge the server issued"
        case .originMismatch(let origin): "origin '\(origin.prefix(120))' is not the server's"
        case .relyingPartyMismatch: "a credential of another relying party"
        case .userNotPresent: "the authenticator did not check that a person was present"
        case .userNotVerified: "the person was not verified, and it is required"
        case .unsupportedAlgorithm(let number): "COSE algorithm \(number), not ES256, EdDSA or RS256"
        case .unsupportedAttestation(let format): "attestation format '\(format.prefix(40))', not none or packed self"
        case .badSignature: "the signature does not verify"
        case .counterWentBack(let stored, let presented):
            "the signature counter went from \(stored) to \(presented): a cloned authenticator?"
        }
    }
}
