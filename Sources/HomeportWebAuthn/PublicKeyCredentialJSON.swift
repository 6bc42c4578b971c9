import HomeportWire

/// A registration as a browser hands it over (`PublicKeyCredential.toJSON()` of
/// `navigator.credentials.create`, WebAuthn §5.1.8): base64url fields.
public struct RegistrationCredential: Sendable, Hashable {
    /// The credential's id.
    public let id: [UInt8]
    /// The client data's bytes.
    public let clientDataJSON: [UInt8]
    /// The attestation object's bytes.
    public let attestationObject: [UInt8]
    /// How the authenticator is reached (`internal`, `hybrid`, `usb`), as the browser says.
    public let transports: [String]
    /// Whether the credential is discoverable (the `credProps` extension's `rk`), when said.
    public let discoverable: Bool?

    /// Reads `json` (a decoded JSON object); throws when it is not a registration.
    public init(json: Any) throws {
        let object = try Self.object(json)
        id = try Self.credentialID(object)
        guard let response = object["response"] as? [String: Any],
            let clientData = (response["clientDataJSON"] as? String).flatMap(IdentityProof.readBase64URL),
            let attestation = (response["attestationObject"] as? String).flatMap(IdentityProof.readBase64URL)
        else { throw WebAuthnError.malformed("a registration without clientDataJSON and attestationObject") }
        clientDataJSON = clientData
        attestationObject = attestation
        transports = ((response["transports"] as? [Any]) ?? []).compactMap { $0 as? String }.filter { $0.count <= 32 }
            .prefix(8).map { $0 }
        let extensions = object["clientExtensionResults"] as? [String: Any]
        discoverable = (extensions?["credProps"] as? [String: Any])?["rk"] as? Bool
    }

    static func object(_ json: Any) throws -> [String: Any] {
        guard let object = json as? [String: Any], object["type"] as? String == "public-key" else {
            throw WebAuthnError.malformed("not a public-key credential")
        }
        return object
    }

    /// `rawId`, which must be `id` when both are given.
    static func credentialID(_ object: [String: Any]) throws -> [UInt8] {
        let id = (object["id"] as? String).flatMap(IdentityProof.readBase64URL)
        let raw = (object["rawId"] as? String).flatMap(IdentityProof.readBase64URL)
        guard let value = raw ?? id, id == nil || raw == nil || id == raw,
            (1...AuthenticatorData.maximumCredentialIDLength).contains(value.count)
        else { throw WebAuthnError.malformed("a credential without one base64url id") }
        return value
    }
}

/// A sign-in as a browser hands it over (`PublicKeyCredential.toJSON()` of
/// `navigator.credentials.get`): base64url fields.
public struct AuthenticationCredential: Sendable, Hashable {
    /// The credential's id.
    public let id: [UInt8]
    /// The client data's bytes.
    public let clientDataJSON: [UInt8]
    /// The authenticator data's bytes.
    public let authenticatorData: [UInt8]
    /// The signature.
    public let signature: [UInt8]
    /// The user handle the credential was registered with (a discoverable credential's).
    public let userHandle: [UInt8]?

    /// Reads `json` (a decoded JSON object); throws when it is not a sign-in.
    public init(json: Any) throws {
        let object = try RegistrationCredential.object(json)
        id = try RegistrationCredential.credentialID(object)
        guard let response = object["response"] as? [String: Any],
            let clientData = (response["clientDataJSON"] as? String).flatMap(IdentityProof.readBase64URL),
            let authenticator = (response["authenticatorData"] as? String).flatMap(IdentityProof.readBase64URL),
            let signature = (response["signature"] as? String).flatMap(IdentityProof.readBase64URL)
        else {
            throw WebAuthnError.malformed("a sign-in without clientDataJSON, authenticatorData and signature")
        }
        clientDataJSON = clientData
        authenticatorData = authenticator
        self.signature = signature
        userHandle = (response["userHandle"] as? String).flatMap(IdentityProof.readBase64URL)
    }
}
