/// What an authenticator signs (WebAuthn §6.1): the relying party's id hash, its flags, its
/// signature counter and, at registration, the new credential.
public struct AuthenticatorData: Sendable, Hashable {
    /// A credential an authenticator made, as registration reports it.
    public struct AttestedCredential: Sendable, Hashable {
        /// The authenticator's model (16 bytes; zeros when it does not say).
        public let aaguid: [UInt8]
        /// The credential's id.
        public let id: [UInt8]
        /// Its public key.
        public let publicKey: COSEKey
    }

    /// The longest credential id WebAuthn allows.
    public static let maximumCredentialIDLength = 1023

    /// SHA-256 of the relying party id the credential is scoped to.
    public let relyingPartyIDHash: [UInt8]
    /// The flags byte.
    public let flags: UInt8
    /// The signature counter (0 for authenticators that keep none).
    public let signCount: UInt32
    /// The credential made, at registration.
    public let credential: AttestedCredential?
    /// The bytes, as signed.
    public let bytes: [UInt8]

    /// A person was present (UP).
    public var userPresent: Bool { flags & 0x01 != 0 }
    /// The person was verified (UV): a PIN, a fingerprint, a face.
    public var userVerified: Bool { flags & 0x04 != 0 }
    /// The credential may be backed up (BE): a synced passkey.
    public var backupEligible: Bool { flags & 0x08 != 0 }
    /// The credential is backed up (BS).
    public var backedUp: Bool { flags & 0x10 != 0 }

    /// Reads `bytes`; throws when they are not exactly authenticator data.
    public init(_ bytes: [UInt8]) throws {
        guard bytes.count >= 37 else { throw WebAuthnError.malformed("authenticator data of \(bytes.count) bytes") }
        self.bytes = bytes
        relyingPartyIDHash = Array(bytes[0..<32])
        flags = bytes[32]
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        guard !(flags & 0x10 != 0 && flags & 0x08 == 0) else {
            throw WebAuthnError.malformed("backed up (BS) but not backup eligible (BE)")
        }
        var offset = 37
        if flags & 0x40 != 0 {
            guard bytes.count >= offset + 18 else {
                throw WebAuthnError.malformed("attested credential data cut short")
            }
            let aaguid = Array(bytes[offset..<offset + 16])
            let length = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard (1...Self.maximumCredentialIDLength).contains(length), bytes.count >= offset + length else {
                throw WebAuthnError.malformed("a credential id of \(length) bytes")
            }
            let id = Array(bytes[offset..<offset + length])
            var reader = CBORReader(bytes, offset: offset + length)
            let key: CBOR
            do {
                key = try reader.read()
            } catch {
                throw WebAuthnError.malformed("the credential's public key is not CBOR: \(error)")
            }
            credential = AttestedCredential(aaguid: aaguid, id: id, publicKey: try COSEKey(key))
            offset = reader.offset
        } else {
            credential = nil
        }
        if flags & 0x80 != 0 {
            var reader = CBORReader(bytes, offset: offset)
            guard (try? reader.read())?.map != nil else { throw WebAuthnError.malformed("extensions that are no map") }
            offset = reader.offset
        }
        guard offset == bytes.count else {
            throw WebAuthnError.malformed("\(bytes.count - offset) bytes after the authenticator data")
        }
    }
}
