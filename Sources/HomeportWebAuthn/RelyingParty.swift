import Foundation
import HomeportCrypto

/// The server as WebAuthn knows it: the relying party id credentials are scoped to (the public
/// address's host) and the origins its pages run on. It checks the two ceremonies.
public struct RelyingParty: Sendable, Hashable {
    /// The relying party id: a domain (`books.example.net`).
    public let id: String
    /// The origins a ceremony may run on (`https://books.example.net`).
    public let origins: Set<String>

    /// A relying party of `id` whose pages run on `origins`.
    public init(id: String, origins: Set<String>) {
        self.id = id
        self.origins = origins
    }

    /// The relying party of the server at `publicURL`: its host as the id, its origin as the
    /// one origin; `nil` when the host cannot be one (an IP address, which WebAuthn does not
    /// scope credentials to) or the address is not `https://` (nor `http://` on `localhost` or
    /// a name under it, which browsers take as this machine and a secure context).
    public init?(publicURL: String) {
        guard let components = URLComponents(string: publicURL), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty,
            scheme == "https" || (scheme == "http" && (host == "localhost" || host.hasSuffix(".localhost")))
        else { return nil }
        let isAddress = host.contains(":") || host.split(separator: ".").allSatisfy { $0.allSatisfy(\.isNumber) }
        guard !isAddress else { return nil }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = components.port.map { $0 == defaultPort ? "" : ":\($0)" } ?? ""
        self.init(id: host, origins: ["\(scheme)://\(host)\(port)"])
    }

    /// What a registration made, once checked.
    public struct Registration: Sendable, Hashable {
        /// The new credential's id.
        public let credentialID: [UInt8]
        /// Its public key.
        public let publicKey: COSEKey
        /// Its signature counter.
        public let signCount: UInt32
        /// The authenticator's model (zeros when it does not say).
        public let aaguid: [UInt8]
        /// Whether the person was verified.
        public let userVerified: Bool
        /// Whether the credential may be synced (a passkey in a password manager).
        public let backupEligible: Bool
        /// The attestation format (`none` or `packed`).
        public let format: String
    }

    /// What a sign-in with a credential proved, once checked.
    public struct Assertion: Sendable, Hashable {
        /// The counter to store.
        public let signCount: UInt32
        /// Whether the person was verified.
        public let userVerified: Bool
    }

    /// Checks a registration (WebAuthn §7.1) against the `challenge` the server issued: the
    /// client data's type, challenge and origin, the relying party id's hash, user presence
    /// (and verification when `requireUserVerification`), an accepted key, and the attestation
    /// (`none`, or `packed` self-attestation, whose signature must verify with the new key).
    public func verifyRegistration(
        clientDataJSON: [UInt8], attestationObject: [UInt8], challenge: [UInt8], requireUserVerification: Bool
    ) throws -> Registration {
        try checkClientData(clientDataJSON, type: "webauthn.create", challenge: challenge)
        let object: CBOR
        do {
            object = try CBORReader.decode(attestationObject)
        } catch {
            throw WebAuthnError.malformed("the attestation object is not CBOR: \(error)")
        }
        guard let format = object["fmt"]?.text, let statement = object["attStmt"]?.map,
            let authenticatorBytes = object["authData"]?.bytes
        else { throw WebAuthnError.malformed("an attestation object without fmt, attStmt and authData") }
        let data = try AuthenticatorData(authenticatorBytes)
        try checkFlags(data, requireUserVerification: requireUserVerification)
        guard let credential = data.credential else {
            throw WebAuthnError.malformed("a registration without its credential")
        }
        switch format {
        case "none":
            guard statement.isEmpty else { throw WebAuthnError.malformed("a none attestation with a statement") }
        case "packed":
            guard statement[.text("x5c")] == nil, statement[.text("ecdaaKeyId")] == nil else {
                throw WebAuthnError.unsupportedAttestation("packed with a certificate")
            }
            guard let algorithm = statement[.text("alg")]?.integer, let signature = statement[.text("sig")]?.bytes
            else { throw WebAuthnError.malformed("a packed attestation without alg and sig") }
            guard algorithm == credential.publicKey.algorithm.rawValue else {
                throw WebAuthnError.malformed("a packed self-attestation in another algorithm than the key's")
            }
            guard
                credential.publicKey.isValidSignature(
                    signature, of: authenticatorBytes + Digest.sha256(clientDataJSON))
            else { throw WebAuthnError.badSignature }
        default:
            throw WebAuthnError.unsupportedAttestation(format)
        }
        return Registration(
            credentialID: credential.id, publicKey: credential.publicKey, signCount: data.signCount,
            aaguid: credential.aaguid, userVerified: data.userVerified, backupEligible: data.backupEligible,
            format: format)
    }

    /// Checks a sign-in with a credential whose key is `publicKey` and whose counter stood at
    /// `storedSignCount` (WebAuthn §7.2) against the `challenge` the server issued: the client
    /// data, the relying party id's hash, user presence (and verification when
    /// `requireUserVerification`), the signature over the authenticator data and the client
    /// data's hash, and a counter that went up (unless the authenticator keeps none: both zero).
    public func verifyAssertion(
        clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8], challenge: [UInt8],
        publicKey: COSEKey, storedSignCount: UInt32, requireUserVerification: Bool
    ) throws -> Assertion {
        try checkClientData(clientDataJSON, type: "webauthn.get", challenge: challenge)
        let data = try AuthenticatorData(authenticatorData)
        try checkFlags(data, requireUserVerification: requireUserVerification)
        guard publicKey.isValidSignature(signature, of: authenticatorData + Digest.sha256(clientDataJSON)) else {
            throw WebAuthnError.badSignature
        }
        if data.signCount != 0 || storedSignCount != 0, data.signCount <= storedSignCount {
            throw WebAuthnError.counterWentBack(stored: storedSignCount, presented: data.signCount)
        }
        return Assertion(signCount: data.signCount, userVerified: data.userVerified)
    }

    private func checkClientData(_ bytes: [UInt8], type: String, challenge: [UInt8]) throws {
        let clientData = try ClientData(bytes)
        guard clientData.type == type else { throw WebAuthnError.wrongType(clientData.type) }
        guard Digest.constantTimeEquals(clientData.challenge, challenge) else {
            throw WebAuthnError.challengeMismatch
        }
        guard origins.contains(clientData.origin), !clientData.crossOrigin else {
            throw WebAuthnError.originMismatch(clientData.origin)
        }
    }

    private func checkFlags(_ data: AuthenticatorData, requireUserVerification: Bool) throws {
        guard Digest.constantTimeEquals(data.relyingPartyIDHash, Digest.sha256(Array(id.utf8))) else {
            throw WebAuthnError.relyingPartyMismatch
        }
        guard data.userPresent else { throw WebAuthnError.userNotPresent }
        if requireUserVerification, !data.userVerified { throw WebAuthnError.userNotVerified }
    }
}
